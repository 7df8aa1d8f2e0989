"""Planning a batch read: which offset range of which partition each Spark task reads.

Offsets resolve the way the JVM connector resolves them: a global timestamp wins over
per-partition timestamps, which win over offsets; -2 is the log start and -1 the high
watermark; a range is [start, end). Big partitions are split in proportion to their
size when minPartitions asks for more tasks than there are partitions.

Uses a confluent-kafka Consumer only, so it runs in any process: the CLI (to know the
exact ranges it will write into a manifest) and Spark's planner process alike.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, cast

from kctl.admin.client.errors import describe, error_class, error_of
from kctl.errors import InvalidError, KctlError, NotFoundError, UnreachableError
from kctl.spark.options import EARLIEST, LATEST, OptionError, SourceOptions

if TYPE_CHECKING:
    from confluent_kafka import Consumer, KafkaError
    from confluent_kafka.admin import TopicMetadata

    from kctl.spark.pushdown import Limits

# (topic, partition)
_Key = tuple[str, int]


@dataclass(frozen=True)
class PartitionBounds:
    """A partition's offsets at planning time and the part of it to read."""

    topic: str
    partition: int
    log_start: int
    high_watermark: int
    start: int
    end: int  # exclusive


class BoundsDocument(TypedDict):
    """PartitionBounds as JSON (record_plan's partitions, a dump manifest's)."""

    topic: str
    partition: int
    log_start_offset: int
    high_watermark: int
    start_offset: int
    end_offset: int


@dataclass(frozen=True)
class OffsetRange:
    """One Spark task's share: offsets [start, end) of one partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def consumer_config(options: SourceOptions, role: str) -> dict[str, Any]:
    config = {
        "group.id": f"{options.group_id_prefix}-{uuid.uuid4()}-{role}",
        "enable.auto.commit": "false",
        # The JVM's default; librdkafka's own default is read_committed.
        "isolation.level": "read_uncommitted",
    }
    config.update(options.kafka)
    from kctl.admin.client.oauth import with_token_program

    return with_token_program(config)  # a token command runs where the consumer does


def _fail(exc_or_error: BaseException | KafkaError) -> KctlError:
    """The project's error class for a librdkafka error (one exception type from planning)."""
    error = error_of(exc_or_error) if isinstance(exc_or_error, BaseException) else exc_or_error
    if error is None:
        return KctlError(cause=str(exc_or_error))
    # A planner that hears nothing within its timeout found no broker to ask.
    kind = UnreachableError if error.name() == "_TIMED_OUT" else error_class(error)
    return kind(cause=describe(error))


def _partitions(consumer: Consumer, options: SourceOptions, timeout: float) -> list[_Key]:
    from confluent_kafka import KafkaError, KafkaException

    topics: dict[str, TopicMetadata]
    try:
        if options.subscribe_pattern is not None:
            metadata = consumer.list_topics(timeout=timeout)
            pattern = re.compile(options.subscribe_pattern)
            topics = {name: t for name, t in metadata.topics.items() if pattern.fullmatch(name) and not name.startswith("__")}
        else:
            names = list(options.assign) if options.assign is not None else list(options.subscribe)
            topics = {}
            for name in names:
                metadata = consumer.list_topics(name, timeout=timeout)
                topics[name] = metadata.topics[name]
    except KafkaException as exc:
        raise _fail(exc) from None
    pairs: list[_Key] = []
    for name, topic in sorted(topics.items()):
        if topic.error is not None:
            if topic.error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                raise NotFoundError(cause=f"topic {name!r} does not exist")
            raise _fail(topic.error)
        available = sorted(topic.partitions)
        if options.assign is not None:
            missing = [p for p in options.assign[name] if p not in topic.partitions]
            if missing:
                raise NotFoundError(cause=f"topic {name!r} has no partition {missing[0]} (it has {len(available)})")
            available = options.assign[name]
        pairs.extend((name, p) for p in available)
    return pairs


