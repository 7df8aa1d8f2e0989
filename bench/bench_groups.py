"""Lag of many groups: kctl against kafka-consumer-groups (issue 4).

A real Apache Kafka 4.x node (Maven Central jars) with a 100-partition topic and N groups
(default 1,000) that each committed an offset on every partition. Times
`kctl group lag --all -o json` against `kafka-consumer-groups --describe --all-groups`,
and kctl's peak memory (max RSS).

    python bench/bench_groups.py [--groups 1000] [--runs 3]

Targets: <= 3 s, >= 10x faster, peak memory <= 200 MB.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import kctl_argv, print_rows, time_command

from tests.brokers.kafka import KafkaCluster


def seed(bootstrap: str, groups: int, partitions: int) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(partitions * 20):
        producer.produce("lagged", value=b"x" * 100, partition=i % partitions)
    producer.flush(60)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    pending = []
    for g in range(groups):
        request = ConsumerGroupTopicPartitions(f"bench-group-{g:04d}", [TopicPartition("lagged", p, (g + p) % 20) for p in range(partitions)])
        pending += list(admin.alter_consumer_group_offsets([request]).values())
        if len(pending) >= 200:
            for future in pending:
                future.result()
            pending = []
    for future in pending:
        future.result()


def peak_rss_mb(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    subprocess.run(argv, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(before, after) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    kctl = kctl_argv()
    with tempfile.TemporaryDirectory(prefix="kctl-bench-") as workdir:
        cluster = KafkaCluster(nodes=1, workdir=Path(workdir), overrides={"offsets.topic.num.partitions": "10"})
        cluster.start()
        try:
            b = cluster.bootstrap
            subprocess.run([*kctl, "-b", b, "topic", "create", "lagged", "-p", "100", "-q"], check=True, capture_output=True)
            started = time.monotonic()
            seed(b, args.groups, 100)
            print(f"seeded {args.groups} groups x 100 partitions in {time.monotonic() - started:.1f}s", file=sys.stderr)
            ours_argv = [*kctl, "-b", b, "--timeout", "120", "group", "lag", "--all", "-o", "json"]
            ours = time_command(ours_argv, args.runs)
            rss = peak_rss_mb(ours_argv)
            theirs = time_command(
                cluster.tool_command("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server", b, "--describe", "--all-groups", "--timeout", "120000"),
                max(1, args.runs // 3),
            )
        finally:
            cluster.stop()
    print(f"groups: {args.groups} x 100 partitions, runs: {args.runs} (median), kctl peak RSS {rss:.0f} MB, Python {sys.version.split()[0]}")
    print_rows([("kctl group lag --all -o json", ours, "kafka-consumer-groups --describe --all-groups", theirs)])


if __name__ == "__main__":
    main()
