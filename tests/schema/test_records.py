"""Records with schemas: written by confluent-kafka's serializers, decoded by `kctl record
consume --value-format/--key-format`, on every broker backend with the tests' registry."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kctl.errors import ExitCode

pytestmark = pytest.mark.integration

PAYMENT = {"type": "record", "name": "Payment", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"},
    {"name": "cents", "type": "long"},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "raw", "type": "bytes"},
]}
CUSTOMER_KEY = {"type": "record", "name": "CustomerKey", "namespace": "shop", "fields": [{"name": "customer", "type": "int"}]}
EVENT = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Event", "type": "object",
         "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}}, "required": ["kind"]}


@pytest.fixture
def make_topic(cluster, kctl, unique_name):
    def make() -> str:
        name = unique_name("sr")
        result = kctl("-b", cluster.bootstrap, "topic", "create", name, "-p", "1")
        assert result.exit_code == 0, result.stderr
        return name

    return make


@pytest.fixture
def client(schema_registry):
    return SchemaRegistryClient({"url": schema_registry.url})


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in records:
        producer.produce(topic, value, key, partition=0)
    assert producer.flush(30) == 0


def test_avro_values_and_keys_decode(cluster, kctl, schema_registry, client, make_topic):
    topic = make_topic()
    values = AvroSerializer(client, json.dumps(PAYMENT))
    keys = AvroSerializer(client, json.dumps(CUSTOMER_KEY))
    ctx_value, ctx_key = SerializationContext(topic, MessageField.VALUE), SerializationContext(topic, MessageField.KEY)
    payments = [{"id": f"p{i}", "cents": 100 * i, "note": None if i % 2 else f"n{i}", "raw": bytes([i, 255])} for i in range(4)]
    produce(cluster.bootstrap, topic, [(keys({"customer": i}, ctx_key), values(p, ctx_value)) for i, p in enumerate(payments)] + [(b"plain", b"not avro")])
    value_id = client.get_latest_version(f"{topic}-value").schema_id
    key_id = client.get_latest_version(f"{topic}-key").schema_id
    env = {"KCTL_SCHEMA_REGISTRY_URL": schema_registry.url}

    result = kctl("-b", cluster.bootstrap, "record", "consume", topic, "--value-format", "auto", "--key-format", "auto", "-o", "jsonl", env=env)
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    for i, (line, payment) in enumerate(zip(lines, payments)):
        assert line["value"] == {**payment, "raw": payment["raw"].decode("latin-1")}  # Avro's JSON encoding of bytes
        assert (line["value_encoding"], line["value_schema_id"], line["value_subject"]) == ("avro", value_id, f"{topic}-value")
        assert (line["key"], line["key_encoding"], line["key_schema_id"], line["key_subject"]) == ({"customer": i}, "avro", key_id, f"{topic}-key")
    # Not in the wire format: auto leaves it as it was.
    assert (lines[4]["value"], lines[4]["value_encoding"], lines[4]["value_schema_id"], lines[4]["key"]) == ("not avro", "text", None, "plain")

    result = kctl("-b", cluster.bootstrap, "record", "consume", topic, "--value-format", "avro", "--format", "%o %v\\n", "-n", "2", env=env)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == '0 {"id":"p0","cents":0,"note":"n0","raw":"\\u0000ÿ"}\n1 {"id":"p1","cents":100,"note":null,"raw":"\\u0001ÿ"}\n'

    # --value-format avro insists: the plain record is written as bytes, warned, exit 4.
    result = kctl("-b", cluster.bootstrap, "record", "consume", topic, "--value-format", "avro", "--from", "4", env=env)
    assert result.exit_code == ExitCode.PARTIAL_FAILURE
    assert result.stdout == "not avro\n"
    assert result.stderr.splitlines()[0] == f"warning: {topic}:0@4: value not decoded (not in the schema registry's wire format: no magic byte 0 and schema id); shown as bytes"
    assert result.stderr.splitlines()[-1] == "error: unable to decode 1 record(s): written as bytes (see the warnings)"


def test_json_schema_values_decode(cluster, kctl, schema_registry, client, make_topic):
    topic = make_topic()
    serialize = JSONSerializer(json.dumps(EVENT), client)
    events = [{"kind": "click", "n": 1}, {"kind": "view"}]
    produce(cluster.bootstrap, topic, [(None, serialize(e, SerializationContext(topic, MessageField.VALUE))) for e in events])
    env = {"KCTL_SCHEMA_REGISTRY_URL": schema_registry.url}
    result = kctl("-b", cluster.bootstrap, "record", "consume", topic, "--value-format", "json-schema", "-o", "json", env=env)
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    assert [r["value"] for r in got] == events
    assert {r["value_encoding"] for r in got} == {"json-schema"}
    # An Avro-only run on these says what they are.
    result = kctl("-b", cluster.bootstrap, "record", "consume", topic, "--value-format", "avro", "-n", "1", env=env)
    assert result.exit_code == ExitCode.PARTIAL_FAILURE
    assert "is json-schema, not avro" in result.stderr.splitlines()[0]


def test_decoding_needs_a_registry_and_refuses_protobuf(cluster, kctl, make_topic):
    topic = make_topic()
    result = kctl("-b", cluster.bootstrap, "record", "consume", topic, "--value-format", "auto", env={"KCTL_SCHEMA_REGISTRY_URL": ""})
    assert (result.exit_code, result.stderr.splitlines()[0]) == (ExitCode.CONFIG, "error: unable to reach a schema registry: none is configured")
    result = kctl("-b", cluster.bootstrap, "record", "consume", topic, "--value-format", "protobuf")
    assert result.exit_code == ExitCode.USAGE and "Protobuf decoding is not built yet" in result.stderr
