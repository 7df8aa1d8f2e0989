"""Shared benchmark helpers: timing whole commands and finding the kctl under test."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# Kafka as kafka-server-start.sh runs it (KAFKA_HEAP_OPTS and KAFKA_JVM_PERFORMANCE_OPTS):
# the tests' brokers trade speed for start-up (C1 only, a small heap), which a benchmark
# against Kafka must not.
SERVER_JVM_OPTIONS = ("-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                      "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                      "-Djava.awt.headless=true")


def time_command(argv: list[str], runs: int, env: dict | None = None, *, exits: tuple[int, ...] = (0,)) -> float:
    """Median wall-clock seconds of `argv`, after one warm-up run (page cache); each run
    must end with one of `exits` (a verdict command's status says what it found)."""
    def run() -> None:
        done = subprocess.run(argv, capture_output=True, env=env)
        if done.returncode not in exits:
            raise subprocess.CalledProcessError(done.returncode, argv, done.stdout, done.stderr)

    run()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def rss_mb(pid: int) -> float:
    """A running process's resident memory in MB (its VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def kctl_argv() -> list[str]:
    """The kctl of the running interpreter's environment (install it there to measure it)."""
    script = Path(sys.executable).parent / "kctl"
    return [str(script)] if script.exists() else [sys.executable, "-m", "kctl"]


def print_rows(rows: list[tuple[str, float, str, float | None]]) -> None:
    print(f"{'command':<34} {'kctl s':>8}   {'anchor':<40} {'anchor s':>9} {'speed-up':>9}")
    for name, ours, anchor, theirs in rows:
        if theirs is None:
            print(f"{name:<34} {ours:>8.3f}   {anchor:<40}")
        else:
            print(f"{name:<34} {ours:>8.3f}   {anchor:<40} {theirs:>9.3f} {theirs / ours:>8.1f}x")


def commit_group_offsets(admin, requests) -> None:
    """Commit each group's offsets (confluent-kafka ConsumerGroupTopicPartitions, one group
    a request, as AdminClient allows), 200 requests in flight at a time."""
    pending: list = []
    for request in requests:
        pending += admin.alter_consumer_group_offsets([request], request_timeout=120).values()
        if len(pending) >= 200:
            for future in pending:
                future.result()
            pending = []
    for future in pending:
        future.result()
