"""`kctl top` (issue 36): how soon the first screen has data, what a refresh costs, memory
and CPU between refreshes, beside the JVM tool an operator runs for the same answer
(`kafka-consumer-groups --describe --all-groups`) in the same run.

    python bench/bench_top.py [--topics 50] [--groups 50] [--partitions 4] [--runs 5]
                              [--idle 20] [--target kafka,bundled]
    python bench/bench_top.py --scale [--runs 3]

--scale measures the issue's large cluster instead: one Kafka node (3 GB heap) grown as
bench_scale.py grows it, to 18,000 partitions and 10,000 groups of 10 partitions each.

On each target (one Apache Kafka 4.x node from the tests' Maven Central jars, and the
bundled broker): --topics topics of --partitions partitions with records, --groups groups
that committed an offset on every partition of one topic. Then:
- first screen: `kctl top` started in a pseudo-terminal until its overview shows data
  (median of --runs), against the tool's one-shot answer;
- refresh: one sample (take + window, what the sampler thread does every --interval),
  median of --runs in this process;
- idle: the process's CPU over --idle seconds on the idle cluster (% of one core): the
  screen alone between refreshes (--interval 3600: no sample after the first), and
  everything at --interval 2 (sampling included); its resident memory after it.

Issue 36's targets: first screen within 1 s on 50 topics; at 10,000 groups x 10 partitions
and 18,000 partitions a refresh within 3 s, under 300 MB, under 5% of a core when idle.
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import kctl_argv, rss_mb, time_command

READY = b"under min ISR"  # an overview row: shown once the first sample is on screen


def seed(bootstrap: str, topics: int, partitions: int, groups: int) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(f"top-{t:03d}", partitions, 1) for t in range(topics)]).values():
        future.result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for t in range(topics):
        for i in range(partitions * 10):
            producer.produce(f"top-{t:03d}", value=b"x" * 100, partition=i % partitions)
    assert producer.flush(60) == 0
    futures = []
    for g in range(groups):
        topic = f"top-{g % topics:03d}"
        request = ConsumerGroupTopicPartitions(f"top-group-{g:05d}", [TopicPartition(topic, p, 5) for p in range(partitions)])
        futures += list(admin.alter_consumer_group_offsets([request]).values())
    for future in futures:
        future.result(60)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_top(bootstrap: str, *, interval: float, idle: float) -> tuple[float, float | None, float | None]:
    """(seconds to the first screen with data, % of a core over `idle` s, RSS MB)."""
    controller, terminal = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    started = time.perf_counter()
    process = subprocess.Popen([*kctl_argv(), "-b", bootstrap, "top", "--interval", str(interval)], stdin=terminal,
                               stdout=terminal, stderr=terminal, env=env, close_fds=True)
    os.close(terminal)
    output = b""
    try:
        first = None
        deadline = time.monotonic() + 300
        while first is None and time.monotonic() < deadline:
            if select.select([controller], [], [], 0.05)[0]:
                output += os.read(controller, 65536)
                if READY in output.replace(b"\x1b", b""):
                    first = time.perf_counter() - started
        if first is None:
            raise RuntimeError(f"no first screen within 300 s: {output[-500:]!r}")
        cpu = rss = None
        if idle:
            time.sleep(min(2 * interval, 4.0))  # past start-up
            before, at = _cpu_seconds(process.pid), time.monotonic()
            end = at + idle
            while time.monotonic() < end:  # keep the terminal drained, as a terminal would
                if select.select([controller], [], [], 0.1)[0]:
                    os.read(controller, 65536)
            cpu = 100 * (_cpu_seconds(process.pid) - before) / (time.monotonic() - at)
            rss = rss_mb(process.pid)
        os.write(controller, b"q")
        process.wait(timeout=30)
        return first, cpu, rss
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)


def refresh_seconds(bootstrap: str, runs: int) -> float:
    from kctl.admin.client.session import AdminSession
    from kctl.admin.groups.lag_time import TimeLagEstimator
    from kctl.config.model import ClientSettings
    from kctl.top.model import Window, take

    session = AdminSession(ClientSettings(bootstrap_servers=bootstrap, properties={}, timeout=60, context=None))
    window, time_lag = Window(900), TimeLagEstimator()
    times = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        window.add(take(session, time_lag=time_lag))
        times.append(time.perf_counter() - started)
    session.close()
    return statistics.median(times[1:])


def scale(args) -> None:
    from bench_scale import grow

    from tests.backends.kafka import KafkaCluster

    with tempfile.TemporaryDirectory(prefix="kctl-bench-top-") as workdir:
        cluster = KafkaCluster(nodes=1, workdir=Path(workdir), jvm_options=("-Xms1g", "-Xmx3g", "-XX:+UseG1GC", "-Djava.awt.headless=true"),
                               overrides={"offsets.topic.num.partitions": "10"})
        cluster.start(timeout=180)
        try:
            started, state = time.monotonic(), {}
            grow(cluster.bootstrap, kctl_argv(), 18000, 10000, state)
            print(f"grew to {state['partitions']:,} partitions and {state['groups']:,} groups in {time.monotonic() - started:.0f} s",
                  file=sys.stderr, flush=True)
            args.topics, args.partitions, args.groups = state["topics"], "50 (and a topic of 1,000)", state["groups"]
            tool = cluster.tool_command("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server",
                                        cluster.bootstrap, "--describe", "--all-groups", "--timeout", "300000")
            measure("kafka", cluster.bootstrap, args, tool, seeded=True)
        finally:
            cluster.stop()


def keys_on_groups(bootstrap: str) -> tuple[int, float, float, float]:
    """In a headless `kctl top` (Textual's pilot): the groups shown, then the median
    seconds a key takes to be handled on that table: a filter keystroke, a cursor move, a
    page down (each waits until the app is idle again, redraw included)."""
    import asyncio

    from kctl.admin.client.session import AdminSession
    from kctl.config.model import ClientSettings
    from kctl.top.run import build

    session = AdminSession(ClientSettings(bootstrap_servers=bootstrap, properties={}, timeout=120, context=None))
    app, sampler = build(session, target=bootstrap, interval=3600.0, window=900.0)
    found: dict = {}

    async def timed(pilot, *keys) -> float:
        started = time.perf_counter()
        await pilot.press(*keys)
        return time.perf_counter() - started

    async def main() -> None:
        sampler.start()
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                while app.frame is None:
                    await pilot.pause(0.1)
                await pilot.press("g")
                table = app.tables["groups"]
                found["rows"] = len(table.rows_shown)
                found["filter"] = statistics.median([await timed(pilot, "slash", "1", "escape") for _ in range(5)])
                found["down"] = statistics.median([await timed(pilot, "down") for _ in range(10)])
                found["page"] = statistics.median([await timed(pilot, "pagedown") for _ in range(10)])
                await pilot.press("q")
        finally:
            sampler.stop(timeout=0)

    asyncio.run(main())
    session.close()
    return found["rows"], found["filter"], found["down"], found["page"]


def measure(target: str, bootstrap: str, args, tool: list[str] | None, seeded: bool = False) -> None:
    if not seeded:
        started = time.monotonic()
        seed(bootstrap, args.topics, args.partitions, args.groups)
        print(f"{target}: seeded {args.topics} topics x {args.partitions} partitions, {args.groups} groups in "
              f"{time.monotonic() - started:.1f}s", file=sys.stderr)
    firsts = [run_top(bootstrap, interval=2.0, idle=0)[0] for _ in range(args.runs)]
    # Between refreshes: the screen alone (one sample, then none for an hour)...
    _first, idle_cpu, _rss = run_top(bootstrap, interval=3600.0, idle=args.idle)
    # ...and everything, sampling every 2 s (paced: at most every twice a sample's time).
    _first, cpu, rss = run_top(bootstrap, interval=2.0, idle=args.idle)
    refresh = refresh_seconds(bootstrap, args.runs)
    rows, filter_key, down_key, page_key = keys_on_groups(bootstrap)
    theirs = time_command(tool, max(1, args.runs // 2)) if tool else None
    first = statistics.median(firsts)
    print(f"\n{target}: {args.topics} topics x {args.partitions} partitions, {args.groups} groups, runs {args.runs} (median)")
    print(f"{'measure':<44} {'kctl top':>10}   {'anchor':<46} {'anchor':>8} {'ratio':>7}")
    anchor = "kafka-consumer-groups --describe --all-groups"
    for name, ours in (("first screen with data (s)", first), ("one refresh (s)", refresh)):
        if theirs is None:
            print(f"{name:<44} {ours:>10.3f}")
        else:
            print(f"{name:<44} {ours:>10.3f}   {anchor:<46} {theirs:>8.3f} {theirs / ours:>6.1f}x")
    print(f"{'CPU between refreshes: the screen (% core)':<44} {idle_cpu:>10.1f}")
    print(f"{'CPU with sampling, --interval 2 (% core)':<44} {cpu:>10.1f}")
    print(f"{'resident memory after --idle s (MB)':<44} {rss:>10.0f}")
    print(f"keys on the groups view ({rows:,} rows), seconds until handled and drawn: "
          f"filter '/1' + escape {filter_key:.3f}, down {down_key:.3f}, page down {page_key:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--idle", type=float, default=20.0)
    parser.add_argument("--target", default="kafka,bundled")
    parser.add_argument("--scale", action="store_true", help="18,000 partitions and 10,000 groups x 10 partitions on Kafka")
    args = parser.parse_args()
    if args.scale:
        scale(args)
        return
    for target in args.target.split(","):
        with tempfile.TemporaryDirectory(prefix="kctl-bench-top-") as workdir:
            if target == "kafka":
                from tests.backends.kafka import KafkaCluster

                cluster = KafkaCluster(nodes=1, workdir=Path(workdir))
                cluster.start()
                try:
                    tool = cluster.tool_command("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server",
                                                cluster.bootstrap, "--describe", "--all-groups")
                    measure(target, cluster.bootstrap, args, tool)
                finally:
                    cluster.stop()
            else:
                from kctl.broker.process import BrokerProcess

                broker = BrokerProcess(Path(workdir) / "broker")
                bootstrap = broker.start()
                try:
                    measure(target, bootstrap, args, None)
                finally:
                    broker.stop()


if __name__ == "__main__":
    main()
