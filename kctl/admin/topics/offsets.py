"""Partition offsets (ListOffsets): earliest, latest, max timestamp and by timestamp, and
deleting records before an offset (DeleteRecords).

librdkafka sends one ListOffsets request per partition leader for the whole batch, so
asking for thousands of partitions costs a request per broker, not per partition.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kctl.admin.client.session import AdminSession
from kctl.polling import poll
from kctl.admin.client.errors import no_such_topic
from kctl.errors import KctlError, NotFoundError, UsageError

_PARTITIONS = re.compile(r"(\d+)(?:-(\d*))?")


@dataclass(frozen=True, kw_only=True)
class PartitionSelector:
    """`topic` or `topic:0-3,5,7-` (Kafka's kafka-get-offsets syntax)."""

    topic: str
    # (first, last) ranges, last None for open-ended; empty means every partition.
    ranges: tuple[tuple[int, int | None], ...] = ()

    def selects(self, partition: int) -> bool:
        return not self.ranges or any(lo <= partition and (hi is None or partition <= hi) for lo, hi in self.ranges)


def parse_selector(text: str) -> PartitionSelector:
    topic, sep, spec = text.rpartition(":") if ":" in text else (text, "", "")
    if not sep:
        return PartitionSelector(topic=text)
    ranges = []
    for part in spec.split(","):
        match = _PARTITIONS.fullmatch(part.strip())
        if not match or not topic:
            raise UsageError(f"unable to parse {text!r}: expected TOPIC or TOPIC:PARTITIONS such as orders:0-3,5,7-")
        lo = int(match.group(1))
        hi = None if match.group(2) == "" else int(match.group(2) or lo)
        if hi is not None and hi < lo:
            raise UsageError(f"unable to parse {text!r}: range {lo}-{hi} is empty")
        ranges.append((lo, hi))
    return PartitionSelector(topic=topic, ranges=tuple(ranges))


@dataclass(frozen=True, kw_only=True)
class PartitionOffsets:
    topic: str
    partition: int
    # The log start offset: the first offset still stored.
    earliest: int
    # The log end offset (high watermark), or the last stable offset with read_committed.
    latest: int
    # latest - earliest: an upper bound on the records stored (compaction and
    # transaction markers make the real count lower).
    span: int
    # With --at: the first offset whose timestamp is at or after the instant (latest if none).
    offset_at: int | None = None
    timestamp_at: int | None = None
    # With --max-timestamp: the offset of the record with the largest timestamp.
    max_timestamp_offset: int | None = None
    max_timestamp: int | None = None


def resolve_partitions(
    session: AdminSession, selectors: Sequence[PartitionSelector], regex: re.Pattern[str] | None = None, *, action: str = "list offsets of"
) -> list[tuple[str, int]]:
    """(topic, partition) pairs for the selectors, checked against the cluster's metadata.
    `action` words the errors: "unable to <action> topic T: ..."."""
    names = [s.topic for s in selectors]
    if session.wire_available():
        layout = _layout_on_wire(session, names, regex is not None, action)
    else:
        metadata = session.metadata(action.removesuffix(" of"), names)
        layout = {name: sorted(topic.partitions) for name, topic in metadata.topics.items() if topic.partitions}
    selected: list[tuple[str, int]] = []
    for selector in selectors:
        existing = layout.get(selector.topic)
        if isinstance(existing, KctlError):
            raise existing
        if existing is None:
            from kctl.admin.client.session import missing_topic_error

            raise missing_topic_error(session, selector.topic, f"{action} topic {selector.topic}")
        chosen = [p for p in existing if selector.selects(p)]
        for lo, hi in selector.ranges:
            if hi is not None and hi > existing[-1] or lo > existing[-1]:
                raise NotFoundError(
                    f"unable to {action} {selector.topic}: partition {max(lo, hi or lo)} does not exist "
                    f"(the topic has {len(existing)})"
                )
        selected += [(selector.topic, p) for p in chosen]
    if regex is not None:
        for name in sorted(layout):
            if regex.fullmatch(name) and not name.startswith("__") and not isinstance(layout[name], KctlError):
                selected += [(name, p) for p in layout[name]]
    return list(dict.fromkeys(selected))


def _layout_on_wire(session: AdminSession, names: Sequence[str], every_topic: bool, action: str) -> dict[str, list[int] | KctlError]:
    """{topic: its partitions, or why it cannot be read} from one Metadata request
    through kctl's wire client (every topic with `every_topic`; asked again for up to
    NEW_TOPIC_GRACE while a named one is unknown). A named topic the answer lacks or
    refuses gets the error missing_topic_error would give, from the answer's own code."""
    from kctl.errors import NotAuthorizedError
    from kctl.messages.errors import error_name

    wire = session.wire
    wanted = list(dict.fromkeys(names))

    def ask():
        return wire.call(action.removesuffix(' of'), lambda: wire.metadata(None if every_topic else wanted, wire.deadline()))

    def layout_of(answer) -> dict[str, Any]:
        return {t.name: t for t in answer.topics}

    def lacks_one(answer) -> bool:
        topics = layout_of(answer)
        return any(name not in topics or not topics[name].partitions for name in wanted)

    topics = layout_of(session.ask_until_found(ask, lacks_one))
    missing = [name for name in wanted if name not in topics]
    if missing and every_topic:  # a topic the user may not describe is left out of a full listing: ask for it by name
        topics.update(layout_of(wire.call(action.removesuffix(' of'), lambda: wire.metadata(missing, wire.deadline()))))
    layout: dict[str, list[int] | KctlError] = {}
    for name, topic in topics.items():
        if topic.partitions:
            layout[name] = sorted(p.partition_index for p in topic.partitions)
        elif error_name(topic.error_code) == "TOPIC_AUTHORIZATION_FAILED":
            layout[name] = NotAuthorizedError(f"unable to {action} topic {name}: TOPIC_AUTHORIZATION_FAILED: not authorized to access topic {name}")
        else:
            layout[name] = no_such_topic(f"{action} topic {name}", name)
    for name in wanted:
        layout.setdefault(name, no_such_topic(f"{action} topic {name}", name))
    return layout


# What a partition's leader answers while it moves or before it has caught up with a topic
# just created (KRaft brokers learn of a new partition a moment after the controller names
# its leader): Kafka's own AdminClient refreshes its metadata and asks again, and so do we.
RETRIABLE_OFFSETS = frozenset({
    "NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "REPLICA_NOT_AVAILABLE", "FENCED_LEADER_EPOCH",
    "UNKNOWN_LEADER_EPOCH", "OFFSET_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PARTITION",
})
_RETRY_BACKOFF = 0.1


# ListOffsets' special timestamps (any other is a time in ms).
EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP = -2, -1, -3
# Kafka's LEADER_NOT_AVAILABLE: what a partition no live broker leads is answered with.
_NO_LEADER = 5


def log_offsets(session: AdminSession, partitions: Sequence[tuple[str, int]], isolation: str = "read_uncommitted",
                leaders: Mapping[tuple[str, int], int] | None = None) -> dict[tuple[str, int], tuple[int | None, int | None, int | None]]:
    """(log start, log end, the leader's epoch) for every partition, None where its leader
    could not say, through kctl's wire client (_offsets_on_wire; `leaders` as there)."""
    found, _errors = _offsets_on_wire(session, partitions, (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP), isolation, leaders)
    return {key: (start[0] if start else None, end[0] if end else None, end[2] if end else None) for key, (start, end) in found.items()}


Answer = tuple[int, int, int | None]  # offset, timestamp, leader epoch


def _offsets_on_wire(session: AdminSession, partitions: Sequence[tuple[str, int]], timestamps: Sequence[int],
                     isolation: str, leaders: Mapping[tuple[str, int], int] | None = None,
                     ) -> tuple[dict[tuple[str, int], list[Answer | None]], dict[tuple[str, int], int]]:
    """ListOffsets for each of `timestamps` per partition: a request per leader and
    timestamp, every one in flight at once (sent one after the other they cost a round
    trip each, 0.1 s at 20,000 partitions). A partition answered with a retriable error
    (its leader moved, a topic just created) is asked again after a metadata refresh
    while that metadata names a leader for it, until --timeout; one without a leader is
    not asked. `leaders`, the leader of each partition from metadata the caller just read,
    spares the first round its own Metadata request (0.3 s to decode at 18,000
    partitions; kctl top has it from its snapshot). Returns, per partition, (offset,
    timestamp, leader epoch) per timestamp (None where unanswered), and the error code of
    each partition that failed."""
    from kctl.messages.errors import error_name

    wire = session.wire
    values: dict[tuple[str, int], list[Answer | None]] = {p: [None] * len(timestamps) for p in partitions}
    errors: dict[tuple[str, int], int] = {}
    todo = set(values)
    level = 1 if isolation == "read_committed" else 0
    # read_committed needs version 2, the max-timestamp spec version 7.
    low = 7 if MAX_TIMESTAMP in timestamps else 2 if level else 1

    given = leaders

    def ask() -> set:
        nonlocal todo, given
        deadline = wire.deadline()
        if given is not None and all(key in given for key in todo):
            leaders = given
        else:
            metadata = wire.metadata(sorted({t for t, _ in todo}), deadline)
            leaders = {(t.name, p.partition_index): p.leader_id for t in metadata.topics for p in t.partitions if p.leader_id >= 0}
        given = None  # a partition asked again (its leader moved) is looked up afresh
        by_node: dict[int, list[tuple[str, int]]] = {}
        for key in sorted(todo):
            if key in leaders:
                by_node.setdefault(leaders[key], []).append(key)
            else:
                errors[key] = _NO_LEADER
        requests, order = [], []
        for node, keys in by_node.items():
            for index, timestamp in enumerate(timestamps):
                topics: dict[str, list] = {}
                for topic, partition in keys:
                    topics.setdefault(topic, []).append({"partition_index": partition, "current_leader_epoch": -1, "timestamp": timestamp})
                fields = {"replica_id": -1, "isolation_level": level, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
                requests.append((node, "ListOffsets", fields, low, 10))
                order.append(index)
        retry = set()
        for index, answer in zip(order, wire.fan_out(requests, deadline)):
            for topic in answer.topics:
                for p in topic.partitions:
                    key = (topic.name, p.partition_index)
                    if not p.error_code:
                        values[key][index] = (p.offset, p.timestamp, p.leader_epoch if p.leader_epoch >= 0 else None)
                        continue
                    errors[key] = p.error_code
                    if error_name(p.error_code) in RETRIABLE_OFFSETS:
                        retry.add(key)
        for key in todo - retry:
            if all(answer is not None for answer in values[key]):
                errors.pop(key, None)
        todo = retry
        return todo

    if partitions:
        poll(lambda: wire.call("list offsets", ask), lambda todo: not todo, timeout=session.timeout, interval=_RETRY_BACKOFF,
             stop_before=True)
    return values, errors


def _raise_first(errors: Mapping[tuple[str, int], int], pairs: Sequence[tuple[str, int]], action: str) -> None:
    """The first failed partition's error, in the words of the librdkafka path."""
    from kctl.admin.client.errors import for_kafka_code

    for key in pairs:
        if key in errors:
            if errors[key] == _NO_LEADER:
                raise _leaderless(action, key)
            raise for_kafka_code(errors[key], None, f"{action} of {key[0]}-{key[1]}")


def ask_offsets(
    session: AdminSession, rounds: Sequence[tuple[str, Mapping[tuple[str, int], Any]]], isolation: str = "read_uncommitted"
) -> list[dict[tuple[str, int], Any]]:
    """ListOffsets for each round (the action its errors name, {(topic, partition):
    OffsetSpec}), every round in flight at once; per round, each partition's
    ListOffsetsResultInfo or the KctlError for it.

    A partition answered with a retriable error is asked again, after a metadata refresh,
    while that metadata names a leader for it and until --timeout; then the error is its
    result.
    """
    from confluent_kafka import IsolationLevel, TopicPartition

    level = IsolationLevel.READ_COMMITTED if isolation == "read_committed" else IsolationLevel.READ_UNCOMMITTED
    results: list[dict[tuple[str, int], Any]] = [{} for _ in rounds]
    todo = [dict(request) for _, request in rounds]
    asked_before = False

    def ask() -> list[dict]:
        nonlocal todo, asked_before
        if asked_before:
            # Asked again only where the refreshed metadata names a leader: an offline
            # partition (or a topic deleted meanwhile) keeps its error now, not after
            # --timeout, so lag and describe still answer at once for the rest of a
            # degraded cluster.
            metadata = session.metadata(rounds[0][0])
            todo = [{key: spec for key, spec in request.items() if _has_leader(metadata, key)} for request in todo]
        asked_before = True
        asked = [
            session.client.list_offsets(
                {TopicPartition(t, p): spec for (t, p), spec in request.items()}, isolation_level=level, request_timeout=session.timeout
            ) if request else {}
            for request in todo
        ]
        for index, futures in enumerate(asked):
            answers = session.wait_all({(tp.topic, tp.partition): f for tp, f in futures.items()}, rounds[index][0])
            answers = {key: _leaderless(rounds[index][0], key) if getattr(answer, "kafka_error", None) == "_NOENT" else answer
                       for key, answer in answers.items()}
            results[index].update(answers)
            todo[index] = {
                key: todo[index][key] for key, answer in answers.items()
                if isinstance(answer, KctlError) and answer.kafka_error in RETRIABLE_OFFSETS
            }
        return todo

    poll(ask, lambda todo: not any(todo), timeout=session.timeout, interval=_RETRY_BACKOFF, stop_before=True)
    return results


def _leaderless(action: str, key: tuple[str, int]) -> KctlError:
    """librdkafka fails a whole ListOffsets request with _NOENT ("No leaders found") when
    none of its partitions has a leader: name the partition, in Kafka's words."""
    error = KctlError(f"unable to {action} of {key[0]}-{key[1]}: LEADER_NOT_AVAILABLE: the partition has no leader "
                      "(no broker holding a replica is up)")
    error.kafka_error = "LEADER_NOT_AVAILABLE"
    return error


def _has_leader(metadata: Any, key: tuple[str, int]) -> bool:
    topic = metadata.topics.get(key[0])
    partition = topic.partitions.get(key[1]) if topic is not None else None
    return partition is not None and partition.leader >= 0


def _list(session: AdminSession, pairs, specs: Mapping[str, Callable[[], Any]], isolation: str) -> list[dict[tuple[str, int], Any]]:
    """Per {action: OffsetSpec factory}, the offsets of every pair, all asked at once; the
    first error is raised."""
    if not pairs:
        return [{} for _ in specs]
    found = ask_offsets(session, [(action, {pair: spec() for pair in pairs}) for action, spec in specs.items()], isolation)
    for results in found:
        for result in results.values():
            if isinstance(result, KctlError):
                raise result
    return found


def list_offsets(
    session: AdminSession,
    pairs: Sequence[tuple[str, int]],
    *,
    at_ms: int | None = None,
    max_timestamp: bool = False,
    isolation: str = "read_uncommitted",
) -> list[PartitionOffsets]:
    if session.wire_available():
        return _listed_on_wire(session, pairs, at_ms=at_ms, max_timestamp=max_timestamp, isolation=isolation)
    from confluent_kafka.admin import OffsetSpec

    specs: dict[str, Callable[[], Any]] = {"list earliest offsets": OffsetSpec.earliest, "list latest offsets": OffsetSpec.latest}
    if at_ms is not None:
        specs["list offsets by timestamp"] = lambda: OffsetSpec.for_timestamp(at_ms)
    if max_timestamp:
        specs["list max-timestamp offsets"] = OffsetSpec.max_timestamp
    earliest, latest, *more = _list(session, pairs, specs, isolation)
    at = more.pop(0) if at_ms is not None else {}
    top = more.pop(0) if max_timestamp else {}
    rows = []
    for key in pairs:
        start, end = earliest[key].offset, latest[key].offset
        found = at.get(key)
        peak = top.get(key)
        rows.append(
            PartitionOffsets(
                topic=key[0],
                partition=key[1],
                earliest=start,
                latest=end,
                span=end - start,
                # No record at or after the instant: Kafka answers -1; the next record
                # to arrive will be at the log end, which is what a consumer would use.
                offset_at=(end if found.offset < 0 else found.offset) if found else None,
                timestamp_at=(found.timestamp if found.offset >= 0 else None) if found else None,
                max_timestamp_offset=(peak.offset if peak.offset >= 0 else None) if peak else None,
                max_timestamp=(peak.timestamp if peak.offset >= 0 else None) if peak else None,
            )
        )
    return rows


def _listed_on_wire(session: AdminSession, pairs: Sequence[tuple[str, int]], *, at_ms: int | None, max_timestamp: bool,
                    isolation: str) -> list[PartitionOffsets]:
    """list_offsets through kctl's wire client: the same rows and the same first error."""
    timestamps = [EARLIEST_TIMESTAMP, LATEST_TIMESTAMP]
    actions = ["list earliest offsets", "list latest offsets"]
    if at_ms is not None:
        timestamps.append(at_ms)
        actions.append("list offsets by timestamp")
    if max_timestamp:
        timestamps.append(MAX_TIMESTAMP)
        actions.append("list max-timestamp offsets")
    found, errors = _offsets_on_wire(session, pairs, timestamps, isolation)
    _raise_first(errors, pairs, actions[0])
    rows = []
    for key in pairs:
        (start, _, _), (end, _, _), *more = found[key]
        at = more.pop(0) if at_ms is not None else None
        peak = more.pop(0) if max_timestamp else None
        rows.append(
            PartitionOffsets(
                topic=key[0], partition=key[1], earliest=start, latest=end, span=end - start,
                offset_at=(end if at[0] < 0 else at[0]) if at else None,
                timestamp_at=(at[1] if at[0] >= 0 else None) if at else None,
                max_timestamp_offset=(peak[0] if peak[0] >= 0 else None) if peak else None,
                max_timestamp=(peak[1] if peak[0] >= 0 else None) if peak else None,
            )
        )
    return rows


def offsets_for_time(session: AdminSession, pairs: Sequence[tuple[str, int]], at_ms: int, *, isolation: str = "read_uncommitted") -> dict[tuple[str, int], int]:
    """Only the first offset at or after `at_ms` per partition (-1 where no record is
    that recent): one request, for callers that already hold the other offsets."""
    if session.wire_available():
        found, errors = _offsets_on_wire(session, pairs, (at_ms,), isolation)
        _raise_first(errors, pairs, "list offsets by timestamp")
        return {key: answers[0][0] for key, answers in found.items()}
    from confluent_kafka.admin import OffsetSpec

    (found,) = _list(session, pairs, {"list offsets by timestamp": lambda: OffsetSpec.for_timestamp(at_ms)}, isolation)
    return {key: info.offset for key, info in found.items()}


@dataclass(frozen=True, kw_only=True)
class DeleteRecordsPlan:
    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    # The new log start offset: records below it are deleted.
    delete_before: int
    records_deleted: int
    # planned | deleted | failed
    status: str = "planned"
    low_watermark: int | None = None
    error: str | None = None


def plan_delete_records(
    session: AdminSession, pairs: Sequence[tuple[str, int]], *, before_offset: int | None = None, before_ms: int | None = None, to_end: bool = False
) -> list[DeleteRecordsPlan]:
    """What deleting records would do per partition; offsets are clamped to the log, and
    a partition whose log starts at or after the target is left alone."""
    offsets = list_offsets(session, pairs, at_ms=before_ms)
    plans = []
    for o in offsets:
        if to_end:
            target = o.latest
        elif before_ms is not None:
            target = o.offset_at if o.offset_at is not None else o.latest
        else:
            target = min(max(before_offset or 0, o.earliest), o.latest)
        target = max(target, o.earliest)
        plans.append(
            DeleteRecordsPlan(
                topic=o.topic,
                partition=o.partition,
                log_start_offset=o.earliest,
                log_end_offset=o.latest,
                delete_before=target,
                records_deleted=target - o.earliest,
            )
        )
    return plans


def delete_records(session: AdminSession, plans: Sequence[DeleteRecordsPlan]) -> tuple[list[DeleteRecordsPlan], dict[str, KctlError]]:
    import dataclasses

    from confluent_kafka import TopicPartition

    todo = [p for p in plans if p.records_deleted > 0]
    results: list[DeleteRecordsPlan] = []
    errors: dict[str, KctlError] = {}
    outcomes = {}
    if todo:
        request = [TopicPartition(p.topic, p.partition, p.delete_before) for p in todo]
        futures = session.client.delete_records(request, request_timeout=session.timeout, operation_timeout=session.timeout)
        outcomes = session.wait_all({(tp.topic, tp.partition): f for tp, f in futures.items()}, "delete records")
    for plan in plans:
        key = (plan.topic, plan.partition)
        if key not in outcomes:
            results.append(dataclasses.replace(plan, status="unchanged", low_watermark=plan.log_start_offset))
            continue
        outcome = outcomes[key]
        if isinstance(outcome, KctlError):
            errors[f"{plan.topic}-{plan.partition}"] = outcome
            results.append(dataclasses.replace(plan, status="failed", error=outcome.message))
        else:
            results.append(dataclasses.replace(plan, status="deleted", low_watermark=outcome.low_watermark))
    return results, errors
