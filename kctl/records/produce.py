"""Producing records read from a stream, with every failure accounted for.

Delivery reports are asked for failures only (`delivery.report.only.error`): a callback
per record would cost more than producing it. A record is therefore counted as written
when flush() has returned with nothing outstanding and no failure was reported for it.
The first failure stops reading input; what was already queued is still flushed and
counted, and the error says how far the input got.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from kctl.admin.client.errors import describe, error_class, error_class_named, error_of, kafka_name
from kctl.admin.client.kafka import DeliveryFailure, TopicLayout
from kctl.admin.client.session import AdminSession, build_client
from kctl.errors import ExitCode, InvalidError, KctlError, NotFoundError, PartialFailure, UsageError
from kctl.records.model import ANY_PARTITION, ProducerRecord, RecordError
from kctl.values import Value

TYPE_CHECKING = False  # typing is not imported at run time: a one-line produce does without it
if TYPE_CHECKING:
    import tempfile
    from typing import Any, Protocol

    from confluent_kafka import KafkaError

    class RecordProducer(Protocol):
        """What produce() writes with: confluent_kafka's Producer, or kctl's WireProducer
        for a small input (kctl.admin.client.wire_producer)."""

        def produce(self, topic: str, value: bytes | None = ..., key: bytes | None = ..., partition: int = ..., *,
                    timestamp: int = ..., headers: list[tuple[str, bytes | None]] | None = ...) -> None: ...
        def poll(self, timeout: float, /) -> int: ...
        def flush(self, timeout: float, /) -> int: ...
        def __len__(self) -> int: ...

    class DeliveredRecord(Protocol):
        """The record librdkafka's delivery callback names (a confluent_kafka.Message, which
        has its partition once produced)."""

        def partition(self) -> int: ...
        def value(self) -> bytes | None: ...

# What the CLI reads ahead of producing, to learn whether the input is small and complete.
READ_AHEAD_BYTES = 64 * 1024
# Undeliverable records fail after this long instead of librdkafka's five minutes, so an
# outage mid-run ends the command with an error rather than a hang.
DEFAULT_MESSAGE_TIMEOUT_MS = 30_000
# Headroom above the topic's max.message.bytes for the record batch framing.
_BATCH_OVERHEAD = 1024
_POLL_EVERY = 4096


class ProduceOptions(Value):
    """How to produce (a kctl.values.Value: dataclasses cost a one-line produce ~5 ms).

    idempotence None: on when acks is all, as Kafka's own producer does since 3.0.
    partition, key, headers, timestamp: applied to every record (a fixed partition, extra
    headers, a timestamp, and a key for records that have none). null_marker: lines equal
    to it are sent with a null value (tombstones), in the plain format.
    allow_auto_topic_creation: a missing topic is created by the broker if its
    auto.create.topics.enable allows it (rpk's --allow-auto-topic-creation); otherwise a
    missing topic is an error. check_partitions_first: read the whole input first and
    refuse it, writing nothing, when a record names a partition the topic does not have
    (--keep-partitions). partitioner: where keyed records go, murmur2 (Java's producers)
    or consistent (librdkafka's default), kctl.partitioner.
    """

    __slots__ = ("topic", "acks", "idempotence", "compression", "partition", "key", "headers", "timestamp", "null_marker",
                 "skip_invalid", "allow_auto_topic_creation", "check_partitions_first", "partitioner")

    def __init__(self, *, topic: str, acks: str = "all", idempotence: bool | None = None, compression: str = "none",
                 partition: int | None = None, key: bytes | None = None, headers: tuple[tuple[str, bytes | None], ...] = (),
                 timestamp: int | None = None, null_marker: bytes | None = None, skip_invalid: bool = False,
                 allow_auto_topic_creation: bool = False, check_partitions_first: bool = False, partitioner: str = "murmur2"):
        self.topic = topic
        self.acks = acks
        self.idempotence = idempotence
        self.compression = compression
        self.partition = partition
        self.key = key
        self.headers = headers
        self.timestamp = timestamp
        self.null_marker = null_marker
        self.skip_invalid = skip_invalid
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.check_partitions_first = check_partitions_first
        self.partitioner = partitioner


class ProduceReport(Value):
    """records: what the brokers acknowledged (with acks=0: records sent); bytes: key and
    value bytes of the records sent; skipped: input records skipped as unreadable
    (--skip-invalid)."""

    __slots__ = ("topic", "records", "bytes", "failed", "skipped", "seconds")

    def __init__(self, *, topic: str, records: int, bytes: int, failed: int, skipped: int, seconds: float):
        self.topic = topic
        self.records = records
        self.bytes = bytes
        self.failed = failed
        self.skipped = skipped
        self.seconds = seconds


def producer_config(session: AdminSession, options: ProduceOptions, max_message_bytes: int | None) -> dict[str, object]:
    acks = {"-1": "all", "all": "all", "1": "1", "0": "0"}[options.acks]
    idempotence = options.idempotence
    if idempotence and acks != "all":
        raise UsageError(action="produce", cause=f"{{idempotent}} needs {{acks}} all, not {options.acks}")
    if idempotence is None:
        idempotence = acks == "all"
    from kctl.partitioner import PARTITIONERS

    config: dict[str, object] = {
        "message.timeout.ms": DEFAULT_MESSAGE_TIMEOUT_MS,
        "linger.ms": 5,
        "allow.auto.create.topics": "false",
        "partitioner": PARTITIONERS[options.partitioner],
    }
    if max_message_bytes is not None:
        config["message.max.bytes"] = max(1_000_000, max_message_bytes + _BATCH_OVERHEAD)
    config.update(session.client_config())
    config.update(
        {
            "acks": acks,
            "enable.idempotence": "true" if idempotence else "false",
            "compression.type": options.compression,
            "delivery.report.only.error": True,
        }
    )
    return config


def _defaults(options: ProduceOptions) -> bool:
    """Whether the options are what kctl's own producer gives (wire_producer): the default
    acks=all with idempotence, no compression, and the topic not to be created."""
    return options.acks in ("all", "-1") and options.idempotence is not False and options.compression == "none" \
        and not options.allow_auto_topic_creation


def _layout(session: AdminSession, topic: str, action: str) -> TopicLayout:
    """The topic's partitions and their leaders, from a Metadata request that never
    creates it (asked again for up to NEW_TOPIC_GRACE: a topic a script has just created
    may not be known yet to the broker asked)."""
    found = session.metadata(action, [topic]).topics.get(topic)
    if found is None or not found.partitions:
        from kctl.admin.client.errors import missing_topic

        raise missing_topic(topic, found.error if found is not None else None, action,
                            hint=f"create it first (kctl topic create {topic}), or let the broker create it: {{allow_auto_topic_creation}}")
    return found


def _topic_limits(session: AdminSession, topic: str, auto_create: bool) -> tuple[int, int | None]:
    """(partition count, max.message.bytes or None when it cannot be read)."""
    metadata = session.metadata(f"produce to {topic}", [] if auto_create else [topic])
    found = metadata.topics.get(topic)
    if (found is None or not found.partitions) and auto_create:
        found = session.kafka.auto_create(topic, f"produce to {topic}")
    if found is None or not found.partitions:
        from kctl.admin.client.errors import missing_topic

        hint = (f"the cluster did not create it (auto.create.topics.enable=false?): kctl topic create {topic}" if auto_create
                else f"create it first (kctl topic create {topic}), or let the broker create it: {{allow_auto_topic_creation}}")
        raise missing_topic(topic, found.error if found is not None else None, f"produce to {topic}", hint=hint)
    from kctl.admin.topics.configs import describe_configs

    try:
        configs, _errors = describe_configs(session, "topic", [topic], keys=["max.message.bytes"])
    except KctlError:
        return len(found.partitions), None  # not authorised to read configs: librdkafka's default
    values = [c.value for r in configs for c in r.configs if c.value]
    return len(found.partitions), (int(values[0]) if values and values[0].isdigit() else None)


class _Failures:
    """The records a producer could not deliver (its callback reports only those): how
    many, and the first one's DeliveryFailure."""

    def __init__(self) -> None:
        self.count = 0
        self.first: DeliveryFailure | None = None

    def __call__(self, failure: DeliveryFailure) -> None:
        self.count += 1
        if self.first is None:
            self.first = failure

    def librdkafka(self, error: KafkaError | None, message: DeliveredRecord) -> None:
        """librdkafka's delivery callback: its error, in Kafka's names."""
        if error is not None:
            text = describe(error).removeprefix(kafka_name(error)).removeprefix(": ")
            self(DeliveryFailure(kafka_name(error), text, message.partition(), len(message.value() or b"")))


def produce(
    session: AdminSession,
    options: ProduceOptions,
    chunks: Iterable[Sequence[bytes]],
    parse: Callable[[bytes], ProducerRecord | None] | None = None,
    on_skip: Callable[[int, str], None] = lambda line, reason: None,
    input_complete: bool = False,
) -> ProduceReport:
    """Produce one record per input item: the item is the value (plain), or `parse` turns
    it into a ProducerRecord (None skips it, as a blank JSON line). Raises a KctlError
    naming the input line when a record is invalid or was not delivered.

    `input_complete` says the input is in memory and at most READ_AHEAD_BYTES: with the
    default settings it is then sent by kctl's own idempotent producer
    (kctl.records.wire_produce), which has no producer-id timer to wait for."""
    topic = options.topic
    failures = _Failures()
    producer: RecordProducer | None = None
    if input_complete and _defaults(options):
        layout = _layout(session, topic, f"produce to {topic}")
        partitions = len(layout.partitions)
        producer = session.kafka.small_input_producer(layout, failures, DEFAULT_MESSAGE_TIMEOUT_MS / 1000, options.partitioner)
    if producer is None:
        from confluent_kafka import Producer

        partitions, max_bytes = _topic_limits(session, topic, options.allow_auto_topic_creation)
        config = producer_config(session, options, max_bytes)
        config["on_delivery"] = failures.librdkafka
    if options.check_partitions_first:
        chunks = _checked_partitions(topic, chunks, parse, partitions)
    if options.partition is not None and not 0 <= options.partition < partitions:
        raise NotFoundError(action=f"produce to {topic}", cause=f"partition {options.partition} does not exist (the topic has {partitions})")
    if producer is None:
        producer = build_client(Producer, config, "producer")

    state = _State()
    started = time.monotonic()
    stop: KctlError | None = None
    try:
        if parse is None and options.partition is None and not options.headers and options.timestamp is None and options.key is None:
            stop = _produce_plain(producer, topic, chunks, options.null_marker, failures, state)
        else:
            stop = _produce_records(producer, topic, chunks, parse, options, partitions, failures, state, on_skip)
    except KeyboardInterrupt:
        stop = KctlError(action=f"produce to {topic}", cause="interrupted", exit_code=ExitCode.INTERRUPTED)
    finally:
        outstanding = _flush(producer, session)
    seconds = time.monotonic() - started
    written = state.queued - failures.count - outstanding
    report = ProduceReport(
        topic=topic, records=written, bytes=state.bytes, failed=failures.count + outstanding,
        skipped=state.skipped, seconds=seconds,
    )
    if failures.count or outstanding:
        raise _delivery_error(report, failures, state.line)
    if stop is not None:
        if stop.exit_code == ExitCode.INTERRUPTED:
            raise stop.but(hint=f"{written} record(s) were written")
        # a line that could not be read or sent
        raise stop.but(hint=f"{written} record(s) before it were written" + (f"; {stop.hint}" if stop.hint else ""))
    return report


def _checked_partitions(topic: str, chunks: Iterable[Sequence[bytes]], parse: Callable[[bytes], ProducerRecord | None] | None,
                        partitions: int) -> Iterable[Sequence[bytes]]:
    """All of the input, read before anything is written: refused when a record names a
    partition the topic lacks. Kept in a spooled temporary file (memory up to 64 MiB)."""
    import struct
    import tempfile

    spool = tempfile.SpooledTemporaryFile(max_size=64 << 20)
    highest, where = -1, 0
    line = 0
    for chunk in chunks:
        for item in chunk:
            line += 1
            try:
                record = parse(item) if parse is not None else None
            except RecordError:
                record = None  # reported where it is produced, with --skip-invalid honoured
            if record is not None and record.partition > highest:
                highest, where = record.partition, line
            spool.write(struct.pack(">I", len(item)))
            spool.write(item)
    if highest >= partitions:
        spool.close()
        raise InvalidError(
            action=f"produce to {topic}", cause=f"line {where}: partition {highest} does not exist (the topic has {partitions}); nothing was written",
            hint="give the topic as many partitions as the source, or leave out {keep_partitions} to partition by key")
    return _unspooled(spool)


def _unspooled(spool: tempfile.SpooledTemporaryFile[bytes]) -> Iterator[list[bytes]]:
    import struct

    spool.seek(0)
    with spool:
        chunk: list[bytes] = []
        while head := spool.read(4):
            chunk.append(spool.read(struct.unpack(">I", head)[0]))
            if len(chunk) == 1000:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


class _State:
    __slots__ = ("queued", "bytes", "line", "skipped")

    def __init__(self) -> None:
        self.queued = 0
        self.bytes = 0
        self.line = 0
        self.skipped = 0


def _queue(producer: RecordProducer, *args: Any, **kwargs: Any) -> None:
    """producer.produce once librdkafka's queue has room again (the loops try first
    without this extra call per record)."""
    while True:
        producer.poll(0.05)
        try:
            producer.produce(*args, **kwargs)
            return
        except BufferError:
            pass


def _local_errors(producer: RecordProducer) -> tuple[type[BaseException], ...]:
    """What producer.produce raises for a record it refuses before sending it."""
    if hasattr(producer, "local_errors"):
        return producer.local_errors
    from confluent_kafka import KafkaException

    return (KafkaException,)


def _produce_plain(producer: RecordProducer, topic: str, chunks: Iterable[Sequence[bytes]], null_marker: bytes | None,
                   failures: _Failures, state: _State) -> KctlError | None:
    """The hot path: every input item is a value, nothing else is set."""
    local_errors = _local_errors(producer)
    produce = producer.produce
    value: bytes | None
    for chunk in chunks:
        for value in chunk:
            state.line += 1
            if value == null_marker:
                value = None
            try:
                produce(topic, value)
            except BufferError:
                _queue(producer, topic, value)
            except local_errors as exc:
                return _local_error(exc, topic, state.line)
            state.queued += 1
            state.bytes += len(value) if value is not None else 0
        producer.poll(0)
        if failures.count:
            return None
    return None


def _produce_records(producer: RecordProducer, topic: str, chunks: Iterable[Sequence[bytes]],
                     parse: Callable[[bytes], ProducerRecord | None] | None, options: ProduceOptions, partitions: int,
                     failures: _Failures, state: _State, on_skip: Callable[[int, str], None]) -> KctlError | None:
    local_errors = _local_errors(producer)
    produce = producer.produce
    fixed_headers = list(options.headers)
    null_marker = options.null_marker
    for chunk in chunks:
        for item in chunk:
            state.line += 1
            try:
                record = parse(item) if parse is not None else ProducerRecord(None if item == null_marker else item)
                if record is None:
                    continue
                value, key, partition, timestamp, headers = record
                if options.partition is not None:
                    partition = options.partition
                elif partition != ANY_PARTITION and partition >= partitions:
                    raise RecordError(f"partition {partition} does not exist (the topic has {partitions})")
                if key is None and options.key is not None:
                    key = options.key
                if options.timestamp is not None and not timestamp:
                    timestamp = options.timestamp
                if fixed_headers:
                    headers = fixed_headers + (headers or [])
            except RecordError as exc:
                if options.skip_invalid:
                    state.skipped += 1
                    on_skip(state.line, str(exc))
                    continue
                return InvalidError(
                    action=f"produce to {topic}", cause=f"line {state.line}: {exc}",
                    hint="{skip_invalid} skips such lines",
                )
            try:
                produce(topic, value, key, partition, timestamp=timestamp, headers=headers)
            except BufferError:
                _queue(producer, topic, value, key, partition, timestamp=timestamp, headers=headers)
            except local_errors as exc:
                return _local_error(exc, topic, state.line)
            state.queued += 1
            state.bytes += (len(value) if value is not None else 0) + (len(key) if key is not None else 0)
            if state.queued % _POLL_EVERY == 0:
                producer.poll(0)
        producer.poll(0)
        if failures.count:
            return None
    return None


def _local_error(exc: BaseException, topic: str, line: int) -> KctlError:
    """A record librdkafka refused before sending it (too large, unknown partition)."""
    error = error_of(exc)
    if error is None:
        return KctlError(action=f"produce to {topic}", cause=f"line {line}: {exc}")
    kind = InvalidError if error.name() in ("MSG_SIZE_TOO_LARGE", "_UNKNOWN_PARTITION", "_INVALID_ARG") else error_class(error)
    return kind(action=f"produce to {topic}", cause=f"line {line}: {describe(error)}", kafka_error=kafka_name(error))


def _flush(producer: RecordProducer, session: AdminSession) -> int:
    """Wait for every queued record's fate; the number still undecided (0 normally)."""
    deadline = time.monotonic() + DEFAULT_MESSAGE_TIMEOUT_MS / 1000 + session.timeout
    remaining = len(producer)
    while remaining and time.monotonic() < deadline:
        remaining = producer.flush(0.5)
    return remaining


def _delivery_error(report: ProduceReport, failures: _Failures, line: int) -> KctlError:
    total = report.records + report.failed
    first = failures.first
    cause = (f"{first.error}: {first.message} (partition {first.partition}, value of {first.value_size} bytes)" if first
             else f"no answer within {DEFAULT_MESSAGE_TIMEOUT_MS // 1000}s")
    kind = error_class_named(first.error) if first is not None else KctlError
    if report.records and kind is KctlError:
        kind = PartialFailure
    return kind(action=f"produce to {report.topic}", cause=f"{report.failed} of {total} record(s) not delivered: {cause}",
                hint=f"{report.records} record(s) were written; input stopped after line {line}",
                kafka_error=first.error if first is not None else None)
