"""Topic and partition metadata at scale: kctl against kafka-topics (issue 3).

A real Apache Kafka 4.x node (Maven Central jars, tests/backends) with 2,000 partitions:
one 500-partition topic and 150 topics of 10. Times `topic list`, `topic describe` of
the 500-partition topic and `partition list --under-replicated` against kafka-topics'
--list, --describe --topic and --describe --under-replicated-partitions, medians of
several runs, with ratios.

    python bench/bench_topics.py [--runs 7]

Targets: >= 8x faster than kafka-topics; `partition list` on 2,000 partitions <= 0.5 s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from common import kctl_argv, print_rows, time_command

from tests.backends.kafka import KafkaCluster

TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    kctl = kctl_argv()

    with tempfile.TemporaryDirectory(prefix="kctl-bench-") as workdir:
        cluster = KafkaCluster(nodes=1, workdir=Path(workdir))
        cluster.start()
        try:
            b = cluster.bootstrap
            subprocess.run([*kctl, "-b", b, "--timeout", "60", "topic", "create", "big", "-p", "500", "-q"], check=True, capture_output=True)
            small = [f"small-{i:03d}" for i in range(150)]
            for start in range(0, len(small), 50):
                subprocess.run([*kctl, "-b", b, "--timeout", "60", "topic", "create", *small[start:start + 50], "-p", "10", "-q"], check=True, capture_output=True)
            count = subprocess.run([*kctl, "-b", b, "partition", "list", "--no-headers"], check=True, capture_output=True, text=True).stdout.count("\n")

            tool = lambda *a: cluster.tool_command(TOPIC_COMMAND, "--bootstrap-server", b, *a)  # noqa: E731
            rows = [
                ("kctl topic list", time_command([*kctl, "-b", b, "topic", "list"], args.runs), "kafka-topics --list", time_command(tool("--list"), args.runs)),
                (
                    "kctl topic describe big (500 p.)",
                    time_command([*kctl, "-b", b, "topic", "describe", "big"], args.runs),
                    "kafka-topics --describe --topic big",
                    time_command(tool("--describe", "--topic", "big"), args.runs),
                ),
                (
                    "kctl partition list --under-repl.",
                    time_command([*kctl, "-b", b, "partition", "list", "--under-replicated"], args.runs),
                    "kafka-topics --under-replicated-partitions",
                    time_command(tool("--describe", "--under-replicated-partitions"), args.runs),
                ),
                ("kctl partition list (all)", time_command([*kctl, "-b", b, "partition", "list"], args.runs), "target <= 0.500 s", None),
            ]
        finally:
            cluster.stop()

    print(f"runs per command: {args.runs} (median), partitions in the cluster: {count}, Python {sys.version.split()[0]}")
    print_rows(rows)


if __name__ == "__main__":
    main()
