"""Partition reassignment and leader election.

Plans use kafka-reassign-partitions.sh's JSON format, so plans move freely between the
tools::

    {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3],
                                    "log_dirs": ["any", "any", "any"]}]}

Generating keeps every replica it can (moving data is the expensive part), fills the
rest from the least-loaded brokers, preferring racks the partition does not use yet,
and keeps the current leader first when it stays. Executing sets the same replication
throttles Kafka's tool sets (rates on the brokers involved, throttled replica lists on
the topics) and verifying removes them once every partition has finished.

Reassignment APIs go through kctl's wire client (librdkafka has none); elections through
librdkafka.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kctl.admin.client.errors import for_kafka_code, no_such_topic
from kctl.admin.client.session import AdminSession
from kctl.errors import InvalidError, KctlError, NotFoundError, Partial
from kctl.messages import apis
from kctl.polling import poll

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from kctl.messages import types as t

THROTTLE_RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
THROTTLED_REPLICAS_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


@dataclass(frozen=True, kw_only=True)
class PartitionMove:
    topic: str
    partition: int
    current: tuple[int, ...]
    target: tuple[int, ...]

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.current)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.current if b not in self.target)


@dataclass(frozen=True, kw_only=True)
class MoveRow:
    """One partition of a plan, as shown to people."""

    topic: str
    partition: int
    current_replicas: tuple[int, ...]
    target_replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    # unchanged | move | in-progress | done | failed | cancelled
    status: str
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class Reassignment:
    """An in-progress reassignment, as ListPartitionReassignments reports it."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]

    @property
    def move(self) -> PartitionMove:
        """Where the partition comes from (the replicas not being added) and where it goes
        (those not being removed)."""
        return PartitionMove(topic=self.topic, partition=self.partition,
                             current=tuple(b for b in self.replicas if b not in self.adding_replicas),
                             target=tuple(b for b in self.replicas if b not in self.removing_replicas))


@dataclass(frozen=True, kw_only=True)
class ElectionResult:
    topic: str
    partition: int
    # elected | not-needed | failed
    status: str
    leader: int | None = None
    error: str | None = None


# -- plan files -----------------------------------------------------------------------------


def plan_to_json(moves: Iterable[PartitionMove], *, current: bool = False) -> str:
    """Kafka's reassignment JSON for the targets (or, with current=True, the rollback)."""
    partitions = []
    for m in sorted(moves, key=lambda m: (m.topic, m.partition)):
        replicas = list(m.current if current else m.target)
        partitions.append({"topic": m.topic, "partition": m.partition, "replicas": replicas, "log_dirs": ["any"] * len(replicas)})
    return json.dumps({"version": 1, "partitions": partitions}, indent=2) + "\n"


def parse_plan(text: str, source: str) -> dict[tuple[str, int], tuple[int, ...]]:
    """Targets from Kafka's reassignment JSON; every malformation is an InvalidError."""

    def bad(why: str) -> InvalidError:
        return InvalidError(action=f"read reassignment plan {source}", cause=why)

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("partitions"), list):
        raise bad('expected {"version": 1, "partitions": [...]}')
    if data.get("version", 1) != 1:
        raise bad(f"unsupported version {data.get('version')!r}")
    targets: dict[tuple[str, int], tuple[int, ...]] = {}
    for index, entry in enumerate(data["partitions"]):
        where = f"partitions[{index}]"
        if not isinstance(entry, dict):
            raise bad(f"{where} is not an object")
        topic, partition, replicas = entry.get("topic"), entry.get("partition"), entry.get("replicas")
        if not isinstance(topic, str) or not topic:
            raise bad(f"{where}.topic must be a topic name")
        if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
            raise bad(f"{where}.partition must be a partition number")
        if not isinstance(replicas, list) or not replicas or not all(isinstance(r, int) and not isinstance(r, bool) for r in replicas):
            raise bad(f"{where}.replicas must be a non-empty list of broker ids")
        if len(set(replicas)) != len(replicas):
            raise bad(f"{where}.replicas lists a broker twice: {replicas}")
        log_dirs = entry.get("log_dirs")
        if log_dirs is not None and (not isinstance(log_dirs, list) or any(d != "any" for d in log_dirs)):
            raise bad(f"{where}.log_dirs: only \"any\" is supported (moving between log dirs is not)")
        if (topic, partition) in targets:
            raise bad(f"{where}: {topic}-{partition} appears twice")
        targets[(topic, partition)] = tuple(replicas)
    if not targets:
        raise bad("the plan moves no partitions")
    return targets


