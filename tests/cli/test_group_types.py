"""Groups of Kafka 4's other types, against real Kafka and its own tools: consumer groups of
the KIP-848 protocol (two confluent-kafka members) and share groups (Kafka's console share
consumer) and streams groups (Kafka's WordCountDemo), on Apache Kafka and the bundled broker."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kctl.errors import ExitCode
from tests.support.eventually import eventually
from tests.support.members import close_members
from tests.top.pilot import groups_shown

pytestmark = pytest.mark.integration




@pytest.fixture
def consumer_protocol_cluster(cluster):
    """Apache Kafka, or the bundled broker (its KIP-848 coordinator)."""
    if cluster.kafka is None and cluster.backend != "bundled":
        pytest.skip("KIP-848 groups are tested on Apache Kafka and the bundled broker")
    return cluster


@pytest.fixture
def group_types_cluster(cluster, request):
    """Apache Kafka, or the bundled broker (its share and streams coordinators) with Kafka's tools."""
    if cluster.backend == "bundled":
        from tests.backends.plugin import Cluster

        return Cluster("bundled", cluster.bootstrap, 1, kafka=request.getfixturevalue("kafka_tools"))
    if cluster.kafka is None:
        pytest.skip("share groups are tested on Apache Kafka and the bundled broker")
    return cluster


@pytest.fixture
def topic(kctl, cluster, unique_name):
    name = unique_name("typ")
    assert kctl("-b", cluster.bootstrap, "topic", "create", name, "-p", "4").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(40):
        producer.produce(name, value=b"%d" % i, partition=i % 4)
    assert producer.flush(30) == 0
    return name


