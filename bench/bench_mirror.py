"""`kctl mirror translate` of many groups (issue 39): 1,000 groups x 10 partitions.

A bundled broker holds `primary.checkpoints.internal` with one checkpoint per group and
partition (10,000 records, written with kctl's encoder in MM2's format, as MM2's checkpoint
connector writes them) and the remote topic they name. Timed, one run each (the anchors
take minutes), beside Kafka's own Java API on the same checkpoints:

- `kctl mirror translate --group-regex 'g-.*' --target B -o json`: wall time and peak RSS;
- Java RemoteClusterUtils.translateOffsets(props, alias, group, timeout) for every group
  (what a script does today: one consumer and one full read of the topic per group);
- Java's Pattern overload of KIP-1239 (4.3): one read for all groups.

    python bench/bench_mirror.py [--groups 1000] [--partitions 10]

Targets: kctl within 5 s and 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from common import kctl_argv

from kctl.admin.mirror.records import Checkpoint, encode_checkpoint
from kctl.broker.process import BrokerProcess
from tests.backends.mirror import _oracle_classes


def fill(bootstrap: str, groups: int, partitions: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("primary.checkpoints.internal", 1, 1, config={"cleanup.policy": "compact"}),
                                       NewTopic("primary.orders", partitions, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for g in range(groups):
        for p in range(partitions):
            key, value = encode_checkpoint(Checkpoint(group=f"g-{g:04d}", topic="primary.orders", partition=p,
                                                      upstream_offset=1000 + g, downstream_offset=900 + g, metadata=""))
            producer.produce("primary.checkpoints.internal", key=key, value=value)
    assert producer.flush(60) == 0


def timed(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) of the child (its own wait4 rusage), stdout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        assert process.returncode == 0, err.read()[-2000:]
        return elapsed, usage.ru_maxrss / 1024, out.read().decode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kctl-bench-mirror-") as tmp:
        broker = BrokerProcess(Path(tmp) / "broker")
        bootstrap = broker.start()
        try:
            fill(bootstrap, args.groups, args.partitions)
            kctl_s, kctl_mb, out = timed([*kctl_argv(), "mirror", "translate", "--group-regex", "g-.*", "--target", bootstrap,
                                          "-o", "json"])
            rows = json.loads(out)
            assert len(rows) == args.groups * args.partitions, len(rows)
            classpath, _ = _oracle_classes()
            java = ["java", "-Xmx256m", "-cp", classpath, "MirrorTranslate", bootstrap, "primary", "default"]
            pattern_s, pattern_mb, out = timed([*java, "--pattern", "g-.*"])
            assert len(out.splitlines()) == args.groups * args.partitions
            loop_s, loop_mb, out = timed([*java, *(f"g-{g:04d}" for g in range(args.groups))])
            assert len(out.splitlines()) == args.groups * args.partitions
        finally:
            broker.stop()
    print(f"translate {args.groups} groups x {args.partitions} partitions (one run each)")
    print(f"{'tool':<44} {'seconds':>8} {'peak MB':>8} {'kctl speed-up':>14}")
    print(f"{'kctl mirror translate --group-regex':<44} {kctl_s:>8.2f} {kctl_mb:>8.0f} {'':>14}")
    print(f"{'Java translateOffsets(Pattern) (KIP-1239)':<44} {pattern_s:>8.2f} {pattern_mb:>8.0f} {pattern_s / kctl_s:>13.2f}x")
    print(f"{'Java translateOffsets per group (loop)':<44} {loop_s:>8.2f} {loop_mb:>8.0f} {loop_s / kctl_s:>13.2f}x")
    print(f"targets: <= 5 s: {'met' if kctl_s <= 5 else 'MISSED'}; <= 300 MB: {'met' if kctl_mb <= 300 else 'MISSED'}")


if __name__ == "__main__":
    main()
