"""kctl topic list|describe|create|delete against real brokers, checked with Kafka's own
metadata through an independent client."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient

from kctl.admin.client.over_librdkafka import kafka_uuid
from kctl.errors import ExitCode
from tests.support.eventually import eventually, within

pytestmark = [pytest.mark.integration, pytest.mark.kafka39]


def admin(cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def kafka_topic(cluster, name, *, wait=True):
    """The topic as Kafka describes it to confluent-kafka, or None.

    With `wait`, allow a moment for a new topic's metadata to reach every broker.
    """
    if wait:
        found = []
        wait_for(lambda: found.append(kafka_topic(cluster, name, wait=False)) or found[-1] is not None, timeout=5)
        return found[-1]
    client = admin(cluster)  # the futures need their client alive
    futures = client.describe_topics(TopicCollection([name]), request_timeout=10)
    try:
        return futures[name].result()
    except Exception:  # noqa: BLE001 - absent topics raise UNKNOWN_TOPIC_OR_PART
        return None


def wait_for(predicate, timeout=15.0) -> bool:
    return bool(within(predicate, timeout, interval=0.1))


@pytest.fixture
def topic_name(unique_name):
    return unique_name("t")


def test_create_then_list_and_describe(kctl, cluster, topic_name):
    rf = min(cluster.nodes, 3)
    result = kctl("-b", cluster.bootstrap, "topic", "create", topic_name, "-p", "3", "--rf", str(rf), "-c", "retention.ms=3600000")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"NAME\tSTATUS\tPARTITIONS\tREPLICATION-FACTOR\n{topic_name}\tcreated\t3\t{rf}\n"

    described = kafka_topic(cluster, topic_name)
    assert len(described.partitions) == 3
    assert {len(p.replicas) for p in described.partitions} == {rf}

    listed = kctl("-b", cluster.bootstrap, "topic", "list", "-r", topic_name, "-o", "json")
    assert json.loads(listed.stdout) == [
        {
            "name": topic_name,
            "topic_id": kafka_uuid(described.topic_id),
            "partitions": 3,
            "replication_factor": rf,
            "internal": False,
            "config_overrides": None,
            "under_replicated_partitions": 0,
            "offline_partitions": 0,
        }
    ]

    result = kctl("-b", cluster.bootstrap, "topic", "describe", topic_name, "-o", "json")
    assert result.exit_code == 0, result.stderr
    (topic,) = json.loads(result.stdout)
    assert topic["name"] == topic_name
    assert topic["topic_id"] == kafka_uuid(described.topic_id)
    assert topic["replication_factor"] == rf
    assert (topic["remote_storage"], topic["local_retention_ms"]) == (False, None if cluster.kafka is None else -2)
    epochs = [p["leader_epoch"] for p in topic["partitions"]]
    assert all(isinstance(e, int) and e >= 0 for e in epochs)
    assert topic["partitions"] == [
        {
            "partition": p.id,
            "leader": p.leader.id,
            "leader_epoch": epoch,
            "replicas": [r.id for r in p.replicas],
            "isr": [r.id for r in p.isr],
            "offline_replicas": [],
            "offline": False,
            "under_replicated": len(p.isr) < len(p.replicas),
            "earliest_offset": 0,
            "latest_offset": 0,
            "size_bytes": None,
            "adding_replicas": None,
            "removing_replicas": None,
            # Kafka 3.8+ reports eligible leader replicas (none here); the bundled broker does not.
            "elr": [] if cluster.kafka is not None else None,
            "last_known_elr": [] if cluster.kafka is not None else None,
            "earliest_local_offset": None,
            "latest_tiered_offset": None,
        }
        for p, epoch in zip(sorted(described.partitions, key=lambda p: p.id), epochs)
    ]

    detailed = json.loads(kctl("-b", cluster.bootstrap, "topic", "describe", topic_name, "--detail", "-o", "json").stdout)[0]
    assert [(p["size_bytes"], p["adding_replicas"], p["removing_replicas"]) for p in detailed["partitions"]] == [(0, [], [])] * 3


def test_describe_text_layout(kctl, cluster, topic_name):
    kctl("-b", cluster.bootstrap, "topic", "create", topic_name, "-p", "2", "--rf", "1")
    described = kafka_topic(cluster, topic_name)
    result = kctl("-b", cluster.bootstrap, "topic", "describe", topic_name)
    partitions = sorted(described.partitions, key=lambda p: p.id)
    epochs = [p["leader_epoch"] for p in json.loads(kctl("-b", cluster.bootstrap, "topic", "describe", topic_name, "-o", "json").stdout)[0]["partitions"]]
    # Kafka 3.8+ reports eligible leader replicas (none here); the bundled broker does not.
    elr_titles, elr_cells = ("\tELR\tLAST-KNOWN-ELR", "\t\t") if cluster.kafka is not None else ("", "")
    expected = [
        f"NAME\t{topic_name}",
        f"TOPIC-ID\t{kafka_uuid(described.topic_id)}",
        "INTERNAL\tfalse",
        "PARTITIONS\t2",
        "REPLICATION-FACTOR\t1",
        "REMOTE-STORAGE\tfalse",
        "",
        "PARTITIONS",
        "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tOFFLINE-REPLICAS\tLOG-START-OFFSET\tLOG-END-OFFSET" + elr_titles,
    ] + [f"{p.id}\t{p.leader.id}\t{e}\t{p.leader.id}\t{p.leader.id}\t\t0\t0" + elr_cells for p, e in zip(partitions, epochs)]
    assert result.stdout == "\n".join(expected) + "\n"

    table = kctl("-b", cluster.bootstrap, "topic", "describe", topic_name, tty=True, env={"NO_COLOR": "1"})
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["NAME", topic_name]
    assert lines[8].split() == ["PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE-REPLICAS", "LOG-START-OFFSET", "LOG-END-OFFSET"] + elr_titles.split()
    leader = str(partitions[0].leader.id)
    assert lines[9].split() == ["0", leader, str(epochs[0]), leader, leader, "-", "0", "0"] + ["-"] * len(elr_titles.split())


def test_list_hides_internal_topics_unless_asked(kctl, cluster, topic_name):
    kctl("-b", cluster.bootstrap, "topic", "create", topic_name, "-p", "1")
    # __consumer_offsets exists once any group has committed; make sure it does.
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"g-{topic_name}"})
    consumer.commit(offsets=[__import__("confluent_kafka").TopicPartition(topic_name, 0, 0)], asynchronous=False)
    consumer.close()

    plain = kctl("-b", cluster.bootstrap, "topic", "list", "--no-headers").stdout
    assert f"{topic_name}\t1\t" in plain
    overridden = kctl("-b", cluster.bootstrap, "topic", "list", "--with-overrides", "--no-headers").stdout
    assert topic_name not in overridden
    kctl("-b", cluster.bootstrap, "topic", "alter-config", topic_name, "--set", "retention.ms=60000", "--set", "segment.ms=60000")
    def overridden():
        listed = kctl("-b", cluster.bootstrap, "topic", "list", "--with-overrides", "--no-headers").stdout
        assert f"{topic_name}\t1\t{min(cluster.nodes, 3)}\tfalse" in listed.splitlines()
        counted = json.loads(kctl("-b", cluster.bootstrap, "topic", "list", "-r", topic_name, "--overrides", "-o", "json").stdout)
        assert counted[0]["config_overrides"] == 2

    eventually(overridden)
    assert "__consumer_offsets" not in plain
    internal = kctl("-b", cluster.bootstrap, "topic", "list", "--internal", "-o", "jsonl").stdout
    rows = {json.loads(line)["name"]: json.loads(line) for line in internal.splitlines()}
    assert rows["__consumer_offsets"]["internal"] is True
    assert rows[topic_name]["internal"] is False
    assert all(row["topic_id"] for row in rows.values())
    # Plain output sends no DescribeTopics (it shows no topic ids) and takes the internal
    # flag from Kafka's rule by name: it must agree with the broker's flag in JSON.
    listed = kctl("-b", cluster.bootstrap, "topic", "list", "--internal", "--no-headers").stdout.splitlines()
    flags = {line.split("\t")[0]: line.split("\t")[3] for line in listed}
    assert flags == {name: "true" if row["internal"] else "false" for name, row in rows.items()}


def test_list_table_on_terminal(kctl, cluster, topic_name):
    kctl("-b", cluster.bootstrap, "topic", "create", topic_name, "-p", "4", "--rf", "1")
    result = kctl("-b", cluster.bootstrap, "topic", "list", "-r", topic_name, tty=True, env={"NO_COLOR": "1"})
    header, row = result.stdout.splitlines()
    assert header.split() == ["NAME", "PARTITIONS", "REPLICATION-FACTOR", "INTERNAL"]
    assert row.split() == [topic_name, "4", "1", "no"]
    coloured = kctl("-b", cluster.bootstrap, "topic", "list", "-r", topic_name, tty=True)
    assert coloured.stdout.startswith("\x1b[1mNAME")
    assert topic_name in coloured.stdout.splitlines()[1]
    wide = kctl("-b", cluster.bootstrap, "topic", "list", "-r", topic_name, "-o", "wide", tty=True, env={"NO_COLOR": "1"})
    assert wide.stdout.splitlines()[0].split() == ["NAME", "PARTITIONS", "REPLICATION-FACTOR", "INTERNAL", "OVERRIDES", "UNDER-REPLICATED", "OFFLINE", "TOPIC-ID"]
    assert wide.stdout.splitlines()[1].split()[:5] == [topic_name, "4", "1", "no", "0"]


def test_create_existing_topic(kctl, cluster, topic_name):
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic_name).exit_code == 0
    result = kctl("-b", cluster.bootstrap, "topic", "create", topic_name)
    assert (result.exit_code, result.stdout) == (ExitCode.ALREADY_EXISTS, "")
    assert result.stderr == f"error: unable to create topic: TOPIC_ALREADY_EXISTS: Topic '{topic_name}' already exists.\n"
    again = kctl("-b", cluster.bootstrap, "topic", "create", topic_name, "--if-not-exists")
    assert (again.exit_code, again.stdout) == (0, f"NAME\tSTATUS\tPARTITIONS\tREPLICATION-FACTOR\n{topic_name}\texists\t\t\n")


def test_partial_failure_reports_each_topic(kctl, cluster, unique_name):
    existing, fresh = unique_name("old"), unique_name("new")
    kctl("-b", cluster.bootstrap, "topic", "create", existing)
    result = kctl("-b", cluster.bootstrap, "topic", "create", existing, fresh, "-p", "1")
    assert result.exit_code == ExitCode.PARTIAL_FAILURE
    assert result.stdout.splitlines()[1:] == [f"{existing}\tfailed\t\t", f"{fresh}\tcreated\t1\t{1 if cluster.nodes == 1 else 3}"]
    assert result.stderr.splitlines() == [
        f"error: unable to create topic {existing}: TOPIC_ALREADY_EXISTS: Topic '{existing}' already exists.",
        "error: unable to create topics: 1 of 2 failed",
    ]
    assert kafka_topic(cluster, fresh) is not None


def test_dry_run_creates_nothing(kctl, cluster, topic_name):
    result = kctl("-b", cluster.bootstrap, "topic", "create", topic_name, "-p", "5", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1].split("\t")[:2] == [topic_name, "validated"]
    assert kafka_topic(cluster, topic_name, wait=False) is None


def test_replication_factor_larger_than_cluster(kctl, cluster, topic_name):
    result = kctl("-b", cluster.bootstrap, "topic", "create", topic_name, "--rf", str(cluster.nodes + 1))
    assert result.exit_code == ExitCode.INVALID
    assert result.stderr.startswith("error: unable to create topic: INVALID_REPLICATION_FACTOR: ")
    assert kafka_topic(cluster, topic_name, wait=False) is None


def test_invalid_topic_config(kctl, cluster, topic_name):
    result = kctl("-b", cluster.bootstrap, "topic", "create", topic_name, "-c", "cleanup.policy=sometimes")
    assert result.exit_code == ExitCode.INVALID
    assert result.stderr.startswith("error: unable to create topic: INVALID_CONFIG: ")
    assert kafka_topic(cluster, topic_name, wait=False) is None


def test_describe_unknown_topic(kctl, cluster, unique_name):
    missing = unique_name("missing")
    result = kctl("-b", cluster.bootstrap, "topic", "describe", missing)
    assert (result.exit_code, result.stdout) == (ExitCode.NOT_FOUND, "")
    assert result.stderr.startswith(f"error: unable to describe topic {missing}: UNKNOWN_TOPIC_OR_PARTITION: ")


def test_describe_notes_a_compacted_topic_that_is_not_compacted(kctl, cluster, unique_name, tmp_path):
    """Kafka and the bundled broker compact: no note. A broker whose log cleaner is off
    (log.cleaner.enable=false; the bundled broker's --no-log-cleaner) gets one."""
    from kctl.broker.process import BrokerProcess

    compacted, plain = unique_name("c"), unique_name("d")
    kctl("-b", cluster.bootstrap, "topic", "create", compacted, "-c", "cleanup.policy=compact")
    kctl("-b", cluster.bootstrap, "topic", "create", plain)
    assert kafka_topic(cluster, compacted) is not None
    result = kctl("-b", cluster.bootstrap, "topic", "describe", compacted, plain, "-o", "json")
    assert (result.exit_code, result.stderr) == (0, "")
    assert [t["cleanup_policy"] for t in json.loads(result.stdout)] == ["compact", "delete"]
    if cluster.backend != "bundled":
        return
    off = BrokerProcess(tmp_path / "no-cleaner", extra_args=["--no-log-cleaner"])
    try:
        bootstrap = off.start()
        kctl("-b", bootstrap, "topic", "create", compacted, "-c", "cleanup.policy=compact")
        result = kctl("-b", bootstrap, "topic", "describe", compacted, "-o", "json")
        assert result.stderr == (f"note: {compacted} has cleanup.policy=compact but its brokers run no log cleaner "
                                 "(log.cleaner.enable=false): its records are not compacted\n")
        assert kctl("-b", bootstrap, "-q", "topic", "describe", compacted).stderr == ""
    finally:
        off.stop()


def test_describe_some_unknown_is_partial(kctl, cluster, topic_name, unique_name):
    kctl("-b", cluster.bootstrap, "topic", "create", topic_name)
    missing = unique_name("missing")
    result = kctl("-b", cluster.bootstrap, "topic", "describe", topic_name, missing, "-o", "json")
    assert result.exit_code == ExitCode.PARTIAL_FAILURE
    assert [t["name"] for t in json.loads(result.stdout)] == [topic_name]
    assert f"unable to describe topic {missing}: UNKNOWN_TOPIC_OR_PARTITION" in result.stderr


def test_delete_requires_confirmation_without_terminal(kctl, cluster, topic_name):
    kctl("-b", cluster.bootstrap, "topic", "create", topic_name)
    result = kctl("-b", cluster.bootstrap, "topic", "delete", topic_name)
    assert (result.exit_code, result.stderr) == (
        ExitCode.ABORTED,
        "error: unable to delete topics: confirmation required and stdin is not a terminal\nhint: pass --yes to confirm\n",
    )
    assert kafka_topic(cluster, topic_name) is not None

    result = kctl("-b", cluster.bootstrap, "topic", "delete", topic_name, "--yes")
    assert (result.exit_code, result.stdout) == (0, f"NAME\tSTATUS\n{topic_name}\tdeleted\n")
    assert wait_for(lambda: kafka_topic(cluster, topic_name, wait=False) is None)


def test_delete_by_regex(kctl, cluster, unique_name):
    prefix = unique_name("rx")
    names = [f"{prefix}.a", f"{prefix}.b"]
    kctl("-b", cluster.bootstrap, "topic", "create", *names, "-p", "1")
    result = kctl("-b", cluster.bootstrap, "topic", "delete", "-r", rf"{prefix}\..*", "--yes", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == [
        {"name": n, "status": "deleted", "partitions": None, "replication_factor": None, "error": None} for n in names
    ]
    assert wait_for(lambda: all(kafka_topic(cluster, n, wait=False) is None for n in names))


def test_delete_unknown_topic(kctl, cluster, unique_name):
    missing = unique_name("missing")
    result = kctl("-b", cluster.bootstrap, "topic", "delete", missing, "--yes")
    assert result.exit_code == ExitCode.NOT_FOUND
    assert result.stderr.splitlines()[0] == f"error: unable to delete topic {missing}: UNKNOWN_TOPIC_OR_PARTITION: no such topic"
    result = kctl("-b", cluster.bootstrap, "topic", "delete", missing, "--yes", "--if-exists")
    assert (result.exit_code, result.stderr) == (0, "no topics to delete\n")


def test_kafka_tool_sees_what_kctl_created(kctl, cluster, topic_name):
    if cluster.kafka is None:
        pytest.skip("needs Apache Kafka's own tools")
    kctl("-b", cluster.bootstrap, "topic", "create", topic_name, "-p", "2")
    proc = cluster.kafka.run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", cluster.bootstrap, "--describe", "--topic", topic_name)
    assert proc.returncode == 0, proc.stderr
    assert f"Topic: {topic_name}" in proc.stdout
    assert "PartitionCount: 2" in proc.stdout
    ours = json.loads(kctl("-b", cluster.bootstrap, "topic", "describe", topic_name, "-o", "json").stdout)[0]
    assert f"TopicId: {ours['topic_id']}" in proc.stdout
