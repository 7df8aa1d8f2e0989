"""kctl spark dump --decode: values written by confluent-kafka's serializers (Avro with
two versions, Protobuf, JSON Schema) dumped as typed Parquet columns, checked against
what the serializers were given."""

from __future__ import annotations

import datetime
import json

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

from kctl.errors import ExitCode

pytestmark = [pytest.mark.integration, pytest.mark.single_node]

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"},
    {"name": "cents", "type": "long"},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
    {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
        {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
    {"name": "tags", "type": {"type": "map", "values": "string"}},
]}
# Version 2 adds fields with defaults: version 1's records are resolved to it.
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"],
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}, "default": 0},
    {"name": "either", "type": ["null", "int", "string"], "default": None},
]}
EVENT = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Event", "type": "object",
         "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
         "required": ["kind"]}


@pytest.fixture
def client(schema_registry):
    return SchemaRegistryClient({"url": schema_registry.url, "timeout": 30})


def topic_with(kctl, cluster, unique_name, values: list[bytes | None]) -> str:
    topic = unique_name("dec")
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "1").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0
    return topic


def dumped(out) -> list[dict]:
    import pyarrow.dataset as ds

    rows = ds.dataset(str(out), format="parquet", partitioning="hive").to_table().to_pylist()
    return sorted(rows, key=lambda r: r["offset"])


