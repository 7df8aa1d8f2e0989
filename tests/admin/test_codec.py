"""kctl's message codec (kctl.messages.codec) against an independent one: kafka-python's
schema-driven classes, built from the same Kafka definitions. Requests must encode to the
same bytes; responses encoded by kctl must decode, by kafka-python, to what went in."""

from __future__ import annotations

import uuid

import pytest

from kctl.messages import codec


@pytest.fixture(autouse=True, params=["field by field", "written out"])
def decoding(request, monkeypatch):
    """Every test twice: each struct decoded and encoded by its loop over the fields (what
    a one-shot read uses), then by the function written out for it (what a large answer
    switches to, codec._WRITE_OUT_AFTER)."""
    monkeypatch.setattr(codec, "_WRITE_OUT_AFTER", 10**9 if request.param == "field by field" else 0)
    codec.message.cache_clear()
    yield request.param
    codec.message.cache_clear()


def kafka_python(name: str):
    """kafka-python's class for a message (its own definitions, or kctl's for the newer APIs)."""
    import kafka.protocol.admin as admin
    import kafka.protocol.consumer as consumer
    import kafka.protocol.metadata as metadata
    import kafka.protocol.sasl as sasl
    from kafka.protocol.api_message import ApiMessage

    from kctl import messages

    for module in (admin, consumer, metadata, sasl):
        if hasattr(module, name):
            return getattr(module, name)
    return type(name, (ApiMessage,), {}, load_json=messages)


REQUESTS = [
    ("ApiVersionsRequest", 3, {"client_software_name": "kctl", "client_software_version": "1"}),
    ("SaslHandshakeRequest", 1, {"mechanism": "SCRAM-SHA-512"}),
    ("SaslAuthenticateRequest", 2, {"auth_bytes": b"n,,n=bob,r=abc"}),
    ("ListGroupsRequest", 5, {"states_filter": ["Stable"], "types_filter": ["consumer", "share"]}),
    ("ListGroupsRequest", 3, {}),
    ("DescribeGroupsRequest", 5, {"groups": ["a", "b"], "include_authorized_operations": False}),
    ("DescribeGroupsRequest", 0, {"groups": ["a"]}),
    ("FindCoordinatorRequest", 4, {"key_type": 0, "coordinator_keys": ["g1", "g2"]}),
    ("DescribeLogDirsRequest", 4, {"topics": None}),
]


@pytest.mark.parametrize(("name", "version", "fields"), REQUESTS, ids=[f"{n}-v{v}" for n, v, _ in REQUESTS])
def test_requests_encode_as_kafka_python_encodes_them(name, version, fields):
    assert codec.message(name, version).encode(**fields) == bytes(kafka_python(name)(**fields).encode(version=version))


def test_nested_requests_encode_as_kafka_python_encodes_them():
    from kafka.protocol.consumer import OffsetFetchRequest
    from kafka.protocol.metadata import MetadataRequest

    group = OffsetFetchRequest.OffsetFetchRequestGroup
    ours = codec.message("OffsetFetchRequest", 8).encode(groups=[{"group_id": "g", "topics": None}, {"group_id": "h", "topics": None}])
    theirs = OffsetFetchRequest(groups=[group(group_id="g", topics=None), group(group_id="h", topics=None)], require_stable=False)
    assert ours == bytes(theirs.encode(version=8))
    topic = MetadataRequest.MetadataRequestTopic
    ours = codec.message("MetadataRequest", 12).encode(topics=[{"name": "orders"}], allow_auto_topic_creation=False)
    theirs = MetadataRequest(topics=[topic(name="orders", topic_id=uuid.UUID(int=0))], allow_auto_topic_creation=False,
                             include_topic_authorized_operations=False)
    assert ours == bytes(theirs.encode(version=12))


