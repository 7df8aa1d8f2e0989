"""The `kctl_kafka` sink: write a DataFrame's records to a topic, as `kctl spark replay` does.

Columns: value (required), key, headers (array<struct<key,value>>, order kept),
partition (int; the destination partition) and timestamp_ms (bigint; null = now). The
job hands each destination partition to exactly one task, in source order, so a task
knows which records of its partitions are already in the topic:

- the driver records every destination partition's high watermark before writing
  (`kctl.baseline`, {"partition": offset});
- a retried task, or a `--resume`d run, counts what reached the partition since that
  baseline and skips as many of its leading records. That is exact while kctl is the
  partition's only writer, which the replay checks before it starts.

The producer is idempotent (no duplicates from its own retries). With
`kctl.exactlyOnce=true` every destination partition gets a transactional producer
(transactional.id kctl-replay-<run>-<topic>-<partition>), committing every
`kctl.transactionRecords` records; a retried task's producer fences the failed one and
its open transaction is aborted, so readers with isolation.level=read_committed see
each record once.

commit() and abort() run in a separate Python process on the driver, so they hand
their results to the CLI through the file named by `kctl.resultPath`.
"""

from __future__ import annotations

import json
import time

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage


def _options(raw: dict[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in raw.items()}


def _attempt() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.attemptNumber() if context is not None else 0


class SinkCommit(WriterCommitMessage):
    """What one write task delivered and skipped, per destination partition."""

    def __init__(self, delivered: dict[int, int], skipped: dict[int, int]):
        self.delivered = delivered
        self.skipped = skipped


class KafkaSink(DataSourceArrowWriter):
    def __init__(self, options: dict[str, str]):
        lowered = _options(options)
        if not lowered.get("topic"):
            raise ValueError("kctl_kafka sink: option topic is required")
        if not lowered.get("kafka.bootstrap.servers"):
            raise ValueError("kctl_kafka sink: option kafka.bootstrap.servers is required")
        self.options = lowered

    # -- on the executors ------------------------------------------------------------

    def write(self, batches):
        return write_task(self.options, batches)

    # -- on the driver ---------------------------------------------------------------

    def commit(self, messages):
        self._report("complete", messages)

    def abort(self, messages):
        self._report("failed", messages)

    def _report(self, status: str, messages) -> None:
        report_result(self.options.get("kctl.resultpath"), status, messages)


def write_task(options: dict[str, str], batches) -> SinkCommit:
    """One write task: BATCHES (Arrow, the sink's columns) into the topic."""
    # Skipping needs to know where this run began in each partition: without a
    # baseline (the sink used directly), a retried task writes again, at least once.
    knows_start = "kctl.baseline" in options
    attempt = _attempt()
    writer = _TaskWriter(options, resume=knows_start and (options.get("kctl.resume") == "true" or attempt > 0))
    if attempt > 0:
        writer.fail_after = None  # the injected fault hits first attempts only
    try:
        for batch in batches:
            writer.write(batch)
        writer.finish()
    except BaseException:
        writer.abort()
        raise
    return SinkCommit(writer.delivered, writer.skipped)


def report_result(path: str | None, status: str, messages) -> None:
    """The tasks' deliveries, summed, for the CLI (commit and abort run on the driver,
    in a Python process of their own)."""
    if not path:
        return
    delivered: dict[str, int] = {}
    skipped: dict[str, int] = {}
    for message in messages:
        if message is None:  # a task that failed or was killed
            continue
        for partition, count in message.delivered.items():
            delivered[str(partition)] = delivered.get(str(partition), 0) + count
        for partition, count in message.skipped.items():
            skipped[str(partition)] = skipped.get(str(partition), 0) + count
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"status": status, "delivered": delivered, "skipped": skipped}, handle)


def replay_dump_parts(options: dict[str, str], window: dict, parts):
    """A Spark task replaying Parquet dump partitions (reading.DumpPart-like tuples
    (topic, partition, files)) straight into the topic: each goes to the destination
    partition of the same number, in offset order. What `kctl spark replay --from-dump
    --partition-map same` runs instead of the kctl_dump source feeding this sink, which
    sends every record from a Python worker to the JVM and back to another (measured:
    half the replay's CPU)."""
    from kctl.spark.reading import replay_batches

    for _topic, partition, files in parts:
        yield write_task(_options(options), replay_batches(files, partition, **window))


