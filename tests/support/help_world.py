"""The world the `--help` examples talk about, made on a real cluster with confluent-kafka.

Examples name topics (orders, payments, logs, ...) and groups (billing, audit, ...); this
module creates them with records and committed offsets, so each example finds what its
words assume: `group lag billing` has lag to show, `record consume orders --grep
'status":"failed' -n 5` has five failed orders to find, `offset get orders:0-3,7` has a
partition 7. `reset()` deletes the world's topics and groups first, so a shared cluster
(kafka3) starts each command from the same state.
"""

from __future__ import annotations

import json

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.eventually import retried, within

# name -> (partitions, replication factor; capped at the cluster's broker count)
TOPICS = {
    "orders": (8, 2), "payments": (3, 1), "events": (3, 1), "logs": (2, 3), "logs.app": (1, 1),
    "old-orders": (1, 1), "greetings": (1, 1), "users": (1, 1), "blobs": (1, 1), "scratch": (1, 1),
    "clicks": (2, 1), "orders-copy": (1, 1), "orders-mirror": (8, 1), "orders-12": (12, 1),
    "orders-test": (8, 1), "load-test": (3, 1), "tmp-1": (1, 1), "tmp-2": (1, 1), "invoices": (1, 1), "prices": (1, 1),
}
# Topics examples create; reset() deletes them too.
CREATED_BY_EXAMPLES = ("demo", "new-topic", "orders-v2", "orders-dlq")
GROUPS = ("billing", "audit", "old-consumer", "billing-v2")
ORDERS = 80


def order(number: int) -> tuple[bytes, bytes]:
    status = "failed" if number % 10 == 0 else "paid"
    value = {"order_id": f"o-{number}", "status": status, "amount": number * 3}
    return f"o-{number}".encode(), json.dumps(value, separators=(",", ":")).encode()


