"""Groups of every Kafka 4.x type (classic, consumer, share, streams): list, describe,
delete, and lag in messages.

Groups are listed, described and their offsets fetched through kctl.admin.groups.protocol
(kafka-python's message classes: every type in one listing with Kafka's state names, one
request per coordinator for all the groups it owns), and each type is turned into the
shared model here by its own module (classic.py, consumer.py, share.py, streams.py).

Requests are planned per broker, never per group or partition: one OffsetFetch per
coordinator for every group, then one ListOffsets round per broker covers the union of
committed partitions (earliest and latest). kctl never joins a group.

Lag semantics (shared/notes/lag.md §6), per partition with committed offset c, log
start L and log end H (the last stable offset with read_committed):
  raw_lag = H - c, may be negative, always reported;
  lag     = max(0, H - max(c, L)): what is left to consume;
  flags   = NO_COMMIT (c unknown: lag null), BELOW_LOG_START (c < L: L - c records were
            deleted before being consumed), AHEAD_OF_END (c > H).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kctl.admin.session import AdminSession, topic_missing
from kctl.errors import GroupActiveError, KctlError, NotFoundError

# Every group type's states as Kafka's ListGroups names them: classic groups rebalance
# (PreparingRebalance, CompletingRebalance), consumer and streams groups reconcile
# (Assigning, Reconciling; streams groups are NotReady until their topics exist).
STATES = ("Stable", "Empty", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling", "NotReady", "Dead", "Unknown")
TYPES = ("classic", "consumer", "share", "streams")


@dataclass(frozen=True, kw_only=True)
class GroupSummary:
    group: str
    state: str
    # classic | consumer | share | streams | unknown
    type: str
    members: int
    protocol: str | None
    coordinator: int | None


@dataclass(frozen=True, kw_only=True)
class MemberInfo:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    # "topic:0,1,2" entries, sorted (streams groups: "subtopology:0,1" active tasks)
    assignment: tuple[str, ...]
    # Consumer, share and streams groups (null for classic ones): the member's epoch, what
    # the group wants it to own once reconciled, and what it subscribed to.
    member_epoch: int | None = None
    target_assignment: tuple[str, ...] | None = None
    subscribed_topics: tuple[str, ...] = ()
    subscribed_regex: str | None = None


@dataclass(frozen=True, kw_only=True)
class CommittedOffset:
    topic: str
    partition: int
    # Share groups: the share-partition start offset (null until the group reads there).
    offset: int | None
    metadata: str | None


@dataclass(frozen=True, kw_only=True)
class GroupDescription:
    group: str
    state: str
    type: str
    # The classic protocol's assignor, or the assignor the broker chose for the others.
    protocol: str | None
    coordinator: int | None
    members: tuple[MemberInfo, ...]
    offsets: tuple[CommittedOffset, ...]
    # Consumer, share and streams groups: the group's epoch and the epoch of its target
    # assignment (they differ while members reconcile); null for classic groups.
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    # Streams groups: the application's subtopologies as the group coordinator knows them
    # (null for other types, and until the coordinator has initialized the topology).
    topology: tuple[Subtopology, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class Subtopology:
    subtopology: str
    source_topics: tuple[str, ...]
    # Internal topics: repartition topics it reads and writes, its state stores' changelogs.
    repartition_source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    changelog_topics: tuple[str, ...]


# Not frozen, unlike kctl's other results: `group lag --all` builds one per committed
# partition (100,000 at 10,000 groups) and a frozen dataclass's __init__ is three times
# slower (0.18 s vs 0.07 s for 100,000). Treat it as immutable all the same.
@dataclass(kw_only=True, slots=True)
class PartitionLag:
    group: str
    topic: str
    partition: int
    committed: int | None
    log_start: int | None
    log_end: int | None
    raw_lag: int | None
    lag: int | None
    # NO_COMMIT, BELOW_LOG_START, AHEAD_OF_END
    flags: tuple[str, ...]
    # The member consuming the partition now, if any.
    member_id: str | None
    client_id: str | None
    # How old the next record to consume is (0 when caught up, null when unknown), and
    # how that was measured: record (its timestamp), caught_up, or none.
    lag_seconds: float | None = None
    lag_seconds_source: str = "none"


@dataclass(frozen=True, kw_only=True)
class GroupLag:
    group: str
    state: str
    members: int
    lag_sum: int
    lag_max: int
    # The largest lag_seconds of the group's partitions, null when none is known.
    lag_seconds_max: float | None
    partitions_without_commit: int
    partitions: tuple[PartitionLag, ...]


# -- listing and describing -----------------------------------------------------------------


def list_groups(
    session: AdminSession, *, states: Sequence[str] = (), types: Sequence[str] = (), regex: re.Pattern[str] | None = None
) -> list[GroupSummary]:
    """Groups of every type, filtered before anything is described (cheaper for many)."""
    from kctl.admin.groups import protocol

    wanted_states = {s.lower() for s in states}
    wanted_types = {t.lower() for t in types}
    listed = {
        g["group_id"]: g for g in protocol.list_groups(session)
        if (regex is None or regex.fullmatch(g["group_id"]))
        and (not wanted_states or (g.get("group_state") or "").lower() in wanted_states)
        and (not wanted_types or (g.get("group_type") or "").lower() in wanted_types)
    }
    details = _summaries(session, listed)
    return [details[g] for g in sorted(listed) if g in details]


def _summaries(session: AdminSession, listed: dict[str, dict]) -> dict[str, GroupSummary]:
    """Members and assignor of listed groups, each type asked the way it can answer."""
    from kctl.admin.groups import protocol

    by_type: dict[str, list[str]] = {}
    for group_id, entry in listed.items():
        by_type.setdefault(_listed_type(entry), []).append(group_id)
    out = {}
    for kind, describe in (("classic", protocol.classic_group_describe), ("consumer", protocol.consumer_group_describe),
                           ("share", protocol.share_group_describe), ("streams", protocol.streams_group_describe)):
        for group_id, (raw, node) in describe(session, by_type.get(kind, [])).items():
            if raw.error_code:
                continue
            assignor = raw.protocol_data if kind == "classic" else getattr(raw, "assignor_name", None)
            out[group_id] = GroupSummary(
                group=group_id, state=listed[group_id].get("group_state") or raw.group_state, type=kind,
                members=len(raw.members), protocol=assignor or None, coordinator=node)
    return out


def _listed_type(entry: dict) -> str:
    kind = (entry.get("group_type") or "").lower()
    return kind if kind in TYPES else "classic"


def committed_offsets(session: AdminSession, ids: Sequence[str]) -> dict[str, dict[tuple[str, int], tuple[int, str | None]] | KctlError]:
    """Committed offsets (and their metadata) of every group, one request per coordinator."""
    from kctl.admin.groups import protocol

    out: dict[str, dict | KctlError] = {}
    for group_id, (group, _node) in protocol.offset_fetch(session, ids).items():
        if group.error_code:
            out[group_id] = _described_error(group_id, group, "fetch committed offsets of group")
            continue
        out[group_id] = {
            (t.name, p.partition_index): (p.committed_offset, p.metadata or None)
            for t in group.topics for p in t.partitions if p.committed_offset >= 0 and not p.error_code
        }
    return out


def describe_groups(session: AdminSession, ids: Sequence[str]) -> tuple[list[GroupDescription], dict[str, KctlError]]:
    """Descriptions in the order asked; each group described as its type allows (a group
    ListGroups does not know is asked as a classic one, which Kafka answers Dead)."""
    from kctl.admin.groups import classic, consumer, protocol, share, streams

    ids = list(dict.fromkeys(ids))
    types = {g["group_id"]: _listed_type(g) for g in protocol.list_groups(session)}
    of_type = {kind: [g for g in ids if types.get(g, "classic") == kind] for kind in TYPES}
    committed = committed_offsets(session, [g for g in ids if types.get(g, "classic") != "share"])
    share_offsets = protocol.share_group_offsets(session, of_type["share"])
    found: dict[str, GroupDescription] = {}
    errors: dict[str, KctlError] = {}
    for kind, describe in (("classic", protocol.classic_group_describe), ("consumer", protocol.consumer_group_describe),
                           ("share", protocol.share_group_describe), ("streams", protocol.streams_group_describe)):
        for group_id, (raw, node) in describe(session, of_type[kind]).items():
            offsets = committed.get(group_id, {})
            if raw.error_code:
                errors[group_id] = _described_error(group_id, raw)
            elif kind == "share":
                found[group_id] = share.describe(raw, share_offsets.get(group_id, (None,))[0], node)
            elif isinstance(offsets, KctlError):
                errors[group_id] = offsets
            elif kind == "classic" and classic.is_missing(raw, offsets):
                errors[group_id] = _not_found(group_id, "describe group")
            else:
                found[group_id] = {"classic": classic, "consumer": consumer, "streams": streams}[kind].describe(raw, offsets, node)
    return [found[g] for g in ids if g in found], errors


def _not_found(group_id: str, action: str) -> NotFoundError:
    return NotFoundError(f"unable to {action} {group_id}: GROUP_ID_NOT_FOUND: no such group")


def _described_error(group_id: str, raw, action: str = "describe group") -> KctlError:
    """The KctlError for a group's error code in an answer."""
    from kafka.errors import for_code as kafka_error

    from kctl.admin.kafka_python import for_code

    if kafka_error(raw.error_code).__name__ == "GroupIdNotFoundError":
        return _not_found(group_id, action)
    return for_code(kafka_error(raw.error_code), f"{action} {group_id}")


