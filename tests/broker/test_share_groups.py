"""Share groups (KIP-932) on the bundled broker, through Kafka's own console share consumer
(the Java KafkaShareConsumer), with the same results as on Apache Kafka 4.x; kill -9 loses
nothing acknowledged and delivers nothing acknowledged again; and the share-partition
state machine on its own (acquisition, acknowledgement, locks, delivery counts)."""

from __future__ import annotations

import subprocess

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kctl.broker.coordinator.share import ConfigError, simple_assignment, validate_config
from kctl.broker.coordinator.share_partitions import ACCEPT, ACKNOWLEDGED, ARCHIVED, AVAILABLE, REJECT, RELEASE, InvalidRecordState, SharePartition

pytestmark = pytest.mark.integration

CONSOLE = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"


def _raw_batch(base: int, count: int) -> bytes:
    """A record batch header with baseOffset, batchLength and lastOffsetDelta (all the state
    machine reads)."""
    import struct

    body = bytearray(61 - 12)
    struct.pack_into(">i", body, 23 - 12, count - 1)
    return struct.pack(">qi", base, len(body)) + bytes(body)


# -- the state machine ------------------------------------------------------------------------

def test_acquire_acknowledge_release_and_the_delivery_limit():
    sp = SharePartition("g", "t", 0, 0, 0)
    data = _raw_batch(0, 5) + _raw_batch(5, 5)
    assert sp.acquire("a", data, 3, 2000, 100, 5) == [(0, 4, 1)]  # whole batches: max_records is soft
    assert sp.next_offset == 5
    assert sp.acquire("b", data, 10, 2000, 100, 5) == [(5, 9, 1)]
    with pytest.raises(InvalidRecordState):
        sp.acknowledge("b", [(0, 0, [ACCEPT])], 5, 200)  # not b's
    sp.acknowledge("a", [(0, 1, [ACCEPT]), (2, 4, [RELEASE, REJECT, ACCEPT])], 5, 200)
    assert (sp.start_offset, sp.records[2].state, sp.records[3].state) == (2, AVAILABLE, ARCHIVED)
    assert sp.next_fetch_offset() == 2
    for delivery in range(2, 6):  # released again and again: archived at the limit (5)
        assert sp.acquire("a", _raw_batch(0, 5), 10, 2000, 100, 5) == [(2, 2, delivery)]
        sp.acknowledge("a", [(2, 2, [RELEASE])], 5, 200)
    assert sp.records[5].state == 1 and sp.start_offset == 5  # 2 archived, 3 rejected, 4 accepted
    assert sp.release(None, 100, 5) and sp.records[5].state == AVAILABLE  # b's lock expired at 100
    sp.acknowledge("a", [], 5, 0)
    restored = SharePartition.from_snapshot(sp.snapshot())
    assert (restored.start_offset, restored.next_offset) == (5, 10)
    assert all(r.state == AVAILABLE and r.delivery_count == 1 for r in restored.records.values())


def test_a_partition_past_the_log_start_skips_what_is_gone():
    sp = SharePartition("g", "t", 0, 0, 0)
    sp.acquire("a", _raw_batch(0, 3), 10, 2000, 100, 5)
    sp.skip_to(2)
    assert sp.start_offset == 2 and sorted(sp.records) == [2]
    sp.acknowledge("a", [(0, 2, [ACCEPT])], 5, 0)  # below the start: skipped silently
    assert sp.start_offset == 3 and not sp.records
    assert sp.records.get(2) is None and ACKNOWLEDGED == 2


def test_the_simple_assignor_balances_and_shares():
    one_each = simple_assignment({"a": ["t"], "b": ["t"]}, {"t": 4}, {})
    assert sorted(len(v) for v in one_each.values()) == [2, 2] and one_each["a"].isdisjoint(one_each["b"])
    shared = simple_assignment({"a": ["t"], "b": ["t"], "c": ["t"]}, {"t": 1}, {})
    assert all(v == {("t", 0)} for v in shared.values())
    sticky = simple_assignment({"a": ["t"], "b": ["t"]}, {"t": 4}, {"a": {("t", 3), ("t", 2)}})
    assert sticky["a"] == {("t", 2), ("t", 3)}


