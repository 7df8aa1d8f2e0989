"""`kctl diff` of many topics against a cluster that matches (issue 18).

A real Apache Kafka 4.x node (Maven Central jars, tests/backends) gets N topics from a
resource file through `kctl apply` (a quarter of them with config overrides), then
`kctl diff` of the same file is timed (median of several runs) and its requests are
counted from librdkafka's protocol log and kctl's client's --debug lines, at two sizes to
show the count does not grow with the number of topics. topicctl cannot run here, so the anchor is what reading the
same state takes with Kafka's tools: kafka-topics --describe plus kafka-configs
--describe --entity-type topics.

    python bench/bench_declarative.py [--topics 2000] [--runs 5]

Target: diff of 2,000 matching topics <= 2 s; requests independent of the topic count.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import kctl_argv, print_rows, time_command

from tests.backends.kafka import KafkaCluster


def resource_file(path: Path, prefix: str, count: int) -> None:
    docs = []
    for i in range(count):
        configs = f"\n  configs: {{retention.ms: {3_600_000 + i}, cleanup.policy: delete}}" if i % 4 == 0 else ""
        docs.append(f"kind: Topic\nmetadata: {{name: {prefix}-{i:05d}}}\nspec:\n  partitions: 1\n  replication_factor: 1{configs}\n")
    path.write_text("---\n".join(docs))


def requests(kctl: list[str], bootstrap: str, path: Path) -> collections.Counter:
    proc = subprocess.run([*kctl, "--debug", "-b", bootstrap, "diff", "-f", str(path), "-X", "debug=protocol"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # librdkafka's protocol log, and kctl's own client's (--debug: "kctl.wire: send Metadata v12").
    found = re.findall(r"Sent (\w+)Request|kctl\.wire: send (\w+) v", proc.stderr)
    return collections.Counter(a or b for a, b in found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    kctl = kctl_argv()

    with tempfile.TemporaryDirectory(prefix="kctl-bench-") as workdir:
        cluster = KafkaCluster(nodes=1, workdir=Path(workdir))
        cluster.start()
        try:
            b = cluster.bootstrap
            small, big = Path(workdir) / "small.yaml", Path(workdir) / "big.yaml"
            resource_file(small, "s", args.topics // 10)
            resource_file(big, "b", args.topics)
            started = time.perf_counter()
            for path in (small, big):
                subprocess.run([*kctl, "-b", b, "--timeout", "120", "apply", "-f", str(path), "--yes", "-q", "-o", "plain"], check=True, capture_output=True)
            applied = time.perf_counter() - started
            counts = {path.stem: requests(kctl, b, path) for path in (small, big)}

            topics = cluster.tool_command("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b, "--describe")
            configs = cluster.tool_command(cluster.config_command, "--bootstrap-server", b, "--describe", "--entity-type", "topics")
            anchor = time_command(topics, args.runs) + time_command(configs, args.runs)
            rows = [
                (f"kctl diff ({args.topics} topics, matching)", time_command([*kctl, "-b", b, "diff", "-f", str(big)], args.runs),
                 "kafka-topics --describe + kafka-configs --describe", anchor),
                (f"kctl diff ({args.topics // 10} topics, matching)", time_command([*kctl, "-b", b, "diff", "-f", str(small)], args.runs), "target for 2,000: <= 2.000 s", None),
            ]
        finally:
            cluster.stop()

    print(f"runs per command: {args.runs} (median); topics: {args.topics + args.topics // 10}; kctl apply created them in {applied:.1f} s; Python {sys.version.split()[0]}")
    for name, count in counts.items():
        print(f"requests of `kctl diff` over {name} file: {sum(count.values())} ({', '.join(f'{k} {v}' for k, v in sorted(count.items()))})")
    print_rows(rows)


if __name__ == "__main__":
    main()
