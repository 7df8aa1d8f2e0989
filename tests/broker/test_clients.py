"""Unmodified Kafka clients against the bundled broker: librdkafka (confluent-kafka, kcat),
kafka-python, aiokafka and the Java clients through Apache Kafka's own command-line tools."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.broker.test_recovery import _consume_all, _create


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("idempotent", [True, False])
def test_librdkafka_round_trip_every_codec(broker, codec, idempotent):
    topic = f"codec-{codec}-{idempotent}"
    _create(broker.bootstrap, topic, 3)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec,
                         "enable.idempotence": idempotent, "linger.ms": 5})
    sent = {(f"k{i}".encode(), b"value-%d" % i * (i % 7 + 1)) for i in range(300)}
    for key, value in sent:
        producer.produce(topic, key=key, value=value, headers=[("h", key)])
    assert producer.flush(15) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got, deadline = set(), time.monotonic() + 20
    while len(got) < len(sent) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            assert message.headers() == [("h", message.key())]
            got.add((message.key(), message.value()))
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
    consumer.close()
    assert got == sent
    assert sum(tp.offset for tp in committed) == 300


def test_timestamps_offsets_and_lookup_by_time(broker):
    _create(broker.bootstrap, "times")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    base = int(time.time() * 1000) - 60_000
    for i in range(10):
        producer.produce("times", value=b"%d" % i, timestamp=base + i * 1000)
        producer.flush(5)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "times"})
    found = consumer.offsets_for_times([TopicPartition("times", 0, base + 4500)], timeout=10)
    assert found[0].offset == 5
    low, high = consumer.get_watermark_offsets(TopicPartition("times", 0), timeout=10)
    assert (low, high) == (0, 10)
    consumer.close()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_lookup_by_time_inside_a_compressed_batch(broker, codec):
    """Ten records in one compressed batch: the offset for a time is the first *record* at
    or after it, which needs the batch decompressed (cramjam), not the batch's first offset."""
    topic = f"times-{codec}"
    _create(broker.bootstrap, topic)
    # A 60 s linger holds the records until flush(), which sends what is queued at once.
    # The topic's metadata comes first: records produced before it wait in librdkafka's
    # queue for unknown partitions and, during flush(), are moved one by one to a
    # partition whose sender no longer lingers (a CI run stored ten batches of one).
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 60000, "compression.type": codec})
    assert topic in producer.list_topics(topic, timeout=10).topics
    base = int(time.time() * 1000) - 60_000
    for i in range(10):
        producer.produce(topic, value=b"%d" % i, timestamp=base + i * 1000)
    assert producer.flush(10) == 0
    from kctl.messages import records

    (segment,) = (broker.data_dir / f"{topic}-0").glob("*.log")
    batches = [(h.base_offset, h.records_count) for _p, h in records.split_batches(segment.read_bytes())]
    assert sum(count for _b, count in batches) == 10
    first, count = max(batches, key=lambda batch: batch[1])
    assert count >= 2, batches
    # A record in the middle of the batch: the batch's first offset would be wrong.
    middle = first + count // 2
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "times"})
    found = consumer.offsets_for_times([TopicPartition(topic, 0, base + middle * 1000 - 500)], timeout=10)
    assert found[0].offset == middle
    consumer.close()


def test_oversized_batch_is_refused_and_nothing_is_stored(broker):
    _create(broker.bootstrap, "small", **{"max_message_bytes": 2000})
    errors = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.max.bytes": 100000})
    producer.produce("small", value=b"x" * 10000, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert errors and errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    low, high = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "x"}).get_watermark_offsets(
        TopicPartition("small", 0), timeout=5)
    assert high == 0


def test_kafka_python_producer_consumer_and_admin(broker):
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic as KNewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([KNewTopic("kp", 2, 1)])
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True, acks="all")
    for i in range(40):
        producer.send("kp", key=b"k%d" % i, value=b"v%d" % i)
    producer.flush(10)
    consumer = KafkaConsumer("kp", bootstrap_servers=broker.bootstrap, group_id="kp-group",
                             auto_offset_reset="earliest", consumer_timeout_ms=5000)
    values = {m.value for m in consumer}
    consumer.commit()
    consumer.close()
    assert values == {b"v%d" % i for i in range(40)}
    assert sum(o.offset for o in admin.list_group_offsets("kp-group")["kp-group"].values()) == 40
    admin.close()


def test_aiokafka_round_trip(broker):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    _create(broker.bootstrap, "aio")

    async def run():
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True)
        await producer.start()
        for i in range(20):
            await producer.send_and_wait("aio", b"a%d" % i)
        await producer.stop()
        consumer = AIOKafkaConsumer("aio", bootstrap_servers=broker.bootstrap, group_id="aio-group",
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        values = []
        try:
            while len(values) < 20:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 15)
                values += [m.value for messages in batch.values() for m in messages]
            await consumer.commit()
        finally:
            await consumer.stop()
        return values

    assert asyncio.run(run()) == [b"a%d" % i for i in range(20)]


