"""Partition offsets (ListOffsets): earliest, latest, max timestamp and by timestamp, and
deleting records before an offset (DeleteRecords).

ListOffsets goes to each partition leader once for the whole batch (the session's client,
kctl.admin.client.kafka), so asking for thousands of partitions costs a request per
broker, not per partition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from kctl.admin.client.errors import missing_topic
from kctl.admin.client.kafka import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    ClusterMetadata,
    OffsetAnswer,
)
from kctl.admin.client.session import AdminSession
from kctl.errors import KctlError, NotFoundError, Partial, UsageError
from kctl.values import Value, replace

_PARTITIONS = re.compile(r"(\d+)(?:-(\d*))?")
# Positions of tiered storage that ListOffsets answers (kafka-get-offsets --time's names).
TIERED_POSITIONS = {"earliest-local": EARLIEST_LOCAL_TIMESTAMP, "latest-tiered": LATEST_TIERED_TIMESTAMP}
NEEDS_TIERED = "tiered storage offsets (ListOffsets v9, Kafka 3.9+)"


class PartitionSelector(Value):
    """`topic` or `topic:0-3,5,7-` (Kafka's kafka-get-offsets syntax)."""

    __slots__ = ("topic", "ranges")

    def __init__(self, *, topic: str, ranges: tuple[tuple[int, int | None], ...] = ()):
        self.topic = topic
        # (first, last) ranges, last None for open-ended; empty means every partition.
        self.ranges = ranges

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
            raise UsageError(action=f"parse {text!r}", cause="expected TOPIC or TOPIC:PARTITIONS such as orders:0-3,5,7-")
        lo = int(match.group(1))
        hi = None if match.group(2) == "" else int(match.group(2) or lo)
        if hi is not None and hi < lo:
            raise UsageError(action=f"parse {text!r}", cause=f"range {lo}-{hi} is empty")
        ranges.append((lo, hi))
    return PartitionSelector(topic=topic, ranges=tuple(ranges))


class PartitionOffsets(Value):
    __slots__ = ("topic", "partition", "earliest", "latest", "span", "offset_at", "timestamp_at", "max_timestamp_offset", "max_timestamp")

    def __init__(
        self, *,
        topic: str, partition: int, earliest: int, latest: int, span: int, offset_at: int | None = None, timestamp_at: int | None = None,
        max_timestamp_offset: int | None = None, max_timestamp: int | None = None,
    ):
        self.topic = topic
        self.partition = partition
        # The log start offset: the first offset still stored.
        self.earliest = earliest
        # The log end offset (high watermark), or the last stable offset with read_committed.
        self.latest = latest
        # latest - earliest: an upper bound on the records stored (compaction and
        # transaction markers make the real count lower).
        self.span = span
        # With --at: the first offset whose timestamp is at or after the instant (latest if none).
        self.offset_at = offset_at
        self.timestamp_at = timestamp_at
        # With --max-timestamp: the offset of the record with the largest timestamp.
        self.max_timestamp_offset = max_timestamp_offset
        self.max_timestamp = max_timestamp


def resolve_partitions(
    session: AdminSession, selectors: Sequence[PartitionSelector], regex: re.Pattern[str] | None = None, *, action: str = "list offsets of",
    leaders: dict[tuple[str, int], int] | None = None,
) -> list[tuple[str, int]]:
    """(topic, partition) pairs for the selectors, checked against the cluster's metadata.
    `action` words the errors: "unable to <action> topic T: ...". `leaders`, when given, is
    filled with each partition's leader from that metadata (what list_offsets can use
    instead of asking for it again)."""
    layout = _layout(session, [s.topic for s in selectors], regex is not None, action, leaders)
    selected: list[tuple[str, int]] = []
    for selector in selectors:
        existing = layout[selector.topic]
        if isinstance(existing, KctlError):
            raise existing
        chosen = [p for p in existing if selector.selects(p)]
        for lo, hi in selector.ranges:
            if hi is not None and hi > existing[-1] or lo > existing[-1]:
                raise NotFoundError(
                    action=f"{action} {selector.topic}", cause=f"partition {max(lo, hi or lo)} does not exist "
                    f"(the topic has {len(existing)})"
                )
        selected += [(selector.topic, p) for p in chosen]
    if regex is not None:
        for name, found in sorted(layout.items()):
            if regex.fullmatch(name) and not name.startswith("__") and not isinstance(found, KctlError):
                selected += [(name, p) for p in found]
    return list(dict.fromkeys(selected))


def _layout(session: AdminSession, names: Sequence[str], every_topic: bool, action: str,
            leaders: dict[tuple[str, int], int] | None = None) -> dict[str, list[int] | KctlError]:
    """{topic: its partitions, or why it cannot be read} from one Metadata request (every
    topic with `every_topic`; asked again for up to NEW_TOPIC_GRACE while a named one is
    being created). A named topic the answer lacks or refuses gets the error for the answer's
    own code: not authorized, or no such topic."""
    wanted = list(dict.fromkeys(names))
    # What a failure of the whole request (an unreachable cluster) says was being done.
    asked = f"{action} topic{'s' if len(wanted) > 1 else ''} {', '.join(wanted)}" if wanted else action.removesuffix(" of")

    def ask() -> ClusterMetadata:
        return session.kafka.metadata(None if every_topic else wanted, asked, topic_ids=False)

    metadata = session.ask_until_found(ask, lambda answer: any(answer.pending(name) for name in wanted))
    topics = dict(metadata.topics)
    missing = [name for name in wanted if name not in topics]
    if missing:  # a topic the user may not describe is left out of a full listing: ask for it by name
        topics.update(session.kafka.metadata(missing, asked, topic_ids=False).topics)
    layout: dict[str, list[int] | KctlError] = {}
    for name, topic in topics.items():
        layout[name] = list(topic.partitions) if topic.partitions else missing_topic(name, topic.error, f"{action} topic {name}")
        if leaders is not None:
            leaders.update(((name, p), layout_.leader) for p, layout_ in topic.partitions.items() if layout_.leader is not None)
    return layout


def log_offsets(session: AdminSession, partitions: Sequence[tuple[str, int]], isolation: str = "read_uncommitted",
                leaders: Mapping[tuple[str, int], int] | None = None) -> dict[tuple[str, int], tuple[int | None, int | None, int | None]]:
    """(log start, log end, the leader's epoch) for every partition, None where its leader
    could not say. `leaders`, the leader of each partition from metadata the caller just
    read, spares a Metadata request (0.3 s to decode at 18,000 partitions; kctl top has it
    from its snapshot)."""
    found, _errors = session.kafka.list_offsets(partitions, (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP), isolation, "list offsets", leaders)
    return {key: (start.offset if start else None, end.offset if end else None, end.leader_epoch if end else None)
            for key, (start, end) in found.items()}


def tiered_offsets(session: AdminSession, partitions: Sequence[tuple[str, int]],
                   leaders: Mapping[tuple[str, int], int] | None = None) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    """(earliest local offset, latest tiered offset) per partition: the first offset still
    on the leader's disk, and the last one uploaded to remote storage (None: none is, or
    the leader could not say)."""
    found, _errors = _list(session, partitions, (EARLIEST_LOCAL_TIMESTAMP, LATEST_TIERED_TIMESTAMP), "read_uncommitted",
                           "list tiered storage offsets", leaders)
    return {key: (local.offset if local and local.offset >= 0 else None, tiered.offset if tiered and tiered.offset >= 0 else None)
            for key, (local, tiered) in found.items()}


def _list(session: AdminSession, pairs: Sequence[tuple[str, int]], timestamps: Sequence[int], isolation: str, action: str,
          leaders: Mapping[tuple[str, int], int] | None = None) -> Partial[dict[tuple[str, int], list[OffsetAnswer | None]]]:
    """ListOffsets through the session's client; a cluster too old for the tiered storage
    positions is said so."""
    try:
        return session.kafka.list_offsets(pairs, timestamps, isolation, action, leaders)
    except KctlError as exc:
        if exc.kafka_error == "UNSUPPORTED_VERSION" and set(timestamps) & set(TIERED_POSITIONS.values()):
            raise exc.but(cause=f"the cluster does not support {NEEDS_TIERED}") from exc
        raise


def _answers(session: AdminSession, pairs: Sequence[tuple[str, int]], timestamps: Sequence[int], isolation: str,
             action: str, leaders: Mapping[tuple[str, int], int] | None = None) -> dict[tuple[str, int], list[OffsetAnswer]]:
    """ListOffsets for each of `timestamps` per partition; the first failed partition's
    error (in `pairs`' order) is raised."""
    found, errors = _list(session, pairs, timestamps, isolation, action, leaders)
    for key in pairs:
        if key in errors:
            raise errors[key]
    # Every answer is there when no partition failed.
    return {key: [a for a in answers if a is not None] for key, answers in found.items()}


def list_offsets(
    session: AdminSession,
    pairs: Sequence[tuple[str, int]],
    *,
    at_ms: int | None = None,
    max_timestamp: bool = False,
    isolation: str = "read_uncommitted",
    leaders: Mapping[tuple[str, int], int] | None = None,
) -> list[PartitionOffsets]:
    timestamps = [EARLIEST_TIMESTAMP, LATEST_TIMESTAMP]
    if at_ms is not None:
        timestamps.append(at_ms)
    if max_timestamp:
        timestamps.append(MAX_TIMESTAMP)
    found = _answers(session, pairs, timestamps, isolation, "list earliest offsets", leaders)
    rows = []
    for key in pairs:
        start, end, *more = found[key]
        at = more.pop(0) if at_ms is not None else None
        peak = more.pop(0) if max_timestamp else None
        if at is not None and at_ms in TIERED_POSITIONS.values():
            # A position, not a time: -1 is "nothing uploaded yet" (latest-tiered).
            offset_at, timestamp_at = (at.offset if at.offset >= 0 else None), None
        elif at is not None:
            # No record at or after the instant: Kafka answers -1; the next record
            # to arrive will be at the log end, which is what a consumer would use.
            offset_at, timestamp_at = (end.offset if at.offset < 0 else at.offset), (at.timestamp if at.offset >= 0 else None)
        else:
            offset_at = timestamp_at = None
        rows.append(
            PartitionOffsets(
                topic=key[0], partition=key[1], earliest=start.offset, latest=end.offset, span=end.offset - start.offset,
                offset_at=offset_at,
                timestamp_at=timestamp_at,
                max_timestamp_offset=(peak.offset if peak.offset >= 0 else None) if peak else None,
                max_timestamp=(peak.timestamp if peak.offset >= 0 else None) if peak else None,
            )
        )
    return rows


def offsets_for_time(session: AdminSession, pairs: Sequence[tuple[str, int]], at_ms: int, *, isolation: str = "read_uncommitted") -> dict[tuple[str, int], int]:
    """Only the first offset at or after `at_ms` per partition (-1 where no record is
    that recent): one request, for callers that already hold the other offsets."""
    found = _answers(session, pairs, (at_ms,), isolation, "list offsets by timestamp")
    return {key: answers[0].offset for key, answers in found.items()}


class DeleteRecordsPlan(Value):
    __slots__ = ("topic", "partition", "log_start_offset", "log_end_offset", "delete_before", "records_deleted", "status", "low_watermark", "error")

    def __init__(
        self, *,
        topic: str, partition: int, log_start_offset: int, log_end_offset: int, delete_before: int, records_deleted: int, status: str = "planned",
        low_watermark: int | None = None, error: str | None = None,
    ):
        self.topic = topic
        self.partition = partition
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset
        # The new log start offset: records below it are deleted.
        self.delete_before = delete_before
        self.records_deleted = records_deleted
        # planned | deleted | failed
        self.status = status
        self.low_watermark = low_watermark
        self.error = error


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


def delete_records(session: AdminSession, plans: Sequence[DeleteRecordsPlan]) -> Partial[list[DeleteRecordsPlan]]:
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
            results.append(replace(plan, status="unchanged", low_watermark=plan.log_start_offset))
            continue
        outcome = outcomes[key]
        if isinstance(outcome, KctlError):
            errors[f"{plan.topic}-{plan.partition}"] = outcome
            results.append(replace(plan, status="failed", error=outcome.message))
        else:
            results.append(replace(plan, status="deleted", low_watermark=outcome.low_watermark))
    return Partial(results, errors)
