"""The Kafka operations kctl's library performs through either of its clients, behind
one interface and in kctl's own types (Kafka's names, not a client library's).

Domain code (topics/, cluster/, groups/, records/) calls `session.kafka.<operation>`;
which client serves it is decided once per session (AdminSession.kafka), from its
settings: kctl's wire client when it honours every setting (it costs a few ms where a
librdkafka client costs 20-40 ms to build and bootstrap), librdkafka otherwise (a
librdkafka-only property such as GSSAPI's). Both adapters answer alike, which
tests/admin/test_kafka_adapters.py checks operation by operation on one broker:

- over_wire.WireKafka: Metadata, ListOffsets and DescribeConfigs requests sent by
  kctl.admin.client.wire, every broker asked at once;
- over_librdkafka.LibrdkafkaKafka: confluent-kafka's AdminClient.

The APIs librdkafka lacks are not here: kctl's wire client is their one path
(AdminSession.ask and ask_every_broker, kctl.admin.client.coordinators).

An operation that fails for the whole batch raises its KctlError; one that fails for some
items answers those items with theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kctl.errors import Partial
from kctl.values import Value

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any, Protocol
else:
    Protocol = object  # Kafka below is an interface for mypy; the adapters do not inherit it

TopicPartition = tuple[str, int]

# ListOffsets' special timestamps (any other is a time in ms).
EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP = -2, -1, -3
# Tiered storage (KIP-405, KIP-1005): the first offset still on the leader's disk, and the
# last offset uploaded to remote storage (-1 when none is, or without tiered storage).
EARLIEST_LOCAL_TIMESTAMP, LATEST_TIERED_TIMESTAMP = -4, -5


class Broker(Value):
    __slots__ = ("node_id", "host", "port", "rack")

    def __init__(self, node_id: int, host: str, port: int, rack: str | None):
        self.node_id, self.host, self.port, self.rack = node_id, host, port, rack


class PartitionLayout(Value):
    __slots__ = ("partition", "leader", "replicas", "isr")

    def __init__(self, partition: int, leader: int | None, replicas: tuple[int, ...], isr: tuple[int, ...]):
        self.partition = partition
        # None when no live broker leads it (Kafka's -1).
        self.leader = leader
        self.replicas = replicas
        self.isr = isr


class TopicLayout(Value):
    __slots__ = ("name", "topic_id", "internal", "partitions", "error")

    def __init__(self, name: str, topic_id: str | None, internal: bool, partitions: Mapping[int, PartitionLayout],
                 error: str | None = None):
        self.name = name
        # Kafka's form (URL-safe base64); None when the answer carried none.
        self.topic_id = topic_id
        self.internal = internal
        # By partition, in order; empty when `error` says why there are none.
        self.partitions = partitions
        # Kafka's error name for the topic (UNKNOWN_TOPIC_OR_PARTITION,
        # TOPIC_AUTHORIZATION_FAILED, LEADER_NOT_AVAILABLE...), None when fine.
        self.error = error


class ClusterMetadata(Value):
    __slots__ = ("cluster_id", "controller_id", "brokers", "topics")

    def __init__(self, cluster_id: str | None, controller_id: int | None, brokers: Mapping[int, Broker],
                 topics: Mapping[str, TopicLayout]):
        self.cluster_id = cluster_id
        self.controller_id = controller_id
        self.brokers = brokers
        # The topics asked for (every topic the caller may describe when none were named);
        # a named topic the answer lacked is there with its error.
        self.topics = topics

    def has(self, topic: str) -> bool:
        """Whether the answer holds `topic` with partitions (not an error)."""
        found = self.topics.get(topic)
        return found is not None and bool(found.partitions)

    def lacks(self, topic: str) -> bool:
        """Whether `topic` is not in the answer (unless it was refused: not authorized)."""
        found = self.topics.get(topic)
        return not self.has(topic) and (found is None or found.error != "TOPIC_AUTHORIZATION_FAILED")

    def pending(self, topic: str) -> bool:
        """Whether `topic` exists without its partitions yet (LEADER_NOT_AVAILABLE: being
        created), worth asking again; a topic the broker does not know is not (kctl's own
        `topic create` returns once every broker knows a topic: a missing name is a typo,
        said at once)."""
        found = self.topics.get(topic)
        return found is not None and not found.partitions and found.error == "LEADER_NOT_AVAILABLE"


class OffsetAnswer(Value):
    """One ListOffsets answer for one partition and one timestamp: the offset (-1 when
    no record is that recent), the record's timestamp (-1 for the special timestamps),
    and the leader's epoch when the broker said it."""

    __slots__ = ("offset", "timestamp", "leader_epoch")

    def __init__(self, offset: int, timestamp: int, leader_epoch: int | None):
        self.offset, self.timestamp, self.leader_epoch = offset, timestamp, leader_epoch


class ConfigValue(Value):
    """One config of a resource, as DescribeConfigs answers it (kctl's full view, with
    synonyms and documentation, is kctl.admin.topics.configs')."""

    __slots__ = ("name", "value", "source", "sensitive", "read_only")

    def __init__(self, name: str, value: str | None, source: str, sensitive: bool, read_only: bool):
        self.name = name
        self.value = value
        # Kafka's ConfigSource: DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG,
        # STATIC_BROKER_CONFIG, DEFAULT_CONFIG...
        self.source = source
        self.sensitive = sensitive
        self.read_only = read_only