def as_json(kctl, cluster, *args):
    result = kctl("-b", cluster.bootstrap, *args, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def completes_group(cluster, group):
    """Shell completion offers the group (`kctl __names`, what the completion scripts call)."""
    names = subprocess.run([sys.executable, "-m", "kctl", "__names", "group", "--", "-b", cluster.bootstrap],
                           capture_output=True, text=True, timeout=30)
    assert group in names.stdout.split(), names.stdout


def _partitions(entries):
    return sorted(int(p) for entry in entries or [] for p in entry.split(":")[1].split(","))


def test_consumer_protocol_group_mid_reconciliation(kctl, consumer_protocol_cluster, topic, unique_name, kafka_tools):
    """A member that does not poll cannot give partitions up: the group stays Reconciling,
    the newcomer's target assignment waits for them, and kctl shows it as Kafka's tool does."""
    group = unique_name("grec")

    def member(i):
        return Consumer({"bootstrap.servers": consumer_protocol_cluster.bootstrap, "group.id": group, "group.protocol": "consumer",
                         "client.id": f"member-{i}", "auto.offset.reset": "earliest"})

    first, second = member(0), member(1)
    try:
        first.subscribe([topic])

        def owns_all():
            first.poll(0.1)
            assert len(first.assignment()) == 4

        eventually(owns_all, timeout=60, interval=0)
        second.subscribe([topic])

        def reconciling():
            second.poll(0.2)  # only the newcomer polls; the first member never revokes
            (g,) = as_json(kctl, consumer_protocol_cluster, "group", "describe", group)
            assert g["state"] == "Reconciling" and len(g["members"]) == 2
            old, new = sorted(g["members"], key=lambda m: m["client_id"])
            assert _partitions(old["assignment"]) == [0, 1, 2, 3] and len(_partitions(old["target_assignment"])) == 2
            assert len(_partitions(new["target_assignment"])) == 2 and not set(_partitions(new["assignment"])) & set(_partitions(new["target_assignment"]))
            return g

        g = eventually(reconciling, timeout=60, interval=0.5)
        assert g["group_epoch"] == g["assignment_epoch"]
        old, new = sorted(g["members"], key=lambda m: m["client_id"])
        assert old["member_epoch"] < g["group_epoch"]
        listed = [x["group"] for x in as_json(kctl, consumer_protocol_cluster, "group", "list", "--state", "Reconciling")]
        assert group in listed
        tool = kafka_tools.run_tool(
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server", consumer_protocol_cluster.bootstrap,
            "--describe", "--state", "--group", group)
        assert tool.returncode == 0 and "Reconciling" in tool.stdout, tool.stdout + tool.stderr

        # Once the first member polls it gives the partitions up and the group settles.
        def stable():
            first.poll(0.1)
            second.poll(0.1)
            (g,) = as_json(kctl, consumer_protocol_cluster, "group", "describe", group)
            assert g["state"] == "Stable"
            assert all(m["assignment"] == m["target_assignment"] and len(_partitions(m["assignment"])) == 2 for m in g["members"])

        eventually(stable, timeout=60, interval=0.2)
    finally:
        close_members([first, second])


def test_consumer_protocol_group_epochs_assignments_and_resets(kctl, consumer_protocol_cluster, topic, unique_name, tmp_path, kafka_tools):
    group = unique_name("g848")
    members = [Consumer({"bootstrap.servers": consumer_protocol_cluster.bootstrap, "group.id": group, "group.protocol": "consumer",
                         "client.id": f"member-{i}", "auto.offset.reset": "earliest"}) for i in range(2)]
    try:
        for member in members:
            member.subscribe([topic])

        def reconciled():
            for member in members:
                member.poll(0.1)
            (g,) = as_json(kctl, consumer_protocol_cluster, "group", "describe", group)
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
        tool = kafka_tools.run_tool(
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server", consumer_protocol_cluster.bootstrap,
            "--describe", "--members", "--verbose", "--group", group)
        assert tool.returncode == 0, tool.stderr
        for m in g["members"]:
            line = next(line for line in tool.stdout.splitlines() if m["member_id"] in line)
            assert str(m["member_epoch"]) in line.split()

        (listed,) = [x for x in as_json(kctl, consumer_protocol_cluster, "group", "list", "--type", "consumer") if x["group"] == group]
        assert (listed["state"], listed["type"], listed["members"]) == ("Stable", "consumer", 2)
        shown = groups_shown(consumer_protocol_cluster.bootstrap, [group])[group]  # kctl top's groups view (issue 36)
        assert (shown["TYPE"], shown["STATE"], shown["MEMBERS"]) == ("consumer", "Stable", "2")

        state = {"XDG_STATE_HOME": str(tmp_path / "state")}
        refused = kctl("-b", consumer_protocol_cluster.bootstrap, "group", "reset-offsets", group, "-t", topic, "--to-earliest",
                       "--execute", "--yes", env=state)
        assert refused.exit_code == ExitCode.GROUP_ACTIVE, refused.stderr
        assert "member-0@" in refused.stderr and "member-1@" in refused.stderr
    finally:
        close_members(members)

    def empty():
        (g,) = as_json(kctl, consumer_protocol_cluster, "group", "describe", group)
        assert (g["state"], g["members"]) == ("Empty", [])

    eventually(empty, timeout=30)
    applied = kctl("-b", consumer_protocol_cluster.bootstrap, "group", "reset-offsets", group, "-t", topic, "--to-offset", "3",
                   "--execute", "--yes", "-o", "json", env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert applied.exit_code == 0, applied.stderr
    (g,) = as_json(kctl, consumer_protocol_cluster, "group", "describe", group)
    assert [(o["partition"], o["offset"]) for o in g["offsets"]] == [(p, 3) for p in range(4)]


def test_share_group_list_describe_lag_and_delete(kctl, group_types_cluster, topic, unique_name, tmp_path):
    kafka_cluster = group_types_cluster
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

        eventually(lambda: completes_group(kafka_cluster, group), timeout=20, interval=0.5)
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
        # kctl top's groups view shows it with its type (issue 36).
        shown = groups_shown(kafka_cluster.bootstrap, [group])[group]
        assert (shown["TYPE"], shown["STATE"], shown["MEMBERS"], shown["LAG"]) == ("share", "Stable", "1", "0")
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
        # The dry run shows the plan and warns; --execute is refused.
        preview = kctl("-b", kafka_cluster.bootstrap, "group", "reset-offsets", group, "-t", topic, "--to-earliest")
        assert preview.exit_code == 0 and preview.stderr.startswith("warning: ") and "console-share-consumer@" in preview.stderr
        active = kctl("-b", kafka_cluster.bootstrap, "group", "reset-offsets", group, "-t", topic, "--to-earliest", "--execute", "--yes",
                      env={"XDG_STATE_HOME": str(tmp_path / "state")})
        assert active.exit_code == ExitCode.GROUP_ACTIVE
        assert "console-share-consumer@" in active.stderr
    finally:
        share_consumer.terminate()  # its shutdown hook closes the consumer: it leaves the group
        try:
            share_consumer.wait(30)
        except subprocess.TimeoutExpired:
            share_consumer.kill()
            share_consumer.wait()

    def empty():
        (g,) = as_json(kctl, kafka_cluster, "group", "describe", group)
        assert (g["state"], g["members"]) == ("Empty", [])
        return {o["partition"]: o["offset"] for o in g["offsets"]}

    before = eventually(empty, timeout=60, interval=0.5)
    state = {"XDG_STATE_HOME": str(tmp_path / "xdg-state")}
    reset = ("-b", kafka_cluster.bootstrap, "group", "reset-offsets", group)
    planned = json.loads(kctl(*reset, "-t", topic, "--to-earliest", "-o", "json", env=state).stdout)
    assert [(p["partition"], p["current"], p["new"]) for p in planned] == [(p, before[p], 0) for p in range(4)]
    applied = kctl(*reset, "-t", topic, "--to-earliest", "--execute", "--yes", env=state)
    assert applied.exit_code == 0, applied.stderr
    tool = kafka_cluster.kafka.run_tool(
        "org.apache.kafka.tools.consumer.group.ShareGroupCommand", "--bootstrap-server", kafka_cluster.bootstrap,
        "--describe", "--group", group)
    starts = {int(c[2]): int(c[3]) for c in map(str.split, tool.stdout.splitlines()) if len(c) >= 4 and c[0] == group}
    assert starts == {0: 0, 1: 0, 2: 0, 3: 0}
    undone = kctl(*reset, "--undo", "last", "--execute", "--yes", env=state)
    assert undone.exit_code == 0, undone.stderr
    assert empty() == before

    forgotten = kctl("-b", kafka_cluster.bootstrap, "group", "delete-offsets", group, "-t", topic, "--yes")
    assert forgotten.exit_code == 0, forgotten.stderr
    assert forgotten.stdout.split().count("deleted") == 4
    assert empty() == {}
    partial = kctl("-b", kafka_cluster.bootstrap, "group", "delete-offsets", group, "-t", f"{topic}:0", "--yes")
    assert partial.exit_code == ExitCode.USAGE

    def deleted():
        result = kctl("-b", kafka_cluster.bootstrap, "group", "delete", group, "--yes")
        assert result.exit_code == 0, result.stderr

    eventually(deleted, timeout=60, interval=1.0)
    gone = kctl("-b", kafka_cluster.bootstrap, "group", "describe", group)
    assert gone.exit_code == ExitCode.NOT_FOUND, gone.stderr
    assert gone.stderr.startswith(f"error: unable to describe group {group}: GROUP_ID_NOT_FOUND")


WORDCOUNT_INPUT = "streams-plaintext-input"  # Kafka's WordCountDemo reads and writes fixed topics


def test_streams_group_list_describe_lag_reset_and_delete(kctl, group_types_cluster, unique_name, tmp_path):
    """Kafka's own WordCountDemo (a Kafka Streams application from Maven Central) with
    group.protocol=streams: two subtopologies, a repartition topic, committed offsets."""
    kafka_cluster = group_types_cluster
    group = unique_name("wc")
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    for future in admin.create_topics([NewTopic(WORDCOUNT_INPUT, 4), NewTopic("streams-wordcount-output", 1)]).values():
        try:
            future.result(30)
        except Exception as exc:  # noqa: BLE001 - another test run on this cluster made them
            assert "TOPIC_ALREADY_EXISTS" in str(exc)
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap})
    for i in range(20):
        producer.produce(WORDCOUNT_INPUT, value=b"hello world %d" % i, partition=i % 4)
    assert producer.flush(30) == 0
    config = tmp_path / "wordcount.properties"
    config.write_text(f"application.id={group}\nbootstrap.servers={kafka_cluster.bootstrap}\ngroup.protocol=streams\n"
                      f"state.dir={tmp_path / 'state'}\ncommit.interval.ms=200\n")
    app = subprocess.Popen(
        kafka_cluster.kafka.tool_command("org.apache.kafka.streams.examples.wordcount.WordCountDemo", str(config)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    reset_env = {"XDG_STATE_HOME": str(tmp_path / "xdg-state")}
    try:
        def running():
            found = [x for x in as_json(kctl, kafka_cluster, "group", "lag", "--all") if x["group"] == group]
            assert len(found) == 1, "the application has not joined yet"
            g = found[0]
            assert (g["state"], g["members"]) == ("Stable", 1)
            inputs = [p for p in g["partitions"] if p["topic"] == WORDCOUNT_INPUT]
            assert [(p["partition"], p["committed"], p["lag"]) for p in inputs] == [(p, 5, 0) for p in range(4)]
            assert all(p["client_id"] for p in g["partitions"])  # input and repartition topics have owners
            return g

        eventually(running, timeout=90, interval=0.5)
        shown = groups_shown(kafka_cluster.bootstrap, [group])[group]  # kctl top's groups view (issue 36)
        assert (shown["TYPE"], shown["STATE"], shown["MEMBERS"]) == ("streams", "Stable", "1")
        (listed,) = [x for x in as_json(kctl, kafka_cluster, "group", "list", "--type", "streams") if x["group"] == group]
        assert (listed["state"], listed["members"]) == ("Stable", 1)
        eventually(lambda: completes_group(kafka_cluster, group), timeout=20, interval=0.5)
        (g,) = as_json(kctl, kafka_cluster, "group", "describe", group)
        (member,) = g["members"]
        assert g["type"] == "streams" and g["group_epoch"] >= g["assignment_epoch"] >= 1
        assert member["assignment"] == member["target_assignment"] == ["0:0,1,2,3", "1:0,1,2,3"]
        # WordCountDemo: words are re-keyed into a repartition topic, counted into a store.
        assert [(st["subtopology"], st["source_topics"]) for st in g["topology"]] == [("0", [WORDCOUNT_INPUT]), ("1", [])]
        (repartition,) = g["topology"][0]["repartition_sink_topics"]
        assert g["topology"][1]["repartition_source_topics"] == [repartition]
        assert repartition.startswith(f"{group}-") and repartition.endswith("-repartition")
        (changelog,) = g["topology"][1]["changelog_topics"]
        assert changelog.startswith(f"{group}-") and changelog.endswith("-changelog")
        assert g["topology"][0]["changelog_topics"] == []
        text = kctl("-b", kafka_cluster.bootstrap, "group", "describe", group, "-o", "wide")
        assert "TOPOLOGY" in text.stdout and changelog in text.stdout

        tool = kafka_cluster.kafka.run_tool(
            "org.apache.kafka.tools.streams.StreamsGroupCommand", "--bootstrap-server", kafka_cluster.bootstrap,
            "--describe", "--group", group, "--members", "--verbose")
        assert tool.returncode == 0, tool.stderr
        line = next(line for line in tool.stdout.splitlines() if member["member_id"] in line)
        assert str(member["member_epoch"]) in line.split() and member["client_id"] in line.split()
        tool = kafka_cluster.kafka.run_tool(
            "org.apache.kafka.tools.streams.StreamsGroupCommand", "--bootstrap-server", kafka_cluster.bootstrap,
            "--describe", "--group", group, "--offsets")
        assert tool.returncode == 0, tool.stderr
        theirs = {int(cells[2]): int(cells[3]) for cells in map(str.split, tool.stdout.splitlines())
                  if len(cells) == 4 and cells[0] == group and cells[1] == WORDCOUNT_INPUT}
        assert theirs == {0: 0, 1: 0, 2: 0, 3: 0}  # OFFSET-LAG, as kctl's lag above

        refused = kctl("-b", kafka_cluster.bootstrap, "group", "reset-offsets", group, "-t", WORDCOUNT_INPUT,
                       "--to-earliest", "--execute", "--yes", env=reset_env)
        assert refused.exit_code == ExitCode.GROUP_ACTIVE, refused.stderr
        assert f"{member['client_id']}@" in refused.stderr
    finally:
        app.terminate()  # WordCountDemo's shutdown hook closes Kafka Streams: it leaves the group
        try:
            app.wait(30)
        except subprocess.TimeoutExpired:
            app.kill()
            app.wait()

    def empty():
        (g,) = as_json(kctl, kafka_cluster, "group", "describe", group)
        assert (g["state"], g["members"]) == ("Empty", [])

    eventually(empty, timeout=60, interval=0.5)
    applied = kctl("-b", kafka_cluster.bootstrap, "group", "reset-offsets", group, "-t", WORDCOUNT_INPUT,
                   "--to-earliest", "--execute", "--yes", env=reset_env)
    assert applied.exit_code == 0, applied.stderr
    reader = Consumer({"bootstrap.servers": kafka_cluster.bootstrap, "group.id": group})
    try:
        committed = reader.committed([TopicPartition(WORDCOUNT_INPUT, p) for p in range(4)], timeout=10)
    finally:
        reader.close()
    assert [tp.offset for tp in committed] == [0, 0, 0, 0]
    (g,) = as_json(kctl, kafka_cluster, "group", "lag", group)
    assert [(p["partition"], p["committed"], p["lag"]) for p in g["partitions"] if p["topic"] == WORDCOUNT_INPUT] == [
        (p, 0, 5) for p in range(4)]
    # The group and its internal topics (kafka-streams-groups --delete-all-internal-topics).
    assert kctl("-b", kafka_cluster.bootstrap, "topic", "describe", repartition).exit_code == 0
    deleted = kctl("-b", kafka_cluster.bootstrap, "group", "delete", group, "--internal-topics", "--yes", "-o", "json")
    assert deleted.exit_code == 0, deleted.stderr
    assert sorted((r["group"], r["status"]) for r in json.loads(deleted.stdout)) == sorted(
        [(group, "deleted"), (repartition, "deleted (internal topic)"), (changelog, "deleted (internal topic)")])
    assert kctl("-b", kafka_cluster.bootstrap, "group", "describe", group).exit_code == ExitCode.NOT_FOUND
    for topic in (repartition, changelog):
        assert kctl("-b", kafka_cluster.bootstrap, "topic", "describe", topic).exit_code == ExitCode.NOT_FOUND
    assert kctl("-b", kafka_cluster.bootstrap, "topic", "describe", WORDCOUNT_INPUT).exit_code == 0  # its input stays


def test_internal_topics_are_only_a_streams_groups(kctl, group_types_cluster, unique_name):
    """--internal-topics on a consumer group is one line, and nothing is deleted."""
    group, topic = unique_name("plain"), unique_name("plain-topic")
    assert kctl("-b", group_types_cluster.bootstrap, "topic", "create", topic, "-q").exit_code == 0
    consumer = Consumer({"bootstrap.servers": group_types_cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    consumer.close()
    refused = kctl("-b", group_types_cluster.bootstrap, "group", "delete", group, "--internal-topics", "--yes")
    assert refused.exit_code == ExitCode.INVALID, refused.stderr
    assert refused.stderr.startswith(f"error: unable to delete the internal topics of group {group}: it is a classic group, not a streams group")
    assert kctl("-b", group_types_cluster.bootstrap, "group", "describe", group).exit_code == 0


def test_the_cli_offers_the_library_states_and_types():
    from kctl.admin.groups import models as groups
    from kctl.cli import group

    assert (group.GROUP_STATES, group.GROUP_TYPES) == (groups.STATES, groups.TYPES)