def committed_rows(offsets: dict[tuple[str, int], tuple[int, str | None]]) -> tuple[CommittedOffset, ...]:
    """Committed offsets as a description lists them, by topic and partition."""
    return tuple(CommittedOffset(topic=t, partition=p, offset=o, metadata=md) for (t, p), (o, md) in sorted(offsets.items()))


# -- lag ------------------------------------------------------------------------------------


def log_offsets(session: AdminSession, partitions: Sequence[tuple[str, int]], isolation: str) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    """(log start, log end) for every partition: two ListOffsets requests per broker, both
    in flight at once (sent one after the other they cost a second round trip, 0.1 s at
    20,000 partitions)."""
    from confluent_kafka.admin import OffsetSpec

    from kctl.admin.offsets import ask_offsets

    if not partitions:
        return {}
    values: dict[tuple[str, int], list[int | None]] = {p: [None, None] for p in partitions}
    rounds = [("list offsets", {pair: spec() for pair in partitions}) for spec in (OffsetSpec.earliest, OffsetSpec.latest)]
    for index, results in enumerate(ask_offsets(session, rounds, isolation)):
        for key, result in results.items():
            if not isinstance(result, KctlError):
                values[key][index] = result.offset
    return {k: (v[0], v[1]) for k, v in values.items()}


