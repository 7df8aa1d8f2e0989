"""`kctl record copy`: records from one topic to another, on the same cluster or another.

Each record keeps its key, value, headers and timestamp. It keeps its partition when both
topics have as many partitions; otherwise it goes where its key maps to (murmur2, as Java
producers place keys, or librdkafka's consistent partitioner), a record without a key to
any partition.

Reading is `record consume`'s (kctl.records.consume: positions, bounds, --where), the
partitions assigned directly: the copy's group, when one is given, only keeps the offsets
a rerun goes on from, with no member a rerun after a crash would wait for (two copies of
one group at once fence each other through their transactional id). How the offsets are committed decides what a failure costs:

- exactly-once, on one Kafka cluster with a group: the records and the group's offsets
  are written in one transaction (send_offsets_to_transaction), a transaction about every
  half second. A killed copy leaves an open transaction that the rerun aborts: its
  transactional id is the same for every run of one copy (derived from the group and the
  target topic), and init_transactions runs before the group's offsets are read, which
  the killed run's pending offsets would otherwise hold back until they time out.
- at-least-once, across clusters (or on a cluster without transactions): the producer is
  flushed before the offsets of what it wrote are committed, so a failure can write some
  records twice, never lose one; each record carries a `kctl-copy-source` header
  (topic/partition/offset in the source) by which duplicates are found.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kctl.admin.client.session import AdminSession, build_client
from kctl.admin.topics.offsets import PartitionSelector
from kctl.errors import ExitCode, KctlError, UsageError
from kctl.records.position import COMMITTED, Position

SOURCE_HEADER = "kctl-copy-source"
# How long a transaction (or, at least once, an uncommitted stretch) may grow.
COMMIT_SECONDS = 0.5
_END_TXN = 26  # EndTxn's API key: a cluster without it has no transactions


@dataclass(frozen=True, kw_only=True)
class CopyOptions:
    source: PartitionSelector
    target: str
    start: Position
    end: Position | None
    group: str | None = None
    where: Callable[[Any], bool] | None = None
    limit: int | None = None
    # Records per second, at most.
    rate: float | None = None
    partitioner: str = "murmur2"


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
    stopped: str
    partitions: tuple[PartitionCopied, ...] = field(default_factory=tuple)


def transactional_id(group: str, target: str) -> str:
    """The same for every run of one copy: the rerun fences and aborts what a killed run left."""
    return f"kctl-copy-{group}-{target}"


def copy(source: AdminSession, target: AdminSession | None, options: CopyOptions,
         on_batch: Callable[[int, int | None], None] | None = None) -> CopyReport:
    """Copy as the module docstring says; `target` None is the source's own cluster."""
    from confluent_kafka import Producer

    from kctl.records.consume import ConsumeOptions, consume
    from kctl.partitioner import PARTITIONERS

    same_cluster = target is None
    writer = source if target is None else target
    action = f"copy {options.source.topic} to {options.target}"
    if options.start.kind == COMMITTED and not options.group:
        raise UsageError(f"unable to {action}: --from committed needs --group")
    layout = writer.metadata(action, [options.target]).topics.get(options.target)
    if layout is None or not layout.partitions:
        from kctl.admin.client.errors import missing_topic

        raise missing_topic(options.target, layout.error if layout is not None else None, action,
                            hint="create it first (kctl topic create, or kctl topic clone for the same layout)")
    source_layout = source.metadata(action, [options.source.topic]).topics.get(options.source.topic)
    same_partitions = source_layout is not None and len(source_layout.partitions) == len(layout.partitions) \
        and not options.source.ranges
    exactly_once = same_cluster and options.group is not None and _END_TXN in source.api_versions
    config: dict[str, Any] = {"linger.ms": 5, "partitioner": PARTITIONERS[options.partitioner],
                              "message.timeout.ms": int(max(30, writer.timeout) * 1000)}
    config.update(writer.client_config())
    config.update({"acks": "all", "enable.idempotence": "true"})
    if exactly_once:
        config["transactional.id"] = transactional_id(options.group or "", options.target)
    state = _State(options, same_partitions, exactly_once)
    config["on_delivery"] = state.delivered
    producer = state.producer = build_client(Producer, config, "producer")
    if exactly_once:
        # Before the group's offsets are read: it aborts what a killed run left open.
        _transaction(action, lambda: producer.init_transactions(writer.timeout))
    consume_options = ConsumeOptions(selectors=[options.source], start=options.start, end=options.end, follow=False,
                                     max_records=options.limit, group=options.group, commit=False,
                                     isolation="read_committed", assign=True)
    started = time.monotonic()
    try:
        report = consume(source, consume_options, state.write, options.where, on_batch=on_batch,
                         after_sink=state.after_batch, before_close=state.finish)
    except BaseException:
        state.abandon()
        raise
    return CopyReport(
        source=options.source.topic, target=options.target, records=state.records, bytes=state.bytes,
        filtered=report.filtered, seconds=time.monotonic() - started,
        guarantee="exactly-once" if exactly_once else "at-least-once", placement="same" if same_partitions else "key",
        stopped=report.stopped,
        partitions=tuple(PartitionCopied(partition=p, records=n, bytes=b) for p, (n, b) in sorted(state.per_partition.items())),
    )


