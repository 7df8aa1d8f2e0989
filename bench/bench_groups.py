"""Lag of many groups: kctl against kafka-consumer-groups (issue 4), and groups of mixed
types against kctl's classic-only code (issue 15).

A real Apache Kafka 4.x node (Maven Central jars) with a 100-partition topic and N groups
(default 1,000) that each committed an offset on every partition. Times
`kctl group lag --all -o json` against `kafka-consumer-groups --describe --all-groups`,
and kctl's peak memory (max RSS).

    python bench/bench_groups.py [--groups 1000] [--runs 3]

With --mixed, a quarter of the groups are consumer groups of the KIP-848 protocol (their
members joined, committed and left) and `group list` and `group lag --all` are timed
beside the same commands of an older kctl checkout (--baseline DIR, e.g. a `git worktree`
of the last classic-only commit), in the same run on the same cluster:

    git worktree add /tmp/kctl-before b0b8011
    python bench/bench_groups.py --mixed --baseline /tmp/kctl-before

Targets: <= 3 s, >= 10x faster, peak memory <= 200 MB; mixed types within 10% of the
classic-only code.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import commit_group_offsets, kctl_argv, print_rows, time_command

from tests.backends.kafka import KafkaCluster


def seed(bootstrap: str, groups: int, partitions: int) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(partitions * 20):
        producer.produce("lagged", value=b"x" * 100, partition=i % partitions)
    producer.flush(60)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    commit_group_offsets(admin, (ConsumerGroupTopicPartitions(f"bench-group-{g:04d}", [TopicPartition("lagged", p, (g + p) % 20)
                                                                                        for p in range(partitions)])
                                 for g in range(groups)))


def seed_consumer_protocol_groups(bootstrap: str, groups: int, partitions: int) -> None:
    """KIP-848 groups: a member joins with group.protocol=consumer, commits, and leaves."""
    from concurrent.futures import ThreadPoolExecutor

    from confluent_kafka import Consumer, TopicPartition

    def one(g: int) -> None:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-kip848-{g:04d}", "group.protocol": "consumer"})
        consumer.subscribe(["lagged"])
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.1)
        consumer.commit(offsets=[TopicPartition("lagged", p, (g + p) % 20) for p in range(partitions)], asynchronous=False)
        consumer.close()

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(groups)))


def start_cluster(workdir: Path, kctl: list[str]) -> KafkaCluster:
    """A single Kafka node with the 100-partition topic `lagged` the groups commit on."""
    cluster = KafkaCluster(nodes=1, workdir=workdir, overrides={"offsets.topic.num.partitions": "10"})
    cluster.start()
    try:
        subprocess.run([*kctl, "-b", cluster.bootstrap, "topic", "create", "lagged", "-p", "100", "-q"], check=True, capture_output=True)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def peak_rss_mb(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    subprocess.run(argv, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(before, after) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mixed", action="store_true", help="a quarter of the groups use the KIP-848 protocol")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="a kctl checkout to time beside this one (--mixed)")
    args = parser.parse_args()
    if args.mixed:
        mixed(args)
        return
    kctl = kctl_argv()
    with tempfile.TemporaryDirectory(prefix="kctl-bench-") as workdir:
        cluster = start_cluster(Path(workdir), kctl)
        try:
            b = cluster.bootstrap
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


def mixed(args) -> None:
    """group list and group lag --all over classic and KIP-848 groups, this kctl beside the
    baseline checkout's (same interpreter and packages, its source first on sys.path)."""
    import os

    kctl = kctl_argv()
    baseline = [sys.executable, "-P", "-m", "kctl"]  # -P: the checkout, not the current directory
    baseline_env = {**os.environ, "PYTHONPATH": str(args.baseline)} if args.baseline else None
    consumer_groups = args.groups // 4
    with tempfile.TemporaryDirectory(prefix="kctl-bench-") as workdir:
        cluster = start_cluster(Path(workdir), kctl)
        try:
            b = cluster.bootstrap
            started = time.monotonic()
            seed(b, args.groups - consumer_groups, 100)
            seed_consumer_protocol_groups(b, consumer_groups, 100)
            print(f"seeded {args.groups - consumer_groups} classic and {consumer_groups} consumer-protocol groups "
                  f"x 100 partitions in {time.monotonic() - started:.1f}s", file=sys.stderr)
            rows = []
            for name, tail in (("group list", ["group", "list", "-o", "json"]),
                               ("group lag --all -o json", ["group", "lag", "--all", "-o", "json"])):
                ours = time_command([*kctl, "-b", b, "--timeout", "120", *tail], args.runs)
                theirs = None
                if args.baseline:
                    theirs = time_command([*baseline, "-b", b, "--timeout", "120", *tail], args.runs, baseline_env)
                rows.append((f"kctl {name}", ours, f"baseline kctl {name}", theirs))
        finally:
            cluster.stop()
    print(f"groups: {args.groups} ({consumer_groups} consumer-protocol) x 100 partitions, runs: {args.runs} (median), "
          f"Python {sys.version.split()[0]}; speed-up < 1 means slower than the baseline")
    print_rows(rows)


if __name__ == "__main__":
    main()
