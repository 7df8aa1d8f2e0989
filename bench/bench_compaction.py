"""Log compaction: the bundled broker's cleaner against Apache Kafka's, same data, same run.

    python bench/bench_compaction.py [--gib 1.0] [--keys 10000]

For each broker: a 1 GiB log of 1 KiB records over 10,000 keys (64 MiB segments) is written
with cleanup.policy=delete, then switched to compact; the clock runs from that change until
the cleanable segments hold no more than one record per key. Meanwhile, and before it on an
idle broker, a producer sends 2,000 records/s (acks=all, linger 0) to another topic: p99
produce latency while cleaning is compared with the idle p99. Kafka runs with its own
kafka-server-start.sh JVM settings (1 GiB heap, G1), not the tests' small heap.

Targets (issue 17): compaction time <= Kafka's; p99 while cleaning <= 2x idle p99.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import common  # noqa: F401 - puts the repository on sys.path
from bench_broker import latency, wait_for_metadata
from common import kctl_argv
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

KAFKA_JVM = ("-Xms1g", "-Xmx1g", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
             "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true")
SEGMENT = 64 * 1024 * 1024


def start_bundled(workdir: Path):
    from kctl.broker.process import BrokerProcess

    process = BrokerProcess(workdir / "bundled")
    bootstrap = process.start()
    wait_for_metadata(bootstrap, time.perf_counter())
    # The same cleaner back-off as the Kafka node (tests/backends/kafka.py): 1 s.
    subprocess.run([*kctl_argv(), "-b", bootstrap, "config", "alter", "broker-default", "--set", "log.cleaner.backoff.ms=1000"],
                   check=True, capture_output=True)
    return bootstrap, workdir / "bundled" / "compact-0", process.stop


def start_kafka(workdir: Path):
    from tests.backends.kafka import KafkaCluster

    cluster = KafkaCluster(nodes=1, workdir=workdir / "kafka", jvm_options=KAFKA_JVM)
    cluster.start()
    return cluster.bootstrap, workdir / "kafka" / "data-1" / "compact-0", cluster.stop


def write(bootstrap: str, gib: float, keys: int) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 1_000_000})
    value = os.urandom(1024)
    count = int(gib * 1024 * 1024)  # 1 KiB records
    for i in range(count):
        while True:
            try:
                producer.produce("compact", key=b"key-%05d" % (i % keys), value=value, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(300) == 0
    return count


def cleanable_bytes(directory: Path) -> int:
    """Bytes of every segment but the active (last) one."""
    logs = sorted(directory.glob("*.log"))
    return sum(p.stat().st_size for p in logs[:-1])


def measure(name: str, start, args, workdir: Path) -> dict:
    bootstrap, directory, stop = start(workdir)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = [NewTopic("compact", 1, 1, config={"segment.bytes": str(SEGMENT)}), NewTopic("lat", 1, 1)]
        for future in admin.create_topics(topics).values():
            future.result(30)
        records = write(bootstrap, args.gib, args.keys)
        before = cleanable_bytes(directory)
        _p50, idle_p99 = latency(bootstrap, "lat", 2000, 5)

        while_cleaning = {}
        sampler = threading.Thread(target=lambda: while_cleaning.update(p99=latency(bootstrap, "lat", 2000, 5)[1]))
        resource = ConfigResource("topic", "compact", incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)])
        started = time.perf_counter()
        admin.incremental_alter_configs([resource])[resource].result(30)
        sampler.start()
        limit = 2 * args.keys * 1100  # one record per key, with some slack for batches
        while cleanable_bytes(directory) > limit:
            time.sleep(0.05)
            if time.perf_counter() - started > 1800:
                raise RuntimeError(f"{name}: not compacted within 30 minutes")
        seconds = time.perf_counter() - started
        sampler.join()
        after = cleanable_bytes(directory)
    finally:
        stop()
    result = {"records": records, "bytes_before": before, "bytes_after": after, "compaction_s": seconds,
              "idle_p99_ms": idle_p99, "cleaning_p99_ms": while_cleaning["p99"]}
    print(f"{name}: " + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--keys", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kctl-bench-") as tmp:
        ours = measure("bundled", start_bundled, args, Path(tmp))
        kafka = measure("kafka", start_kafka, args, Path(tmp))
    print(f"\n{'figure':<20} {'bundled':>10} {'kafka':>10} {'ratio':>8}")
    for key in ("compaction_s", "idle_p99_ms", "cleaning_p99_ms"):
        print(f"{key:<20} {ours[key]:>10.3f} {kafka[key]:>10.3f} {kafka[key] / ours[key]:>7.2f}x")
    print("(ratio > 1: the bundled broker is better)")
    for name, figures in (("bundled", ours), ("kafka", kafka)):
        print(f"{name}: p99 while cleaning / idle p99 = {figures['cleaning_p99_ms'] / figures['idle_p99_ms']:.2f}x")


if __name__ == "__main__":
    main()