def _transaction(action: str, call: Callable[[], Any]) -> Any:
    from confluent_kafka import KafkaException

    try:
        return call()
    except KafkaException as exc:
        error = exc.args[0]
        raise KctlError(f"unable to {action}: {error.name()}: {error.str()}") from None


class _State:
    """What one copy has written, and the positions waiting to be committed with it."""

    def __init__(self, options: CopyOptions, same_partitions: bool, exactly_once: bool):
        self.options = options
        self.same_partitions = same_partitions
        self.exactly_once = exactly_once
        self.producer: Any = None
        self.records = self.bytes = 0
        self.per_partition: dict[int, tuple[int, int]] = {}
        self.pending: dict[tuple[str, int], int] = {}
        self.metadata: Any = None
        self.in_transaction = False
        self.since = time.monotonic()
        self.failure: str | None = None
        self.started = time.monotonic()
        self.action = f"copy {options.source.topic} to {options.target}"

    def delivered(self, error: Any, _message: Any) -> None:
        if error is not None and self.failure is None:
            self.failure = f"{error.name()}: {error.str()}"

    def write(self, messages: list) -> None:
        producer, target = self.producer, self.options.target
        if self.exactly_once and not self.in_transaction:
            _transaction(self.action, producer.begin_transaction)
            self.in_transaction = True
        for m in messages:
            key, value = m.key(), m.value()
            headers = m.headers()
            if not self.exactly_once:
                headers = [*(headers or ()), (SOURCE_HEADER, f"{m.topic()}/{m.partition()}/{m.offset()}".encode())]
            partition = m.partition() if self.same_partitions else -1
            kind, timestamp = m.timestamp()
            while True:
                try:
                    producer.produce(target, value=value, key=key, partition=partition,
                                     timestamp=timestamp if kind else 0, headers=headers)
                    break
                except BufferError:
                    producer.poll(0.05)
            size = len(key or b"") + len(value or b"")
            self.records += 1
            self.bytes += size
            n, b = self.per_partition.get(m.partition(), (0, 0))
            self.per_partition[m.partition()] = (n + 1, b + size)
        producer.poll(0)
        if self.options.rate:
            ahead = self.records / self.options.rate - (time.monotonic() - self.started)
            if ahead > 0:
                time.sleep(ahead)

    def after_batch(self, consumer: Any, positions: dict[tuple[str, int], int]) -> None:
        self.pending.update(positions)
        if self.metadata is None:
            self.metadata = consumer.consumer_group_metadata()
        if time.monotonic() - self.since >= COMMIT_SECONDS:
            self.commit(consumer)

    def finish(self, consumer: Any) -> None:
        if self.metadata is None and self.options.group:
            self.metadata = consumer.consumer_group_metadata()
        self.commit(consumer)

    def commit(self, consumer: Any) -> None:
        """Make what was written durable with the positions after it."""
        from confluent_kafka import TopicPartition

        self.since = time.monotonic()
        offsets = [TopicPartition(t, p, o) for (t, p), o in self.pending.items()]
        producer = self.producer
        if self.exactly_once:
            if not self.in_transaction and offsets:
                _transaction(self.action, producer.begin_transaction)
                self.in_transaction = True
            if not self.in_transaction:
                return
            if offsets:
                _transaction(self.action, lambda: producer.send_offsets_to_transaction(offsets, self.metadata, 30))
            _transaction(self.action, lambda: producer.commit_transaction(30))
            self.in_transaction = False
            self.pending.clear()
            return
        remaining = producer.flush(30)
        if self.failure is not None or remaining:
            why = self.failure or f"{remaining} record(s) not acknowledged"
            raise KctlError(f"unable to {self.action}: {why}", exit_code=ExitCode.PARTIAL_FAILURE,
                            hint="what was acknowledged is committed; a rerun with the same {group} goes on from there")
        if offsets and self.options.group:
            consumer.commit(offsets=offsets, asynchronous=False)
        self.pending.clear()

    def abandon(self) -> None:
        """A failure: an open transaction is aborted (nothing of it is read committed)."""
        if self.exactly_once and self.in_transaction:
            try:
                self.producer.abort_transaction(10)
            except Exception:  # noqa: BLE001 - the failure being raised says what went wrong
                pass