def partition_lag(group: str, topic: str, partition: int, committed: int | None, log_start: int | None, log_end: int | None, owner=None) -> PartitionLag:
    """The lag semantics of the module docstring, for one partition."""
    flags = []
    raw_lag = lag = None
    if committed is None:
        flags.append("NO_COMMIT")
    elif log_end is not None:
        raw_lag = log_end - committed
        start = log_start if log_start is not None else committed
        lag = max(0, log_end - max(committed, start))
        if log_start is not None and committed < log_start:
            flags.append("BELOW_LOG_START")
        if committed > log_end:
            flags.append("AHEAD_OF_END")
    return PartitionLag(
        group=group,
        topic=topic,
        partition=partition,
        committed=committed,
        log_start=log_start,
        log_end=log_end,
        raw_lag=raw_lag,
        lag=lag,
        flags=tuple(flags),
        member_id=owner.member_id if owner else None,
        client_id=owner.client_id if owner else None,
    )


def record_timestamps(session: AdminSession, positions: Sequence[tuple[str, int, int]], *, timeout: float) -> dict[tuple[str, int, int], int]:
    """Timestamps of the records at (topic, partition, offset), read with a consumer that
    is assigned partitions directly: it never joins or commits to any group."""
    import time

    from confluent_kafka import Consumer, TopicPartition

    if not positions:
        return {}
    config = session.client_config()
    config.update({"group.id": "kctl-lag-probe", "enable.auto.commit": False, "enable.partition.eof": False, "fetch.max.bytes": 1_048_576, "max.partition.fetch.bytes": 65_536})
    consumer = Consumer(config, logger=session_logger())
    wanted = {(t, p): o for t, p, o in positions}
    found: dict[tuple[str, int, int], int] = {}
    try:
        consumer.assign([TopicPartition(t, p, o) for (t, p), o in wanted.items()])
        deadline = time.monotonic() + timeout
        pending = set(wanted)
        while pending and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is None or message.error() is not None:
                continue
            key = (message.topic(), message.partition())
            if key in pending:
                pending.discard(key)
                found[(key[0], key[1], wanted[key])] = message.timestamp()[1]
                consumer.pause([TopicPartition(key[0], key[1])])
    finally:
        consumer.close()
    return found


