"""The APIs the broker implements: advertised version ranges and the message codec.

Ranges are exactly those of an Apache Kafka 4.3 broker listener (validVersions of Kafka's
message JSON, unstable versions left out), with Kafka's two carve-outs: Produce is
*advertised* from v0 (KAFKA-18659: older librdkafka turns off compression otherwise) but
v0-2 are refused, and JoinGroup keeps v0-1 (KAFKA-19444). An API that is not listed here is
never advertised: clients act on what ApiVersions says (librdkafka starts telemetry calls as
soon as that key appears).

Messages are encoded and decoded by kctl's own codec (kctl.messages.codec) where kctl
holds the API's definitions (the APIs kctl's own client speaks: Metadata, ListOffsets,
the group reads...), and otherwise with kafka-python's schema-driven classes (generated
from the same Kafka JSON), loaded lazily per API so start-up pays only for what clients
use. kctl's codec encodes a Metadata answer of 2,000 partitions in half kafka-python's
time, and a session that uses only those APIs never imports kafka-python (130-230 ms).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import cast

from kctl.broker.protocol.errors import ProtocolError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    from kctl.messages.codec import Message

    # kafka-python's message classes as this module uses them (kafka.protocol.api_message,
    # kafka.protocol.schemas.fields): kafka-python ships no types.
    class _DataClass(Protocol):
        def __call__(self, **fields: object) -> object: ...

    class _SchemaField(Protocol):
        """A field of a message's schema; a struct's field is also the struct's schema."""

        @property
        def name(self) -> str: ...
        @property
        def fields(self) -> dict[str, _SchemaField]: ...
        @property
        def array_of(self) -> _SchemaField: ...
        @property
        def data_class(self) -> _DataClass: ...
        def is_struct(self) -> bool: ...
        def is_struct_array(self) -> bool: ...

    class _KafkaMessage(Protocol):
        def encode(self, *, version: int) -> bytes: ...

    class MessageClass(Protocol):
        """A kafka-python Request or Response class."""

        _struct: _SchemaField

        def __call__(self, *, version: int, **fields: object) -> _KafkaMessage: ...
        def decode(self, data: bytes | memoryview, *, version: int) -> object: ...


@dataclass(frozen=True, slots=True)
class Api:
    key: int
    name: str
    min_version: int
    max_version: int
    first_flexible: int  # first version using compact encodings and tagged fields (99: none)
    # kafka.protocol submodule holding <name>Request / <name>Response, or a kctl module
    # for the APIs kafka-python has no classes for
    module: str
    accept_min: int | None = None  # lowest version actually served, when below min is advertised

    @property
    def lowest_served(self) -> int:
        return self.min_version if self.accept_min is None else self.accept_min

    def flexible(self, version: int) -> bool:
        return version >= self.first_flexible


