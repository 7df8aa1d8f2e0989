"""kctl doctor at 100,000 partitions and 10,000 groups (issue 70), on the bundled broker.

bench_scale.py's Apache Kafka node cannot hold that many partitions (a descriptor per log
segment; RLIMIT_NOFILE is 20,000 on the machines these numbers come from), and Kafka has
no tool that does what doctor does: the figures are kctl's alone, beside `cluster health`
and `group lag --all` on the same cluster. 100 topics of 1,000 partitions; 10,000 groups
that committed offset 0 on 10 partitions each, one record after it (lag, no members).

    python bench/bench_doctor.py [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from common import commit_group_offsets, kctl_argv

TOPICS, PARTITIONS, GROUPS, GROUP_PARTITIONS = 100, 1000, 10_000, 10


def grow(bootstrap: str) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    started = time.monotonic()
    topics = [NewTopic(f"t{i:03d}", PARTITIONS, 1) for i in range(TOPICS)]
    for i in range(0, TOPICS, 10):
        for future in admin.create_topics(topics[i:i + 10], operation_timeout=300, request_timeout=300).values():
            future.result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    requests = []
    for g in range(GROUPS):
        topic, first = f"t{g % TOPICS:03d}", (g // TOPICS) * GROUP_PARTITIONS % PARTITIONS
        producer.produce(topic, b"x", partition=first)
        requests.append(ConsumerGroupTopicPartitions(f"g{g:05d}", [TopicPartition(topic, first + k, 0) for k in range(GROUP_PARTITIONS)]))
    commit_group_offsets(admin, requests)
    assert producer.flush(120) == 0
    print(f"grew to {TOPICS * PARTITIONS:,} partitions and {GROUPS:,} groups in {time.monotonic() - started:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from kctl.broker.process import BrokerProcess

    with tempfile.TemporaryDirectory() as directory:
        broker = BrokerProcess(Path(directory) / "broker")
        bootstrap = broker.start()
        try:
            grow(bootstrap)
            kctl = [*kctl_argv(), "-b", bootstrap, "--timeout", "300"]
            print(f"{'command':<28} {'median s':>9}   runs")
            for name, argv in (("cluster health", ["cluster", "health"]), ("doctor", ["doctor"]),
                               ("group lag --all -o json", ["group", "lag", "--all", "-o", "json"])):
                samples = []
                for _ in range(args.runs):
                    started = time.perf_counter()
                    done = subprocess.run(kctl + argv, capture_output=True)
                    samples.append(time.perf_counter() - started)
                    # A verdict's status (Nagios': 0-3) says what it found, not whether it ran.
                    if done.returncode not in (0, 1, 2, 3):
                        raise SystemExit(f"{name} failed: {done.stderr.decode().strip()}")
                print(f"{name:<28} {statistics.median(samples):>9.2f}   {', '.join(f'{s:.2f}' for s in samples)}")
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