class DeliveryFailure(Value):
    """A record a producer could not deliver: Kafka's error name (or librdkafka's local one,
    _MSG_TIMED_OUT, _TRANSPORT...) and its text, the record's partition and value size."""

    __slots__ = ("error", "message", "partition", "value_size")

    def __init__(self, error: str, message: str, partition: int, value_size: int):
        self.error, self.message, self.partition, self.value_size = error, message, partition, value_size


# How long a topic being created by auto_create is asked for again.
AUTO_CREATE_SECONDS = 3.0


def settled(layout: TopicLayout | None) -> bool:
    """Whether an auto-created topic's layout is final: its partitions and leaders known, or
    refused for good (not authorised, an invalid name)."""
    if layout is None:
        return False
    if layout.partitions and layout.error is None:
        return True
    return layout.error is not None and layout.error not in ("LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PARTITION")


# The topics Kafka's brokers flag internal in Metadata: Kafka decides by name alone
# (org.apache.kafka.common.internals.Topic.INTERNAL_TOPICS, 4.3), so kctl can too where
# an answer does not say (librdkafka's Metadata, without DescribeTopics).
INTERNAL_TOPICS = frozenset(("__consumer_offsets", "__transaction_state", "__share_group_state"))

# Kafka's ConfigResource types, by name.
TOPIC, BROKER = "topic", "broker"
# Kafka's ConfigSource by its code in a DescribeConfigs answer (librdkafka's ConfigSource
# has the same values), named as Kafka's Admin API names them.
CONFIG_SOURCES: Mapping[int, str] = {
    0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "DYNAMIC_CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}


# An ACL binding in Kafka's names, as kafka-acls and the protocol give them (CLUSTER, not
# librdkafka's BROKER): (resource type, resource name, pattern type, principal, host,
# operation, permission type).
AclBinding = tuple[str, str, str, str, str, str, str]
# A DescribeAcls filter, in the same order: None matches any value (the pattern type: ANY,
# MATCH, LITERAL or PREFIXED).
AclBindingFilter = tuple[str | None, str | None, str, str | None, str | None, str | None, str | None]
# Kafka's codes of the ACL enums (ResourceType, PatternType, AclOperation, AclPermissionType).
ACL_RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN", 7: "USER"}
ACL_PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
ACL_OPERATIONS = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER", 8: "DESCRIBE",
                  9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS",
                  14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
ACL_PERMISSION_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}


class Kafka(Protocol):
    """What every adapter serves; see the module docstring."""

    # "wire" or "librdkafka": which client this is (for --debug and the tests).
    name: str

    def metadata(self, topics: Sequence[str] | None, action: str, *, topic_ids: bool = True) -> ClusterMetadata:
        """Brokers and the layout of `topics` (None: every topic), never creating one.
        Without `topic_ids`, an adapter may leave ids out where they cost a request of
        their own (librdkafka: DescribeTopics)."""
        ...

    def auto_create(self, topic: str, action: str) -> TopicLayout | None:
        """`topic` asked for as a producer may ask (Metadata allowing auto-creation): the
        broker creates it when its auto.create.topics.enable allows (Kafka's default).
        Asked again while it is being created, for AUTO_CREATE_SECONDS at most (within
        --timeout); its layout then, an error in it when refused, None when no answer named it."""
        ...

    def list_offsets(self, partitions: Sequence[TopicPartition], timestamps: Sequence[int], isolation: str, action: str,
                     leaders: Mapping[TopicPartition, int] | None = None,
                     ) -> Partial[dict[TopicPartition, list[OffsetAnswer | None]]]:
        """ListOffsets for each of `timestamps` per partition, everything in flight at
        once; a partition whose leader moved is asked again until --timeout, one without a
        leader is not asked. `leaders` (from metadata the caller just read) spares a
        Metadata request. Answers per partition, one per timestamp (None where none came),
        and the error of each partition that failed."""
        ...

    def describe_configs(self, resources: Sequence[tuple[str, str]], action: str, keys: Sequence[str] | None = None,
                         ) -> Partial[dict[tuple[str, str], dict[str, ConfigValue]]]:
        """The configs (all, or only `keys`) of each (resource type, name): TOPIC or
        BROKER; a broker's own configs are asked of that broker. Each resource that could
        not be read has its error instead."""
        ...

    def describe_acls(self, filters: Sequence[AclBindingFilter], action: str) -> set[AclBinding]:
        """Every ACL any of `filters` matches (DescribeAcls, all filters asked at once). A
        cluster without an authorizer: the SECURITY_DISABLED error where the client reports
        it; librdkafka answers it as no ACL at all (the caller asks again to tell)."""
        ...

    def small_input_producer(self, topic: TopicLayout, on_failure: Callable[[DeliveryFailure], None],
                             timeout: float, partitioner: str = "murmur2") -> Any | None:
        """A producer for a small input held in memory, sent at once with acks=all and
        idempotence (kctl.admin.client.wire_producer), or None where this client has none
        faster than librdkafka's own (kctl.records.produce then uses librdkafka's).
        `topic`: its layout from the caller's Metadata (the partition count, and the
        leaders the first Produce requests go to)."""
        ...

    def close(self) -> None:
        ...
