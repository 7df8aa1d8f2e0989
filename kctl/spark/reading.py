"""Reading one offset range into Arrow record batches: what a `kctl_kafka` task does.

The columns are the JVM connector's: key, value, topic, partition, offset, timestamp,
timestampType, and headers when asked for. Spark checks each batch's Arrow schema
against the DataFrame's exactly, so the types here are the ones pyspark derives from
the Spark schema (microsecond timestamps in UTC, a list of key/value structs).

Needs pyarrow and confluent-kafka, not pyspark: it runs (and is tested) without Spark.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa

from kctl.spark.options import SourceOptions
from kctl.spark.planning import OffsetRange, consumer_config

HEADER_TYPE = pa.list_(pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])))

# The Spark DDL of the source schema; headers only with includeHeaders=true.
SCHEMA_DDL = "key binary, value binary, topic string, partition int, offset bigint, timestamp timestamp, timestampType int"
HEADERS_DDL = ", headers array<struct<key:string,value:binary>>"


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", HEADER_TYPE))
    return pa.schema(fields)


class ReadError(Exception):
    """A range could not be read (a fetch error, or records stopped arriving)."""


def to_batch(messages: list, schema: pa.Schema, topic: str, partition: int) -> pa.RecordBatch:
    """Arrow columns from confluent-kafka messages, one C-level pass per column."""
    count = len(messages)
    stamps = [m.timestamp() for m in messages]
    columns = [
        pa.array([m.key() for m in messages], pa.binary()),
        pa.array([m.value() for m in messages], pa.binary()),
        pa.repeat(pa.scalar(topic, pa.string()), count),
        pa.repeat(pa.scalar(partition, pa.int32()), count),
        pa.array([m.offset() for m in messages], pa.int64()),
        # librdkafka's timestamp types are 0 none, 1 CreateTime, 2 LogAppendTime; Java's are -1, 0, 1.
        pa.array([ms * 1000 for _, ms in stamps], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        pa.array([kind - 1 for kind, _ in stamps], pa.int32()),
    ]
    if len(schema) == 8:
        columns.append(pa.array([m.headers() for m in messages], HEADER_TYPE))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def read_range(options: SourceOptions, offsets: OffsetRange) -> Iterator[pa.RecordBatch]:
    """The records of offsets.start <= offset < offsets.end, in order, as Arrow batches.

    A range can hold fewer records than offsets: compaction removes records and
    transaction markers take offsets of their own, so the end is reached either at the
    last offset below it or when the partition's end (EOF) is passed."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    schema = arrow_schema(options.include_headers)
    config = consumer_config(options, "executor")
    config["enable.partition.eof"] = "true"
    config.setdefault("fetch.queue.backoff.ms", "10")
    consumer = Consumer(config)
    topic, partition, last = offsets.topic, offsets.partition, offsets.end - 1
    try:
        consumer.assign([TopicPartition(topic, partition, offsets.start)])
        pending: list = []
        idle_since = time.monotonic()
        done = offsets.end <= offsets.start
        position = offsets.start  # the next offset the range can hold
        while not done:
            # No more than the range can still hold: consume() returns when it has that
            # many messages or its timeout passes, so asking a range's last 30 records for
            # 1,000 cost every read task a second's wait at its end. Records past the
            # range, or the partition's end (EOF), make up the count when compaction or
            # transaction markers leave fewer.
            messages = consumer.consume(max(1, min(options.consume_batch, offsets.end - position)), 1.0)
            if not messages:
                if time.monotonic() - idle_since > options.poll_timeout_ms / 1000:
                    raise ReadError(f"{topic}:{partition}: no record arrived for {options.poll_timeout_ms} ms before offset {offsets.end}")
                continue
            idle_since = time.monotonic()
            tail = messages[-1]
            if tail.error() is None:
                position = tail.offset() + 1
            if tail.error() is None and tail.offset() < last and all(m.error() is None for m in messages):
                pending.extend(messages)  # the common case: a whole batch inside the range
            else:
                for message in messages:
                    error = message.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            done = True
                            break
                        raise ReadError(f"{topic}:{partition}: {error.str()}")
                    if message.offset() <= last:
                        pending.append(message)
                    if message.offset() >= last:
                        done = True
                        break
            while len(pending) >= options.arrow_batch_size:
                yield to_batch(pending[: options.arrow_batch_size], schema, topic, partition)
                del pending[: options.arrow_batch_size]
        if pending:
            yield to_batch(pending, schema, topic, partition)
    finally:
        consumer.close()


