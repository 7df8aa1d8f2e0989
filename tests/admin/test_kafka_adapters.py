"""The Kafka operations behind one interface (kctl.admin.client.kafka): each operation run
through both adapters, kctl's wire client and librdkafka, against the same broker, must
give the same answer. The session picks one; these tests pin that either would do."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from kctl.admin.client.kafka import BROKER, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, TOPIC
from kctl.admin.client.over_librdkafka import LibrdkafkaKafka
from kctl.admin.client.over_wire import WireKafka
from kctl.admin.client.session import AdminSession
from kctl.config.model import ClientSettings
from kctl.errors import KctlError, NotFoundError
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration


def _same(ours, theirs) -> None:
    assert ours == theirs, (ours, theirs)


@pytest.fixture
def adapters(cluster):
    session = AdminSession(ClientSettings(bootstrap_servers=cluster.bootstrap, properties={}, timeout=10, context=None))
    try:
        yield WireKafka(session.wire, session.timeout), LibrdkafkaKafka(session.librdkafka)
    finally:
        session.close()


@pytest.fixture
def written(kctl, cluster, unique_name):
    """A topic of 3 partitions holding 5, 0 and 20 records, timestamps 1000 ms apart from
    an hour ago; and a missing topic's name."""
    topic = unique_name("adapters")
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "3", "-c", "retention.ms=86400000").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    start = int(time.time() * 1000) - 3_600_000
    for partition, count in ((0, 5), (2, 20)):
        for i in range(count):
            producer.produce(topic, value=b"v%d" % i, partition=partition, timestamp=start + 1000 * i)
    assert producer.flush(30) == 0
    return topic, start, unique_name("missing")


def test_metadata_is_the_same_through_both(adapters, written):
    topic, _start, missing = written
    wire, librdkafka = adapters
    for topics in ([topic, missing], None):
        ours, theirs = wire.metadata(topics, "describe topics"), librdkafka.metadata(topics, "describe topics")
        assert (ours.cluster_id, ours.controller_id is None) == (theirs.cluster_id, theirs.controller_id is None)
        assert {b.node_id: (b.host, b.port) for b in ours.brokers.values()} == {b.node_id: (b.host, b.port) for b in theirs.brokers.values()}
        assert ours.topics[topic] == theirs.topics[topic]
        assert list(ours.topics[topic].partitions) == [0, 1, 2]
        assert ours.topics[topic].topic_id is not None and not ours.topics[topic].internal
        if topics is not None:
            assert ours.topics[missing] == theirs.topics[missing]
            assert (ours.topics[missing].error, ours.has(missing), ours.lacks(missing)) == ("UNKNOWN_TOPIC_OR_PARTITION", False, True)
        else:
            assert set(ours.topics) == set(theirs.topics)
    # Without ids, an adapter may leave them out (librdkafka does: DescribeTopics is a request
    # of its own); the layout is the same.
    bare = librdkafka.metadata([topic], "describe topics", topic_ids=False).topics[topic]
    assert (bare.topic_id, bare.partitions) == (None, wire.metadata([topic], "x").topics[topic].partitions)
    assert wire.metadata([], "describe the cluster").topics == librdkafka.metadata([], "describe the cluster").topics == {}


def test_auto_create_is_the_same_through_both(adapters, unique_name):
    """A topic asked for as a producer may ask is created by the broker (its default
    partitions, leaders known when answered); a name Kafka refuses is refused alike."""
    wire, librdkafka = adapters
    ours, theirs = wire.auto_create(unique_name("auto-w"), "produce"), librdkafka.auto_create(unique_name("auto-l"), "produce")
    assert ours is not None and theirs is not None
    assert (ours.error, theirs.error) == (None, None)
    assert list(ours.partitions) == list(theirs.partitions) and all(p.leader is not None for p in ours.partitions.values())
    refused = [adapter.auto_create("no spaces allowed", "produce") for adapter in (wire, librdkafka)]
    assert [r.error if r is not None else None for r in refused] == ["INVALID_TOPIC_EXCEPTION"] * 2, refused


def test_list_offsets_is_the_same_through_both(adapters, written):
    topic, start, missing = written
    wire, librdkafka = adapters
    pairs = [(topic, p) for p in range(3)]
    timestamps = [EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, start + 2500, MAX_TIMESTAMP]
    for isolation in ("read_uncommitted", "read_committed"):
        ours, errors = wire.list_offsets(pairs, timestamps, isolation, "list offsets")
        theirs, their_errors = librdkafka.list_offsets(pairs, timestamps, isolation, "list offsets")
        assert errors == their_errors == {}
        simple = {k: [(a.offset, a.timestamp) for a in v] for k, v in ours.items()}
        assert simple == {k: [(a.offset, a.timestamp) for a in v] for k, v in theirs.items()}
        assert simple[(topic, 0)][:3] == [(0, -1), (5, -1), (3, start + 3000)]
        assert simple[(topic, 1)][:3] == [(0, -1), (0, -1), (-1, -1)]
        assert simple[(topic, 2)] == [(0, -1), (20, -1), (3, start + 3000), (19, start + 19000)]
    # A partition that does not exist: its own error, the same through both.
    ours, errors = wire.list_offsets([(topic, 7)], [LATEST_TIMESTAMP], "read_uncommitted", "list offsets")
    theirs, their_errors = librdkafka.list_offsets([(topic, 7)], [LATEST_TIMESTAMP], "read_uncommitted", "list offsets")
    assert ours == theirs == {(topic, 7): [None]}
    assert [(e.kafka_error, e.message) for e in errors.values()] == [(e.kafka_error, e.message) for e in their_errors.values()]
    assert list(errors) == [(topic, 7)]


