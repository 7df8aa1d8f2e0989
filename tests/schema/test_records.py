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

pytestmark = [pytest.mark.integration, pytest.mark.single_node]

PAYMENT = {"type": "record", "name": "Payment", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"},
    {"name": "cents", "type": "long"},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "raw", "type": "bytes"},
]}
CUSTOMER_KEY = {"type": "record", "name": "CustomerKey", "namespace": "shop", "fields": [{"name": "customer", "type": "int"}]}
EVENT = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Event", "type": "object",
         "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}}, "required": ["kind"]}


@pytest.fixture(autouse=True)
def _single_node(cluster):
    """Schemas are the clients' business: the single-node backends cover them."""
    if cluster.nodes > 1:
        pytest.skip("records with schemas are tested on single-node backends")


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
    return SchemaRegistryClient({"url": schema_registry.url, "timeout": 30})  # no timeout is its default


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


@pytest.fixture
def no_associations(schema_registry):
    """The registry behind a proxy that refuses (403) the associations endpoint, as a
    gateway in front of a registry without it may: everything else is forwarded."""
    import threading
    import urllib.error
    import urllib.request
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Proxy(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            if "/associations" in self.path:
                status, body = 403, b'{"error_code":40301,"message":"Forbidden"}'
            else:
                try:
                    with urllib.request.urlopen(schema_registry.url.split("/apis/")[0] + self.path, timeout=30) as response:
                        status, body = response.status, response.read()
                except urllib.error.HTTPError as exc:
                    status, body = exc.code, exc.read()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/apis/ccompat/v7"
    server.shutdown()


def test_decoding_does_not_need_the_associations_endpoint(cluster, kctl, client, make_topic, no_associations):
    """The writer's schema comes by its id: kctl's deserializers never ask the registry
    which subject a topic is associated with (confluent-kafka 2.16's default), which a
    registry without that endpoint may refuse with something other than 404."""
    topic = make_topic()
    serialize = JSONSerializer(json.dumps(EVENT), client, conf={"subject.name.strategy.type": "TOPIC"})
    produce(cluster.bootstrap, topic, [(None, serialize({"kind": "click"}, SerializationContext(topic, MessageField.VALUE)))])
    result = kctl("-b", cluster.bootstrap, "record", "consume", topic, "--value-format", "json-schema", "-o", "jsonl",
                  env={"KCTL_SCHEMA_REGISTRY_URL": no_associations})
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["value"] == {"kind": "click"}


def test_decoding_needs_a_registry(cluster, kctl, make_topic):
    topic = make_topic()
    for value_format in ("auto", "protobuf"):
        result = kctl("-b", cluster.bootstrap, "record", "consume", topic, "--value-format", value_format, env={"KCTL_SCHEMA_REGISTRY_URL": ""})
        assert (result.exit_code, result.stderr.splitlines()[0]) == (ExitCode.CONFIG, "error: unable to reach a schema registry: none is configured")


def proto_classes(money_file: str):
    """shop.Money (in MONEY_FILE) and shop.Payment (payment.proto, importing it) as
    message classes, their descriptors written out by hand: what protoc would make of
    MONEY_PROTO and PAYMENT_PROTO, without kctl's compiling."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    money = descriptor_pb2.FileDescriptorProto(name=money_file, package="shop", syntax="proto3")
    money.message_type.add(name="Money", field=[F(name="cents", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL, json_name="cents"),
                                                F(name="currency", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, json_name="currency")])
    payment = descriptor_pb2.FileDescriptorProto(name=f"payment-{money_file}", package="shop", syntax="proto3", dependency=[money_file])
    payment.message_type.add(name="Payment", field=[F(name="id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, json_name="id"),
                                                    F(name="amount", number=2, type=F.TYPE_MESSAGE, type_name=".shop.Money", label=F.LABEL_OPTIONAL, json_name="amount")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(money)
    pool.Add(payment)
    return (message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Money")),
            message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Payment")))


def test_protobuf_written_by_confluent_serializer_decodes(cluster, kctl, schema_registry, client, make_topic, unique_name):
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    topic = make_topic()
    _money, payment = proto_classes(unique_name("money") + ".proto")
    # Its serializer registers payment's file and the one it imports (as base64
    # descriptors, which the registry keeps), the import as a reference.
    serialize = ProtobufSerializer(payment, client, {"use.deprecated.format": False})
    ctx = SerializationContext(topic, MessageField.VALUE)
    payments = [payment(id="p1", amount={"cents": 250, "currency": "EUR"}), payment(id="p2")]
    produce(cluster.bootstrap, topic, [(None, serialize(p, ctx)) for p in payments])
    assert client.get_latest_version(f"{topic}-value").schema.references
    env = {"KCTL_SCHEMA_REGISTRY_URL": schema_registry.url}
    for value_format in ("protobuf", "auto"):
        result = kctl("-b", cluster.bootstrap, "record", "consume", topic, "--value-format", value_format, "-o", "jsonl", env=env)
        assert result.exit_code == 0, result.stderr
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        # Protobuf's JSON mapping: int64 as a string, fields at their defaults shown.
        assert [line["value"] for line in lines] == [{"id": "p1", "amount": {"cents": "250", "currency": "EUR"}}, {"id": "p2"}]
        assert {(line["value_encoding"], line["value_subject"]) for line in lines} == {("protobuf", f"{topic}-value")}


def test_protobuf_produced_with_a_reference_is_read_by_confluent_deserializer(cluster, kctl, schema_registry, client, make_topic, unique_name, tmp_path):
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

    from tests.support.help_world import MONEY_PROTO, PAYMENT_PROTO

    topic = make_topic()
    money_subject = unique_name("money")
    (tmp_path / "money.proto").write_text(MONEY_PROTO)
    (tmp_path / "payment.proto").write_text(PAYMENT_PROTO)
    env = {"KCTL_SCHEMA_REGISTRY_URL": schema_registry.url}
    assert kctl("schema", "register", money_subject, "--file", str(tmp_path / "money.proto"), env=env).exit_code == 0
    registered = kctl("schema", "register", f"{topic}-value", "--file", str(tmp_path / "payment.proto"), "--reference", f"money.proto={money_subject}:1", env=env)
    assert registered.exit_code == 0, registered.stderr
    text = '{"id": "a", "amount": {"cents": 5, "currency": "EUR"}}\n{"id": "b", "amount": {"cents": "two"}}\n{"id": "c"}\n'
    result = kctl("-b", cluster.bootstrap, "record", "produce", topic, "--value-schema", f"{topic}-value", "--skip-invalid", input=text, env=env)
    assert result.exit_code == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("warning:")] == [
        "warning: line 2 skipped: shop.Payment: Failed to parse amount field: Failed to parse cents field: invalid literal for int() with base 10: 'two'."]
    _money, payment = proto_classes("money.proto")
    deserialize = ProtobufDeserializer(payment, {"use.deprecated.format": False})
    got = [deserialize(v, SerializationContext(topic, MessageField.VALUE)) for v in read_values(cluster.bootstrap, topic, 2)]
    assert got == [payment(id="a", amount={"cents": 5, "currency": "EUR"}), payment(id="c")]

    # A message other than the first, by name; a name the schema lacks.
    result = kctl("-b", cluster.bootstrap, "record", "produce", topic, "--value-schema", f"{money_subject}:1", "--value-message", "shop.Money", input='{"cents": 7}\n', env=env)
    assert result.exit_code == 0, result.stderr
    result = kctl("-b", cluster.bootstrap, "record", "produce", topic, "--value-schema", f"{topic}-value", "--value-message", "Nope", input='{}\n', env=env)
    assert (result.exit_code, result.stderr.splitlines()[-1]) == (ExitCode.USAGE, "error: the schema has no message Nope (its messages: shop.Payment)")
    # A .proto file that does not compile: protoc's first line.
    (tmp_path / "broken.proto").write_text('syntax = "proto3";\nmessage A { strin x = 1; }\n')
    result = kctl("-b", cluster.bootstrap, "record", "produce", topic, "--value-schema-file", str(tmp_path / "broken.proto"), "--subject-strategy", "record", input="{}\n", env=env)
    assert (result.exit_code, result.stderr.splitlines()[-1]) == (ExitCode.USAGE, 'error: unable to read the schema file: the schema does not compile: schema.proto:2:13: "strin" is not defined.')
    # And kctl reads back what it wrote, both messages.
    result = kctl("-b", cluster.bootstrap, "record", "consume", topic, "--value-format", "protobuf", "--format", "%v\\n", env=env)
    assert result.stdout.splitlines() == ['{"id":"a","amount":{"cents":"5","currency":"EUR"}}', '{"id":"c"}', '{"cents":"7","currency":""}']


def read_values(bootstrap: str, topic: str, count: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "sr-test", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    import time

    deadline = time.monotonic() + 30
    while len(values) < count and time.monotonic() < deadline:
        values += [m.value() for m in consumer.consume(100, 0.5) if m.error() is None]
    consumer.close()
    return values


def test_produced_avro_is_read_by_confluent_deserializers(cluster, kctl, schema_registry, client, make_topic, tmp_path):
    from confluent_kafka.schema_registry.avro import AvroDeserializer

    topic = make_topic()
    client.register_schema(f"{topic}-value", __import__("confluent_kafka.schema_registry", fromlist=["Schema"]).Schema(json.dumps(PAYMENT), "AVRO"))
    lines = [{"id": "a", "cents": 1, "note": None, "raw": "\u0001"}, {"id": "b", "cents": 2, "note": {"string": "x"}, "raw": ""}]
    env = {"KCTL_SCHEMA_REGISTRY_URL": schema_registry.url}
    text = "\n".join(json.dumps(line) for line in lines) + "\n"
    result = kctl("-b", cluster.bootstrap, "record", "produce", topic, "--value-schema", f"{topic}-value:1", input=text, env=env)
    assert result.exit_code == 0, result.stderr
    deserialize = AvroDeserializer(client)
    got = [deserialize(v, SerializationContext(topic, MessageField.VALUE)) for v in read_values(cluster.bootstrap, topic, 2)]
    assert got == [{"id": "a", "cents": 1, "note": None, "raw": b"\x01"}, {"id": "b", "cents": 2, "note": "x", "raw": b""}]
    # And kctl reads back what it wrote.
    result = kctl("-b", cluster.bootstrap, "record", "consume", topic, "--value-format", "avro", "--format", "%v\\n", env=env)
    assert result.stdout.splitlines() == ['{"id":"a","cents":1,"note":null,"raw":"\\u0001"}', '{"id":"b","cents":2,"note":"x","raw":""}']


def test_a_bad_line_names_its_line_and_field_and_writes_nothing_for_it(cluster, kctl, schema_registry, make_topic, tmp_path):
    topic = make_topic()
    schema = tmp_path / "payment.avsc"
    schema.write_text(json.dumps(PAYMENT))
    env = {"KCTL_SCHEMA_REGISTRY_URL": schema_registry.url}
    good = '{"id": "a", "cents": 1, "raw": ""}'
    text = "\n".join([good, '{"id": "b", "cents": "two", "raw": ""}', '{"id": "c", "raw": ""}', "not json", good]) + "\n"
    result = kctl("-b", cluster.bootstrap, "record", "produce", topic, "--value-schema-file", str(schema), input=text, env=env)
    assert result.exit_code == ExitCode.INVALID
    assert result.stderr.splitlines()[-2:] == [
        f'error: unable to produce to {topic}: line 2: shop.Payment.cents: the schema wants long, the value has "two"',
        "hint: 1 record(s) before it were written; --skip-invalid skips such lines",
    ]
    assert len(read_values(cluster.bootstrap, topic, 1)) == 1
    result = kctl("-b", cluster.bootstrap, "record", "produce", topic, "--value-schema-file", str(schema), "--skip-invalid", input=text, env=env)
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        'warning: line 2 skipped: shop.Payment.cents: the schema wants long, the value has "two"',
        "warning: line 3 skipped: shop.Payment.cents: missing or null (the schema wants long)",
        "warning: line 4 skipped: value is not JSON (Expecting value: line 1 column 1 (char 0))",
    ]
    assert len(read_values(cluster.bootstrap, topic, 3)) == 3


def test_schema_files_by_strategy_and_json_schema(cluster, kctl, schema_registry, client, make_topic, tmp_path):
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer

    topic = make_topic()
    schema = tmp_path / "event.json"
    schema.write_text(json.dumps(EVENT))
    env = {"KCTL_SCHEMA_REGISTRY_URL": schema_registry.url}
    result = kctl("-b", cluster.bootstrap, "record", "produce", topic, "--value-schema-file", str(schema), "--subject-strategy", "topic-record",
                  input='{"kind": "click", "n": 3}\n{"n": 4}\n', env=env)
    assert result.exit_code == ExitCode.INVALID
    assert result.stderr.splitlines()[-2] == f"error: unable to produce to {topic}: line 2: $: 'kind' is a required property"
    assert client.get_latest_version(f"{topic}-Event").schema.schema_type == "JSON"
    deserialize = JSONDeserializer(None, schema_registry_client=client)
    assert [deserialize(v, SerializationContext(topic, MessageField.VALUE)) for v in read_values(cluster.bootstrap, topic, 1)] == [{"kind": "click", "n": 3}]

    avro = tmp_path / "payment.avsc"
    avro.write_text(json.dumps(PAYMENT))
    assert kctl("-b", cluster.bootstrap, "record", "produce", topic, "--value-schema-file", str(avro), "--subject-strategy", "record",
                input='{"id": "z", "cents": 0, "raw": ""}\n', env=env).exit_code == 0
    assert client.get_latest_version("shop.Payment").schema.schema_type == "AVRO"
    missing = kctl("-b", cluster.bootstrap, "record", "produce", topic, "--value-schema", "no-such-subject", input="{}\n", env=env)
    assert (missing.exit_code, missing.stderr.splitlines()[0]) == (ExitCode.NOT_FOUND, "error: unable to describe no-such-subject version latest: Subject 'no-such-subject' not found.")


def test_kctl_tops_peek_decodes_through_the_contexts_registry(cluster, schema_registry, client, make_topic):
    """What the peek screen of `kctl top` shows (kctl.top.peek.reader, with the registry
    the context names): values in the registry's wire format as JSON, others as text."""
    from kctl.admin.client.session import AdminSession
    from kctl.admin.registry.schemas import Registry, registry_settings
    from kctl.config.model import ClientSettings
    from kctl.top.peek import reader

    topic = make_topic()
    values = AvroSerializer(client, json.dumps(PAYMENT))
    context = SerializationContext(topic, MessageField.VALUE)
    payments = [{"id": f"p{i}", "cents": 100 * i, "note": None, "raw": b""} for i in range(3)]
    produce(cluster.bootstrap, topic, [(b"k%d" % i, values(p, context)) for i, p in enumerate(payments)] + [(None, b"not avro")])
    session = AdminSession(ClientSettings(bootstrap_servers=cluster.bootstrap, properties={}, timeout=10, context=None))
    try:
        rows = reader(session, lambda: Registry(registry_settings({"url": schema_registry.url}, None, 10)))(topic, 0)
    finally:
        session.close()
    assert [(r["offset"], r["key"], r["value"]) for r in rows] == [
        (0, "k0", '{"id":"p0","cents":0,"note":null,"raw":""}'), (1, "k1", '{"id":"p1","cents":100,"note":null,"raw":""}'),
        (2, "k2", '{"id":"p2","cents":200,"note":null,"raw":""}'), (3, "null", "not avro")]
