"""Records the Spark tests write and read back: what is produced (keys, tombstones,
binary values, repeated headers, timestamps a minute apart) and how a topic or a dump is
read for comparison."""

from __future__ import annotations

import json
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

BASE_MS = 1_790_000_000_000  # 2026-09-21T14:13:20Z
MINUTE = 60_000


def records_for(partition: int, count: int) -> list[dict]:
    """Keys (some null), values (some tombstones, some binary), headers (repeated keys,
    null values), timestamps one minute apart."""
    out = []
    for i in range(count):
        key = None if i % 7 == 3 else f"k{i % 5}".encode()
        value = None if i % 11 == 5 else (bytes([0, 255, i % 256]) if i % 13 == 0 else json.dumps({"id": f"{partition}-{i}", "n": i}).encode())
        headers = [("trace", f"t{i}".encode()), ("trace", b"again"), ("empty", None)] if i % 3 == 0 else None
        out.append({"partition": partition, "key": key, "value": value, "headers": headers, "timestamp": BASE_MS + i * MINUTE})
    return out


def produce(bootstrap: str, topic: str, records: list[dict], compression: str = "none") -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": compression, "linger.ms": 20})
    for r in records:
        producer.produce(topic, value=r["value"], key=r["key"], partition=r["partition"], timestamp=r["timestamp"], headers=r["headers"])
    assert producer.flush(30) == 0


def read_topic(bootstrap: str, topic: str, partitions: int, isolation: str = "read_uncommitted") -> dict[int, list[tuple]]:
    """{partition: [(offset, key, value, headers, timestamp ms)]} as a client reads them."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "spark-test-reader", "enable.partition.eof": True,
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[int, list[tuple]] = {p: [] for p in range(partitions)}
    ended: set[int] = set()
    deadline = time.monotonic() + 60
    while len(ended) < partitions and time.monotonic() < deadline:
        for m in consumer.consume(500, 0.5):
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                ended.add(m.partition())
                continue
            out[m.partition()].append((m.offset(), m.key(), m.value(), m.headers(), m.timestamp()[1]))
    consumer.close()
    assert len(ended) == partitions
    return out


def content(per_partition: dict[int, list[tuple]]) -> dict[int, list[tuple]]:
    """What a replay must keep: everything but offsets."""
    return {p: [r[1:] for r in rows] for p, rows in per_partition.items() if rows}


def read_dump(directory: Path) -> dict[int, list[tuple]]:
    import pyarrow.dataset as ds

    table = ds.dataset(str(directory), format="parquet", partitioning="hive").to_table()
    out: dict[int, list[tuple]] = {}
    for row in sorted(table.to_pylist(), key=lambda r: (r["partition"], r["offset"])):
        headers = [(h["key"], h["value"]) for h in row["headers"]] if row["headers"] is not None else None
        ms = int(row["timestamp"].timestamp() * 1000)
        out.setdefault(row["partition"], []).append((row["offset"], row["key"], row["value"], headers, ms))
    return out