def reset(bootstrap: str, nodes: int, *, acls: bool = True, billing_behind: int = 2) -> None:
    """The world, on `nodes` brokers (topics get at most that many replicas); its ACLs
    deleted on clusters of several nodes unless `acls` is false (no authorizer); billing
    `billing_behind` records behind on every orders partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _delete(admin)
    if nodes > 1 and acls:
        _delete_acls(admin)
    _create(admin, nodes)
    _produce(bootstrap)
    _commit(bootstrap, billing_behind)


def _delete_acls(admin: AdminClient) -> None:
    """Every ACL (kafka3 has an authorizer; the `acl` examples create ACLs)."""
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    match_all = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
    for future in admin.delete_acls([match_all], request_timeout=30).values():
        future.result()


def _delete(admin: AdminClient) -> None:
    existing = set(admin.list_topics(timeout=10).topics)
    doomed = [t for t in (*TOPICS, *CREATED_BY_EXAMPLES) if t in existing]
    if doomed:
        for future in admin.delete_topics(doomed, operation_timeout=30).values():
            future.result()
    pending = list(GROUPS)

    def delete_groups() -> None:
        for group, future in admin.delete_consumer_groups(pending, request_timeout=10).items():
            try:
                future.result()
            except KafkaException as exc:
                if "GROUP_ID_NOT_FOUND" not in str(exc):
                    raise
            pending.remove(group)

    if pending:
        # A cluster just started may still be electing group coordinators.
        retried(delete_groups, lambda exc: "COORDINATOR" in str(exc))
    _until(lambda: not set(doomed) & set(admin.list_topics(timeout=10).topics), f"topics deleted: {doomed}", timeout=30)


def _create(admin: AdminClient, nodes: int) -> None:
    pending = dict(TOPICS)

    def create() -> None:
        futures = admin.create_topics([NewTopic(t, p, min(rf, nodes)) for t, (p, rf) in pending.items()],
                                      operation_timeout=30)
        for topic, future in futures.items():
            future.result()
            del pending[topic]

    # Kafka may still be finishing the deletion of a topic of the same name.
    retried(create, lambda exc: isinstance(exc, KafkaException))


def _produce(bootstrap: str) -> None:
    # Nothing leaves before flush() (which sends at once, whatever linger.ms says): each
    # partition's records in one batch, so the sizes examples print are the same every run
    # (a CI run under load sent orders in several batches: 1.0 KiB where 645 B was recorded).
    # Keys placed as Java producers and kctl place them (murmur2), as `consume --key` expects.
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 60000, "partitioner": "murmur2_random"})
    for number in range(ORDERS):
        key, value = order(number)
        partition = number % TOPICS["orders"][0]
        producer.produce("orders", value, key, partition=partition)
        producer.produce("orders-mirror", value, key, partition=partition)
        producer.produce("orders-copy", value, key)
    for number in range(30):
        producer.produce("payments", json.dumps({"payment": number}).encode(), f"p-{number}".encode())
    for topic, count in (("events", 10), ("logs", 20), ("logs.app", 5), ("clicks", 20), ("old-orders", 5),
                         ("scratch", 5), ("greetings", 2), ("users", 3), ("tmp-1", 1)):
        for number in range(count):
            producer.produce(topic, f"{topic} {number}".encode(), f"k{number}".encode())
    for number in range(5):
        producer.produce("blobs", bytes([0, 255, number]), bytes([number, 0]))
    assert producer.flush(30) == 0, "world records not delivered"


def _commit(bootstrap: str, billing_behind: int) -> None:
    """billing is `billing_behind` (2) behind on every orders partition and caught up on payments and
    old-orders; audit is caught up on orders; old-consumer read old-orders. All empty."""
    ends = {}
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "kctl-world-probe"})
    for topic in ("orders", "payments", "old-orders"):
        for partition in range(TOPICS[topic][0]):
            ends[(topic, partition)] = probe.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
    probe.close()
    commits = {
        "billing": {**{k: max(0, v - billing_behind) for k, v in ends.items() if k[0] == "orders"},
                    **{k: v for k, v in ends.items() if k[0] != "orders"}},
        "audit": {k: v for k, v in ends.items() if k[0] == "orders"},
        "old-consumer": {k: v for k, v in ends.items() if k[0] == "old-orders"},
    }
    for group, offsets in commits.items():
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        # Right after the group was deleted its coordinator can still be moving.
        positions = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        retried(lambda c=consumer, at=positions: c.commit(offsets=at, asynchronous=False), lambda exc: "COORDINATOR" in str(exc))
        consumer.close()


# -- the schema registry's world (kctl schema examples) --------------------------------

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop",
            "fields": [{"name": "order_id", "type": "string"}, {"name": "cents", "type": "long"}]}
# Compatible under BACKWARD (the new field has a default); broken.avsc's has none.
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "currency", "type": "string", "default": "EUR"}]}
ORDER_BROKEN = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "currency", "type": "string"}]}
MONEY_PROTO = 'syntax = "proto3";\npackage shop;\n\nmessage Money {\n  int64 cents = 1;\n  string currency = 2;\n}\n'
PAYMENT_PROTO = 'syntax = "proto3";\npackage shop;\n\nimport "money.proto";\n\nmessage Payment {\n  string id = 1;\n  Money amount = 2;\n}\n'


INVOICE = {"type": "record", "name": "Invoice", "namespace": "shop",
           "fields": [{"name": "invoice_id", "type": "string"}, {"name": "cents", "type": "long"}]}


def schema_world(url: str, directory, bootstrap: str) -> None:
    """The registry's world for one command's examples: in a registry shared by the
    examples (made once, `registry_world`), orders-value (version 1, schema id 1) and
    money.proto; in `directory`, the schema files the examples read; in topic invoices,
    5 records whose values are Avro (invoices-value), written by confluent-kafka's
    serializer."""
    from pathlib import Path

    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    files = {"order.avsc": json.dumps(ORDER_V1, indent=2), "order-v2.avsc": json.dumps(ORDER_V2, indent=2),
             "broken.avsc": json.dumps(ORDER_BROKEN, indent=2), "money.proto": MONEY_PROTO, "payment.proto": PAYMENT_PROTO,
             "invoice.avsc": json.dumps(INVOICE, indent=2),
             "invoices.txt": 'inv-10:{"invoice_id":"inv-10","cents":990}\ninv-11:{"invoice_id":"inv-11","cents":1990}\n'}
    for name, text in files.items():
        (Path(directory) / name).write_text(text + ("" if text.endswith("\n") else "\n"))
    serialize = AvroSerializer(SchemaRegistryClient({"url": url, "timeout": 30}), json.dumps(INVOICE))
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(5):
        value = serialize({"invoice_id": f"inv-{i}", "cents": 1000 + i}, SerializationContext("invoices", MessageField.VALUE))
        producer.produce("invoices", value, f"inv-{i}".encode())
    assert producer.flush(30) == 0


def registry_world(url: str) -> None:
    """In a new registry, first of all: orders-value version 1 (schema id 1, BACKWARD) and
    money.proto. The examples change only what they create themselves (old-orders-value
    is deleted, payments-value registered), so one registry serves them all."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    client = SchemaRegistryClient({"url": url, "timeout": 30})
    assert client.register_schema("orders-value", Schema(json.dumps(ORDER_V1), "AVRO")) == 1
    client.set_compatibility("orders-value", "BACKWARD")
    client.register_schema("money.proto", Schema(MONEY_PROTO, "PROTOBUF"))


