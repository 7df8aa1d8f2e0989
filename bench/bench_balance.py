"""kctl cluster balance's plans beside kafka-reassign-partitions --generate's (issue 71).

    python bench/bench_balance.py [--runs 3] [--seeds 3] [--no-cluster]

Layouts skewed on purpose, two replicas per partition, one topic in ten large (sizes drawn
from a Pareto law), the rest small (0-20 MB): at bench_scale.py's sizes (2,000; 10,000;
18,000 partitions) on four brokers in two racks, the large topics on brokers 1-2 and the
small ones on 3-4 (the issue's example); and 100,000 partitions on twelve brokers in three
racks, the ten oldest holding everything and two new ones nothing. For each:

- kctl: the plan's time (the planner in this process, median of --runs), the bytes it
  moves, the lower bound (what the brokers below their share lack), and the skew it
  leaves (max/mean bytes per broker);
- Kafka: what `--generate --broker-list <all>` proposes for the same topics, computed
  with the placer the tool calls (GenerateOracle.java: Kafka 4.4's StripedReplicaPlacer
  on the tests' jars; the tool's Random is unseeded, so --seeds plans are averaged): the
  bytes it would move and the skew it would leave (it does not know sizes).

Then, unless --no-cluster, end to end on four Kafka 4.4 brokers in two racks with 2,000
partitions (the same skew, sizes scaled down): `kctl cluster balance` (read the cluster,
plan) beside `kafka-reassign-partitions --generate` (a JVM tool), median of --runs.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common
from common import kctl_argv

from kctl.admin.cluster.balance import plan_balance
from kctl.admin.cluster.layout import BrokerFacts, PartitionFacts

ORACLE = Path(__file__).with_name("GenerateOracle.java")
SCENARIOS = ((2_000, 4, 2), (10_000, 4, 2), (18_000, 4, 2), (100_000, 12, 3))
PARTITIONS_PER_TOPIC = 50
MB = 1_000_000


def layout(partitions: int, brokers: int, racks: int, seed: int = 1) -> tuple[dict[int, BrokerFacts], list[PartitionFacts]]:
    """Two replicas per partition, rack-safe. Four brokers: large topics on brokers 1-2,
    small ones on 3-4 (the issue's example). More: the ten oldest hold everything, the
    newest nothing."""
    rnd = random.Random(seed)
    facts = {b: BrokerFacts(id=b, rack=f"r{(b - 1) % racks}") for b in range(1, brokers + 1)}
    old = [b for b in facts if b <= 10]
    found = []
    topics = partitions // PARTITIONS_PER_TOPIC
    for t in range(topics):
        large = t % 10 == 0
        for p in range(PARTITIONS_PER_TOPIC):
            if brokers == 4:
                first, second = rnd.choice(((1, 2), (2, 1))) if large else rnd.choice(((3, 4), (4, 3)))
            else:
                first = rnd.choice(old)
                second = rnd.choice([b for b in old if facts[b].rack != facts[first].rack])
            size = int(min(rnd.paretovariate(1.2), 50) * 200 * MB) if large else rnd.randint(0, 20 * MB)
            found.append(PartitionFacts(topic=f"t{t:04d}", partition=p, replicas=(first, second), leader=first, size_bytes=size))
    return facts, found


def per_broker(partitions: list[PartitionFacts], placement: dict[tuple[str, int], tuple[int, ...]], brokers) -> dict[int, int]:
    held = dict.fromkeys(brokers, 0)
    for p in partitions:
        for b in placement[(p.topic, p.partition)]:
            held[b] += p.size_bytes
    return held


def skew(held: dict[int, int]) -> float:
    mean = sum(held.values()) / len(held)
    return max(held.values()) / mean if mean else 1.0


def generate(brokers: dict[int, BrokerFacts], partitions: list[PartitionFacts], seed: int, classpath: str) -> dict[tuple[str, int], tuple[int, ...]]:
    counts: dict[str, int] = {}
    for p in partitions:
        counts[p.topic] = counts.get(p.topic, 0) + 1
    lines = [f"broker {b} {f.rack or '-'}" for b, f in sorted(brokers.items())]
    lines += [f"topic {t} {n} 2" for t, n in sorted(counts.items())]
    proc = subprocess.run(["java", "-cp", classpath, str(ORACLE), str(seed)], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, check=True, timeout=600)
    placed = {}
    for line in proc.stdout.splitlines():
        topic, partition, replicas = line.split()
        placed[(topic, int(partition))] = tuple(int(b) for b in replicas.split(","))
    return placed


def moved_by(partitions: list[PartitionFacts], placement) -> int:
    return sum(p.size_bytes * len(set(placement[(p.topic, p.partition)]) - set(p.replicas)) for p in partitions)


def offline(runs: int, seeds: int) -> None:
    from tests.backends.jars import resolve_classpath

    classpath = os.pathsep.join(str(p) for p in resolve_classpath())
    print(f"{'layout':<26} {'plan s':>7} {'kctl moved':>11} {'lower bound':>12} {'ratio':>6} {'skew':>5}   "
          f"{'--generate moved':>16} {'ratio':>6} {'skew':>5}   kctl/--generate")
    for partitions, brokers, racks in SCENARIOS:
        facts, found = layout(partitions, brokers, racks)
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            plan = plan_balance(facts, found)
            times.append(time.perf_counter() - started)
        targets = {(p.topic, p.partition): p.replicas for p in found}
        targets.update({(m.topic, m.partition): m.target for m in plan.moves})
        kctl_skew = skew(per_broker(found, targets, facts))
        bound = plan.lower_bound_bytes
        theirs = [generate(facts, found, seed, classpath) for seed in range(1, seeds + 1)]
        their_moved = statistics.mean(moved_by(found, placed) for placed in theirs)
        their_skew = statistics.mean(skew(per_broker(found, placed, facts)) for placed in theirs)
        name = f"{partitions:,} partitions, {brokers} brokers"
        print(f"{name:<26} {statistics.median(times):>7.2f} {plan.bytes_moved / 1e9:>9.1f}GB {bound / 1e9:>10.1f}GB "
              f"{plan.bytes_moved / bound:>6.2f} {kctl_skew:>5.2f}   {their_moved / 1e9:>14.1f}GB {their_moved / bound:>6.2f} "
              f"{their_skew:>5.2f}   {plan.bytes_moved / their_moved:.2f}", flush=True)


def on_a_cluster(runs: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from tests.backends.kafka import TEST_TOOL_JVM_OPTIONS, KafkaCluster

    facts, found = layout(2_000, 4, 2)
    with tempfile.TemporaryDirectory() as directory:
        cluster = KafkaCluster(nodes=4, workdir=Path(directory), standalone=True, roles={2: "broker", 3: "broker", 4: "broker"},
                               racks={b: f.rack or "" for b, f in facts.items()}, tool_jvm_options=TEST_TOOL_JVM_OPTIONS)
        try:
            cluster.start()
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            by_topic: dict[str, list[list[int]]] = {}
            for p in found:
                by_topic.setdefault(p.topic, []).append(list(p.replicas))
            topics = [NewTopic(t, len(a), -1, replica_assignment=a) for t, a in sorted(by_topic.items())]
            for i in range(0, len(topics), 10):
                for future in admin.create_topics(topics[i:i + 10], operation_timeout=120).values():
                    future.result()
            producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 20})
            for p in found:  # a thousandth of the sizes: what matters here is reading and planning
                if p.size_bytes:
                    producer.produce(p.topic, os.urandom(min(max(1, p.size_bytes // 1000), 500_000)), partition=p.partition)
            producer.flush(120)
            kctl = [*kctl_argv(), "-b", cluster.bootstrap, "cluster", "balance", "-o", "json"]
            ours = common.time_command(kctl, runs)
            topics_file = Path(directory) / "topics.json"
            topics_file.write_text('{"version": 1, "topics": [' + ",".join(f'{{"topic": "{t}"}}' for t in sorted(by_topic)) + "]}")
            tool = cluster.tool_command("org.apache.kafka.tools.reassign.ReassignPartitionsCommand", "--bootstrap-server", cluster.bootstrap,
                                        "--generate", "--topics-to-move-json-file", str(topics_file), "--broker-list", "1,2,3,4")
            theirs = common.time_command(list(tool), runs)
            print(f"\nfour Kafka 4.4 brokers, 2,000 partitions: kctl cluster balance {ours:.2f} s, "
                  f"kafka-reassign-partitions --generate {theirs:.2f} s ({ours / theirs:.2f}x)")
        finally:
            cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--no-cluster", action="store_true")
    args = parser.parse_args()
    offline(args.runs, args.seeds)
    if not args.no_cluster:
        on_a_cluster(args.runs)
    sys.exit(0)


if __name__ == "__main__":
    main()