def same(ours, theirs) -> None:
    """Every field kafka-python decoded equals kctl's (uuids as kafka-python prints them)."""
    if isinstance(theirs, dict):
        for key, value in theirs.items():
            if hasattr(ours, key):
                same(getattr(ours, key), value)
    elif isinstance(theirs, list):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same(a, b)
    elif isinstance(ours, uuid.UUID):
        assert str(ours) == str(theirs)
    elif isinstance(ours, bytes) and isinstance(theirs, str):
        assert ours == theirs.encode("latin-1")  # kafka-python's to_dict shows bytes as text
    elif theirs is None and ours == -(2**31):
        pass  # authorized operations not asked for: kafka-python shows Kafka's sentinel as None
    else:
        assert ours == theirs


# Responses, and requests of nested structs (kafka-python builds those from its own
# struct classes, not dicts): encoded by kctl, decoded by kafka-python.
ROUND_TRIPS = [
    ("IncrementalAlterConfigsRequest", 1, {"resources": [{"resource_type": 8, "resource_name": "1", "configs": [
        {"name": "kafka.server", "config_operation": 0, "value": "DEBUG"}, {"name": "kafka.log", "config_operation": 1, "value": None}]}],
        "validate_only": True}),
    ("AlterPartitionReassignmentsRequest", 0, {"timeout_ms": 5000, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "replicas": [2, 3]}, {"partition_index": 1, "replicas": None}]}]}),
    ("DescribeClientQuotasRequest", 1, {"components": [{"entity_type": "user", "match_type": 0, "match": "alice"},
                                                       {"entity_type": "client-id", "match_type": 2, "match": None}], "strict": True}),
    ("AlterClientQuotasRequest", 1, {"entries": [{"entity": [{"entity_type": "user", "entity_name": None}],
                                                  "ops": [{"key": "producer_byte_rate", "value": 1048576.0, "remove": False}]}],
                                     "validate_only": False}),
    ("UpdateFeaturesRequest", 1, {"timeout_ms": 3000, "feature_updates": [{"feature": "group.version", "max_version_level": 1,
                                                                           "upgrade_type": 2}], "validate_only": True}),
    ("WriteTxnMarkersRequest", 1, {"markers": [{"producer_id": 7, "producer_epoch": 2, "transaction_result": False,
                                                "topics": [{"name": "t", "partition_indexes": [0]}], "coordinator_epoch": 4}]}),
    ("MetadataResponse", 12, {
        "throttle_time_ms": 5, "cluster_id": "c1", "controller_id": 2,
        "brokers": [{"node_id": 1, "host": "b1", "port": 9092, "rack": None}, {"node_id": 2, "host": "b2", "port": 9093, "rack": "r"}],
        "topics": [{"error_code": 0, "name": "orders", "topic_id": uuid.UUID(int=7), "is_internal": False,
                    "partitions": [{"error_code": 0, "partition_index": 0, "leader_id": 1, "leader_epoch": 3,
                                    "replica_nodes": [1, 2], "isr_nodes": [1], "offline_replicas": [2]}]}]}),
    ("MetadataResponse", 4, {"brokers": [{"node_id": 1, "host": "b1", "port": 9092, "rack": None}], "cluster_id": None, "controller_id": 1,
                             "topics": []}),
    ("ListGroupsResponse", 5, {"error_code": 0, "groups": [
        {"group_id": "g", "protocol_type": "consumer", "group_state": "Stable", "group_type": "classic"},
        {"group_id": "s", "protocol_type": "", "group_state": "Empty", "group_type": "share"}]}),
    ("DescribeGroupsResponse", 5, {"groups": [{"error_code": 0, "group_id": "g", "group_state": "Stable", "protocol_type": "consumer",
                                               "protocol_data": "range", "members": [
                                                   {"member_id": "m", "group_instance_id": None, "client_id": "c", "client_host": "/h",
                                                    "member_metadata": b"\x00\x01", "member_assignment": b"\x00\x03x"}]}]}),
    ("OffsetFetchResponse", 8, {"groups": [{"group_id": "g", "error_code": 0, "topics": [
        {"name": "orders", "partitions": [{"partition_index": 1, "committed_offset": 42, "committed_leader_epoch": -1,
                                           "metadata": None, "error_code": 0}]}]}]}),
    ("FindCoordinatorResponse", 4, {"coordinators": [{"key": "g", "node_id": 2, "host": "b2", "port": 9093, "error_code": 0,
                                                      "error_message": None}]}),
    ("ApiVersionsResponse", 3, {"error_code": 0, "api_keys": [{"api_key": 3, "min_version": 0, "max_version": 12}],
                                "finalized_features_epoch": 7}),
    ("SaslAuthenticateResponse", 2, {"error_code": 58, "error_message": "Authentication failed", "auth_bytes": b"",
                                     "session_lifetime_ms": 0}),
    ("ConsumerGroupDescribeResponse", 0, {"groups": [{"error_code": 0, "group_id": "g", "group_state": "Stable", "group_epoch": 3,
                                                      "assignment_epoch": 3, "assignor_name": "uniform", "members": []}]}),
    ("DescribeClientQuotasResponse", 1, {"error_code": 0, "error_message": None, "entries": [
        {"entity": [{"entity_type": "user", "entity_name": None}], "values": [{"key": "consumer_byte_rate", "value": 2.5e6}]}]}),
    ("DescribeLogDirsResponse", 4, {"error_code": 0, "results": [{"error_code": 0, "log_dir": "/data", "total_bytes": 100, "usable_bytes": 40,
                                                                  "topics": [{"name": "t", "partitions": [
                                                                      {"partition_index": 0, "partition_size": 12, "offset_lag": 0,
                                                                       "is_future_key": False}]}]}]}),
    ("ListPartitionReassignmentsResponse", 0, {"error_code": 0, "error_message": None, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "replicas": [1, 2, 3], "adding_replicas": [3], "removing_replicas": [1]}]}]}),
]


