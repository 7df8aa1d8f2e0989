"""kctl's cost as a cluster grows, against Kafka's tools in the same run (issue 19).

One real Apache Kafka 4.x node (Maven Central jars, tests/backends) is grown through the
sizes given (partitions:groups): a 1,000-partition topic `big`, then topics of 50
partitions; groups that committed offsets on 10 partitions each (20 records in each).
At each size, medians of --runs: `topic list`, `topic describe big`, `partition list
--under-replicated`, `group list`, `group lag --all -o json` beside kafka-topics and
kafka-consumer-groups; `cluster health` and `doctor` alone (Kafka has no such tools); each kctl
command's peak RSS; and the time of one sample of the lag exporter (`group lag --serve`).
With matplotlib installed (pip install '.[bench]') --plot writes seconds against size.

    python bench/bench_scale.py [--sizes 2000:100,10000:1000,18000:10000] [--runs 3] [--plot scale.png]

Kafka keeps a file descriptor open per log segment, so a node holds about as many
partitions as its RLIMIT_NOFILE allows (20,000 on the machines these numbers come from,
and it cannot be raised there); Kafka's index files also need vm.max_map_count above
twice the partitions (the script says what to raise).
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from common import kctl_argv, time_command

from tests.backends.kafka import KafkaCluster

TOPIC_SIZE = 50
GROUP_PARTITIONS = 10


def peak_rss_mb(argv: list[str], exits: tuple[int, ...] = (0,)) -> float:
    """Peak RSS of this one command: its VmHWM, read until it exits. (The rusage of a
    child is no use here: Linux carries the parent's high-water mark across fork and
    exec, so every child would report this bench's own size.)"""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while proc.poll() is None:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
            peak = max(peak, int(re.search(r"^VmHWM:\s+(\d+) kB", status, re.M).group(1)))
        except (OSError, AttributeError):
            pass
        time.sleep(0.005)
    if proc.returncode not in exits:
        raise subprocess.CalledProcessError(proc.returncode, argv)
    return peak / 1024


def grow(bootstrap: str, kctl: list[str], partitions: int, groups: int, state: dict) -> None:
    """Add topics and groups until the cluster has `partitions` and `groups`."""
    from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    if not state.get("big"):
        subprocess.run([*kctl, "-b", bootstrap, "--timeout", "300", "topic", "create", "big", "-p", "1000", "-q"], check=True, capture_output=True)
        state.update(big=True, partitions=1000, topics=0)
    names = []
    while state["partitions"] + TOPIC_SIZE * len(names) < partitions:
        names.append(f"t-{state['topics'] + len(names):05d}")
    for start in range(0, len(names), 100):
        subprocess.run([*kctl, "-b", bootstrap, "--timeout", "300", "topic", "create", *names[start:start + 100], "-p", str(TOPIC_SIZE), "-q"],
                       check=True, capture_output=True)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for name in names:
        for p in range(GROUP_PARTITIONS):
            for _ in range(20):
                producer.produce(name, value=b"x" * 100, partition=p)
        producer.poll(0)
    producer.flush(120)
    state["topics"] += len(names)
    state["partitions"] += TOPIC_SIZE * len(names)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    pending = []
    for g in range(state.get("groups", 0), groups):
        topic = f"t-{g % state['topics']:05d}"
        request = ConsumerGroupTopicPartitions(f"g-{g:05d}", [TopicPartition(topic, p, (g + p) % 20) for p in range(GROUP_PARTITIONS)])
        if g == 0:
            # The first commit creates __consumer_offsets, which the broker serves only once
            # it has applied every topic created before (minutes for thousands of partitions).
            deadline = time.monotonic() + 900
            while True:
                try:
                    [f.result() for f in admin.alter_consumer_group_offsets([request], request_timeout=60).values()]
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
            continue
        pending += list(admin.alter_consumer_group_offsets([request], request_timeout=120).values())
        if len(pending) >= 200:
            [f.result() for f in pending]
            pending = []
    [f.result() for f in pending]
    state["groups"] = max(groups, state.get("groups", 0))


def exporter_sample_seconds(kctl: list[str], bootstrap: str) -> float:
    """One sample of `group lag --all --serve`, as the exporter reports it."""
    proc = subprocess.Popen([*kctl, "-b", bootstrap, "--timeout", "300", "group", "lag", "--all", "--serve", "127.0.0.1:0", "--interval", "600"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        port = int(re.search(r":(\d+)/metrics", proc.stderr.readline()).group(1))
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
            match = re.search(r"^kctl_lag_exporter_sample_duration_seconds (\S+)$", text, re.M)
            if match:
                return float(match.group(1))
            time.sleep(0.5)
        raise RuntimeError("the exporter took no sample in 600 s")
    finally:
        proc.send_signal(signal.SIGTERM)  # SIGINT is ignored when this bench runs in the background
        proc.wait(30)


def measure(cluster: KafkaCluster, kctl: list[str], runs: int, anchor_runs: int) -> list[dict]:
    b = cluster.bootstrap
    topics = lambda *a: cluster.tool_command("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b, *a)  # noqa: E731
    groups = lambda *a: cluster.tool_command("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server", b, "--timeout", "300000", *a)  # noqa: E731
    ours = lambda *a: [*kctl, "-b", b, "--timeout", "300", *a]  # noqa: E731
    cases = [
        ("topic list", ours("topic", "list"), "kafka-topics --list", topics("--list")),
        ("topic describe big (1,000 p.)", ours("topic", "describe", "big"), "kafka-topics --describe --topic big", topics("--describe", "--topic", "big")),
        ("partition list --under-replicated", ours("partition", "list", "--under-replicated"), "kafka-topics --describe --under-replicated",
         topics("--describe", "--under-replicated-partitions")),
        ("group list", ours("group", "list"), "kafka-consumer-groups --list", groups("--list")),
        ("group lag --all -o json", ours("group", "lag", "--all", "-o", "json"), "kafka-consumer-groups --describe --all-groups",
         groups("--describe", "--all-groups")),
        ("cluster health", ours("cluster", "health"), "", None),
        ("doctor", ours("doctor"), "", None),
    ]
    rows = []
    for name, argv, anchor, anchor_argv in cases:
        # A verdict's status (Nagios': 0-3) says what it found, not whether it ran.
        exits = (0, 1, 2, 3) if name in ("cluster health", "doctor") else (0,)
        seconds = time_command(argv, runs, exits=exits)
        rows.append({
            "command": f"kctl {name}", "seconds": seconds, "rss_mb": peak_rss_mb(argv, exits), "anchor": anchor,
            "anchor_seconds": time_command(anchor_argv, anchor_runs) if anchor_argv else None,
        })
    rows.append({"command": "kctl group lag --serve: one sample", "seconds": exporter_sample_seconds(kctl, b), "rss_mb": None, "anchor": "", "anchor_seconds": None})
    return rows


def print_size(partitions: int, groups: int, rows: list[dict]) -> None:
    print(f"\n{partitions:,} partitions, {groups:,} groups x {GROUP_PARTITIONS} partitions")
    print("| command | kctl s | kctl peak RSS | anchor | anchor s | ratio |\n|---|---|---|---|---|---|")
    for r in rows:
        rss = f"{r['rss_mb']:.0f} MB" if r["rss_mb"] else ""
        ratio = f"{r['anchor_seconds'] / r['seconds']:.1f}x" if r["anchor_seconds"] else ""
        anchor_s = f"{r['anchor_seconds']:.3f}" if r["anchor_seconds"] else ""
        print(f"| `{r['command']}` | {r['seconds']:.3f} | {rss} | {r['anchor'] and '`' + r['anchor'] + '`'} | {anchor_s} | {ratio} |")


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    commands = [r["command"] for r in next(iter(results.values()))]
    figure, axes = plt.subplots(2, 3, figsize=(13, 7))
    for axis, command in zip(axes.flat, commands):
        sizes = sorted(results)
        axis.plot([s[0] for s in sizes], [next(r for r in results[s] if r["command"] == command)["seconds"] for s in sizes], "o-", label="kctl")
        anchors = [next(r for r in results[s] if r["command"] == command)["anchor_seconds"] for s in sizes]
        if all(a is not None for a in anchors):
            axis.plot([s[0] for s in sizes], anchors, "s--", label="Kafka's tool")
        axis.set_title(command.removeprefix("kctl "), fontsize=9)
        axis.set_xlabel("partitions (groups grow with them)", fontsize=8)
        axis.set_ylabel("seconds", fontsize=8)
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=80)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="2000:100,10000:1000,18000:10000", help="partitions:groups,...")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--anchor-runs", type=int, default=1)
    parser.add_argument("--plot", type=Path)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    sizes = [tuple(int(x) for x in item.split(":")) for item in args.sizes.split(",")]
    largest = max(p for p, _ in sizes)
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    maps = int(Path("/proc/sys/vm/max_map_count").read_text())
    if largest + 2000 > limit or 2 * largest + 10000 > maps:
        sys.exit(f"bench_scale: {largest:,} partitions need RLIMIT_NOFILE > {largest + 2000:,} (hard limit {limit:,}) and "
                 f"vm.max_map_count > {2 * largest + 10000:,} (now {maps:,}; as root: sysctl -w vm.max_map_count=262144)")
    kctl = kctl_argv()
    results = {}
    with tempfile.TemporaryDirectory(prefix="kctl-bench-") as workdir:
        cluster = KafkaCluster(nodes=1, workdir=Path(workdir), jvm_options=("-Xms1g", "-Xmx3g", "-XX:+UseG1GC", "-Djava.awt.headless=true"),
                               overrides={"offsets.topic.num.partitions": "10"})
        cluster.start(timeout=180)
        try:
            state: dict = {}
            for partitions, groups in sizes:
                started = time.monotonic()
                grow(cluster.bootstrap, kctl, partitions, groups, state)
                print(f"grew to {state['partitions']:,} partitions and {state['groups']:,} groups in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
                results[(state["partitions"], state["groups"])] = rows = measure(cluster, kctl, args.runs, args.anchor_runs)
                print_size(state["partitions"], state["groups"], rows)
                sys.stdout.flush()
        except BaseException:
            for log in Path(workdir).glob("node-*.log"):
                print(f"--- the end of {log.name}:\n" + "\n".join(log.read_text(errors="replace").splitlines()[-40:]), file=sys.stderr)
            raise
        finally:
            cluster.stop()
    print(f"\nruns: kctl {args.runs}, Kafka's tools {args.anchor_runs} (median); Python {sys.version.split()[0]}")
    if args.json:
        args.json.write_text(json.dumps({f"{p}:{g}": rows for (p, g), rows in results.items()}, indent=1))
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
