"""Start-up and metadata latency: kctl against Apache Kafka's kafka-topics and kcat.

Starts a real single-node Apache Kafka 4.x (the same Maven Central jars the tests use),
creates topics, then times whole commands, each run several times, and prints medians
side by side with their ratios. All figures come from this one run on this machine.

    python bench/bench_cli.py [--runs 9] [--topics 50]

Targets (issue 2): `kctl --help` <= 0.12 s median; `kctl topic list` >= 8x faster than
kafka-topics --list.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import kctl_argv, print_rows, time_command

from tests.backends.kafka import KafkaCluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--topics", type=int, default=50)
    args = parser.parse_args()

    kctl = kctl_argv()
    rows: list[tuple[str, float, str, float | None]] = []

    help_time = time_command([*kctl, "--help"], args.runs)
    rows.append(("kctl --help", help_time, "target <= 0.120 s", None))

    with tempfile.TemporaryDirectory(prefix="kctl-bench-") as workdir:
        cluster = KafkaCluster(nodes=1, workdir=Path(workdir))
        cluster.start()
        try:
            bootstrap = cluster.bootstrap
            names = [f"bench-{i:04d}" for i in range(args.topics)]
            subprocess.run([*kctl, "-b", bootstrap, "topic", "create", *names, "-p", "4", "-q"], check=True, capture_output=True)

            kctl_list = time_command([*kctl, "-b", bootstrap, "topic", "list"], args.runs)
            kafka_list = time_command(cluster.tool_command("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap, "--list"), args.runs)
            rows.append(("kctl topic list", kctl_list, "kafka-topics --list", kafka_list))
            if shutil.which("kcat"):
                kcat_list = time_command(["kcat", "-b", bootstrap, "-L"], args.runs)
                rows.append(("kctl topic list", kctl_list, "kcat -L", kcat_list))
            else:
                print("kcat not installed (apt-get install kcat): kcat column skipped", file=sys.stderr)

            kctl_describe = time_command([*kctl, "-b", bootstrap, "topic", "describe", names[0]], args.runs)
            kafka_describe = time_command(
                cluster.tool_command("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap, "--describe", "--topic", names[0]),
                args.runs,
            )
            rows.append(("kctl topic describe", kctl_describe, "kafka-topics --describe", kafka_describe))
        finally:
            cluster.stop()

    print(f"runs per command: {args.runs} (median), topics: {args.topics} x 4 partitions, Python {sys.version.split()[0]}")
    print_rows(rows)


if __name__ == "__main__":
    main()