# -- cluster state ----------------------------------------------------------------------


def assignments(session: AdminSession, topics: Iterable[str] | None = None) -> tuple[dict[tuple[str, int], tuple[int, ...]], dict[int, str | None]]:
    """Current replicas per partition (of `topics`, or all), and live brokers with their racks."""
    wanted = set(topics) if topics is not None else None
    metadata = session.metadata("describe partitions", wanted or ())
    if wanted:
        missing = sorted(t for t in wanted if not metadata.has(t))
        if missing:
            raise no_such_topic(f"reassign topic {', '.join(missing)}", missing[0])
    current = {
        (name, p.partition): p.replicas
        for name, t in metadata.topics.items()
        if wanted is None or name in wanted
        for p in t.partitions.values()
    }
    from kctl.admin.cluster.brokers import describe_cluster

    racks = {b.id: b.rack for b in describe_cluster(session).brokers}
    return current, racks


def moves_for(current: Mapping[tuple[str, int], tuple[int, ...]], targets: Mapping[tuple[str, int], tuple[int, ...]], brokers: Iterable[int]) -> list[PartitionMove]:
    """PartitionMoves for a parsed plan, checked against the cluster."""
    live = set(brokers)
    moves = []
    for (topic, partition), target in sorted(targets.items()):
        if (topic, partition) not in current:
            if not any(t == topic for t, _ in current):
                raise no_such_topic(f"reassign {topic}-{partition}", topic)
            raise NotFoundError(action=f"reassign {topic}-{partition}", cause=f"the topic has no partition {partition}")
        unknown = sorted(set(target) - live)
        if unknown:
            raise InvalidError(
                action=f"reassign {topic}-{partition}", cause=f"broker(s) {', '.join(map(str, unknown))} not in the cluster "
                f"(brokers: {', '.join(map(str, sorted(live)))})"
            )
        moves.append(PartitionMove(topic=topic, partition=partition, current=current[(topic, partition)], target=target))
    return moves


# -- generating ---------------------------------------------------------------------------


def generate(
    current: Mapping[tuple[str, int], tuple[int, ...]],
    brokers: Mapping[int, str | None],
    *,
    replication_factor: int | None = None,
    base_load: Mapping[int, int] | None = None,
) -> list[PartitionMove]:
    """A balanced, rack-aware plan placing every partition on `brokers` (id -> rack);
    `base_load` counts the replicas brokers hold besides these partitions'.

    Pure: the same input gives the same plan, so a plan can be reviewed and re-created.
    """
    if not brokers:
        raise InvalidError(action="generate a plan", cause="no brokers to place replicas on")
    load: Counter[int] = Counter({b: (base_load or {}).get(b, 0) for b in brokers})
    leaders: Counter[int] = Counter({b: 0 for b in brokers})
    kept: dict[tuple[str, int], list[int]] = {}
    # First pass: keep what can stay, so loads reflect the data that will not move.
    for key, replicas in sorted(current.items()):
        rf = replication_factor or len(replicas)
        if rf > len(brokers):
            raise InvalidError(
                action=f"place {key[0]}-{key[1]}", cause=f"replication factor {rf} is larger than the {len(brokers)} broker(s) available"
            )
        stay = [b for b in replicas if b in brokers][:rf]
        kept[key] = stay
        load.update(stay)
    moves = []
    for key, replicas in sorted(current.items()):
        rf = replication_factor or len(replicas)
        chosen = list(kept[key])
        while len(chosen) < rf:
            used_racks = {brokers[b] for b in chosen if brokers[b] is not None}
            candidates = [b for b in sorted(brokers) if b not in chosen]
            # Least loaded first; among equals, a rack the partition does not use yet.
            best = min(candidates, key=lambda b: (brokers[b] in used_racks if brokers[b] is not None else False, load[b], b))
            chosen.append(best)
            load[best] += 1
        if not chosen or chosen[0] not in replicas:
            # No surviving leader: give leadership to the broker leading least so far.
            first = min(chosen, key=lambda b: (leaders[b], load[b], b))
            chosen.remove(first)
            chosen.insert(0, first)
        leaders[chosen[0]] += 1
        moves.append(PartitionMove(topic=key[0], partition=key[1], current=tuple(replicas), target=tuple(chosen)))
    return moves