def test_kcat_produce_and_consume(broker):
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        if os.environ.get("KCTL_REQUIRE_BROKERS"):
            pytest.fail("kcat is not installed (Debian package kcat)")
        pytest.skip("kcat is not installed (Debian package kcat)")
    _create(broker.bootstrap, "kcat")
    lines = "\n".join(f"key{i}:value{i}" for i in range(25)) + "\n"
    subprocess.run([kcat, "-b", broker.bootstrap, "-P", "-t", "kcat", "-K:", "-z", "lz4"], input=lines,
                   text=True, check=True, timeout=30)
    out = subprocess.run([kcat, "-b", broker.bootstrap, "-C", "-t", "kcat", "-e", "-f", "%k=%s@%o\n"],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    assert out.splitlines() == [f"key{i}=value{i}@{i}" for i in range(25)]
    metadata = subprocess.run([kcat, "-b", broker.bootstrap, "-L", "-t", "kcat"], capture_output=True,
                              text=True, check=True, timeout=30).stdout
    assert "1 brokers:" in metadata and 'topic "kcat" with 1 partitions' in metadata


@pytest.fixture(scope="module")
def java_tools(tmp_path_factory):
    from tests.backends.jars import JarResolutionError
    from tests.backends.kafka import TEST_TOOL_JVM_OPTIONS, KafkaCluster

    tools = KafkaCluster(nodes=1, workdir=tmp_path_factory.mktemp("java-tools"), tool_jvm_options=TEST_TOOL_JVM_OPTIONS)
    try:
        _ = tools.classpath
    except (JarResolutionError, OSError) as exc:
        if os.environ.get("KCTL_REQUIRE_BROKERS"):
            pytest.fail(f"Kafka's jars are needed for the Java clients: {exc}")
        pytest.skip(f"Kafka's jars are needed for the Java clients: {exc}")
    return tools


def test_java_clients_through_kafkas_own_tools(broker, java_tools):
    """kafka-topics, kafka-console-producer/consumer and kafka-consumer-groups (Java 4.x
    clients: idempotent producer, classic consumer group, admin) against the bundled broker,
    across a broker restart."""

    def tool(main_class, *args, stdin=None):
        proc = subprocess.run(java_tools.tool_command(main_class, *args), input=stdin, capture_output=True,
                              text=True, timeout=90)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    bootstrap = ["--bootstrap-server", broker.bootstrap]
    tool("org.apache.kafka.tools.TopicCommand", *bootstrap, "--create", "--topic", "java", "--partitions", "2")
    described = tool("org.apache.kafka.tools.TopicCommand", *bootstrap, "--describe", "--topic", "java")
    assert "PartitionCount: 2" in described and "Leader: 1" in described
    tool("org.apache.kafka.tools.ConsoleProducer", *bootstrap, "--topic", "java",
         stdin="".join(f"j{i}\n" for i in range(30)))
    consumed = tool("org.apache.kafka.tools.consumer.ConsoleConsumer", *bootstrap, "--topic", "java",
                    "--group", "java-group", "--from-beginning", "--max-messages", "30")
    assert sorted(consumed.split()) == sorted(f"j{i}" for i in range(30))
    broker.restart()
    groups = tool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", *bootstrap, "--describe",
                  "--group", "java-group")
    rows = [line.split() for line in groups.splitlines() if line.startswith("java-group")]
    assert sum(int(r[3]) for r in rows) == 30 and all(r[5] == "0" for r in rows), groups
    assert _consume_all(broker.bootstrap, "java", 30, timeout=15)


def test_java_kip848_consumer(broker, java_tools, tmp_path):
    """The Java consumer with group.protocol=consumer (KIP-848) reads through the broker's
    consumer group coordinator. Share consumers: test_share_groups.py; Kafka Streams with
    group.protocol=streams: test_streams_groups.py."""
    _create(broker.bootstrap, "kip848")
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(5):
        producer.produce("kip848", value=b"java-%d" % i)
    assert producer.flush(15) == 0
    proc = subprocess.run(java_tools.tool_command(
        "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", broker.bootstrap, "--topic", "kip848",
        "--group", "java-kip848", "--consumer-property", "group.protocol=consumer", "--from-beginning",
        "--max-messages", "5", "--timeout-ms", "60000"),
        capture_output=True, text=True, timeout=120)
    # (stdout also carries Kafka's deprecation notice for --consumer-property)
    assert [line for line in proc.stdout.split() if line.startswith("java-")] == [f"java-{i}" for i in range(5)], proc.stderr