@pytest.mark.parametrize(("name", "value", "message"), [
    ("share.record.lock.duration.ms", "1000", "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."),
    ("share.auto.offset.reset", "soon", "Invalid value soon for configuration share.auto.offset.reset"),
    ("share.colour", "blue", "Unknown group config name: share.colour"),
])
def test_group_configs_are_checked_as_kafka_checks_them(name, value, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        validate_config(name, value)
    assert validate_config("share.auto.offset.reset", "by_duration:PT1H") == "by_duration:PT1H"


# -- Kafka's console share consumer --------------------------------------------------------------

def _console(tools, bootstrap, topic, group, count, *extra, timeout_ms=20000) -> list[str]:
    proc = subprocess.run(tools.tool_command(CONSOLE, "--bootstrap-server", bootstrap, "--topic", topic, "--group", group,
                                             "--max-messages", str(count), "--timeout-ms", str(timeout_ms), *extra),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.split()


def _earliest(tools, bootstrap, group):
    proc = tools.run_tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bootstrap, "--alter",
                          "--entity-type", "groups", "--entity-name", group, "--add-config", "share.auto.offset.reset=earliest")
    assert proc.returncode == 0, proc.stderr


def _produce(bootstrap, topic, values, partitions=1):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(topic, partitions)])[topic].result(30)
    except Exception:  # noqa: BLE001 - it exists already
        pass
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value.encode())
    assert producer.flush(30) == 0


def _scenario(tools, bootstrap, topic, group, between=None) -> dict:
    """Ten records: five accepted by one consumer (the rest it held go back when it closes),
    then the other five, then none; three more, released each time until their delivery
    limit archives them."""
    _produce(bootstrap, topic, [f"m{i}" for i in range(10)])
    _earliest(tools, bootstrap, group)
    seen = {"first": _console(tools, bootstrap, topic, group, 5)}
    if between is not None:
        between()
    seen["second"] = _console(tools, bootstrap, topic, group, 5)
    seen["none"] = _console(tools, bootstrap, topic, group, 1, timeout_ms=4000)
    _produce(bootstrap, topic, ["r0", "r1", "r2"])
    seen["released"] = sorted(_console(tools, bootstrap, topic, group, 15, "--release"))
    seen["after"] = _console(tools, bootstrap, topic, group, 1, timeout_ms=4000)
    return seen


EXPECTED = {"first": ["m0", "m1", "m2", "m3", "m4"], "second": ["m5", "m6", "m7", "m8", "m9"], "none": [],
            # five deliveries of each (share.delivery.count.limit), then archived
            "released": sorted(["r0", "r1", "r2"] * 5), "after": []}


def test_console_share_consumer_on_the_bundled_broker_across_kill_9(broker, kafka_tools):
    seen = _scenario(kafka_tools, broker.bootstrap, "shared", "sharers",
                     between=lambda: (broker.kill(), broker.restart()))
    assert seen == EXPECTED


def test_read_committed_share_groups_never_see_aborted_records(broker, kafka_tools):
    _produce(broker.bootstrap, "shared-txn", [])
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "share-txn"})
    producer.init_transactions(10)
    for outcome in ("kept", "dropped", "kept2"):
        producer.begin_transaction()
        for i in range(2):
            producer.produce("shared-txn", f"{outcome}-{i}".encode())
        (producer.commit_transaction if outcome != "dropped" else producer.abort_transaction)(10)
    for group, level in (("committed-readers", "read_committed"), ("everything-readers", "read_uncommitted")):
        _earliest(kafka_tools, broker.bootstrap, group)
        proc = kafka_tools.run_tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", broker.bootstrap, "--alter",
                                    "--entity-type", "groups", "--entity-name", group, "--add-config", f"share.isolation.level={level}")
        assert proc.returncode == 0, proc.stderr
    # The broker archives aborted records for read_committed groups; the Java share consumer
    # drops them itself for read_uncommitted ones: Apache Kafka 4.4 gives these same lists.
    for group in ("committed-readers", "everything-readers"):
        assert sorted(_console(kafka_tools, broker.bootstrap, "shared-txn", group, 4)) == ["kept-0", "kept-1", "kept2-0", "kept2-1"]
        assert _console(kafka_tools, broker.bootstrap, "shared-txn", group, 1, timeout_ms=3000) == []


def test_console_share_consumer_on_apache_kafka_gives_the_same(kafka_cluster):
    if kafka_cluster.backend != "kafka":
        pytest.skip("the single Apache Kafka node is the reference")
    assert _scenario(kafka_cluster.kafka, kafka_cluster.bootstrap, "shared-on-kafka", "sharers-on-kafka") == EXPECTED
