"""Consuming records with schemas: `kctl record consume --value-format avro` beside raw
consumes of the same topic (kctl's own and kcat's) in one run.

    python bench/bench_schemas.py [--records 1000000] [--runs 3]

One Apache Kafka node and the tests' schema registry (Apicurio Registry, Confluent's API);
a 4-partition topic of N Avro records (a click: page, user, timestamp, an optional
referrer; ~40 bytes) written with confluent-kafka's AvroSerializer. Each command reads the
whole topic to /dev/null; medians of --runs after one warm-up.

The anchor the issue names, kcat's `-s value=avro -r URL`, needs kcat built with
libserdes; Debian's kcat is not (its `-V` lists no Avro), so the anchor is kcat's raw
consume of the same records, and kctl's raw consume beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

from common import kctl_argv, time_command

CLICK = {"type": "record", "name": "Click", "namespace": "bench", "fields": [
    {"name": "page", "type": "string"}, {"name": "user", "type": "long"}, {"name": "ts", "type": "long"},
    {"name": "referrer", "type": ["null", "string"], "default": None},
]}


def fill(bootstrap: str, url: str, topic: str, records: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: its futures die with it
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result()
    serialize = AvroSerializer(SchemaRegistryClient({"url": url, "timeout": 30}), json.dumps(CLICK))
    context = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1 << 20, "queue.buffering.max.messages": 1_000_000})
    for i in range(records):
        value = serialize({"page": f"/p/{i % 5000}", "user": i, "ts": 1_790_000_000_000 + i, "referrer": None if i % 3 else "/home"}, context)
        while True:
            try:
                producer.produce(topic, value, partition=i % 4)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(120) == 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    from tests.backends.kafka import KafkaCluster
    from tests.backends.registry import SchemaRegistry

    workdir = Path(tempfile.mkdtemp(prefix="bench-schemas-"))
    kafka = KafkaCluster(nodes=1, workdir=workdir / "kafka", jvm_options=("-Xms1g", "-Xmx1g", "-XX:+UseG1GC"))
    registry = SchemaRegistry(workdir / "registry")
    kafka.start()
    registry.start()
    try:
        topic = "clicks"
        fill(kafka.bootstrap, registry.url, topic, args.records)
        env = dict(os.environ, KCTL_SCHEMA_REGISTRY_URL=registry.url, HOME=str(workdir))
        kctl = kctl_argv() + ["-b", kafka.bootstrap, "-q", "record", "consume", topic]
        rows = [
            ("kctl --value-format avro -o jsonl", time_command(kctl + ["--value-format", "avro", "-o", "jsonl"], args.runs, env)),
            ("kctl --value-format avro (values)", time_command(kctl + ["--value-format", "avro"], args.runs, env)),
            ("kctl raw -o jsonl", time_command(kctl + ["-o", "jsonl"], args.runs, env)),
            ("kctl raw (values)", time_command(kctl, args.runs, env)),
        ]
        kcat = shutil.which("kcat")
        if kcat:
            rows.append(("kcat raw (values)", time_command([kcat, "-b", kafka.bootstrap, "-C", "-t", topic, "-e", "-q", "-o", "beginning", "-f", "%s\n"], args.runs, env)))
    finally:
        registry.stop()
        kafka.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{args.records:,} Avro records (~40 B values), 4 partitions, one Kafka node; medians of {args.runs}")
    anchor = dict(rows).get("kcat raw (values)")
    for name, seconds in rows:
        ratio = f"   {anchor / seconds:.2f}x kcat raw" if anchor else ""
        print(f"{name:<36} {seconds:7.2f} s  {args.records / seconds:>10,.0f} records/s{ratio}")


if __name__ == "__main__":
    main()
