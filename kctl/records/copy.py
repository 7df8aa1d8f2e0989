"""`kctl record copy`: records from one topic to another, on the same cluster or another.

Each record keeps its key, value, headers and timestamp: the copy is the same records
(`source_header` adds a `kctl-copy-source` header, topic/partition/offset in the source,
for those who want to trace each one back). It keeps its partition when both topics have
as many partitions; otherwise it goes where its key maps to (murmur2, as Java producers
place keys, or librdkafka's consistent partitioner), a record without a key to any
partition. SOURCE and TARGET must not be one topic of one cluster, whatever names or
contexts reach them (the cluster id says).

Reading is `record consume`'s (kctl.records.consume.Reading: positions, bounds, --where),
the partitions assigned directly: the copy's group, when one is given, only keeps the
offsets a rerun goes on from, with no member a rerun after a crash would wait for (two
copies of one group at once fence each other through their transactional id). Writing
and committing are kctl.records.transfer's: exactly-once with a group on one cluster
with transactions, at-least-once otherwise (a failure can write some records twice:
`kctl spark audit TARGET` finds them, by content or by the source header).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kctl.admin.client.session import AdminSession
from kctl.admin.topics.offsets import PartitionSelector
from kctl.errors import UsageError
from kctl.records.consume import ConsumeOptions, Key, Reading
from kctl.records.position import COMMITTED, Position
from kctl.records.transfer import Committed, Transfer, has_transactions, pace, paced_batch

SOURCE_HEADER = "kctl-copy-source"


@dataclass(frozen=True, kw_only=True)
class CopyOptions:
    source: PartitionSelector
    target: str
    start: Position
    end: Position | None
    group: str | None = None
    where: Callable[[Any], bool] | None = None
    max_records: int | None = None
    # Records per second, at most.
    rate: float | None = None
    partitioner: str = "murmur2"
    # Add the kctl-copy-source header (topic/partition/offset in the source) to each record.
    source_header: bool = False
    # Source offsets (per partition) whose place in the target is wanted (topic clone's
    # group offsets): the target offset of the first record copied at or after each.
    track: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # Words the errors: "unable to <action>: ..." (topic clone says its own).
    action: str | None = None

    @property
    def what(self) -> str:
        return self.action or f"copy {self.source.topic} to {self.target}"


@dataclass(frozen=True, kw_only=True)
class PartitionCopied:
    partition: int
    records: int
    bytes: int


@dataclass(frozen=True, kw_only=True)
class CopyReport:
    source: str
    target: str
    records: int
    # Key and value bytes of the records written.
    bytes: int
    filtered: int
    seconds: float
    # exactly-once | at-least-once
    guarantee: str
    # same (each record to its own partition) | key (by the partitioner)
    placement: str
    # Why the copy ended: end, max-records, interrupted.
    stopped: str
    # Whether each record carries the kctl-copy-source header.
    source_header: bool = False
    partitions: tuple[PartitionCopied, ...] = field(default_factory=tuple)
    # CopyOptions.track's answers: {(partition, source offset): target offset}; a tracked
    # offset past the last record copied is not here (its place is the target's end).
    tracked: dict[tuple[int, int], int] = field(default_factory=dict)


def transactional_id(group: str, target: str) -> str:
    """The same for every run of one copy: the rerun fences and aborts what a killed run left."""
    return f"kctl-copy-{group}-{target}"


def copy(source: AdminSession, target: AdminSession | None, options: CopyOptions, *,
         stop: threading.Event | None = None, on_batch: Callable[[int, int | None], None] | None = None) -> CopyReport:
    """Copy as the module docstring says (Copy(...).run())."""
    return Copy(source, target, options).run(stop=stop, on_batch=on_batch)


class Copy:
    """One copy; `target` None is the source's own cluster. `committed` says, also after
    run() failed, whether the group has positions of this run committed."""

    def __init__(self, source: AdminSession, target: AdminSession | None, options: CopyOptions):
        self.source, self.target, self.options = source, target, options
        self.committed = False

    def run(self, *, stop: threading.Event | None = None, on_batch: Callable[[int, int | None], None] | None = None) -> CopyReport:
        """Setting `stop` ends the copy after the batch being written, its positions committed
        (stopped: interrupted). `on_batch(read, planned)` follows each batch, for a progress
        display."""
        source, target, options = self.source, self.target, self.options
        action = options.what
        if options.start.kind == COMMITTED and not options.group:
            raise UsageError(action=action, cause="{start} committed needs {group}")
        writer = source if target is None else target
        same_partitions = _check_topics(source, target, options)
        exactly_once = target is None and options.group is not None and has_transactions(source)
        tracker = _Tracker(options.track) if options.track else None
        transfer = Transfer(writer, action=action, partitioner=options.partitioner,
                            transactional_id=transactional_id(options.group, options.target) if exactly_once and options.group else None,
                            on_delivery=tracker.delivered if tracker else None)
        reading = Reading(source, ConsumeOptions(selectors=[options.source], start=options.start, end=options.end,
                                                 max_records=options.max_records, group=options.group, commit=False,
                                                 isolation="read_committed", assign=True), keep=options.where)
        per_partition: dict[int, tuple[int, int]] = {}
        pending: dict[Key, Committed] = {}
        size = 0
        started = time.monotonic()
        try:
            with reading:
                for batch in reading.batches(stop=stop, size=paced_batch(options.rate)):
                    for m in batch.records:
                        headers = m.headers()
                        if options.source_header:
                            headers = [*(headers or ()), (SOURCE_HEADER, f"{m.topic()}/{m.partition()}/{m.offset()}".encode())]
                        if tracker is not None:  # tracking needs the partitions kept: the source's is the target's
                            tracker.sent(m.partition(), m.offset())
                        transfer.send(options.target, m, headers, m.partition() if same_partitions else -1)
                        n, b = per_partition.get(m.partition(), (0, 0))
                        bytes_ = len(m.key() or b"") + len(m.value() or b"")
                        per_partition[m.partition()] = (n + 1, b + bytes_)
                        size += bytes_
                    transfer.poll()
                    pending.update((key, (offset, None)) for key, offset in batch.positions.items())
                    if on_batch is not None:
                        on_batch(reading.records + reading.filtered, reading.planned)
                    pace(options.rate, reading.records, started)
                    if transfer.due():
                        self._commit(transfer, reading, pending)
                self._commit(transfer, reading, pending)
        except BaseException:
            transfer.abandon()
            raise
        return CopyReport(
            source=options.source.topic, target=options.target, records=reading.records, bytes=size, filtered=reading.filtered,
            seconds=round(time.monotonic() - started, 3), guarantee=transfer.guarantee, placement="same" if same_partitions else "key",
            stopped=reading.stopped, source_header=options.source_header,
            partitions=tuple(PartitionCopied(partition=p, records=n, bytes=b) for p, (n, b) in sorted(per_partition.items())),
            tracked=dict(tracker.tracked) if tracker else {},
        )

    def _commit(self, transfer: Transfer, reading: Reading, pending: dict[Key, Committed]) -> None:
        transfer.commit(reading, pending, self.options.group)
        self.committed = self.committed or bool(pending and self.options.group)
        pending.clear()


def _check_topics(source: AdminSession, target: AdminSession | None, options: CopyOptions) -> bool:
    """Whether each record keeps its partition (both topics have as many, and all of
    SOURCE's are copied), once both topics are known to exist and to be two topics; one
    Metadata request on one cluster, one per cluster across two."""
    from kctl.admin.client.errors import missing_topic

    action, name, other = options.what, options.source.topic, options.target
    asked = [name] if target is not None else [name, other]
    found = source.kafka.metadata(asked, action, topic_ids=False)
    layout = found.topics.get(name)
    if layout is None or not layout.partitions:
        raise missing_topic(name, layout.error if layout is not None else None, action, named=other != name)
    there = found if target is None else target.kafka.metadata([other], action, topic_ids=False)
    copy_layout = there.topics.get(other)
    if other == name and (target is None or _same_cluster(found.cluster_id, there.cluster_id, source, target)):
        raise UsageError(action=action, cause=f"SOURCE and TARGET are the same topic of the same cluster ({_cluster(found.cluster_id)}): "
                                              "every record would be written to it again")
    if copy_layout is None or not copy_layout.partitions:
        raise missing_topic(other, copy_layout.error if copy_layout is not None else None, action, named=True,
                            hint="create it first (kctl topic create, or kctl topic clone for the same layout)")
    return len(layout.partitions) == len(copy_layout.partitions) and not options.source.ranges


def _same_cluster(one: str | None, other: str | None, source: AdminSession, target: AdminSession) -> bool:
    if one is not None and other is not None:
        return one == other
    # No cluster id in the answers (a cluster too old to say): the same bootstrap servers.
    return set((source.settings.bootstrap_servers or "").split(",")) == set((target.settings.bootstrap_servers or "").split(","))


def _cluster(cluster_id: str | None) -> str:
    return f"cluster id {cluster_id}" if cluster_id else "the same bootstrap servers"


class _Tracker:
    """Where tracked source offsets landed in the target (CopyOptions.track): the source
    offsets of the records in flight per partition, in the order sent (librdkafka reports
    the deliveries of a partition in that order), and the tracked offsets still waiting
    for a record at or after them."""

    def __init__(self, track: dict[int, tuple[int, ...]]):
        self.in_flight: dict[int, deque[int]] = {}
        self.waiting = {p: list(offsets) for p, offsets in track.items()}
        self.tracked: dict[tuple[int, int], int] = {}

    def sent(self, partition: int, offset: int) -> None:
        self.in_flight.setdefault(partition, deque()).append(offset)

    def delivered(self, error: Any, message: Any) -> None:
        if message is None:
            return
        sent = self.in_flight.get(message.partition())
        source = sent.popleft() if sent else None
        waiting = self.waiting.get(message.partition())
        while error is None and source is not None and waiting and waiting[0] <= source:
            self.tracked[(message.partition(), waiting.pop(0))] = message.offset()