def test_avro_values_become_typed_columns(spark, kctl, cluster, schema_registry, client, unique_name, tmp_path):
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for decoding, done by the job")
    from confluent_kafka.schema_registry.avro import AvroSerializer

    topic = unique_name("dec")
    subject = f"{topic}-value"
    v1 = client.register_schema(subject, Schema(json.dumps(ORDER_V1), "AVRO"))
    v2 = client.register_schema(subject, Schema(json.dumps(ORDER_V2), "AVRO"))
    ctx = SerializationContext(topic, MessageField.VALUE)
    old = AvroSerializer(client, json.dumps(ORDER_V1), conf={"auto.register.schemas": False, "use.schema.id": v1})
    new = AvroSerializer(client, json.dumps(ORDER_V2), conf={"auto.register.schemas": False, "use.schema.id": v2})
    base = {"id": "o1", "cents": 1250, "status": "PAID", "lines": [{"sku": "a", "qty": 2}], "tags": {"src": "web"}}
    placed = datetime.datetime(2026, 11, 1, 12, 0, tzinfo=datetime.UTC)
    values = [old(base, ctx), new({**base, "id": "o2", "note": "gift", "placed": placed, "either": "x"}, ctx), b"not avro", None]
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "1").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0

    out = tmp_path / "typed"
    env = {"KCTL_SCHEMA_REGISTRY_URL": schema_registry.url}
    result = kctl("-b", cluster.bootstrap, "spark", "dump", "-t", topic, "--decode", "--out", str(out), "-o", "json", env=env)
    assert result.exit_code == ExitCode.PARTIAL_FAILURE, result.stderr
    assert result.stderr.splitlines()[-1] == "error: unable to decode 1 value(s) of 4: their bytes are in the dump, value_decode_error says why"
    manifest = json.loads((out / "_kctl_manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["records"] == 4
    assert manifest["decoded"] == {"subject": subject, "schema_id": v2, "version": 2, "type": "AVRO", "undecoded": 1}

    rows = dumped(out)
    assert [r["value"] for r in rows] == values  # the bytes stay: the dump still replays
    assert [r["value_schema_id"] for r in rows] == [v1, v2, None, None]
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    assert rows[0]["value_decoded"] == {**base, "tags": [("src", "web")], "note": None, "placed": epoch, "either": None}
    assert rows[1]["value_decoded"] == {**base, "id": "o2", "tags": [("src", "web")], "note": "gift", "placed": placed, "either": '"x"'}
    assert [r["value_decoded"] for r in rows[2:]] == [None, None]
    assert [r["value_decode_error"] for r in rows] == [None, None, "not in the schema registry's wire format", None]
    # Typed for Spark too: a query on a nested field, no parsing.
    frame = spark.read.parquet(str(out))
    assert dict(frame.select("value_decoded.*").dtypes)["placed"] == "timestamp"
    assert frame.where("value_decoded.cents > 1000 AND value_decoded.lines[0].qty = 2").count() == 2


def test_protobuf_and_json_schema_values(spark, kctl, cluster, schema_registry, client, unique_name, tmp_path):
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for decoding, done by the job")
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    from tests.schema.test_records import proto_classes

    env = {"KCTL_SCHEMA_REGISTRY_URL": schema_registry.url}
    _money, payment = proto_classes(unique_name("money") + ".proto")
    proto_topic = unique_name("dec")
    serialize = ProtobufSerializer(payment, client, {"use.deprecated.format": False})
    ctx = SerializationContext(proto_topic, MessageField.VALUE)
    topic = topic_with(kctl, cluster, lambda _: proto_topic, [serialize(payment(id="p1", amount={"cents": 2**40, "currency": "EUR"}), ctx),
                                                             serialize(payment(id="p2"), ctx)])
    out = tmp_path / "proto"
    result = kctl("-b", cluster.bootstrap, "spark", "dump", "-t", topic, "--decode", "--out", str(out), env=env)
    assert result.exit_code == 0, result.stderr
    assert [r["value_decoded"] for r in dumped(out)] == [{"id": "p1", "amount": {"cents": 2**40, "currency": "EUR"}}, {"id": "p2", "amount": None}]

    json_topic = unique_name("dec")
    serialize = JSONSerializer(json.dumps(EVENT), client)
    ctx = SerializationContext(json_topic, MessageField.VALUE)
    topic = topic_with(kctl, cluster, lambda _: json_topic, [serialize({"kind": "click", "n": 3, "tags": ["a"]}, ctx), serialize({"kind": "view"}, ctx)])
    out = tmp_path / "events"
    result = kctl("-b", cluster.bootstrap, "spark", "dump", "-t", topic, "--decode", "--format", "jsonl", "--out", str(out), env=env)
    assert result.exit_code == 0, result.stderr
    import gzip

    lines = [json.loads(line) for part in sorted(out.glob("topic=*/partition=*/*.gz")) for line in gzip.open(part, "rt")]
    assert [line["value_decoded"] for line in sorted(lines, key=lambda x: x["offset"])] == [{"kind": "click", "n": 3, "tags": ["a"]}, {"kind": "view", "n": None, "tags": None}]


def test_decode_bad_input(kctl, cluster, schema_registry, unique_name, tmp_path):
    env = {"KCTL_SCHEMA_REGISTRY_URL": schema_registry.url}
    topic = topic_with(kctl, cluster, unique_name, [b"x"])
    result = kctl("-b", cluster.bootstrap, "spark", "dump", "-t", topic, "--decode", "--out", str(tmp_path / "x"), env=env)
    assert (result.exit_code, result.stderr.splitlines()[0]) == (ExitCode.NOT_FOUND, f"error: unable to decode {topic}: the schema registry has no subject {topic}-value")
    result = kctl("-b", cluster.bootstrap, "spark", "dump", "-t", topic, "-t", "other", "--decode", "--out", str(tmp_path / "x"), env=env)
    assert (result.exit_code, result.stderr.splitlines()[0]) == (ExitCode.USAGE, "error: unable to dump with --decode: one topic at a time (its columns are typed by one subject, TOPIC-value)")
    result = kctl("-b", cluster.bootstrap, "spark", "dump", "-t", topic, "--registry-url", "http://x", "--out", str(tmp_path / "x"))
    assert (result.exit_code, result.stderr.splitlines()[0]) == (ExitCode.USAGE, "error: unable to dump: --registry-url is for --decode")


def test_sql_filters_on_decoded_avro_columns(spark, kctl, cluster, schema_registry, client, unique_name):
    """kctl spark sql --decode: Avro values of two schema versions are typed columns a
    WHERE clause reads; a topic without a subject in the same query keeps its bytes."""
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for decoding, done by the job")
    from confluent_kafka.schema_registry.avro import AvroSerializer

    orders = unique_name("dec")
    subject = f"{orders}-value"
    v1 = client.register_schema(subject, Schema(json.dumps(ORDER_V1), "AVRO"))
    v2 = client.register_schema(subject, Schema(json.dumps(ORDER_V2), "AVRO"))
    ctx = SerializationContext(orders, MessageField.VALUE)
    old = AvroSerializer(client, json.dumps(ORDER_V1), conf={"auto.register.schemas": False, "use.schema.id": v1})
    new = AvroSerializer(client, json.dumps(ORDER_V2), conf={"auto.register.schemas": False, "use.schema.id": v2})
    line = {"lines": [{"sku": "a", "qty": 2}], "tags": {}}
    values = [old({"id": "o1", "cents": 1250, "status": "PAID", **line}, ctx), new({"id": "o2", "cents": 99, "status": "PAID", **line}, ctx),
              new({"id": "o3", "cents": 5000, "status": "NEW", "note": "rush", **line}, ctx), b"not avro"]
    topic_with(kctl, cluster, lambda _: orders, values)
    plain = topic_with(kctl, cluster, unique_name, [b"o1", b"o3"])
    env = {"KCTL_SCHEMA_REGISTRY_URL": schema_registry.url}
    query = (f"SELECT o.value_decoded.id AS id, o.value_decoded.note AS note FROM `{orders}` o JOIN `{plain}` p "
             "ON o.value_decoded.id = CAST(p.value AS STRING) WHERE o.value_decoded.cents > 1000 ORDER BY id")
    result = kctl("-b", cluster.bootstrap, "spark", "sql", query, "--decode", "-o", "json", env=env)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == [{"id": "o1", "note": None}, {"id": "o3", "note": "rush"}]
    assert f"{plain}: the schema registry has no subject {plain}-value; its values are not decoded" in result.stderr
    result = kctl("-b", cluster.bootstrap, "spark", "sql", f"SELECT value_decode_error AS e FROM `{orders}` WHERE value_decoded IS NULL",
                  "--decode", "-o", "json", env=env)
    assert json.loads(result.stdout) == [{"e": "not in the schema registry's wire format"}], result.stderr
