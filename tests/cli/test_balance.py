"""`kctl cluster balance` and `kctl cluster usage` on real brokers (issue 71): four Kafka
4.x brokers in two racks made skewed on purpose (a large topic on brokers 1 and 2, a small
one on 3 and 4, a partition with both replicas in rack a, every large leader on broker 1),
balanced, killed midway and resumed, and judged with Kafka's own tools (LogDirsCommand's
sizes, Metadata); a cordoned broker (KIP-1066) left out; a single broker has nothing to balance, and its usage grows while
records arrive."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections import Counter

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kctl.errors import ExitCode
from tests.support.eventually import eventually, until

pytestmark = pytest.mark.integration

RACKS = {1: "a", 2: "b", 3: "a", 4: "b"}
MIB = 1 << 20


def layout(admin: AdminClient) -> dict[tuple[str, int], tuple[tuple[int, ...], int]]:
    """(replicas, leader) of every partition, from Metadata."""
    topics = admin.list_topics(timeout=10).topics
    return {(name, p.id): (tuple(p.replicas), p.leader) for name, t in topics.items() for p in t.partitions.values()}


def log_dir_sizes(cluster) -> dict[int, dict[tuple[str, int], int]]:
    """Each broker's replica sizes, as Kafka's kafka-log-dirs tool reports them."""
    proc = cluster.run_tool("org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server", cluster.bootstrap, "--describe")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("{")))
    sizes: dict[int, dict[tuple[str, int], int]] = {}
    for broker in document["brokers"]:
        mine = sizes.setdefault(broker["broker"], {})
        for log_dir in broker["logDirs"]:
            for p in log_dir["partitions"]:
                topic, _, number = p["partition"].rpartition("-")
                mine[(topic, int(number))] = p["size"]
    return sizes


def in_sync(cluster) -> dict[int, dict[tuple[str, int], int]]:
    """The brokers' sizes once every replica of a partition has the same size (followers
    caught up): what the balance is judged on."""
    def settled():
        sizes = log_dir_sizes(cluster)
        per_partition: dict[tuple[str, int], set[int]] = {}
        for mine in sizes.values():
            for key, size in mine.items():
                per_partition.setdefault(key, set()).add(size)
        assert all(len(found) == 1 for found in per_partition.values()), "followers still catching up"
        return sizes
    return eventually(settled, timeout=60)


def within(counts: dict[int, int], low: float, high: float) -> bool:
    mean = sum(counts.values()) / len(counts)
    return all(low * mean <= n <= high * mean for n in counts.values())


def skew_the_cluster(cluster) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topics = [NewTopic("big", 12, -1, replica_assignment=[[1, 2]] * 12), NewTopic("small", 8, -1, replica_assignment=[[3, 4], [4, 3]] * 4),
              NewTopic("unsafe", 1, -1, replica_assignment=[[1, 3]])]
    for future in admin.create_topics(topics, operation_timeout=30).values():
        future.result()
    until(lambda: all(t in admin.list_topics(timeout=10).topics for t in ("big", "small", "unsafe")))
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 20, "acks": "all"})
    record = os.urandom(16 * 1024)  # incompressible: sizes on disk are what was sent
    for partition in range(12):
        for _ in range(128):  # 2 MiB
            producer.produce("big", record, partition=partition)
        producer.flush(30)
    for partition in range(8):
        for _ in range(4):
            producer.produce("small", record, partition=partition)
    for _ in range(16):
        producer.produce("unsafe", record, partition=0)
    assert producer.flush(30) == 0
    return admin


def throttles(admin: AdminClient) -> dict[str, str]:
    """The replication throttles set on the brokers and the test's topics."""
    found = {}
    resources = [ConfigResource(ConfigResource.Type.BROKER, str(b)) for b in RACKS]
    resources += [ConfigResource(ConfigResource.Type.TOPIC, t) for t in ("big", "small", "unsafe")]
    for resource in resources:  # librdkafka takes one broker resource per call
        for name, entry in admin.describe_configs([resource])[resource].result().items():
            if "throttled" in name and not entry.is_default and entry.value:
                found[f"{resource.name}:{name}"] = entry.value
    return found