_APIS = (
    Api(0, "Produce", 0, 13, 9, "producer.produce", accept_min=3),
    Api(1, "Fetch", 4, 18, 12, "consumer.fetch"),
    Api(2, "ListOffsets", 1, 11, 6, "consumer.offsets"),
    Api(3, "Metadata", 0, 13, 9, "metadata.metadata"),
    Api(8, "OffsetCommit", 2, 10, 8, "consumer.group"),
    Api(9, "OffsetFetch", 1, 10, 6, "consumer.group"),
    Api(10, "FindCoordinator", 0, 6, 3, "metadata.find_coordinator"),
    Api(11, "JoinGroup", 0, 9, 6, "consumer.group"),
    Api(12, "Heartbeat", 0, 4, 4, "consumer.group"),
    Api(13, "LeaveGroup", 0, 5, 4, "consumer.group"),
    Api(14, "SyncGroup", 0, 5, 4, "consumer.group"),
    Api(15, "DescribeGroups", 0, 6, 5, "admin.groups"),
    Api(16, "ListGroups", 0, 5, 3, "admin.groups"),
    # On a listener without SASL: ILLEGAL_SASL_STATE, as a Kafka PLAINTEXT listener answers:
    # a client set up for SASL fails at once, naming SASL, instead of retrying.
    Api(17, "SaslHandshake", 0, 1, 99, "sasl"),
    Api(18, "ApiVersions", 0, 4, 3, "metadata.api_versions"),
    Api(19, "CreateTopics", 2, 7, 5, "admin.topics"),
    Api(20, "DeleteTopics", 1, 6, 4, "admin.topics"),
    Api(21, "DeleteRecords", 0, 2, 2, "admin.topics"),
    Api(22, "InitProducerId", 0, 5, 2, "producer.transaction"),
    Api(23, "OffsetForLeaderEpoch", 2, 4, 4, "consumer.offsets"),
    # Transactions (transaction.version 1: no finalized feature advertises version 2, so
    # clients use the classic protocol even at the newest versions).
    Api(24, "AddPartitionsToTxn", 0, 5, 3, "producer.transaction"),
    Api(25, "AddOffsetsToTxn", 0, 4, 3, "producer.transaction"),
    Api(26, "EndTxn", 0, 5, 3, "producer.transaction"),
    Api(27, "WriteTxnMarkers", 1, 2, 1, "producer.transaction"),
    Api(28, "TxnOffsetCommit", 0, 5, 3, "producer.transaction"),
    # SECURITY_DISABLED without --authorizer, as Kafka without an authorizer (handlers/acls.py).
    Api(29, "DescribeAcls", 1, 3, 2, "admin.acl"),
    Api(30, "CreateAcls", 1, 3, 2, "admin.acl"),
    Api(31, "DeleteAcls", 1, 3, 2, "admin.acl"),
    Api(32, "DescribeConfigs", 1, 4, 4, "admin.configs"),
    Api(33, "AlterConfigs", 0, 2, 2, "admin.configs"),
    Api(35, "DescribeLogDirs", 1, 5, 2, "admin.cluster"),
    Api(36, "SaslAuthenticate", 0, 2, 2, "sasl"),
    Api(37, "CreatePartitions", 0, 3, 2, "admin.topics"),
    # Delegation tokens (KIP-48), in kctl's codec; advertised whether or not they are on.
    Api(38, "CreateDelegationToken", 1, 3, 2, "kctl.messages"),
    Api(39, "RenewDelegationToken", 1, 2, 2, "kctl.messages"),
    Api(40, "ExpireDelegationToken", 1, 2, 2, "kctl.messages"),
    Api(41, "DescribeDelegationToken", 1, 3, 2, "kctl.messages"),
    Api(42, "DeleteGroups", 0, 2, 2, "admin.groups"),
    Api(43, "ElectLeaders", 0, 2, 2, "admin.topics"),
    Api(44, "IncrementalAlterConfigs", 0, 1, 1, "admin.configs"),
    Api(45, "AlterPartitionReassignments", 0, 1, 0, "admin.topics"),
    Api(46, "ListPartitionReassignments", 0, 0, 0, "admin.topics"),
    Api(47, "OffsetDelete", 0, 0, 99, "consumer.group"),
    Api(48, "DescribeClientQuotas", 0, 1, 1, "admin.client_quotas"),
    Api(49, "AlterClientQuotas", 0, 1, 1, "admin.client_quotas"),
    Api(50, "DescribeUserScramCredentials", 0, 0, 0, "admin.users"),
    Api(51, "AlterUserScramCredentials", 0, 0, 0, "admin.users"),
    Api(60, "DescribeCluster", 0, 2, 0, "admin.cluster"),
    Api(61, "DescribeProducers", 0, 0, 0, "admin.transactions"),
    Api(65, "DescribeTransactions", 0, 0, 0, "admin.transactions"),
    Api(66, "ListTransactions", 0, 2, 0, "admin.transactions"),
    Api(68, "ConsumerGroupHeartbeat", 0, 1, 0, "kctl.broker.protocol.kip848"),
    Api(69, "ConsumerGroupDescribe", 0, 1, 0, "kctl.broker.protocol.kip848"),
    # Share groups (KIP-932), in kctl's codec (kctl/messages holds their definitions).
    Api(76, "ShareGroupHeartbeat", 1, 1, 0, "kctl.messages"),
    Api(77, "ShareGroupDescribe", 1, 1, 0, "kctl.messages"),
    Api(78, "ShareFetch", 1, 2, 0, "kctl.messages"),
    Api(79, "ShareAcknowledge", 1, 2, 0, "kctl.messages"),
    Api(90, "DescribeShareGroupOffsets", 0, 1, 0, "kctl.messages"),
    Api(91, "AlterShareGroupOffsets", 0, 0, 0, "kctl.messages"),
    Api(92, "DeleteShareGroupOffsets", 0, 0, 0, "kctl.messages"),
    # Streams groups (KIP-1071), Kafka 4.3's v0.
    Api(88, "StreamsGroupHeartbeat", 0, 0, 0, "kctl.messages"),
    Api(89, "StreamsGroupDescribe", 0, 0, 0, "kctl.messages"),
)