def reporting(batches: Iterator[pa.RecordBatch], directory: str | None, name: str, every: float = 0.25) -> Iterator[pa.RecordBatch]:
    """The batches, while DIRECTORY/NAME says "RECORDS BYTES" read so far (bytes of keys
    and values), rewritten every `every` seconds and at the end: the driver sums these
    files for a live progress display (Spark reports task metrics only when tasks end).
    A retried task starts its file again from zero. Progress never fails a read."""
    if not directory:
        yield from batches
        return
    path = os.path.join(directory, name)
    records = size = 0
    written = time.monotonic()
    for batch in batches:
        records += batch.num_rows
        size += batch.column(0).nbytes + batch.column(1).nbytes
        if time.monotonic() - written >= every:
            _write_progress(path, records, size)
            written = time.monotonic()
        yield batch
    _write_progress(path, records, size)


def _write_progress(path: str, records: int, size: int) -> None:
    partial = f"{path}.{os.getpid()}.tmp"
    try:
        with open(partial, "w", encoding="ascii") as file:
            file.write(f"{records} {size}")
        os.replace(partial, path)  # never half a file for the driver to read
    except OSError:
        pass


def read_progress(directory: str) -> tuple[int, int]:
    """(records, bytes) the read tasks have reported in `directory` so far."""
    records = size = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0, 0
    for name in names:
        if name.endswith(".tmp"):
            continue
        try:
            with open(os.path.join(directory, name), encoding="ascii") as file:
                done, _, read = file.read().partition(" ")
            records, size = records + int(done), size + int(read)
        except (OSError, ValueError):
            continue  # replaced or removed while read: the next look counts it
    return records, size


def dump_parts(path: str) -> list[tuple[str, int, list[str]]]:
    """(topic, partition, Parquet files ordered by their first offset) of a dump."""
    import pyarrow.parquet as pq

    parts = []
    for directory in sorted(Path(path).glob("topic=*/partition=*")):
        files = []
        for file in directory.glob("*.parquet"):
            metadata = pq.ParquetFile(file).metadata
            if metadata.num_rows == 0:
                continue
            column = metadata.schema.names.index("offset")
            stats = metadata.row_group(0).column(column).statistics
            files.append((stats.min if stats is not None and stats.has_min_max else 0, str(file)))
        if files:
            topic = unquote(directory.parent.name.split("=", 1)[1])  # Spark escapes odd characters in paths
            parts.append((topic, int(directory.name.split("=", 1)[1]), [f for _, f in sorted(files)]))
    return parts


def read_dump_part(topic: str, partition: int, files: list[str], batch_size: int = 10_000) -> Iterator[pa.RecordBatch]:
    """A dump partition's records as source-schema Arrow batches, file after file."""
    import pyarrow.parquet as pq

    schema = arrow_schema(True)
    names = ["key", "value", "offset", "timestamp", "timestampType", "headers"]
    for file in files:
        for batch in pq.ParquetFile(file).iter_batches(batch_size=batch_size, columns=names):
            count = batch.num_rows
            columns = {name: batch.column(name) for name in names}
            columns["topic"] = pa.repeat(pa.scalar(topic, pa.string()), count)
            columns["partition"] = pa.repeat(pa.scalar(partition, pa.int32()), count)
            arrays = [columns[field.name] for field in schema]
            yield pa.RecordBatch.from_arrays([a if a.type == f.type else a.cast(f.type) for a, f in zip(arrays, schema)], schema=schema)


def replay_batches(files: list[str], partition: int, *, since_ms: int | None, until_ms: int | None, timestamps: str,
                   batch_size: int = 10_000) -> Iterator[pa.RecordBatch]:
    """A dump partition's records as the kctl_kafka sink's columns (key, value, headers,
    partition, timestamp_ms), in offset order: records outside [since_ms, until_ms) left
    out, timestamps preserved, shifted ("shift:<ms>") or left to the broker ("now")."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    shift = int(timestamps.split(":", 1)[1]) if timestamps.startswith("shift:") else 0
    for file in files:
        for batch in pq.ParquetFile(file).iter_batches(batch_size=batch_size, columns=["key", "value", "timestamp", "headers"]):
            millis = pc.divide(batch.column("timestamp").cast(pa.int64()), 1000)  # dumps hold whole milliseconds
            keep = None
            if since_ms is not None:
                keep = pc.greater_equal(millis, since_ms)
            if until_ms is not None:
                before = pc.less(millis, until_ms)
                keep = before if keep is None else pc.and_(keep, before)
            count = batch.num_rows
            if timestamps == "now":
                stamps = pa.nulls(count, pa.int64())
            else:
                stamps = pc.add(millis, shift) if shift else millis
            out = pa.RecordBatch.from_arrays(
                [batch.column("key"), batch.column("value"), batch.column("headers"), pa.repeat(pa.scalar(partition, pa.int32()), count), stamps],
                names=["key", "value", "headers", "partition", "timestamp_ms"],
            )
            if keep is not None:
                out = out.filter(keep)
            if out.num_rows:
                yield out
