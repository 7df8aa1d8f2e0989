"""Copying records and searching them (issue 58), beside what users do without kctl.

    python bench/bench_copy.py [--records 1000000] [--size 1024]

Two Kafka 4.x nodes, each its own cluster (the tests' jars); --records JSON records of
--size bytes in a 3-partition topic on the first. Figures are records/s:

- within one cluster: `kctl record copy` (at least once), `kctl record copy --group`
  (exactly-once: records and offsets in transactions), beside
  `kctl record consume -o jsonl | kctl record produce --input jsonl`;
- to the other cluster: `kctl record copy --to-context`, the same pipe, and MirrorMaker 2
  (Kafka's dedicated mode, connect-mirror from Maven Central) mirroring the topic, timed
  from its first record on the target to its last (its start-up left out);
- `kctl record consume --where` (CEL) selecting 1 record in 3, beside
  `kcat -C -e | jq -c 'select(...)'`, both writing the matches to a pipe.

Each kctl and pipe figure is the best of --rounds runs (a fresh target topic each).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import common
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

WHERE = 'value.kind == "refund" && value.amount > 10'
JQ = 'select(.kind == "refund" and .amount > 10)'


def seed(bootstrap: str, topic: str, records: int, size: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1 << 20, "partitioner": "murmur2_random"})
    for i in range(records):
        head = json.dumps({"n": i, "kind": ("refund", "sale", "sale")[i % 3], "amount": i % 100})
        value = (head[:-1] + ', "pad": "' + "x" * max(0, size - len(head) - 11) + '"}').encode()
        while True:
            try:
                producer.produce(topic, key=f"k-{i % 10007}".encode(), value=value)
                break
            except BufferError:
                producer.poll(0.1)
    producer.flush()


def count(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-count", "isolation.level": "read_committed"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        total = 0
        for p in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            total += high - low
        return total
    finally:
        consumer.close()


def fresh(bootstrap: str, name: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the answer: a collected client cancels it
    admin.create_topics([NewTopic(name, 3, 1)])[name].result()
    return name


def timed_shell(command: str) -> float:
    started = time.perf_counter()
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{command} failed: {proc.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from tests.backends.kafka import KafkaCluster
    from tests.backends.mirror import MirrorMaker

    kctl = " ".join(common.kctl_argv())
    with tempfile.TemporaryDirectory(prefix="kctl-bench-copy-") as scratch:
        a = KafkaCluster(nodes=1, workdir=Path(scratch) / "a")
        b = KafkaCluster(nodes=1, workdir=Path(scratch) / "b")
        a.start()
        b.start()
        try:
            seed(a.bootstrap, "source", args.records, args.size)
            n = args.records
            rows: list[tuple[str, float]] = []
            serial = iter(range(1000))

            def best(name: str, make_command, where: str) -> None:
                times = []
                for _ in range(args.rounds):
                    target = fresh(where, f"t{next(serial)}")
                    times.append(timed_shell(make_command(target)))
                    assert count(where, target) >= n, f"{name}: {count(where, target)} of {n} records copied"
                rows.append((name, n / min(times)))

            best("copy within a cluster (at least once)", lambda t: f"{kctl} -b {a.bootstrap} record copy source {t}", a.bootstrap)
            best("copy within a cluster --group (exactly-once)",
                 lambda t: f"{kctl} -b {a.bootstrap} record copy source {t} --group g-{t}", a.bootstrap)
            best("consume -o jsonl | produce --input jsonl, within",
                 lambda t: f"{kctl} -b {a.bootstrap} record consume source -o jsonl | {kctl} -b {a.bootstrap} record produce {t} --input jsonl",
                 a.bootstrap)
            best("copy --to-context (at least once)",
                 lambda t: f"{kctl} -b {a.bootstrap} record copy source {t} --to-context {b.bootstrap}", b.bootstrap)
            best("consume -o jsonl | produce --input jsonl, across",
                 lambda t: f"{kctl} -b {a.bootstrap} record consume source -o jsonl | {kctl} -b {b.bootstrap} record produce {t} --input jsonl",
                 b.bootstrap)

            mm2 = MirrorMaker(Path(scratch) / "mm2", {"primary": a.bootstrap, "backup": b.bootstrap},
                              flows=[("primary", "backup")], topics="source")
            mm2.start()
            try:
                first = last = None
                deadline = time.monotonic() + 900
                while time.monotonic() < deadline:
                    try:
                        have = count(b.bootstrap, "primary.source")
                    except (KeyError, KafkaException):  # not created yet, or its leader not elected yet
                        have = 0
                    now = time.perf_counter()
                    if have and first is None:
                        first = now
                    if have >= n:
                        last = now
                        break
                    time.sleep(0.2)
                if first is not None and last is not None and last > first:
                    rows.append(("MirrorMaker 2 (first record to last)", n / (last - first)))
            finally:
                mm2.stop()

            where_times, kcat_times = [], []
            for _ in range(args.rounds):
                where_times.append(timed_shell(f"{kctl} -b {a.bootstrap} record consume source --where '{WHERE}' | wc -l > /dev/null"))
                kcat_times.append(timed_shell(f"kcat -b {a.bootstrap} -C -t source -e -q -o beginning | jq -c '{JQ}' | wc -l > /dev/null"))
            rows.append(("consume --where (CEL)", n / min(where_times)))
            rows.append(("kcat -C -e | jq -c 'select(...)'", n / min(kcat_times)))
        finally:
            a.stop()
            b.stop()
    print(f"Kafka {a.version}, two single-node clusters; {n:,} records of {args.size} bytes in 3 partitions; "
          f"best of {args.rounds} runs\n")
    figures = dict(rows)
    for name, rate in rows:
        print(f"{name:52} {rate:12,.0f} records/s")
    pipe_in = figures["consume -o jsonl | produce --input jsonl, within"]
    pipe_across = figures["consume -o jsonl | produce --input jsonl, across"]
    print(f"\ncopy / pipe within: {figures['copy within a cluster (at least once)'] / pipe_in:.2f}x; "
          f"exactly-once / pipe: {figures['copy within a cluster --group (exactly-once)'] / pipe_in:.2f}x; "
          f"across / pipe: {figures['copy --to-context (at least once)'] / pipe_across:.2f}x")
    if "MirrorMaker 2 (first record to last)" in figures:
        print(f"copy --to-context / MirrorMaker 2: {figures['copy --to-context (at least once)'] / figures['MirrorMaker 2 (first record to last)']:.2f}x")
    print(f"--where / kcat | jq: {figures['consume --where (CEL)'] / figures[next(k for k in figures if k.startswith('kcat'))]:.2f}x")


if __name__ == "__main__":
    main()
