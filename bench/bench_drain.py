"""Draining a broker that holds 1,000 partitions, beside Kafka's own kafka-reassign-partitions
(issue 57).

    python bench/bench_drain.py [--partitions 1500] [--megabytes 60] [--throttle 5MB/s]

Three Kafka 4.x nodes (the tests' jars), internal topics on two replicas; --partitions
partitions with two replicas each (broker 3 holds two thirds of them: 1,000 of 1,500) and
--megabytes of records spread over them. Then, with the same replication throttle:

- kctl: `kctl broker drain 3 --execute --throttle T --yes` (plans, starts, waits, removes
  the throttle), timed end to end;
- the layout is put back as it was (kctl replication reassign, not timed);
- Kafka: `kafka-reassign-partitions --generate --broker-list 1,2` over every topic, then
  `--execute --throttle`, then `--verify` every second until it reports every partition
  complete (which removes the throttle): what an operator runs without kctl.

Printed: time, partitions moved, bytes copied onto the remaining brokers (their log dirs'
growth), the rate that makes per receiving broker beside the throttle, and whether any
partition is left under-replicated or on broker 3.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import common
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

TOPICS = 10


def kctl(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([*common.kctl_argv(), *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise SystemExit(f"kctl {' '.join(args)} failed: {proc.stderr[-2000:]}")
    return proc


def seed(bootstrap: str, partitions: int, megabytes: int) -> list[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"drain-{i}" for i in range(TOPICS)]
    for future in admin.create_topics([NewTopic(n, partitions // TOPICS, 2) for n in names], operation_timeout=60).values():
        future.result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1 << 20})
    value = b"x" * 1024
    for i in range(megabytes * 1024):
        while True:
            try:
                producer.produce(names[i % TOPICS], value=value, partition=(i // TOPICS) % (partitions // TOPICS))
                break
            except BufferError:
                producer.poll(0.1)
    producer.flush()
    return names


def layout(bootstrap: str) -> dict[tuple[str, int], list[int]]:
    rows = json.loads(kctl("-b", bootstrap, "partition", "list", "-o", "json").stdout)
    return {(r["topic"], r["partition"]): r["replicas"] for r in rows}


def disk_bytes(bootstrap: str) -> dict[int, int]:
    rows = json.loads(kctl("-b", bootstrap, "broker", "log-dirs", "-o", "json").stdout)
    return {r["broker"]: r["size_bytes"] for r in rows}


def check(bootstrap: str) -> str:
    on_3 = sum(1 for replicas in layout(bootstrap).values() if 3 in replicas)
    under = kctl("-b", bootstrap, "partition", "list", "--under-replicated", "--no-headers").stdout.strip().splitlines()
    return f"{on_3} partition(s) left on broker 3, {len(under)} under-replicated"


def restore(bootstrap: str, original: dict[tuple[str, int], list[int]], scratch: Path) -> None:
    plan = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(original.items())]}
    path = scratch / "restore.json"
    path.write_text(json.dumps(plan))
    kctl("-b", bootstrap, "replication", "reassign", "execute", str(path), "--wait", "--yes")


def kafka_drain(cluster, names: list[str], throttle: int, scratch: Path) -> tuple[float, int]:
    tool = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
    topics = scratch / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": n} for n in names]}))
    started = time.perf_counter()
    generated = cluster.run_tool(tool, "--bootstrap-server", cluster.bootstrap, "--generate", "--topics-to-move-json-file", str(topics),
                                 "--broker-list", "1,2", timeout=300)
    if generated.returncode != 0:
        raise SystemExit(generated.stderr)
    proposed = generated.stdout.split("Proposed partition reassignment configuration")[1].strip().splitlines()[0]
    plan = scratch / "kafka-plan.json"
    plan.write_text(proposed)
    executed = cluster.run_tool(tool, "--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file", str(plan),
                                "--throttle", str(throttle), timeout=300)
    if executed.returncode != 0:
        raise SystemExit(executed.stderr)
    while True:
        verified = cluster.run_tool(tool, "--bootstrap-server", cluster.bootstrap, "--verify", "--reassignment-json-file", str(plan), timeout=300)
        if "is still in progress" not in verified.stdout:
            break
        time.sleep(1)
    moved = sum(1 for p in json.loads(proposed)["partitions"])
    return time.perf_counter() - started, moved


def kctl_drain(bootstrap: str, throttle: str) -> tuple[float, int]:
    started = time.perf_counter()
    drained = kctl("-b", bootstrap, "broker", "drain", "3", "--execute", "--throttle", throttle, "--yes", "-o", "json")
    return time.perf_counter() - started, len(json.loads(drained.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=1500)
    parser.add_argument("--megabytes", type=int, default=60)
    parser.add_argument("--throttle", default="5MB/s")
    parser.add_argument("--rounds", type=int, default=3, help="drains by each tool, alternating which goes first")
    args = parser.parse_args()
    from kctl.sizes import parse_bytes
    from tests.backends.kafka import TEST_TOOL_JVM_OPTIONS, KafkaCluster

    throttle = parse_bytes(args.throttle, "--throttle")
    two = {key: "2" for key in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor",
                                "share.coordinator.state.topic.replication.factor", "default.replication.factor")}
    results: dict[str, list[tuple[float, int, dict[int, int], str]]] = {"kctl": [], "kafka": []}
    with tempfile.TemporaryDirectory(prefix="kctl-bench-drain-") as scratch:
        cluster = KafkaCluster(nodes=3, workdir=Path(scratch) / "kafka", overrides=two, tool_jvm_options=TEST_TOOL_JVM_OPTIONS)
        cluster.start()
        try:
            names = seed(cluster.bootstrap, args.partitions, args.megabytes)
            original = layout(cluster.bootstrap)
            held = sum(1 for replicas in original.values() if 3 in replicas)
            drains = {"kctl": lambda: kctl_drain(cluster.bootstrap, args.throttle),
                      "kafka": lambda: kafka_drain(cluster, names, throttle, Path(scratch))}
            for round_ in range(args.rounds):
                for tool in (("kctl", "kafka") if round_ % 2 else ("kafka", "kctl")):
                    before = disk_bytes(cluster.bootstrap)
                    took, moved = drains[tool]()
                    after = disk_bytes(cluster.bootstrap)
                    copied = {b: after.get(b, 0) - before.get(b, 0) for b in (1, 2)}
                    results[tool].append((took, moved, copied, check(cluster.bootstrap)))
                    restore(cluster.bootstrap, original, Path(scratch))
        finally:
            cluster.stop()
    print(f"Kafka {cluster.version}, 3 brokers; broker 3 holds {held} of {len(original)} partitions (2 replicas each), "
          f"{args.megabytes} MB of records; throttle {args.throttle}; {args.rounds} drains each, alternating which goes first\n")
    print(f"{'':30} {'median s':>9} {'all s':>18} {'moved':>6} {'copied MB (1, 2)':>17} {'MB/s per broker':>16}  after")
    medians = {}
    for tool, name in (("kctl", "kctl broker drain 3 --execute"), ("kafka", "kafka-reassign-partitions")):
        runs = results[tool]
        medians[tool] = statistics.median(r[0] for r in runs)
        _took, moved, copied, verdict = runs[-1]
        rate = max(copied.values()) / medians[tool] / 1e6
        every = " ".join(f"{r[0]:.1f}" for r in runs)
        print(f"{name:30} {medians[tool]:9.1f} {every:>18} {moved:6} {copied[1] / 1e6:8.1f} {copied[2] / 1e6:8.1f} {rate:16.2f}  {verdict}")
    print(f"\nkctl / Kafka time: {medians['kctl'] / medians['kafka']:.2f}x (kctl moves only the partitions on broker 3 and "
          f"waits itself; Kafka's --generate re-places every partition of the topics, --verify polled every second)")


if __name__ == "__main__":
    main()