def generate_plan(
    session: AdminSession, topics: Sequence[str], broker_ids: Sequence[int] | None = None, *, replication_factor: int | None = None, rack_aware: bool = True
) -> list[PartitionMove]:
    current, racks = assignments(session, topics)
    if broker_ids:
        unknown = sorted(set(broker_ids) - set(racks))
        if unknown:
            raise InvalidError(action="generate a plan", cause=f"broker(s) {', '.join(map(str, unknown))} not in the cluster (brokers: {', '.join(map(str, sorted(racks)))})")
        racks = {b: racks[b] for b in broker_ids}
    if not rack_aware:
        racks = {b: None for b in racks}
    return generate(current, racks, replication_factor=replication_factor)


def load_plan(session: AdminSession, text: str, source: str) -> list[PartitionMove]:
    targets = parse_plan(text, source)
    current, racks = assignments(session, {t for t, _ in targets})
    return moves_for(current, targets, racks)


# -- executing ----------------------------------------------------------------------------


def _throttled_replicas(moves: Sequence[PartitionMove]) -> dict[str, dict[str, str]]:
    """Per topic, the leader (source) and follower (destination) throttled replica lists."""
    per_topic: dict[str, dict[str, list[str]]] = {}
    for m in moves:
        if not m.adding and not m.removing:
            continue
        entry = per_topic.setdefault(m.topic, {THROTTLED_REPLICAS_KEYS[0]: [], THROTTLED_REPLICAS_KEYS[1]: []})
        entry[THROTTLED_REPLICAS_KEYS[0]] += [f"{m.partition}:{b}" for b in m.current]
        entry[THROTTLED_REPLICAS_KEYS[1]] += [f"{m.partition}:{b}" for b in m.adding]
    return {t: {k: ",".join(v) for k, v in entry.items() if v} for t, entry in per_topic.items()}


def _alter(session: AdminSession, entity_type: str, name: str, changes) -> None:
    from kctl.admin.topics.configs import alter_configs

    _results, errors = alter_configs(session, entity_type, [name], changes)
    if errors:
        raise next(iter(errors.values()))


def set_throttles(session: AdminSession, moves: Sequence[PartitionMove], rate: int) -> None:
    from kctl.admin.topics.configs import ConfigChange

    brokers = sorted({b for m in moves if m.adding or m.removing for b in (*m.current, *m.target)})
    for broker in brokers:
        _alter(session, "broker", str(broker), [ConfigChange(operation="set", name=k, value=str(rate)) for k in THROTTLE_RATE_KEYS])
    for topic, lists in _throttled_replicas(moves).items():
        _alter(session, "topic", topic, [ConfigChange(operation="set", name=k, value=v) for k, v in lists.items()])


def clear_throttles(session: AdminSession, moves: Sequence[PartitionMove]) -> None:
    from kctl.admin.topics.configs import ConfigChange

    brokers = sorted({b for m in moves for b in (*m.current, *m.target)})
    for broker in brokers:
        _alter(session, "broker", str(broker), [ConfigChange(operation="delete", name=k) for k in THROTTLE_RATE_KEYS])
    for topic in sorted({m.topic for m in moves}):
        _alter(session, "topic", topic, [ConfigChange(operation="delete", name=k) for k in THROTTLED_REPLICAS_KEYS])


def execute(session: AdminSession, moves: Sequence[PartitionMove], *, throttle: int | None = None) -> Partial[list[MoveRow]]:
    """Start the reassignment of every partition whose replicas change."""
    changing = [m for m in moves if m.target != m.current]
    if throttle is not None and changing:
        set_throttles(session, changing, throttle)
    outcome: dict[tuple[str, int], KctlError] = {}
    if changing:
        outcome = alter_reassignments(session, {(m.topic, m.partition): list(m.target) for m in changing}, "reassign partitions")
    rows, errors = [], {}
    for m in moves:
        if m.target == m.current:
            rows.append(move_row(m, "unchanged"))
            continue
        failure = outcome.get((m.topic, m.partition))
        if failure is not None:
            errors[f"{m.topic}-{m.partition}"] = failure
            rows.append(move_row(m, "failed", failure.message))
        else:
            rows.append(move_row(m, "started"))
    return Partial(rows, errors)


