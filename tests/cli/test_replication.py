"""Reassignment, replication-factor changes and leader elections, for real: three Kafka
nodes move data, and Kafka's own kafka-reassign-partitions reads kctl's plans."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from kctl.errors import ExitCode
from tests.support.eventually import eventually, until

pytestmark = pytest.mark.integration


def partitions(kctl, cluster, topic):
    result = kctl("-b", cluster.bootstrap, "partition", "list", topic, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def configs(kctl, cluster, entity, name, *keys):
    args = [a for k in keys for a in ("-k", k)]
    result = kctl("-b", cluster.bootstrap, "config", "describe", entity, name, *args, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return {c["name"]: (c["value"], c["source"]) for c in json.loads(result.stdout)[0]["configs"]}




def test_single_node_refuses_more_replicas_than_brokers(kctl, cluster, unique_name):
    topic = unique_name("rf")
    kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "1", "--rf", "1")
    too_many = str(cluster.nodes + 1)
    result = kctl("-b", cluster.bootstrap, "topic", "set-replication-factor", topic, too_many)
    assert (result.exit_code, result.stderr) == (
        ExitCode.INVALID,
        f"error: unable to place {topic}-0: replication factor {too_many} is larger than the {cluster.nodes} broker(s) available\n",
    )
    result = kctl("-b", cluster.bootstrap, "replication", "reassign", "generate", "-t", topic, "--rf", too_many)
    assert result.exit_code == ExitCode.INVALID
    assert [p["replicas"] for p in partitions(kctl, cluster, topic)] == [[p["leader"]] for p in partitions(kctl, cluster, topic)]


def test_bad_plans_change_nothing(kctl, cluster, unique_name, tmp_path):
    topic = unique_name("plan")
    kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "1", "--rf", "1")
    before = partitions(kctl, cluster, topic)
    cases = {
        "broken.json": ('{"partitions": [', ExitCode.INVALID, "not JSON: Expecting value at line 1 column 17"),
        "shape.json": ('{"version": 1}', ExitCode.INVALID, 'expected {"version": 1, "partitions": [...]}'),
        "broker.json": (json.dumps({"partitions": [{"topic": topic, "partition": 0, "replicas": [42]}]}), ExitCode.INVALID, "broker(s) 42 not in the cluster"),
        "twice.json": (json.dumps({"partitions": [{"topic": topic, "partition": 0, "replicas": [1, 1]}]}), ExitCode.INVALID, "lists a broker twice"),
        "topic.json": (json.dumps({"partitions": [{"topic": topic + "-nope", "partition": 0, "replicas": [1]}]}), ExitCode.NOT_FOUND, "UNKNOWN_TOPIC_OR_PARTITION"),
        "partition.json": (json.dumps({"partitions": [{"topic": topic, "partition": 7, "replicas": [1]}]}), ExitCode.NOT_FOUND, "has no partition 7"),
    }
    for name, (text, status, message) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        result = kctl("-b", cluster.bootstrap, "replication", "reassign", "execute", str(path), "--yes")
        assert result.exit_code == status, (name, result.stderr)
        assert message in result.stderr, (name, result.stderr)
        assert len(result.stderr.splitlines()) == 1
    missing = kctl("-b", cluster.bootstrap, "replication", "reassign", "execute", str(tmp_path / "none.json"), "--yes")
    assert (missing.exit_code, missing.stderr) == (ExitCode.INVALID, f"error: unable to read reassignment plan {tmp_path / 'none.json'}: No such file or directory\n")
    assert partitions(kctl, cluster, topic) == before


@pytest.mark.min_nodes(3)
def test_generate_execute_verify_interoperate_with_kafka(kctl, cluster, unique_name, tmp_path):
    topic = unique_name("move")
    kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "3", "--rf", "1")
    original = {p["partition"]: p["replicas"] for p in partitions(kctl, cluster, topic)}
    assert sorted(r for rs in original.values() for r in rs) == [1, 2, 3]

    result = kctl("-b", cluster.bootstrap, "replication", "reassign", "generate", "-t", topic, "--brokers", "1,2", "--rollback-out", str(tmp_path / "undo.json"))
    assert result.exit_code == 0, result.stderr
    assert result.stderr == "1 of 3 partition(s) move; 1 replica(s) to copy\n"
    plan = json.loads(result.stdout)
    assert plan["version"] == 1
    targets = {p["partition"]: p["replicas"] for p in plan["partitions"]}
    assert all(p["log_dirs"] == ["any"] for p in plan["partitions"])
    moved = [p for p, replicas in original.items() if replicas == [3]][0]
    assert targets[moved] in ([1], [2])
    assert {p: r for p, r in targets.items() if p != moved} == {p: r for p, r in original.items() if p != moved}
    (tmp_path / "plan.json").write_text(result.stdout)

    result = kctl("-b", cluster.bootstrap, "replication", "reassign", "execute", str(tmp_path / "plan.json"), "--wait", "--yes", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert {r["partition"]: r["status"] for r in json.loads(result.stdout)} == {0: "done", 1: "done", 2: "done"}
    assert {p["partition"]: p["replicas"] for p in partitions(kctl, cluster, topic)} == targets

    # Kafka's own tool reads kctl's plan and agrees it is complete.
    proc = cluster.kafka.run_tool(
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        "--bootstrap-server", cluster.bootstrap, "--verify", "--reassignment-json-file", str(tmp_path / "plan.json"),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Reassignment of partition {topic}-{moved} is completed." in proc.stdout

    # And kctl executes the rollback plan it wrote, undoing the move.
    undo = json.loads((tmp_path / "undo.json").read_text())
    assert {p["partition"]: p["replicas"] for p in undo["partitions"]} == original
    assert kctl("-b", cluster.bootstrap, "replication", "reassign", "execute", str(tmp_path / "undo.json"), "--wait", "--yes").exit_code == 0
    assert {p["partition"]: p["replicas"] for p in partitions(kctl, cluster, topic)} == original
    verify = kctl("-b", cluster.bootstrap, "replication", "reassign", "verify", str(tmp_path / "undo.json"), "--no-headers")
    assert verify.exit_code == 0
    assert [line.split("\t")[-1] for line in verify.stdout.splitlines()] == ["done", "done", "done"]


@pytest.mark.min_nodes(3)
def test_set_replication_factor_with_throttle(kctl, cluster, unique_name):
    topic = unique_name("rf")
    kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "2", "--rf", "1")
    dry = kctl("-b", cluster.bootstrap, "topic", "set-replication-factor", topic, "3", "--dry-run", "-o", "json")
    assert [len(r["target_replicas"]) for r in json.loads(dry.stdout)] == [3, 3]
    assert all(len(p["replicas"]) == 1 for p in partitions(kctl, cluster, topic))

    result = kctl("-b", cluster.bootstrap, "topic", "set-replication-factor", topic, "3", "--throttle", "10MB")
    assert result.exit_code == 0, result.stderr
    assert "reassignment: 2/2 partition(s) done" in result.stderr
    for p in partitions(kctl, cluster, topic):
        assert sorted(p["replicas"]) == [1, 2, 3]
        assert p["replicas"][0] == p["leader"]
    until(lambda: all(sorted(p["isr"]) == [1, 2, 3] for p in partitions(kctl, cluster, topic)))
    # The throttle is gone once the move is done (an unset rate is not even listed).
    def unthrottled():
        assert configs(kctl, cluster, "topic", topic, "leader.replication.throttled.replicas")["leader.replication.throttled.replicas"][1] == "DEFAULT_CONFIG"
        rate = configs(kctl, cluster, "broker", "1", "leader.replication.throttled.rate").get("leader.replication.throttled.rate", (None, "DEFAULT_CONFIG"))
        assert rate[1] == "DEFAULT_CONFIG"

    eventually(unthrottled)

    result = kctl("-b", cluster.bootstrap, "topic", "set-replication-factor", topic, "2")
    assert result.exit_code == 0, result.stderr
    leaders = {p["partition"]: p["leader"] for p in partitions(kctl, cluster, topic)}
    assert all(len(p["replicas"]) == 2 and p["replicas"][0] == leaders[p["partition"]] for p in partitions(kctl, cluster, topic))
    assert kctl("-b", cluster.bootstrap, "topic", "set-replication-factor", topic, "2").stderr == f"{topic} already has replication factor 2\n"


@pytest.mark.min_nodes(3)
def test_a_throttled_reassignment_is_listed_and_cancelled(kctl, cluster, unique_name, tmp_path):
    topic = unique_name("slow")
    kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "1", "--rf", "1")
    (source,) = partitions(kctl, cluster, topic)[0]["replicas"]
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 20, "compression.type": "none"})
    for _ in range(400):
        producer.produce(topic, value=b"x" * 10_000)
    assert producer.flush(30) == 0
    target = [source] + [b for b in (1, 2, 3) if b != source][:1]
    (tmp_path / "plan.json").write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": target}]}))

    result = kctl("-b", cluster.bootstrap, "replication", "reassign", "execute", str(tmp_path / "plan.json"), "--throttle", "1KB", "--yes")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1].split("\t")[-1] == "started"
    listed = json.loads(kctl("-b", cluster.bootstrap, "replication", "reassign", "list", "-o", "json").stdout)
    assert {"topic": topic, "partition": 0, "replicas": target, "adding_replicas": target[1:], "removing_replicas": []} in listed
    def throttled():
        assert configs(kctl, cluster, "topic", topic, "leader.replication.throttled.replicas", "follower.replication.throttled.replicas") == {
            "leader.replication.throttled.replicas": (f"0:{source}", "DYNAMIC_TOPIC_CONFIG"),
            "follower.replication.throttled.replicas": (f"0:{target[1]}", "DYNAMIC_TOPIC_CONFIG"),
        }
        assert configs(kctl, cluster, "broker", str(source), "leader.replication.throttled.rate")["leader.replication.throttled.rate"] == ("1000", "DYNAMIC_BROKER_CONFIG")

    eventually(throttled)

    verify = kctl("-b", cluster.bootstrap, "replication", "reassign", "verify", str(tmp_path / "plan.json"))
    assert verify.exit_code == ExitCode.TIMEOUT
    assert verify.stdout.splitlines()[1].split("\t")[-1] == "in-progress"

    cancelled = kctl("-b", cluster.bootstrap, "replication", "reassign", "cancel", str(tmp_path / "plan.json"), "--yes")
    assert cancelled.exit_code == 0, cancelled.stderr
    assert cancelled.stderr == "cancelled 1 reassignment(s)\n"
    until(lambda: partitions(kctl, cluster, topic)[0]["replicas"] == [source])
    assert json.loads(kctl("-b", cluster.bootstrap, "replication", "reassign", "list", "-o", "json").stdout) == []
    # A cancelled move is a failure to verify, once metadata has had its few seconds to settle.
    after = kctl("-b", cluster.bootstrap, "replication", "reassign", "verify", str(tmp_path / "plan.json"), "--preserve-throttles")
    assert after.exit_code == 1
    assert after.stdout.splitlines()[1].split("\t")[-1] == "failed"
    assert f"unable to complete the reassignment of {topic}-0: the replicas differ from the plan and nothing is in progress" in after.stderr

    def unthrottled():
        assert configs(kctl, cluster, "topic", topic, "leader.replication.throttled.replicas")["leader.replication.throttled.replicas"][1] == "DEFAULT_CONFIG"

    eventually(unthrottled)


@pytest.mark.min_nodes(3)
def test_preferred_leader_election(kctl, cluster, unique_name):
    topic = unique_name("elect")
    kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "3", "--rf", "3")
    result = kctl("-b", cluster.bootstrap, "replication", "elect-leaders", "--preferred", topic, "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert {r["status"] for r in json.loads(result.stdout)} == {"not-needed"}

    cluster.kafka.stop_node(1)
    try:
        until(lambda: all(p["leader"] != 1 for p in partitions(kctl, cluster, topic)))
    finally:
        cluster.kafka.start_node(1)
    until(lambda: all(sorted(p["isr"]) == [1, 2, 3] for p in partitions(kctl, cluster, topic)))
    displaced = [p["partition"] for p in partitions(kctl, cluster, topic) if p["replicas"][0] == 1]
    assert displaced, "partitions that prefer broker 1 should have lost it"
    balance = {b["broker"]: b for b in json.loads(kctl("-b", cluster.bootstrap, "broker", "balance", "-o", "json").stdout)}
    assert balance[1]["not_leading_preferred"] >= len(displaced)

    result = kctl("-b", cluster.bootstrap, "replication", "elect-leaders", "--preferred", topic, "-o", "json")
    assert result.exit_code == 0, result.stderr
    statuses = {r["partition"]: r["status"] for r in json.loads(result.stdout)}
    assert all(statuses[p] == "elected" for p in displaced)
    assert all(p["leader"] == p["replicas"][0] for p in partitions(kctl, cluster, topic))


def test_election_usage(kctl, cluster):
    assert kctl("-b", cluster.bootstrap, "replication", "elect-leaders", "--all").exit_code == ExitCode.USAGE
    assert kctl("-b", cluster.bootstrap, "replication", "elect-leaders", "--preferred").exit_code == ExitCode.USAGE