def _by_time(consumer: Consumer, pairs: list[_Key], stamps: dict[_Key, int], timeout: float) -> dict[_Key, int]:
    """{(topic, partition): first offset at or after its timestamp, or -1 for none}."""
    from confluent_kafka import KafkaException, TopicPartition

    if not stamps:
        return {}
    try:
        found = consumer.offsets_for_times([TopicPartition(t, p, stamps[(t, p)]) for t, p in pairs if (t, p) in stamps], timeout=timeout)
    except KafkaException as exc:
        raise _fail(exc) from None
    for tp in found:
        if tp.error is not None:
            raise _fail(tp.error)
    return {(tp.topic, tp.partition): tp.offset for tp in found}


def _stamps(global_ms: int | None, per_partition: dict[str, dict[int, int]] | None, pairs: list[_Key]) -> dict[_Key, int]:
    if global_ms is not None:
        return {pair: global_ms for pair in pairs}
    if per_partition:
        return {(t, p): ms for t, parts in per_partition.items() for p, ms in parts.items() if (t, p) in pairs}
    return {}


def _offset(spec: str | dict[str, dict[int, int]], key: _Key, default: int) -> int:
    if spec == "earliest":
        return EARLIEST
    if spec == "latest":
        return LATEST
    # The options parser makes every other position a {topic: {partition: offset}} map.
    return cast("dict[str, dict[int, int]]", spec).get(key[0], {}).get(key[1], default)


def plan_bounds(options: SourceOptions, *, timeout: float = 30.0, limits: Limits | None = None) -> list[PartitionBounds]:
    """Where each selected partition's read starts and ends, checked against its log;
    cut by `limits` (kctl.spark.pushdown.Limits, a scan's pushed predicates) when given."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    try:
        consumer = Consumer(consumer_config(options, "driver"))
    except KafkaException as exc:
        raise OptionError(f"a kafka.* option was refused: {exc.args[0].str() if exc.args else exc}") from None
    try:
        pairs = _partitions(consumer, options, timeout)
        marks: dict[_Key, tuple[int, int]] = {}
        for topic, partition in pairs:
            try:
                marks[(topic, partition)] = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout, cached=False)
            except KafkaException as exc:
                raise _fail(exc) from None
        start_stamps = _stamps(options.starting_timestamp, options.starting_by_timestamp, pairs)
        end_stamps = _stamps(options.ending_timestamp, options.ending_by_timestamp, pairs)
        starts_by_time = _by_time(consumer, pairs, start_stamps, timeout)
        ends_by_time = _by_time(consumer, pairs, end_stamps, timeout)
        bounds = _bounds(options, pairs, marks, start_stamps, starts_by_time, ends_by_time)
        if limits is not None:
            bounds = _narrow(consumer, bounds, limits, timeout)
    finally:
        consumer.close()
    return bounds


def _bounds(options: SourceOptions, pairs: list[_Key], marks: dict[_Key, tuple[int, int]], start_stamps: dict[_Key, int],
            starts_by_time: dict[_Key, int], ends_by_time: dict[_Key, int]) -> list[PartitionBounds]:
    """Each partition's [start, end) from the options, checked against its log."""
    bounds: list[PartitionBounds] = []
    for key in pairs:
        low, high = marks[key]
        if key in starts_by_time:
            start = starts_by_time[key]
            if start < 0:
                if options.timestamp_strategy == "error":
                    raise InvalidError(cause=f"{key[0]}:{key[1]} has no record at or after the starting timestamp {start_stamps[key]} (startingOffsetsByTimestampStrategy=latest reads nothing instead)")
                start = high
        else:
            start = _offset(options.starting_offsets, key, EARLIEST)
        if key in ends_by_time:
            end = ends_by_time[key] if ends_by_time[key] >= 0 else high
        else:
            end = _offset(options.ending_offsets, key, LATEST)
        start = low if start == EARLIEST else high if start == LATEST else start
        end = high if end == LATEST else end
        if start < low:
            if options.fail_on_data_loss:
                raise InvalidError(cause=f"{key[0]}:{key[1]} starts at offset {low}, after the requested {start}: records were deleted (failOnDataLoss=false reads from {low})")
            start = low
        if end > high:
            if options.fail_on_data_loss:
                raise InvalidError(cause=f"{key[0]}:{key[1]} ends at offset {high}, before the requested end {end}")
            end = high
        if start > end:
            raise InvalidError(cause=f"{key[0]}:{key[1]}: the start offset {start} is after the end offset {end}")
        bounds.append(PartitionBounds(key[0], key[1], low, high, start, end))
    return bounds