# -- Kafka Connect's world (kctl connect examples) ---------------------------------------

SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
LINES = "GET /index.html 200\nGET /missing 404\nPOST /orders 201\n"


def _rest(url: str, method: str, path: str, body=None):
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url + path, method=method, headers={"Content-Type": "application/json"},
                                     data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            data = response.read()
            return response.status, json.loads(data) if data else None
    except urllib.error.HTTPError as exc:
        return exc.code, None


def _until(predicate, what: str, timeout: float = 60) -> None:
    assert within(predicate, timeout, interval=0.25), f"{what}: not reached in {timeout:.0f} s"


def connect_clear(url: str, bootstrap: str) -> None:
    """No connector, and no sink's group: before reset(), whose topics the connectors'
    clients would otherwise create again as it deletes them (consumers and producers ask
    for missing topics to be created)."""
    _, names = _rest(url, "GET", "/connectors")
    for name in names or []:
        _rest(url, "DELETE", f"/connectors/{name}")
    _until(lambda: _rest(url, "GET", "/connectors")[1] == [], "no connectors")
    # The sink's group keeps its offsets after the connector is gone: deleted once its
    # member has left.
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def group_deleted() -> bool:
        try:
            admin.delete_consumer_groups(["connect-orders-sink"], request_timeout=10)["connect-orders-sink"].result()
        except KafkaException as exc:
            return "GROUP_ID_NOT_FOUND" in str(exc)
        return True
    _until(group_deleted, "connect-orders-sink deleted")