@pytest.mark.parametrize(("name", "version", "fields"), ROUND_TRIPS, ids=[f"{n}-v{v}" for n, v, _ in ROUND_TRIPS])
def test_messages_round_trip_through_kafka_python(name, version, fields):
    message = codec.message(name, version)
    data = message.encode(**fields)
    theirs = kafka_python(name).decode(data, version=version).to_dict()
    ours = message.decode(data)
    same(ours, theirs)
    same(ours, fields)
    assert message.encode(**vars(ours)) == data  # a decoded message encodes to the same bytes


def test_tagged_fields_are_read_and_unknown_ones_skipped():
    message = codec.message("ApiVersionsResponse", 3)
    data = message.encode(error_code=0, api_keys=[], finalized_features_epoch=9)
    assert message.decode(data).finalized_features_epoch == 9
    # A tag this definition does not know (added by a later Kafka) is skipped, not an error.
    base = message.encode(error_code=0, api_keys=[])
    assert base.endswith(b"\x00")
    with_unknown = base[:-1] + b"\x01\x63\x02\xab\xcd"  # one tagged field: tag 99, 2 bytes
    assert message.decode(with_unknown).error_code == 0


@pytest.mark.parametrize("cut", [1, 3, 7])
def test_truncated_answers_are_codec_errors(cut):
    message = codec.message("ListGroupsResponse", 5)
    data = message.encode(error_code=0, groups=[{"group_id": "g", "protocol_type": "consumer", "group_state": "Stable", "group_type": "classic"}])
    with pytest.raises(codec.CodecError):
        message.decode(data[:-cut])


def test_versioned_consumer_assignment():
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

    data = bytes(ConsumerProtocolAssignment(version=3, assigned_partitions=[("orders", [0, 2])], user_data=None).encode())
    decoded = codec.decode_versioned("ConsumerProtocolAssignment", data)
    assert [(t.topic, t.partitions) for t in decoded.assigned_partitions] == [("orders", [0, 2])]