def record_plan(directory: str, scan: str, table: str | None, bounds: list[PartitionBounds], pushed: Iterable[str]) -> None:
    """DIRECTORY/SCAN.json: a scan's ranges, for the process that started the query
    (planning runs in a process of Spark's own). Written whole or not at all."""
    from pathlib import Path

    from kctl.spark.manifest import write_json

    write_json(Path(directory) / f"{scan}.json", {
        "scan": scan,
        "table": table,
        "pushed": list(pushed),
        "partitions": [
            {"topic": b.topic, "partition": b.partition, "log_start_offset": b.log_start, "high_watermark": b.high_watermark, "start_offset": b.start, "end_offset": b.end}
            for b in bounds
        ],
    })


def _narrow(consumer: Consumer, bounds: list[PartitionBounds], limits: Limits, timeout: float) -> list[PartitionBounds]:
    """The bounds cut by a scan's pushed predicates: time bounds become offsets by
    ListOffsets, asked only for the partitions still read."""
    from kctl.spark.pushdown import narrowed

    pairs = [(b.topic, b.partition) for b in bounds if limits.admits_partition(b.partition) and b.end > b.start]
    starts = _by_time(consumer, pairs, dict.fromkeys(pairs, limits.time_low_ms), timeout) if limits.time_low_ms is not None else {}
    ends = _by_time(consumer, pairs, dict.fromkeys(pairs, limits.time_end_ms), timeout) if limits.time_end_ms is not None else {}
    out: list[PartitionBounds] = []
    for b in bounds:
        key = (b.topic, b.partition)
        # -1: no record at or after the time, so a start bound leaves nothing, an end bound cuts nothing.
        time_start = None if key not in starts else (b.high_watermark if starts[key] < 0 else starts[key])
        time_end = None if key not in ends else (b.high_watermark if ends[key] < 0 else ends[key])
        start, end = narrowed(b.start, b.end, b.partition, limits, time_start, time_end)
        out.append(PartitionBounds(b.topic, b.partition, b.log_start, b.high_watermark, start, end))
    return out


def split(bounds: list[PartitionBounds], min_partitions: int | None = None, max_records: int | None = None) -> list[OffsetRange]:
    """Offset ranges for the tasks: one per non-empty partition, big partitions cut in
    proportion to their share of all records when min_partitions asks for more tasks
    (as KafkaOffsetRangeCalculator does), and no range over max_records."""
    ranges = [OffsetRange(b.topic, b.partition, b.start, b.end) for b in bounds if b.end > b.start]
    if min_partitions is not None and min_partitions > len(ranges):
        total = sum(r.size for r in ranges)
        cut: list[OffsetRange] = []
        for r in ranges:
            parts = max(1, round(r.size / total * min_partitions))
            cut.extend(_cut(r, -(-r.size // parts)))
        ranges = cut
    if max_records is not None:
        ranges = [piece for r in ranges for piece in _cut(r, max_records)]
    return ranges


def _cut(r: OffsetRange, size: int) -> list[OffsetRange]:
    return [OffsetRange(r.topic, r.partition, s, min(s + size, r.end)) for s in range(r.start, r.end, size)]
