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

A redrive (`record redrive`) is a copy whose target is each record's own: the topic a
header names (Kafka Connect's and Spring's dead-letter headers by default), placed by key,
optionally without the error headers. A record without such a header, or naming a topic
that does not exist (unless topics may be created), is counted and not sent. Its group is
kept by default, so a second run sends nothing again.
"""

from __future__ import annotations

import time
from collections import deque
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


# The headers dead-letter queues name a record's original topic with: Kafka Connect's
# (errors.deadletterqueue.context.headers.enable) and Spring Kafka's DeadLetterPublishingRecoverer.
DLQ_TOPIC_HEADERS = ("__connect.errors.topic", "kafka_dlt-original-topic")
# Headers a redrive strips with --strip-error-headers: those writers' error context.
ERROR_HEADER_PREFIXES = ("__connect.errors.", "kafka_dlt-")


@dataclass(frozen=True, kw_only=True)
class CopyOptions:
    source: PartitionSelector
    # The target topic; None routes each record to the topic its header names (a redrive).
    target: str | None
    start: Position
    end: Position | None
    group: str | None = None
    where: Callable[[Any], bool] | None = None
    limit: int | None = None
    # Records per second, at most.
    rate: float | None = None
    partitioner: str = "murmur2"
    # A redrive: the headers naming each record's topic (the first present wins), whether
    # the error headers are dropped and missing topics created; a dry run only counts.
    route_headers: tuple[str, ...] = DLQ_TOPIC_HEADERS
    strip_error_headers: bool = False
    create_topics: bool = False
    dry_run: bool = False
    # Source offsets (per partition) whose place in the target is wanted (topic clone's
    # group offsets): the target offset of the first record copied at or after each.
    track: dict[int, tuple[int, ...]] = field(default_factory=dict)

    @property
    def what(self) -> str:
        return f"copy {self.source.topic} to {self.target}" if self.target else f"redrive {self.source.topic}"


@dataclass(frozen=True, kw_only=True)
class PartitionCopied:
    partition: int
    records: int
    bytes: int


@dataclass(frozen=True, kw_only=True)
class TopicRedriven:
    topic: str
    records: int
    # sent | would-send (a dry run) | no-such-topic (the header names a topic that does not
    # exist: nothing sent)
    status: str = "sent"


@dataclass(frozen=True, kw_only=True)
class CopyReport:
    source: str
    # The target topic; null for a redrive (see topics).
    target: str | None
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
    # A redrive: the records per target topic, and those with no topic header.
    topics: tuple[TopicRedriven, ...] = field(default_factory=tuple)
    without_topic: int = 0
    dry_run: bool = False
    # CopyOptions.track's answers: {(partition, source offset): target offset}; a tracked
    # offset past the last record copied is not here (its place is the target's end).
    tracked: dict[tuple[int, int], int] = field(default_factory=dict)


def transactional_id(group: str, target: str | None) -> str:
    """The same for every run of one copy: the rerun fences and aborts what a killed run left."""
    return f"kctl-copy-{group}-{target}" if target else f"kctl-redrive-{group}"


def copy(source: AdminSession, target: AdminSession | None, options: CopyOptions,
         on_batch: Callable[[int, int | None], None] | None = None) -> CopyReport:
    """Copy as the module docstring says; `target` None is the source's own cluster."""
    from confluent_kafka import Producer

    from kctl.partitioner import PARTITIONERS
    from kctl.records.consume import ConsumeOptions, consume

    same_cluster = target is None
    writer = source if target is None else target
    action = options.what
    if options.start.kind == COMMITTED and not options.group:
        raise UsageError(f"unable to {action}: --from committed needs --group")
    same_partitions = False
    if options.target is not None:
        layout = writer.metadata(action, [options.target]).topics.get(options.target)
        if layout is None or not layout.partitions:
            from kctl.admin.client.errors import missing_topic

            raise missing_topic(options.target, layout.error if layout is not None else None, action,
                                hint="create it first (kctl topic create, or kctl topic clone for the same layout)")
        source_layout = source.metadata(action, [options.source.topic]).topics.get(options.source.topic)
        same_partitions = source_layout is not None and len(source_layout.partitions) == len(layout.partitions) \
            and not options.source.ranges
    exactly_once = same_cluster and options.group is not None and _END_TXN in source.api_versions and not options.dry_run
    config: dict[str, Any] = {"linger.ms": 5, "partitioner": PARTITIONERS[options.partitioner],
                              "message.timeout.ms": int(max(30, writer.timeout) * 1000)}
    config.update(writer.client_config())
    config.update({"acks": "all", "enable.idempotence": "true"})
    if exactly_once:
        config["transactional.id"] = transactional_id(options.group or "", options.target)
    state = _State(options, same_partitions, exactly_once, writer)
    config["on_delivery"] = state.delivered
    producer = state.producer = None if options.dry_run else build_client(Producer, config, "producer")
    if exactly_once and producer is not None:
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
        topics=tuple(TopicRedriven(topic=t, records=n, status=("would-send" if options.dry_run else "sent")
                                   if state.exists.get(t, True) else "no-such-topic")
                     for t, n in sorted(state.per_topic.items())) if options.target is None else (),
        without_topic=state.without_topic, dry_run=options.dry_run, tracked=dict(state.tracked),
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

    def __init__(self, options: CopyOptions, same_partitions: bool, exactly_once: bool, writer: AdminSession):
        self.options = options
        self.writer = writer
        # A redrive: records per target topic, whether each exists, and those without one.
        self.per_topic: dict[str, int] = {}
        self.exists: dict[str, bool] = {}
        self.without_topic = 0
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
        # Tracking (options.track): the source offsets of the records in flight per target
        # partition, in the order sent (librdkafka reports deliveries of a partition in
        # that order), and the tracked offsets still waiting for a record.
        self.in_flight: dict[int, deque[int]] = {}
        self.waiting = {p: list(offsets) for p, offsets in options.track.items()}
        self.tracked: dict[tuple[int, int], int] = {}
        self.action = options.what

    def delivered(self, error: Any, message: Any) -> None:
        if error is not None and self.failure is None:
            self.failure = f"{error.name()}: {error.str()}"
        if self.waiting and message is not None:
            sent = self.in_flight.get(message.partition())
            source = sent.popleft() if sent else None
            waiting = self.waiting.get(message.partition())
            while error is None and source is not None and waiting and waiting[0] <= source:
                self.tracked[(message.partition(), waiting.pop(0))] = message.offset()

    def route(self, headers: list | None) -> str | None:
        """A redrive's target: the topic the first routing header names, if it exists (or
        may be created); None counts the record as not sent."""
        found = dict(headers or ())
        name = next((found[h] for h in self.options.route_headers if found.get(h)), None)
        if name is None:
            self.without_topic += 1
            return None
        topic = name.decode("utf-8", "replace")
        self.per_topic[topic] = self.per_topic.get(topic, 0) + 1
        if topic not in self.exists:
            self.exists[topic] = self._exists(topic)
        return topic if self.exists[topic] else None

    def _exists(self, topic: str) -> bool:
        layout = self.writer.metadata(self.action, [topic]).topics.get(topic)
        if layout is not None and layout.partitions:
            return True
        if not self.options.create_topics or self.options.dry_run:
            return False
        from kctl.admin.topics.topics import NewTopicSpec, create_topics

        _created, errors = create_topics(self.writer, [NewTopicSpec(name=topic, partitions=None, replication_factor=None, config={},
                                                                     replica_assignment=None)], if_not_exists=True)
        if errors:
            raise next(iter(errors.values()))
        return True

    def write(self, messages: list) -> None:
        producer, target = self.producer, self.options.target
        if producer is not None and self.exactly_once and not self.in_transaction:
            _transaction(self.action, producer.begin_transaction)
            self.in_transaction = True
        for m in messages:
            key, value = m.key(), m.value()
            headers = m.headers()
            destination = target or self.route(headers)
            if destination is None or producer is None:
                continue
            if self.options.strip_error_headers:
                headers = [(k, v) for k, v in headers or () if not k.startswith(ERROR_HEADER_PREFIXES)] or None
            if not self.exactly_once:
                headers = [*(headers or ()), (SOURCE_HEADER, f"{m.topic()}/{m.partition()}/{m.offset()}".encode())]
            partition = m.partition() if self.same_partitions else -1
            if self.waiting:  # tracking needs the partitions kept: the source's is the target's
                self.in_flight.setdefault(m.partition(), deque()).append(m.offset())
            kind, timestamp = m.timestamp()
            while True:
                try:
                    producer.produce(destination, value=value, key=key, partition=partition,
                                     timestamp=timestamp if kind else 0, headers=headers)
                    break
                except BufferError:
                    producer.poll(0.05)
            size = len(key or b"") + len(value or b"")
            self.records += 1
            self.bytes += size
            n, b = self.per_partition.get(m.partition(), (0, 0))
            self.per_partition[m.partition()] = (n + 1, b + size)
        if producer is not None:
            producer.poll(0)
        if self.options.rate:
            ahead = self.records / self.options.rate - (time.monotonic() - self.started)
            if ahead > 0:
                time.sleep(ahead)

    def after_batch(self, consumer: Any, positions: dict[tuple[str, int], int]) -> None:
        if self.producer is None:
            return
        self.pending.update(positions)
        if self.metadata is None:
            self.metadata = consumer.consumer_group_metadata()
        if time.monotonic() - self.since >= COMMIT_SECONDS:
            self.commit(consumer)

    def finish(self, consumer: Any) -> None:
        if self.producer is None:  # a dry run: nothing to commit
            return
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