def test_describe_configs_is_the_same_through_both(adapters, written, cluster):
    topic, _start, missing = written
    wire, librdkafka = adapters
    broker = str(min(wire.metadata([], "x").brokers))
    for keys in (None, ["retention.ms", "cleanup.policy"]):
        ours = wire.describe_configs([(TOPIC, topic), (BROKER, broker)], "describe configs", keys)
        theirs = librdkafka.describe_configs([(TOPIC, topic), (BROKER, broker)], "describe configs", keys)
        assert ours == theirs and ours.errors == {}
        assert (ours.results[(TOPIC, topic)]["retention.ms"].value, ours.results[(TOPIC, topic)]["retention.ms"].source) == ("86400000", "DYNAMIC_TOPIC_CONFIG")
        assert ours.results[(TOPIC, topic)]["cleanup.policy"].source == "DEFAULT_CONFIG"
    ours = wire.describe_configs([(TOPIC, missing)], "describe configs").errors[(TOPIC, missing)]
    theirs = librdkafka.describe_configs([(TOPIC, missing)], "describe configs").errors[(TOPIC, missing)]
    assert isinstance(ours, NotFoundError) and isinstance(theirs, NotFoundError)
    assert (ours.kafka_error, ours.resource, ours.action) == (theirs.kafka_error, theirs.resource, theirs.action) == (
        "UNKNOWN_TOPIC_OR_PARTITION", (TOPIC, missing), f"describe configs of topic {missing}")


def test_only_the_wire_client_has_a_producer_for_small_inputs(adapters):
    wire, librdkafka = adapters
    from kctl.admin.client.kafka import PartitionLayout, TopicLayout

    layout = TopicLayout("t", None, False, {0: PartitionLayout(0, 1, (1,), (1,))}, None)
    assert wire.small_input_producer(layout, lambda failure: None, 1.0) is not None
    assert librdkafka.small_input_producer(layout, lambda failure: None, 1.0) is None


def test_the_session_picks_the_wire_client_unless_a_setting_needs_librdkafka(cluster):
    plain = AdminSession(ClientSettings(bootstrap_servers=cluster.bootstrap, properties={}, timeout=10, context=None))
    tuned = AdminSession(ClientSettings(bootstrap_servers=cluster.bootstrap, properties={"topic.metadata.propagation.max.ms": "10",
                                                                                          "ssl.sigalgs.list": "RSA+SHA256"},
                                        timeout=10, context=None))
    assert (plain.kafka.name, tuned.kafka.name) == ("wire", "librdkafka")


def test_describe_acls_is_the_same_through_both(kctl, cluster, request, unique_name):
    """DescribeAcls (kctl acl list): the bindings in Kafka's names, whichever filter; on a
    cluster without an authorizer the wire client says SECURITY_DISABLED where librdkafka
    answers nothing (kctl.admin.security.acls asks again then)."""
    plain = AdminSession(ClientSettings(bootstrap_servers=cluster.bootstrap, properties={}, timeout=10, context=None))
    everything = (None, None, "ANY", None, None, None, None)
    try:
        if cluster.backend == "bundled":
            with pytest.raises(KctlError) as refused:
                WireKafka(plain.wire, plain.timeout).describe_acls([everything], "list ACLs")
            assert refused.value.kafka_error == "SECURITY_DISABLED"
            assert LibrdkafkaKafka(plain.librdkafka).describe_acls([everything], "list ACLs") == set()
            bootstrap = request.getfixturevalue("secured_bundled").plaintext
        elif cluster.backend == "kafka3":
            bootstrap = cluster.bootstrap
        else:
            pytest.skip("ACLs need an authorizer: the bundled broker's, or kafka3's StandardAuthorizer")
    finally:
        plain.close()
    prefix, user = unique_name("acls"), f"User:{unique_name('u')}"
    for args in (("--topic", f"{prefix}.", "--pattern", "prefixed", "--operation", "read,write"), ("--group", prefix, "--operation", "read"),
                 ("--topic", f"{prefix}.x", "--operation", "describe", "--deny", "--host", "10.0.0.1"), ("--cluster", "--operation", "describe-configs")):
        assert kctl("-b", bootstrap, "acl", "create", "--principal", user, *args).exit_code == 0
    session = AdminSession(ClientSettings(bootstrap_servers=bootstrap, properties={}, timeout=10, context=None))
    try:
        wire, librdkafka = WireKafka(session.wire, session.timeout), LibrdkafkaKafka(session.librdkafka)
        filters = [[(None, None, "ANY", user, None, None, None)], [("TOPIC", f"{prefix}.x", "MATCH", None, None, None, None)],
                   [(None, None, "ANY", user, None, "READ", "ALLOW"), ("CLUSTER", None, "ANY", user, None, None, None)],
                   [("GROUP", prefix, "LITERAL", None, None, None, "DENY")]]
        for asked in filters:
            # Each broker's authorizer learns new ACLs a moment later.
            eventually(lambda a=asked: _same(wire.describe_acls(a, "list ACLs"), librdkafka.describe_acls(a, "list ACLs")),
                       timeout=10)
        assert wire.describe_acls(filters[0], "list ACLs") == {
            ("TOPIC", f"{prefix}.", "PREFIXED", user, "*", "READ", "ALLOW"), ("TOPIC", f"{prefix}.", "PREFIXED", user, "*", "WRITE", "ALLOW"),
            ("GROUP", prefix, "LITERAL", user, "*", "READ", "ALLOW"), ("TOPIC", f"{prefix}.x", "LITERAL", user, "10.0.0.1", "DESCRIBE", "DENY"),
            ("CLUSTER", "kafka-cluster", "LITERAL", user, "*", "DESCRIBE_CONFIGS", "ALLOW")}
        assert wire.describe_acls(filters[3], "list ACLs") == set()
    finally:
        session.close()