APIS: dict[int, Api] = {api.key: api for api in _APIS}
API_VERSIONS = 18
PRODUCE = 0

_classes: dict[tuple[int, str], MessageClass] = {}


def api_version_entries() -> list[dict[str, int]]:
    """The ApiVersions response's api_keys: what this broker advertises."""
    return [{"api_key": a.key, "min_version": a.min_version, "max_version": a.max_version}
            for a in APIS.values()]


def message_class(api: Api, kind: str) -> MessageClass:
    """kafka-python's Request or Response class for an API (imported on first use)."""
    cached = _classes.get((api.key, kind))
    if cached is None:
        module = importlib.import_module(api.module if api.module.startswith("kctl.") else "kafka.protocol." + api.module)
        cached = _classes[(api.key, kind)] = getattr(module, api.name + kind)
    return cached


def _own_message(api: Api, kind: str, version: int) -> Message | None:
    """kctl's codec for the message at this version, or None when kctl lacks its definition."""
    from kctl.messages import codec

    name = api.name + kind
    return codec.message(name, version) if codec.has_definition(name) else None


def decode_request(api: Api, version: int, body: memoryview) -> object:
    """Decode a request body; bytes that are no such request raise ProtocolError (whatever
    the decoder tripped on: a short buffer, bad UTF-8, a length past the end), which the
    server answers by closing the connection. Trailing bytes are ignored, as Kafka does
    (librdkafka's all-topics Metadata request carries three, see notes/broker.md §1.5)."""
    try:
        own = _own_message(api, "Request", version)
        if own is not None:
            return own.decode(body)
        return message_class(api, "Request").decode(body, version=version)
    except Exception as exc:  # noqa: BLE001 - the decoders' errors are of many types, all "malformed"
        raise ProtocolError(f"malformed {api.name} v{version} request: {type(exc).__name__}: {exc}") from None


def encode_response(api: Api, version: int, fields: dict[str, object]) -> bytes:
    """Encode a response given as plain dicts and lists (nested structs as dicts)."""
    own = _own_message(api, "Response", version)
    if own is not None:
        return own.encode(**fields)
    return build_message(message_class(api, "Response"), version, fields).encode(version=version)


def build_message(cls: MessageClass, version: int, fields: dict[str, object]) -> _KafkaMessage:
    """A kafka-python message of class `cls` from plain dicts and lists."""
    return cls(version=version, **_convert_fields(cls._struct, fields))


def _convert_fields(struct: _SchemaField, fields: dict[str, object]) -> dict[str, object]:
    known = struct.fields
    converted: dict[str, object] = {}
    for name, value in fields.items():
        field = known.get(name)
        if field is None:
            raise KeyError(f"{struct.name} has no field {name!r}")
        if value is not None:
            if isinstance(value, int) and getattr(field, "_type_str", None) == "bitfield":
                # kafka-python models authorized-operation bitfields as sets of bit numbers
                value = None if value == -2**31 else {b for b in range(32) if value >> b & 1}
            elif field.is_struct_array():
                inner = field.array_of
                value = [_build(inner, item) if isinstance(item, dict) else item for item in cast("list[object]", value)]
            elif field.is_struct() and isinstance(value, dict):
                value = _build(field, value)
        converted[name] = value
    return converted


def _build(struct: _SchemaField, fields: dict[str, object]) -> object:
    return struct.data_class(**_convert_fields(struct, fields))