class _TaskWriter:
    """One task's producers and bookkeeping."""

    def __init__(self, options: dict[str, str], *, resume: bool):
        self.topic = options["topic"]
        self.kafka = {k[len("kafka."):]: v for k, v in options.items() if k.startswith("kafka.")}
        self.baseline = {int(p): o for p, o in json.loads(options.get("kctl.baseline", "{}")).items()}
        self.exactly_once = options.get("kctl.exactlyonce") == "true"
        self.run_id = options.get("kctl.runid", "adhoc")
        self.chunk = int(options.get("kctl.transactionrecords", "10000"))
        self.resume = resume
        # Fault injection for tests of retries and --resume (KCTL_SPARK_FAIL_AFTER_RECORDS):
        # a task's first attempt fails after this many records, delivered.
        self.fail_after = int(options.get("kctl.failafterrecords", "0")) or None
        self.producers: dict[int, object] = {}  # one per partition with transactions, else one under -1
        self.in_transaction: dict[int, int] = {}
        self.to_skip: dict[int, int] = {}
        self.delivered: dict[int, int] = {}
        self.skipped: dict[int, int] = {}
        self.failure: str | None = None

    def _config(self, partition: int) -> dict:
        config = {
            "acks": "all",
            "enable.idempotence": "true",
            "batch.size": str(1 << 20),
            # librdkafka's broker thread polls without waiting while the oldest queued
            # record is older than linger.ms and the in-flight window is full, which is
            # all the time when a replay outruns the broker with a deep queue (and during
            # flush(), which ends the wait for any queued record). A short queue (8 MiB,
            # a few batches: produce() waits when it is full) drains within the linger:
            # strace counted ~95,000 zero-timeout polls per 250,000 records of 1 KiB
            # before, 2,000-5,000 after, and the task's CPU fell from 2.4 s to 1.3-1.6 s.
            "queue.buffering.max.kbytes": "8192",
            "linger.ms": "100",
            # librdkafka's broker thread busy-polls while several produce requests are in
            # flight: measured 1.5-1.8 s of its CPU per 250,000 records of 1 KiB with the
            # default 5 in flight, 0.3 s with 2, at the same throughput; on a 2-core
            # machine that CPU is the replay's. 2 still pipelines over a slow link.
            "max.in.flight": "2",
            "delivery.report.only.error": True,
            "on_delivery": self._on_delivery,
        }
        config.update(self.kafka)
        if self.exactly_once:
            config["transactional.id"] = f"kctl-replay-{self.run_id}-{self.topic}-{partition}"
        from kctl.admin.client.oauth import with_token_program

        return with_token_program(config)  # a token command runs on the executor

    def _on_delivery(self, error, message) -> None:
        if error is not None and self.failure is None:
            self.failure = f"{self.topic}:{message.partition()}: {error.str()}"

    def _producer(self, partition: int):
        key = partition if self.exactly_once else -1
        producer = self.producers.get(key)
        if producer is None:
            from confluent_kafka import Producer

            producer = Producer(self._config(partition))
            if self.exactly_once:
                # Fences a failed attempt's producer and aborts its open transaction.
                producer.init_transactions(60)
                producer.begin_transaction()
                self.in_transaction[partition] = 0
            self.producers[key] = producer
        return producer

    def _already_delivered(self, partition: int) -> int:
        """Records of this run already in the partition (since its baseline)."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        base = self.baseline.get(partition, 0)
        config = {"group.id": f"kctl-replay-{self.run_id}-check", "enable.auto.commit": "false", "enable.partition.eof": "true", "isolation.level": "read_committed"}
        config.update(self.kafka)
        from kctl.admin.client.oauth import with_token_program

        consumer = Consumer(with_token_program(config))
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=30, cached=False)
            if not self.exactly_once:
                return max(0, high - base)  # no transaction markers: offsets are contiguous
            # Transaction markers take offsets and aborted records are invisible: count.
            consumer.assign([TopicPartition(self.topic, partition, base)])
            count, deadline = 0, time.monotonic() + 120
            while time.monotonic() < deadline:
                for message in consumer.consume(1000, 1.0):
                    if message.error() is None:
                        count += 1
                    elif message.error().code() == KafkaError._PARTITION_EOF:
                        return count
                    else:
                        raise RuntimeError(f"{self.topic}:{partition}: {message.error().str()}")
            raise RuntimeError(f"{self.topic}:{partition}: timed out counting delivered records")
        finally:
            consumer.close()

    def write(self, batch) -> None:
        columns = batch.schema.names
        values = batch.column("value").to_pylist()
        count = len(values)
        keys = batch.column("key").to_pylist() if "key" in columns else [None] * count
        partitions = batch.column("partition").to_pylist() if "partition" in columns else [-1] * count
        stamps = batch.column("timestamp_ms").to_pylist() if "timestamp_ms" in columns else [None] * count
        headers = _header_lists(batch.column("headers")) if "headers" in columns else [None] * count
        if not (self.resume or self.exactly_once or self.fail_after):
            self._write_plainly(values, keys, partitions, stamps, headers)
            return
        topic = self.topic
        for i in range(count):
            partition = partitions[i]
            if partition is None:
                partition = -1
            if self.resume:
                if partition not in self.to_skip:
                    self.to_skip[partition] = self._already_delivered(partition) if partition >= 0 else 0
                if self.to_skip[partition] > 0:
                    self.to_skip[partition] -= 1
                    self.skipped[partition] = self.skipped.get(partition, 0) + 1
                    continue
            producer = self._producer(partition)
            while True:
                try:
                    producer.produce(topic, values[i], keys[i], partition=partition, timestamp=stamps[i] or 0, headers=headers[i])
                    break
                except BufferError:
                    producer.poll(0.005)
            self.delivered[partition] = self.delivered.get(partition, 0) + 1
            if self.fail_after is not None and sum(self.delivered.values()) >= self.fail_after:
                producer.flush(30)
                raise RuntimeError(f"injected failure after {self.fail_after} records (KCTL_SPARK_FAIL_AFTER_RECORDS)")
            if self.exactly_once:
                self.in_transaction[partition] += 1
                if self.in_transaction[partition] >= self.chunk:
                    self._commit(partition, producer, begin=True)
            if self.failure is not None:
                raise RuntimeError(f"delivery failed: {self.failure}")
        for producer in self.producers.values():
            producer.poll(0)

    def _write_plainly(self, values, keys, partitions, stamps, headers) -> None:
        """The common case (no skipping, no transactions): one producer, a tight loop."""
        from collections import Counter

        producer = self._producer(-1)
        produce, topic = producer.produce, self.topic
        for value, key, partition, stamp, record_headers in zip(values, keys, partitions, stamps, headers):
            while True:
                try:
                    # Positional (topic, value, key, partition, callback, on_delivery,
                    # timestamp, headers): keyword arguments cost a lookup each per call.
                    produce(topic, value, key, -1 if partition is None else partition, None, None, stamp or 0, record_headers)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    producer.poll(0.005)
        for partition, count in Counter(-1 if p is None else p for p in partitions).items():
            self.delivered[partition] = self.delivered.get(partition, 0) + count
        producer.poll(0)
        if self.failure is not None:
            raise RuntimeError(f"delivery failed: {self.failure}")

    def _commit(self, partition: int, producer, *, begin: bool) -> None:
        producer.commit_transaction(120)
        self.in_transaction[partition] = 0
        if begin:
            producer.begin_transaction()

    def finish(self) -> None:
        for key, producer in self.producers.items():
            remaining = producer.flush(120)
            if remaining:
                raise RuntimeError(f"{remaining} record(s) to {self.topic} were not acknowledged in 120 s")
            if self.failure is not None:
                raise RuntimeError(f"delivery failed: {self.failure}")
            if self.exactly_once:
                self._commit(key, producer, begin=False)

    def abort(self) -> None:
        for producer in self.producers.values():
            try:
                if self.exactly_once:
                    producer.flush(30)  # abort_transaction would purge unsent records anyway
                    producer.abort_transaction(30)
                else:
                    producer.flush(30)
            except Exception:  # the task is failing already; its own error is the one to report
                pass


def _header_lists(column) -> list:
    """Each record's headers as [(key, value), ...] (None for none), in order: the Arrow
    list column's flat children zipped into tuples once, then one slice per record
    (measured: 0.85 µs a record against 1.55 µs for a zip per record)."""
    flat = column.flatten()
    pairs = list(zip(flat.field("key").to_pylist(), flat.field("value").to_pylist()))
    offsets = column.offsets.to_pylist()
    base = offsets[0]
    if column.null_count == 0:
        return [pairs[start - base : end - base] or None for start, end in zip(offsets, offsets[1:])]
    valid = column.is_valid().to_pylist()
    return [pairs[start - base : end - base] or None if ok else None for start, end, ok in zip(offsets, offsets[1:], valid)]