def test_balance_evens_out_a_skewed_cluster_and_resumes_after_a_kill(kctl, racked_kafka, tmp_path):
    cluster = racked_kafka
    admin = skew_the_cluster(cluster)
    in_sync(cluster)
    before = layout(admin)

    # The dry run: the same plan twice, nothing changed, bytes moved close to the bound.
    dry = kctl("-b", cluster.bootstrap, "cluster", "balance", "-o", "json", "--plan-out", str(tmp_path / "plan.json"))
    assert dry.exit_code == 0, dry.stderr
    again = kctl("-b", cluster.bootstrap, "cluster", "balance", "-o", "json")
    plan = json.loads(dry.stdout)
    # The same moves (the disks' use, shared with the machine, may differ by a few bytes).
    assert {k: json.loads(again.stdout)[k] for k in ("moves", "elect", "bytes_moved")} == {k: plan[k] for k in ("moves", "elect", "bytes_moved")}
    assert layout(admin) == before
    assert plan["unmet"] == [] and plan["moves"]
    assert plan["lower_bound_bytes"] > 20 * MIB
    assert plan["bytes_moved"] <= 1.1 * plan["lower_bound_bytes"], (plan["bytes_moved"], plan["lower_bound_bytes"])
    assert any(m["topic"] == "unsafe" and m["reason"] == "rack" for m in plan["moves"])
    written = json.loads((tmp_path / "plan.json").read_text())
    assert {(p["topic"], p["partition"]): p["replicas"] for p in written["partitions"]} == \
        {(m["topic"], m["partition"]): m["target"] for m in plan["moves"]}
    table = kctl("-b", cluster.bootstrap, "cluster", "balance")
    assert "BYTES-MOVED" in table.stdout and "-> " in table.stdout and "dry run:" in table.stderr

    # --execute, throttled to 1 MB/s one partition at a time, killed once a partition has
    # moved: the command run again waits for the move in flight and finishes the rest.
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    first = subprocess.Popen([sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "cluster", "balance", "--execute", "--yes",
                              "--throttle", "1MB/s", "--max-partitions", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    seen: list[dict] = []
    try:
        def moved_one() -> bool:
            listed = kctl("-b", cluster.bootstrap, "replication", "reassign", "list", "-o", "json")
            seen.append({"moving": json.loads(listed.stdout)} if listed.exit_code == 0 else {"error": listed.stderr})
            now = layout(admin)
            return any(now[k][0] != before[k][0] and set(now[k][0]) <= set(m["target"]) and len(now[k][0]) == len(before[k][0])
                       for m in plan["moves"] for k in [(m["topic"], m["partition"])] if set(m["target"]) != set(before[k][0]))
        until(moved_one, timeout=120)
        assert first.poll() is None, "the balance ended before it could be killed midway"
        # Gently: one partition moving at a time (--max-partitions 1), one new replica each.
        assert all("moving" in look and len(look["moving"]) <= 1 for look in seen), seen
        assert all(len(r["adding_replicas"]) <= 1 for look in seen for r in look["moving"]), seen
        assert any(look["moving"] for look in seen), seen
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
        first.stdout.close()
        first.stderr.close()
    resumed = kctl("-b", cluster.bootstrap, "cluster", "balance", "--execute", "--yes", "--throttle", "100MB/s", "-o", "json")
    assert resumed.exit_code == 0, resumed.stderr
    assert all(r["status"] == "done" for r in json.loads(resumed.stdout))

    # Judged by Kafka's tools: bytes within 0.90-1.10x of the mean, replicas and leaders
    # within 0.75-1.25x, no two replicas of a partition in one rack, no throttle left.
    sizes = in_sync(cluster)
    per_broker = {b: sum(mine.values()) for b, mine in sizes.items()}
    assert within(per_broker, 0.90, 1.10), per_broker
    now = layout(admin)
    replicas = Counter(b for r, _ in now.values() for b in r)
    leaders = Counter(leader for _, leader in now.values())
    assert within({b: replicas[b] for b in RACKS}, 0.75, 1.25), replicas
    assert within({b: leaders[b] for b in RACKS}, 0.75, 1.25), leaders
    for (topic, partition), (r, _) in now.items():
        racks = Counter(RACKS[b] for b in r)
        assert max(racks.values()) <= -(-len(r) // 2), (topic, partition, r)
    assert throttles(admin) == {}
    # Balanced: run again, nothing to move.
    done = kctl("-b", cluster.bootstrap, "cluster", "balance", "-o", "json")
    assert json.loads(done.stdout)["moves"] == [], done.stdout

    # cluster usage agrees with LogDirsCommand, and shows the evened skew.
    usage = kctl("-b", cluster.bootstrap, "cluster", "usage", "-o", "json")
    assert usage.exit_code == 0, usage.stderr
    report = json.loads(usage.stdout)
    assert {b["broker"]: b["bytes"] for b in report["brokers"]} == per_broker
    assert {b["broker"]: b["rack"] for b in report["brokers"]} == RACKS
    assert report["topics"][0]["topic"] == "big" and report["topics"][0]["bytes"] == sum(
        size for mine in sizes.values() for (t, _), size in mine.items() if t == "big")
    assert {s["measure"]: s["skew"] for s in report["skew"]}["bytes"] <= 1.10


def test_a_cordoned_broker_receives_nothing(kctl, racked_kafka):
    """KIP-1066 (Kafka 4.3+): broker 4's one log dir cordoned, a new skew is balanced onto
    the others only, and `cluster usage` shows the dir cordoned."""
    cluster = racked_kafka
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic("fresh", 6, -1, replica_assignment=[[1, 2]] * 6)], operation_timeout=30).values():
        future.result()
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 20})
    for partition in range(6):
        for _ in range(64):  # 1 MiB
            producer.produce("fresh", os.urandom(16 * 1024), partition=partition)
    assert producer.flush(30) == 0
    in_sync(cluster)
    directory = str(cluster.node(4).directory)
    cordon = kctl("-b", cluster.bootstrap, "config", "alter", "broker", "4", "--set", f"cordoned.log.dirs={directory}")
    assert cordon.exit_code == 0, cordon.stderr
    try:
        def cordoned() -> dict:
            report = json.loads(kctl("-b", cluster.bootstrap, "cluster", "usage", "-o", "json").stdout)
            assert {d["broker"]: d["cordoned"] for d in report["log_dirs"]} == {1: False, 2: False, 3: False, 4: True}
            return report
        eventually(cordoned)
        plan = json.loads(kctl("-b", cluster.bootstrap, "cluster", "balance", "-o", "json").stdout)
        assert plan["moves"]
        assert not any(4 in set(m["target"]) - set(m["current"]) for m in plan["moves"]), plan["moves"]
        assert {b["broker"]: b["bytes_in"] for b in plan["brokers"]}[4] == 0
        # doctor names the cordon, and its NEXT command, run as printed, lifts it.
        doctor = kctl("-b", cluster.bootstrap, "doctor", "broker", "4", "-o", "json")
        [finding] = [f for f in json.loads(doctor.stdout)["findings"] if f["check"] == "log-dir-cordoned"]
        assert (finding["severity"], finding["resource"], finding["evidence"]) == ("warning", "broker 4", {"cordoned": [directory], "log_dirs": 1})
        lift = kctl("-b", cluster.bootstrap, *shlex.split(finding["next"])[1:])
        assert lift.exit_code == 0, lift.stderr
        until(lambda: not any(d["cordoned"] for d in json.loads(kctl("-b", cluster.bootstrap, "cluster", "usage", "-o", "json").stdout)["log_dirs"]))
    finally:
        kctl("-b", cluster.bootstrap, "config", "alter", "broker", "4", "--delete", "cordoned.log.dirs")
        for future in admin.delete_topics(["fresh"], operation_timeout=30).values():
            future.result()