def session_logger():
    from kctl.admin.session import librdkafka_log

    return librdkafka_log


@dataclass(frozen=True, kw_only=True)
class _LagInputs:
    """What one group's lag is computed from, whatever its type."""

    state: str
    members: int
    # The member consuming each partition (anything with member_id and client_id).
    owners: dict
    # Committed offsets (share groups: start offsets, None where there is none yet).
    offsets: dict[tuple[str, int], int | None]
    # Share groups: Kafka's own lag per share-partition, where it reports one.
    kafka_lag: dict[tuple[str, int], int] | None = None


def group_lag(
    session: AdminSession,
    ids: Sequence[str] | None,
    *,
    topics: Sequence[str] = (),
    isolation: str = "read_uncommitted",
    time_lag: str = "none",
    now_ms: int | None = None,
) -> tuple[list[GroupLag], dict[str, KctlError]]:
    """Lag of the named groups (every group of every type when `ids` is None), optionally
    only `topics`. Share groups' lag is Kafka's: records after the share-partition start
    offset not yet acknowledged."""
    from kctl.admin.groups import protocol

    listed = {g["group_id"]: g for g in protocol.list_groups(session)}
    if ids is None:
        ids = sorted(listed)
    ids = list(dict.fromkeys(ids))
    inputs, errors = _lag_inputs(session, ids, listed)
    partitions: set[tuple[str, int]] = set()
    for item in inputs.values():
        partitions.update(k for k in (*item.offsets, *item.owners) if not topics or k[0] in topics)
    # Offsets were fetched first and log ends are read now, so log ends are never older
    # than commits and a negative raw lag means something real.
    log = log_offsets(session, sorted(partitions), isolation)
    results = []
    for group_id in ids:
        item = inputs.get(group_id)
        if item is None:
            continue
        keys = sorted({k for k in (*item.offsets, *item.owners) if not topics or k[0] in topics})
        rows = []
        for t, p in keys:
            row = partition_lag(group_id, t, p, item.offsets.get((t, p)), *log.get((t, p), (None, None)), owner=item.owners.get((t, p)))
            if item.kafka_lag is not None and (t, p) in item.kafka_lag:
                row = replace(row, lag=item.kafka_lag[(t, p)])
            rows.append(row)
        lags = [r.lag for r in rows if r.lag is not None]
        results.append(
            GroupLag(
                group=group_id,
                state=item.state,
                members=item.members,
                lag_sum=sum(lags),
                lag_max=max(lags, default=0),
                lag_seconds_max=None,
                partitions_without_commit=sum(1 for r in rows if "NO_COMMIT" in r.flags),
                partitions=tuple(rows),
            )
        )
    if time_lag == "record":
        results = _with_record_time_lag(session, results, now_ms)
    return results, errors


