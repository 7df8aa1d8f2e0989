"""Consuming a queue (a share group, KIP-932): kctl's share consumer against Kafka's own
kafka-console-share-consumer, the only other command-line share consumer on Maven Central
(issue 73). kcat, kaf and kafkactl have none.

A real Apache Kafka 4.4 node (Maven Central jars, run as kafka-server-start.sh runs it),
then the bundled broker, each with a 3-partition topic of N records (default 10,000 of
100 bytes). Each run is a new
share group (share.auto.offset.reset=earliest, set before the clock starts) that one
consumer drains from the start:

- the first record: `kctl record consume T --share-group G -n 1` against
  `kafka-console-share-consumer --max-messages 1` (start-up, joining, the first fetch);
- all N records: `-n N -o jsonl` against `--max-messages N`, output to /dev/null.

    python bench/bench_share.py [--records 10000] [--runs 5]

Target: the first record in milliseconds, not seconds (the issue: "starts in milliseconds");
all records at least as fast as Kafka's tool.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from common import SERVER_JVM_OPTIONS, kctl_argv, print_rows

from tests.backends.kafka import KafkaCluster


def seed(bootstrap: str, topic: str, records: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(records):
        producer.produce(topic, value=b"%099d" % i, partition=i % 3)
    producer.flush(60)


def timed(argv: list[str], runs: int, prepare) -> float:
    """Median seconds of `argv` over `runs` runs after one warm-up, each with a new share
    group: prepare(group) readies it and gives the argv's group placeholder its value."""
    samples = []
    for run in range(runs + 1):
        group = f"bench-share-{time.monotonic_ns()}"
        prepare(group)
        command = [part.replace("{group}", group) for part in argv]
        started = time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
        if run:
            samples.append(elapsed)
    return statistics.median(samples)


def measure(kctl: list[str], cluster: KafkaCluster, bootstrap: str, records: int, runs: int, where: str) -> list:
    """The two rows of one broker: kctl and Kafka's console share consumer on `bootstrap`."""
    subprocess.run([*kctl, "-b", bootstrap, "topic", "create", "queue", "-p", "3", "-q"], check=True, stdout=subprocess.DEVNULL)
    seed(bootstrap, "queue", records)

    def prepare(group: str) -> None:
        subprocess.run([*kctl, "-b", bootstrap, "config", "alter", "group", group, "--set", "share.auto.offset.reset=earliest", "-q"],
                       check=True, stdout=subprocess.DEVNULL)

    def console(count: int) -> list[str]:
        return cluster.tool_command("org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server", bootstrap,
                                    "--topic", "queue", "--group", "{group}", "--max-messages", str(count))

    def ours(count: int) -> list[str]:
        return [*kctl, "-b", bootstrap, "record", "consume", "queue", "--share-group", "{group}", "-n", str(count), "-o", "jsonl"]

    rows = []
    for label, count in (("first record", 1), (f"{records:,} records", records)):
        rows.append((f"{where}: {label}", timed(ours(count), runs, prepare), "kafka-console-share-consumer",
                     timed(console(count), runs, prepare)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    kctl = kctl_argv()
    with tempfile.TemporaryDirectory(prefix="kctl-bench-share-") as workdir:
        cluster = KafkaCluster(nodes=1, workdir=Path(workdir), jvm_options=SERVER_JVM_OPTIONS)
        cluster.start()
        try:
            rows = measure(kctl, cluster, cluster.bootstrap, args.records, args.runs, "Kafka 4.4")
        finally:
            cluster.stop()
        from kctl.broker.process import BrokerProcess

        bundled = BrokerProcess(Path(workdir) / "bundled")
        try:
            rows += measure(kctl, cluster, bundled.start(), args.records, args.runs, "bundled")
        finally:
            bundled.stop()
        print(f"Apache Kafka {cluster.version} and the bundled broker, {args.records:,} records of 100 bytes in 3 partitions, "
              f"medians of {args.runs}")
        print_rows(rows)


if __name__ == "__main__":
    main()