def test_error_names_are_kafkas_and_every_name_kctl_acts_on_is_one():
    """The table is Kafka's Errors enum (4.x names, not older clients' aliases): a set of
    names the wire paths retry on that named an alias would never match an answer."""
    from kctl.admin.client import wire_producer
    from kctl.admin.client.over_wire import RETRIABLE_OFFSETS
    from kctl.messages.errors import ERRORS, error_name

    assert [error_name(c) for c in (6, 10, 17, 39, 133)] == [
        "NOT_LEADER_OR_FOLLOWER", "MESSAGE_TOO_LARGE", "INVALID_TOPIC_EXCEPTION", "INVALID_REPLICA_ASSIGNMENT", "SHARE_SESSION_LIMIT_REACHED"]
    names = {name for name, _ in ERRORS.values()}
    assert RETRIABLE_OFFSETS <= names
    assert wire_producer._RETRIABLE - {"_TRANSPORT"} <= names


def test_a_large_array_switches_to_the_written_decoder(monkeypatch):
    monkeypatch.setattr(codec, "_WRITE_OUT_AFTER", 16)
    message = codec.message("ListGroupsResponse", 5)
    groups = [{"group_id": f"g{i}", "protocol_type": "consumer", "group_state": "Empty", "group_type": "classic"} for i in range(1000)]
    read_array = message._struct.fields[-1].read  # the groups array's reader holds the group struct
    struct_ = next(c.cell_contents for c in read_array.__closure__ if isinstance(c.cell_contents, codec._Compiled))
    assert [g.group_id for g in message.decode(message.encode(groups=groups[:3])).groups] == ["g0", "g1", "g2"]
    assert "written_read" not in vars(struct_)  # three groups: read field by field
    assert [g.group_id for g in message.decode(message.encode(groups=groups)).groups] == [g["group_id"] for g in groups]
    assert "written_read" in vars(struct_)


def test_the_message_types_name_every_field_the_codec_reads_and_writes():
    """kctl/messages/types.py (generated from the JSON definitions, kept current by
    `gen-docs --check`) has, for each message, exactly the fields the codec gives a decoded
    message at every version, and a request type accepts what the codec writes."""
    import typing

    from kctl.devtools.messagetypes import definitions
    from kctl.messages import apis, codec
    from kctl.messages import types as message_types

    checked = 0
    for name, spec in definitions().items():
        declared = set(typing.get_type_hints(getattr(message_types, name)) if spec.get("type") == "request"
                       else getattr(message_types, name).__annotations__)
        low, high = codec.valid_versions(name)
        for version in range(low, high + 1):
            decoded = codec.message(name, version).decode(codec.message(name, version).encode())
            assert set(vars(decoded)) == declared, (name, version)
            checked += 1
    assert checked > 300
    # Every request with its response has its Api, named as Kafka names the API.
    assert apis.METADATA.name == "Metadata" and apis.OFFSET_FETCH.name == "OffsetFetch"


def test_api_names_agree_with_the_definitions_and_the_bundled_broker():
    """kctl.messages.api_keys names each API as kctl's message definitions and the bundled
    broker's table do, and every key up to the newest either of them knows."""
    from pathlib import Path

    from kctl.broker.protocol.apis import _APIS
    from kctl.messages import api_keys

    defined = {codec.definition(p.stem)["apiKey"]: p.stem.removesuffix("Request") for p in Path(codec.__file__).parent.glob("*Request.json")}
    served = {api.key: api.name for api in _APIS}
    assert {k: api_keys.NAMES.get(k) for k in defined} == defined
    assert {k: api_keys.NAMES.get(k) for k in served} == served
    assert sorted(api_keys.NAMES) == list(range(max(api_keys.NAMES) + 1)) and max(api_keys.NAMES) >= max(defined) and api_keys.name(999) == "API 999"