def connect_world(url: str, directory, data, bootstrap: str) -> None:
    """Connect's world for one command's examples, made once reset() has: orders-sink (a
    FileStreamSink of orders into DATA/orders.txt, caught up on its 80 orders) and
    file-source (a FileStreamSource of DATA/access.log into greetings, its 3 lines read
    from the start); in `directory`, the files the examples read. When the previous
    command left that world as it was (its connectors, configs, states, offsets and
    topics), it is kept rather than made again."""
    from pathlib import Path

    directory, data = Path(directory), Path(data)
    # Orders' keys are plain text and their values JSON text: written to the file as they are.
    strings = "org.apache.kafka.connect.storage.StringConverter"
    sink = {"connector.class": SINK, "topics": "orders", "file": str(data / "orders.txt"), "tasks.max": "1",
            "key.converter": strings, "value.converter": strings}
    source = {"connector.class": SOURCE, "file": str(data / "access.log"), "topic": "greetings", "tasks.max": "1"}
    files = {
        # What `update` changes: two tasks.
        "orders-sink.json": json.dumps({"name": "orders-sink", "config": {**sink, "tasks.max": "2"}}, indent=2),
        "sink.properties": f"name=orders-sink\nconnector.class=FileStreamSink\ntopics=orders\nfile={data / 'orders.txt'}\n"
                           f"key.converter={strings}\nvalue.converter={strings}\n",
        "file-source.properties": f"name=file-source\nconnector.class=FileStreamSource\nfile={data / 'access.log'}\ntopic=greetings\n",
    }
    for name, text in files.items():
        (directory / name).write_text(text + ("" if text.endswith("\n") else "\n"))
    position = {"position": len(LINES.encode())}
    if _intact(url, sink, source, position):
        return
    connect_clear(url, bootstrap)
    (data / "orders.txt").unlink(missing_ok=True)
    (data / "access.log").write_text(LINES)
    assert _rest(url, "POST", "/connectors", {"name": "orders-sink", "config": sink})[0] == 201
    # The sink commits its offsets after writing the records they follow.
    _until(lambda: _sink_offsets(url) == ORDERS, "orders-sink caught up")
    # file-source's offsets outlive it in Connect's offsets topic: reset while it is
    # stopped, so it reads access.log from the start.
    assert _rest(url, "POST", "/connectors", {"name": "file-source", "config": source, "initial_state": "STOPPED"})[0] == 201
    _until(lambda: _rest(url, "DELETE", "/connectors/file-source/offsets")[0] == 200, "file-source's offsets reset")
    assert _rest(url, "PUT", "/connectors/file-source/resume")[0] == 202
    _until(lambda: _source_offsets(url) == [position], "file-source read access.log")
    _until(lambda: _intact(url, sink, source, position), "both connectors running")


def _sink_offsets(url: str) -> int | None:
    status, answer = _rest(url, "GET", "/connectors/orders-sink/offsets")
    return sum(o["offset"]["kafka_offset"] for o in answer["offsets"]) if status == 200 else None


def _source_offsets(url: str) -> list:
    return [o["offset"] for o in (_rest(url, "GET", "/connectors/file-source/offsets")[1] or {}).get("offsets", [])]


def _intact(url: str, sink: dict, source: dict, position: dict) -> bool:
    """Whether the world is as connect_world makes it: the two connectors with their
    configs, running with their one task, their offsets and the topics they used."""
    status, answer = _rest(url, "GET", "/connectors?expand=status&expand=info")
    if status != 200 or set(answer) != {"orders-sink", "file-source"}:
        return False
    for name, config, topic in (("orders-sink", sink, "orders"), ("file-source", source, "greetings")):
        entry = answer[name]
        if {k: v for k, v in entry["info"]["config"].items() if k != "name"} != config:
            return False
        if entry["status"]["connector"]["state"] != "RUNNING" or [t["state"] for t in entry["status"]["tasks"]] != ["RUNNING"]:
            return False
        if (_rest(url, "GET", f"/connectors/{name}/topics")[1] or {}).get(name, {}).get("topics") != [topic]:
            return False
    return _sink_offsets(url) == ORDERS and _source_offsets(url) == [position]


def mirror_world(primary: str, backup: str) -> None:
    """Wait until MM2 has replicated the world and checkpointed its groups: `kctl mirror
    status` between the two says OK."""
    from kctl.admin.client.session import AdminSession
    from kctl.admin.mirror.pair import find_pair
    from kctl.admin.mirror.status import status
    from kctl.config.model import ClientSettings

    def session(bootstrap: str) -> AdminSession:
        return AdminSession(ClientSettings(bootstrap_servers=bootstrap, properties={}, timeout=10, context=None))

    source, target = session(primary), session(backup)

    def healthy() -> bool:
        try:
            return status(find_pair(target, source)).status == "OK"
        except Exception:  # noqa: BLE001 - MM2 is still starting
            return False
    try:
        _until(healthy, "MM2 replicated the world and checkpointed its groups", timeout=120)
    finally:
        source.close()
        target.close()