def alter_reassignments(session: AdminSession, targets: dict[tuple[str, int], list[int] | None], action: str) -> dict[tuple[str, int], KctlError]:
    """AlterPartitionReassignments (to the controller, through any broker): each partition's
    new replicas, or None to cancel its move. The partitions Kafka refused, with why. A
    request sent again after a dropped connection asks for the same replicas: no harm."""
    by_topic: dict[str, list[t.AlterPartitionReassignmentsRequestReassignablePartition]] = {}
    for (topic, partition), replicas in targets.items():
        by_topic.setdefault(topic, []).append({"partition_index": partition, "replicas": replicas})
    fields: t.AlterPartitionReassignmentsRequest = {"timeout_ms": int(session.timeout * 1000), "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
    answer = session.ask(action, apis.ALTER_PARTITION_REASSIGNMENTS, fields, 0, 1, needs="partition reassignment (KIP-455)")
    if answer.error_code:
        raise for_kafka_code(answer.error_code, answer.error_message, action)
    return {(t.name, p.partition_index): for_kafka_code(p.error_code, p.error_message, f"{action.split()[0]} {t.name}-{p.partition_index}")
            for t in answer.responses for p in t.partitions if p.error_code}


def move_row(m: PartitionMove, status: str, error: str | None = None) -> MoveRow:
    return MoveRow(
        topic=m.topic,
        partition=m.partition,
        current_replicas=m.current,
        target_replicas=m.target,
        adding=m.adding,
        removing=m.removing,
        status=status,
        error=error,
    )


def preview(moves: Sequence[PartitionMove]) -> list[MoveRow]:
    return [move_row(m, "move" if m.target != m.current else "unchanged") for m in moves]


def list_reassignments(session: AdminSession) -> list[Reassignment]:
    """The cluster's reassignments in progress (ListPartitionReassignments)."""
    action = "list reassignments"
    answer = session.ask(action, apis.LIST_PARTITION_REASSIGNMENTS, {"timeout_ms": int(session.timeout * 1000), "topics": None}, 0, 0,
                         needs="partition reassignment (KIP-455)")
    if answer.error_code:
        raise for_kafka_code(answer.error_code, answer.error_message, action)
    return sorted(
        (Reassignment(topic=t.name, partition=p.partition_index, replicas=tuple(p.replicas),
                      adding_replicas=tuple(p.adding_replicas), removing_replicas=tuple(p.removing_replicas))
         for t in answer.topics for p in t.partitions),
        key=lambda r: (r.topic, r.partition),
    )


# How long a partition may look finished-but-wrong before verify calls it failed: the
# controller drops a completed move from its in-progress list before every broker's
# metadata shows the new replicas (seen in CI: `2,3,1` with nothing in progress, for a
# move to `2,3` that the next metadata showed done).
METADATA_SETTLE_SECONDS = 5.0


def verify(session: AdminSession, moves: Sequence[PartitionMove], *, clear: bool = True) -> list[MoveRow]:
    """Where each partition stands; throttles are removed once all are done (unless told not to)."""
    rows = poll(lambda: _where_moves_stand(session, moves), lambda rows: not any(r.status == "failed" for r in rows),
                timeout=min(METADATA_SETTLE_SECONDS, session.timeout), interval=0.25)
    if clear and all(r.status == "done" for r in rows):
        clear_throttles(session, moves)
    return rows


def _where_moves_stand(session: AdminSession, moves: Sequence[PartitionMove]) -> list[MoveRow]:
    in_progress = {(r.topic, r.partition) for r in list_reassignments(session)}
    current, _racks = assignments(session, {m.topic for m in moves})
    rows = []
    for m in moves:
        key = (m.topic, m.partition)
        if key in in_progress:
            rows.append(move_row(m, "in-progress"))
        elif tuple(current.get(key, ())) == m.target:
            rows.append(move_row(m, "done"))
        else:
            now = current.get(key, ())
            rows.append(move_row(PartitionMove(topic=m.topic, partition=m.partition, current=tuple(now), target=m.target), "failed", "the replicas differ from the plan and nothing is in progress"))
    return rows


def cancel(session: AdminSession, moves: Sequence[PartitionMove] | None = None) -> list[Reassignment]:
    """Cancel in-progress reassignments (of `moves`, or all); returns what was cancelled."""
    ongoing = list_reassignments(session)
    if moves is not None:
        wanted = {(m.topic, m.partition) for m in moves}
        ongoing = [r for r in ongoing if (r.topic, r.partition) in wanted]
    if ongoing:
        refused = alter_reassignments(session, {(r.topic, r.partition): None for r in ongoing}, "cancel reassignments")
        # A move that ended between the listing and the cancel has nothing left to cancel.
        refused = {key: error for key, error in refused.items() if error.kafka_error != "NO_REASSIGNMENT_IN_PROGRESS"}
        if refused:
            raise next(iter(refused.values()))
    return ongoing


# -- leader election ----------------------------------------------------------------------


def _await_preferred_leaders(session: AdminSession, pairs: Sequence[tuple[str, int]]) -> Any:
    """The partition metadata once every elected partition shows its preferred replica as
    leader (or when --timeout ends). The controller acknowledges an election when it has
    committed it; each broker applies it a moment later, so a listing right after could
    still show the old leaders (a CI run saw it from a broker that had just restarted)."""
    topics = sorted({t for t, _ in pairs})

    def preferred_everywhere(metadata: Any) -> bool:
        for topic, partition in pairs:
            found = metadata.topics.get(topic)
            found = found.partitions.get(partition) if found is not None else None
            if found is None or not found.replicas or found.leader != found.replicas[0]:
                return False
        return True

    metadata = poll(lambda: session.metadata("describe partitions", topics), preferred_everywhere, timeout=session.timeout, interval=0.05)
    session.settle(len(metadata.brokers))
    return metadata


def elect_leaders(session: AdminSession, pairs: Sequence[tuple[str, int]] | None, *, unclean: bool = False) -> Partial[list[ElectionResult]]:
    """Preferred (or unclean) election for `pairs`, or every partition when None."""
    from confluent_kafka import ElectionType, KafkaException, TopicPartition

    from kctl.admin.client.errors import error_of, translate

    kind = ElectionType.UNCLEAN if unclean else ElectionType.PREFERRED
    partitions = [TopicPartition(t, p) for t, p in pairs] if pairs is not None else None
    # confluent-kafka 2.16's elect_leaders rejects request_timeout (a binding bug:
    # "more argument specifiers than keyword list entries"); wait() bounds the time.
    future = session.client.elect_leaders(kind, partitions)
    outcome = session.wait(future, "elect leaders")
    elected = [(tp.topic, tp.partition) for tp, error in outcome.items() if error is None]
    metadata = _await_preferred_leaders(session, elected) if elected and not unclean else session.metadata("describe partitions")
    rows, errors = [], {}
    for tp, error in sorted(outcome.items(), key=lambda item: (item[0].topic, item[0].partition)):
        leader = None
        topic = metadata.topics.get(tp.topic)
        if topic is not None and tp.partition in topic.partitions:
            leader = topic.partitions[tp.partition].leader
        if error is None:
            rows.append(ElectionResult(topic=tp.topic, partition=tp.partition, status="elected", leader=leader))
            continue
        kafka_error = error_of(error) if isinstance(error, KafkaException) else error
        if kafka_error is not None and kafka_error.name() == "ELECTION_NOT_NEEDED":
            rows.append(ElectionResult(topic=tp.topic, partition=tp.partition, status="not-needed", leader=leader))
            continue
        action = f"elect a leader for {tp.topic}-{tp.partition}"
        failure = translate(kafka_error, action) if kafka_error is not None else KctlError(action=action, cause=str(error))
        errors[f"{tp.topic}-{tp.partition}"] = failure
        rows.append(ElectionResult(topic=tp.topic, partition=tp.partition, status="failed", leader=leader, error=failure.message))
    return Partial(rows, errors)