def _lag_inputs(session: AdminSession, ids: Sequence[str], listed: dict[str, dict]) -> tuple[dict[str, _LagInputs], dict[str, KctlError]]:
    from kctl.admin.groups import classic, consumer, protocol, share, streams

    kinds = {g: _listed_type(listed[g]) if g in listed else "classic" for g in ids}
    states = {g: listed[g].get("group_state") or "Unknown" for g in ids if g in listed}
    of_kind = {kind: [g for g in ids if kinds[g] == kind] for kind in TYPES}
    # ListGroups already says which groups are Empty; only the others need describing for
    # their members.
    errors: dict[str, KctlError] = {}
    owners: dict[str, dict] = {g: {} for g in ids}
    members: dict[str, int] = {}
    for kind, describe, owned in (("classic", protocol.classic_group_describe, classic.owners),
                                  ("consumer", protocol.consumer_group_describe, consumer.owners),
                                  ("streams", protocol.streams_group_describe, streams.owners)):
        for group_id, (raw, _node) in describe(session, [g for g in of_kind[kind] if states.get(g) != "Empty"]).items():
            if raw.error_code:
                errors[group_id] = _described_error(group_id, raw, "compute lag of group")
                continue
            members[group_id] = len(raw.members)
            states.setdefault(group_id, raw.group_state)
            owners[group_id] = owned(raw)
    committed = committed_offsets(session, [g for g in ids if kinds[g] != "share" and g not in errors])
    inputs: dict[str, _LagInputs] = {}
    for group_id in ids:
        offsets = committed.get(group_id)
        if kinds[group_id] == "share" or group_id in errors:
            continue
        if isinstance(offsets, KctlError):
            errors[group_id] = offsets
        elif group_id not in listed and not offsets:
            errors[group_id] = _not_found(group_id, "compute lag of group")
        else:
            inputs[group_id] = _LagInputs(state=states.get(group_id, "Empty"), members=members.get(group_id, 0),
                                          owners=owners[group_id], offsets={k: o for k, (o, _md) in offsets.items()})
    described_shares = protocol.share_group_describe(session, of_kind["share"])
    share_offsets = protocol.share_group_offsets(session, of_kind["share"])
    for group_id, (raw, _node) in described_shares.items():
        if raw.error_code:
            errors[group_id] = _described_error(group_id, raw, "compute lag of group")
            continue
        starts = share.start_offsets(share_offsets.get(group_id, (None,))[0])
        inputs[group_id] = _LagInputs(
            state=raw.group_state, members=len(raw.members), owners={},
            offsets={k: start for k, (start, _lag) in starts.items()},
            kafka_lag={k: lag for k, (_start, lag) in starts.items() if lag is not None})
    return inputs, errors


def with_history(results: list[GroupLag], state_file, *, interpolate: bool, now_ms: int | None = None):
    """Record this sample in the history file; with `interpolate`, fill lag_seconds from it
    (source "interp") where no better source filled it. Returns (results, histories)."""
    import time

    from kctl.admin.lag_history import record

    now = now_ms if now_ms is not None else int(time.time() * 1000)
    histories = record(state_file, samples_of(results, now))
    return (interpolated(results, histories, now) if interpolate else results), histories


def samples_of(results: Sequence[GroupLag], now_ms: int) -> dict:
    """This sample of every partition, as the lag history keeps it."""
    from kctl.admin.lag_history import Sample

    return {(p.group, p.topic, p.partition): Sample(t=now_ms, committed=p.committed, log_end=p.log_end) for g in results for p in g.partitions}


def interpolated(results: list[GroupLag], histories: dict, now_ms: int) -> list[GroupLag]:
    """lag_seconds (source "interp") from each partition's history where nothing better
    filled it: kafka-lag-exporter's interpolation over (time, log end) samples."""
    import dataclasses

    from kctl.admin.lag_history import interpolated_lag_seconds

    updated = []
    for g in results:
        rows = []
        for p in g.partitions:
            if p.lag_seconds is None and p.committed is not None:
                seconds = 0.0 if p.lag == 0 else interpolated_lag_seconds(histories.get((p.group, p.topic, p.partition), []), max(p.committed, p.log_start or 0), now_ms)
                if seconds is not None:
                    p = dataclasses.replace(p, lag_seconds=seconds, lag_seconds_source="caught_up" if p.lag == 0 else "interp")
            rows.append(p)
        seconds = [r.lag_seconds for r in rows if r.lag_seconds is not None]
        updated.append(dataclasses.replace(g, partitions=tuple(rows), lag_seconds_max=max(seconds) if seconds else None))
    return updated


def _with_record_time_lag(session: AdminSession, results: list[GroupLag], now_ms: int | None) -> list[GroupLag]:
    """lag_seconds = now - timestamp of the next record to consume (exact for LogAppendTime
    topics, subject to producer clocks for CreateTime)."""
    import dataclasses
    import time

    now = now_ms if now_ms is not None else int(time.time() * 1000)
    positions = sorted(
        {(p.topic, p.partition, max(p.committed, p.log_start or 0)) for g in results for p in g.partitions if p.lag}
    )
    stamps = record_timestamps(session, positions, timeout=min(session.timeout, 10.0))
    updated = []
    for g in results:
        rows = []
        for p in g.partitions:
            if p.lag == 0:
                rows.append(dataclasses.replace(p, lag_seconds=0.0, lag_seconds_source="caught_up"))
            elif p.lag:
                ts = stamps.get((p.topic, p.partition, max(p.committed, p.log_start or 0)))
                rows.append(dataclasses.replace(p, lag_seconds=max(0.0, (now - ts) / 1000) if ts is not None and ts >= 0 else None, lag_seconds_source="record" if ts is not None and ts >= 0 else "none"))
            else:
                rows.append(p)
        seconds = [r.lag_seconds for r in rows if r.lag_seconds is not None]
        updated.append(dataclasses.replace(g, partitions=tuple(rows), lag_seconds_max=max(seconds) if seconds else None))
    return updated


