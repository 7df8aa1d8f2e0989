"""The tests' schema registry (Apicurio Registry's Confluent-compatible API) behaves as
Confluent's client and serializers expect: the ground `kctl schema` and schema'd records
are tested on. Avro, Protobuf with a reference, JSON Schema; compatibility; deletes."""

from __future__ import annotations

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

pytestmark = pytest.mark.integration

USER_V1 = '{"type":"record","name":"User","namespace":"demo","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}'
# Adds a field without a default: not BACKWARD compatible (new readers cannot read old records).
USER_BREAKING = '{"type":"record","name":"User","namespace":"demo","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"age","type":"int"}]}'
USER_V2 = '{"type":"record","name":"User","namespace":"demo","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}'


@pytest.fixture
def client(schema_registry):
    registry = SchemaRegistryClient({"url": schema_registry.url, "timeout": 30})  # no timeout is its default
    yield registry
    registry.close() if hasattr(registry, "close") else None


def test_avro_subject_versions_and_compatibility(client, unique_name):
    subject = unique_name("users") + "-value"
    first = client.register_schema(subject, Schema(USER_V1, "AVRO"))
    client.set_compatibility(subject, "BACKWARD")
    assert client.get_compatibility(subject) == "BACKWARD"
    assert client.test_compatibility(subject, Schema(USER_BREAKING, "AVRO")) is False
    assert client.test_compatibility(subject, Schema(USER_V2, "AVRO")) is True
    second = client.register_schema(subject, Schema(USER_V2, "AVRO"))
    assert second != first
    assert client.get_versions(subject) == [1, 2]
    latest = client.get_latest_version(subject)
    assert (latest.version, latest.schema_id, latest.schema.schema_type) == (2, second, "AVRO")
    assert subject in client.get_subjects()


def test_avro_round_trip_through_confluent_serializers(client, unique_name):
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

    topic = unique_name("avro")
    serializer = AvroSerializer(client, USER_V1)
    context = SerializationContext(topic, MessageField.VALUE)
    payload = serializer({"id": 7, "name": "ada"}, context)
    schema_id = client.get_latest_version(f"{topic}-value").schema_id
    assert payload[0] == 0 and int.from_bytes(payload[1:5], "big") == schema_id  # Confluent's wire format
    assert AvroDeserializer(client)(payload, context) == {"id": 7, "name": "ada"}


def test_protobuf_with_a_reference_and_json_schema(client, unique_name):
    base = unique_name("common")
    client.register_schema(f"{base}.proto", Schema('syntax = "proto3";\npackage common;\nmessage Money { int64 cents = 1; string currency = 2; }\n', "PROTOBUF"))
    order = 'syntax = "proto3";\npackage shop;\nimport "common.proto";\nmessage Order { string id = 1; common.Money total = 2; }\n'
    subject = unique_name("orders") + "-value"
    client.register_schema(subject, Schema(order, "PROTOBUF", [SchemaReference("common.proto", f"{base}.proto", 1)]))
    registered = client.get_latest_version(subject)
    assert registered.schema.schema_type == "PROTOBUF"
    assert [(r.name, r.subject, r.version) for r in registered.schema.references] == [("common.proto", f"{base}.proto", 1)]

    json_subject = unique_name("events") + "-value"
    json_schema = '{"type":"object","properties":{"kind":{"type":"string"}},"required":["kind"]}'
    client.register_schema(json_subject, Schema(json_schema, "JSON"))
    assert client.get_latest_version(json_subject).schema.schema_type == "JSON"


def test_soft_then_permanent_delete(client, unique_name):
    subject = unique_name("gone") + "-value"
    client.register_schema(subject, Schema(USER_V1, "AVRO"))
    assert client.delete_subject(subject) == [1]
    assert subject not in client.get_subjects()
    client.delete_subject(subject, permanent=True)
    with pytest.raises(SchemaRegistryError) as failure:
        client.get_latest_version(subject)
    assert failure.value.http_status_code == 404
