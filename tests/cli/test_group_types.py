"""Groups of Kafka 4's other types, against real Kafka and its own tools: consumer groups of
the KIP-848 protocol (two confluent-kafka members) and share groups (Kafka's console share
consumer). The bundled broker implements classic groups only."""

from __future__ import annotations

import json
import subprocess

import pytest
from confluent_kafka import Consumer, Producer

from kctl.errors import ExitCode
from tests.eventually import eventually

pytestmark = pytest.mark.integration


@pytest.fixture
def kafka_cluster(cluster):
    if cluster.kafka is None:
        pytest.skip("consumer-protocol, share and streams groups need Apache Kafka 4.x")
    return cluster


@pytest.fixture
def topic(kctl, kafka_cluster, unique_name):
    name = unique_name("typ")
    assert kctl("-b", kafka_cluster.bootstrap, "topic", "create", name, "-p", "4").exit_code == 0
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap})
    for i in range(40):
        producer.produce(name, value=b"%d" % i, partition=i % 4)
    assert producer.flush(30) == 0
    return name


def as_json(kctl, cluster, *args):
    result = kctl("-b", cluster.bootstrap, *args, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_consumer_protocol_group_epochs_assignments_and_resets(kctl, kafka_cluster, topic, unique_name, tmp_path):
    group = unique_name("g848")
    members = [Consumer({"bootstrap.servers": kafka_cluster.bootstrap, "group.id": group, "group.protocol": "consumer",
                         "client.id": f"member-{i}", "auto.offset.reset": "earliest"}) for i in range(2)]
    try:
        for member in members:
            member.subscribe([topic])

        def reconciled():
            for member in members:
                member.poll(0.1)
            (g,) = as_json(kctl, kafka_cluster, "group", "describe", group)
            assert g["state"] == "Stable" and len(g["members"]) == 2
            assert all(m["assignment"] and m["assignment"] == m["target_assignment"] for m in g["members"])
            return g

        g = eventually(reconciled, timeout=60, interval=0.5)
        assert (g["type"], g["protocol"]) == ("consumer", "uniform")
        assert g["group_epoch"] >= g["assignment_epoch"] >= 1
        assert [m["client_id"] for m in g["members"]] == ["member-0", "member-1"]
        assert all(m["member_epoch"] >= 1 and m["subscribed_topics"] == [topic] for m in g["members"])
        owned = sorted(int(p) for m in g["members"] for entry in m["assignment"] for p in entry.split(":")[1].split(","))
        assert owned == [0, 1, 2, 3]

        # Kafka's own tool sees the same members with the same epochs.
        tool = kafka_cluster.kafka.run_tool(
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server", kafka_cluster.bootstrap,
            "--describe", "--members", "--verbose", "--group", group)
        assert tool.returncode == 0, tool.stderr
        for m in g["members"]:
            line = next(line for line in tool.stdout.splitlines() if m["member_id"] in line)
            assert str(m["member_epoch"]) in line.split()

        (listed,) = [x for x in as_json(kctl, kafka_cluster, "group", "list", "--type", "consumer") if x["group"] == group]
        assert (listed["state"], listed["type"], listed["members"]) == ("Stable", "consumer", 2)

        state = {"XDG_STATE_HOME": str(tmp_path / "state")}
        refused = kctl("-b", kafka_cluster.bootstrap, "group", "reset-offsets", group, "-t", topic, "--to-earliest",
                       "--execute", "--yes", env=state)
        assert refused.exit_code == ExitCode.GROUP_ACTIVE, refused.stderr
        assert "member-0@" in refused.stderr and "member-1@" in refused.stderr
    finally:
        for member in members:
            member.close()

    def empty():
        (g,) = as_json(kctl, kafka_cluster, "group", "describe", group)
        assert (g["state"], g["members"]) == ("Empty", [])

    eventually(empty, timeout=30)
    applied = kctl("-b", kafka_cluster.bootstrap, "group", "reset-offsets", group, "-t", topic, "--to-offset", "3",
                   "--execute", "--yes", "-o", "json", env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert applied.exit_code == 0, applied.stderr
    (g,) = as_json(kctl, kafka_cluster, "group", "describe", group)
    assert [(o["partition"], o["offset"]) for o in g["offsets"]] == [(p, 3) for p in range(4)]


def test_share_group_list_describe_lag_and_delete(kctl, kafka_cluster, topic, unique_name, tmp_path):
    group = unique_name("share")
    share_consumer = subprocess.Popen(
        kafka_cluster.kafka.tool_command("org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server",
                                         kafka_cluster.bootstrap, "--topic", topic, "--group", group),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def joined():
            listed = [x for x in as_json(kctl, kafka_cluster, "group", "list", "--type", "share") if x["group"] == group]
            assert listed and listed[0]["members"] == 1 and listed[0]["state"] == "Stable"
            return listed[0]

        listed = eventually(joined, timeout=60, interval=0.5)
        assert (listed["type"], listed["protocol"]) == ("share", "simple")
        # A share group starts at the latest offset once its consumer first fetches: records
        # written after that are delivered and acknowledged, which records start offsets.
        producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap})

        def described():
            for partition in range(4):
                producer.produce(topic, value=b"late", partition=partition)
            assert producer.flush(30) == 0
            (g,) = as_json(kctl, kafka_cluster, "group", "describe", group)
            assert g["members"] and g["members"][0]["assignment"] == [f"{topic}:0,1,2,3"]
            assert len(g["offsets"]) == 4 and all(o["offset"] is not None for o in g["offsets"])
            return g

        g = eventually(described, timeout=60, interval=0.5)
        (member,) = g["members"]
        assert (g["type"], member["subscribed_topics"], member["member_epoch"] >= 1) == ("share", [topic], True)

        # Lag is Kafka's for share-partitions; the consumer acknowledges everything written.
        def caught_up():
            (lagged,) = as_json(kctl, kafka_cluster, "group", "lag", group)
            assert (lagged["state"], lagged["members"]) == ("Stable", 1)
            assert [(p["partition"], p["lag"]) for p in lagged["partitions"]] == [(0, 0), (1, 0), (2, 0), (3, 0)]

        eventually(caught_up, timeout=60, interval=0.5)
        everything = {x["group"]: x for x in as_json(kctl, kafka_cluster, "group", "lag", "--all")}
        assert everything[group]["lag_sum"] == 0
        status = kctl("-b", kafka_cluster.bootstrap, "group", "status", group, "--window", "2", "--state-file", str(tmp_path / "lag.json"))
        assert status.exit_code == 0, status.stdout + status.stderr

        # Kafka's kafka-share-groups reports the same start offsets.
        tool = kafka_cluster.kafka.run_tool(
            "org.apache.kafka.tools.consumer.group.ShareGroupCommand", "--bootstrap-server", kafka_cluster.bootstrap,
            "--describe", "--group", group)
        assert tool.returncode == 0, tool.stderr
        theirs = {}
        for line in tool.stdout.splitlines():
            cells = line.split()
            if len(cells) >= 5 and cells[0] == group and cells[1] == topic:
                theirs[int(cells[2])] = (cells[3], cells[4])
        # The consumer may move on between the two reads: Kafka's offsets are never behind.
        assert sorted(theirs) == [0, 1, 2, 3]
        assert all(int(theirs[o["partition"]][0]) >= o["offset"] for o in g["offsets"])
        assert {lag for _start, lag in theirs.values()} == {"0"}

        refused = kctl("-b", kafka_cluster.bootstrap, "group", "delete", group, "--yes")
        assert refused.exit_code == ExitCode.GROUP_ACTIVE, refused.stderr
        not_yet = kctl("-b", kafka_cluster.bootstrap, "group", "reset-offsets", group, "-t", topic, "--to-earliest")
        assert not_yet.exit_code == ExitCode.INVALID
        assert not_yet.stderr.startswith(f"error: unable to reset offsets of group {group}: it is a share group")
    finally:
        share_consumer.terminate()  # its shutdown hook closes the consumer: it leaves the group
        try:
            share_consumer.wait(30)
        except subprocess.TimeoutExpired:
            share_consumer.kill()
            share_consumer.wait()

    def deleted():
        result = kctl("-b", kafka_cluster.bootstrap, "group", "delete", group, "--yes")
        assert result.exit_code == 0, result.stderr

    eventually(deleted, timeout=60, interval=1.0)
    gone = kctl("-b", kafka_cluster.bootstrap, "group", "describe", group)
    assert gone.exit_code == ExitCode.NOT_FOUND, gone.stderr
    assert gone.stderr.startswith(f"error: unable to describe group {group}: GROUP_ID_NOT_FOUND")


def test_the_cli_offers_the_library_states_and_types():
    from kctl.admin import groups
    from kctl.cli import group

    assert (group.GROUP_STATES, group.GROUP_TYPES) == (groups.STATES, groups.TYPES)