def test_balance_and_usage_refuse_bad_input(kctl, racked_kafka):
    bootstrap = racked_kafka.bootstrap
    for args, status, message in (
        (("--brokers", "x"), ExitCode.USAGE, "error: unable to parse --brokers 'x': expected broker ids such as 5,6"),
        (("--brokers", "9"), ExitCode.NOT_FOUND, "error: unable to balance onto broker(s) 9: no such live broker (brokers: 1, 2, 3, 4)"),
        (("-t", "nosuch"), ExitCode.NOT_FOUND, "nosuch"),
        (("--max-move", "lots"), ExitCode.USAGE, "error: unable to parse --max-move 'lots'"),
        (("--disk-threshold", "2"), ExitCode.USAGE, "error: invalid value for '--disk-threshold': 2.0 is not in the range 0<x<=1."),
        (("--goal", "speed"), ExitCode.USAGE, "error: invalid value for '--goal'"),
    ):
        result = kctl("-b", bootstrap, "cluster", "balance", *args)
        assert result.exit_code == status, (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) <= 3, result.stderr
    result = kctl("-b", bootstrap, "cluster", "usage", "--sample", "soon")
    assert result.exit_code == ExitCode.USAGE and "Traceback" not in result.stderr, result.stderr


@pytest.mark.single_node
def test_one_broker_has_nothing_to_balance_and_its_usage_grows(kctl, cluster, unique_name):
    bundled = cluster.bootstrap
    topic = unique_name("usage")
    assert kctl("-b", bundled, "topic", "create", topic, "-p", "2", "-c", "retention.ms=-1").exit_code == 0
    result = kctl("-b", bundled, "cluster", "balance", "-o", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["moves"] == []
    assert "one broker: nothing to balance" in result.stderr

    stop = threading.Event()

    def write() -> None:
        producer = Producer({"bootstrap.servers": bundled, "linger.ms": 5})
        while not stop.is_set():
            for _ in range(50):
                producer.produce(topic, os.urandom(1024))
            producer.flush(10)
            stop.wait(0.05)
        producer.flush(10)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        until(lambda: json.loads(kctl("-b", bundled, "cluster", "usage", "-t", topic, "-o", "json").stdout)["topics"][0]["bytes"] > 0,
)
        usage = kctl("-b", bundled, "cluster", "usage", "--sample", "2s", "-t", topic, "-o", "json")
    finally:
        stop.set()
        writer.join(30)
    assert usage.exit_code == 0, usage.stderr
    report = json.loads(usage.stdout)
    assert report["sampled_seconds"] >= 2
    (mine,) = report["topics"]
    assert mine["topic"] == topic and mine["records_per_second"] > 0 and mine["bytes_per_second"] > 0
    (broker,) = report["brokers"]
    assert broker["bytes_per_second"] > 0 and broker["replicas"] >= 2
    (log_dir,) = report["log_dirs"]
    # retention.ms=-1: nothing bounds it, so the disk fills at that rate some day.
    assert log_dir["bounded"] is False and log_dir["days_until_full"] > 0
    table = kctl("-b", bundled, "cluster", "usage", "-t", topic)
    assert "LARGEST TOPICS" in table.stdout
    lines = table.stdout.splitlines()
    row = lines[lines.index("BROKERS") + 2].split("\t")
    # The broker's bar: how full its disk is, in eighths of 20 cells.
    assert len(row[3]) == 20 and set(row[3]) <= set("█▏▎▍▌▋▊▉·"), row