@dataclass(frozen=True, kw_only=True)
class GroupResult:
    group: str
    # deleted | failed
    status: str
    error: str | None = None


def delete_groups(session: AdminSession, ids: Sequence[str]) -> tuple[list[GroupResult], dict[str, KctlError]]:
    futures = session.client.delete_consumer_groups(list(ids), request_timeout=session.timeout)
    outcomes = session.wait_all(futures, "delete group")
    results, errors = [], {}
    for group_id in ids:
        outcome = outcomes[group_id]
        if isinstance(outcome, KctlError):
            if "GROUP_ID_NOT_FOUND" in outcome.message:
                outcome = NotFoundError(f"unable to delete group {group_id}: GROUP_ID_NOT_FOUND: no such group")
            elif "NON_EMPTY_GROUP" in outcome.message:
                outcome = GroupActiveError(
                    f"unable to delete group {group_id}: NON_EMPTY_GROUP: the group has active members",
                    hint="stop its consumers first; kctl group describe lists them",
                )
            errors[group_id] = outcome
            results.append(GroupResult(group=group_id, status="failed", error=outcome.message))
        else:
            results.append(GroupResult(group=group_id, status="deleted"))
    return results, errors


@dataclass(frozen=True, kw_only=True)
class OffsetDeletion:
    group: str
    topic: str
    partition: int
    # deleted | not-committed | failed
    status: str
    error: str | None = None


def delete_offsets(
    session: AdminSession, group: str, topics: Sequence[tuple[str, tuple[int, ...] | None]]
) -> tuple[list[OffsetDeletion], dict[str, KctlError]]:
    """Delete a group's committed offsets for topics (or some of their partitions), through
    kafka-python: librdkafka has OffsetDelete but confluent-kafka does not expose it. A share
    group's start offsets are forgotten per topic (DeleteShareGroupOffsets)."""
    from kafka import TopicPartition

    from kctl.admin.groups import share
    from kctl.admin.kafka_python import for_code, kafka_error_name

    if share.share_groups(session, [group]):
        return share.delete_offsets(session, group, topics)

    committed = committed_offsets(session, [group])[group]
    if isinstance(committed, KctlError):
        raise committed
    metadata = session.metadata("delete offsets", [topic for topic, _parts in topics])
    pairs = []
    for topic, parts in topics:
        if topic_missing(metadata, topic):
            raise NotFoundError(f"unable to delete offsets of group {group}: topic {topic}: UNKNOWN_TOPIC_OR_PARTITION: no such topic")
        meta = metadata.topics[topic]
        for p in parts or sorted(meta.partitions):
            if p not in meta.partitions:
                raise NotFoundError(f"unable to delete offsets of group {group}: {topic} has no partition {p}")
            pairs.append((topic, p))
    wanted = [(t, p) for t, p in pairs if (t, p) in committed]
    outcome = {}
    if wanted:
        outcome = session.run_kafka_python(
            lambda c: c.delete_group_offsets(group, [TopicPartition(t, p) for t, p in wanted]), f"delete offsets of group {group}"
        )
    rows, errors = [], {}
    for topic, partition in pairs:
        if (topic, partition) not in committed:
            rows.append(OffsetDeletion(group=group, topic=topic, partition=partition, status="not-committed"))
            continue
        error = outcome.get(TopicPartition(topic, partition))
        if error is None or kafka_error_name(error) == "NO_ERROR":
            rows.append(OffsetDeletion(group=group, topic=topic, partition=partition, status="deleted"))
            continue
        failure = for_code(error, f"delete the offset of group {group} for {topic}-{partition}")
        if kafka_error_name(error) == "GROUP_SUBSCRIBED_TO_TOPIC":
            failure = GroupActiveError(failure.message, hint="a member of the group consumes this topic; stop it first")
        errors[f"{topic}-{partition}"] = failure
        rows.append(OffsetDeletion(group=group, topic=topic, partition=partition, status="failed", error=failure.message))
    return rows, errors
