"""Transactions as applications use them, with the same assertions on the bundled broker
and on Apache Kafka: commit and abort seen by read_committed and read_uncommitted
consumers, consume-transform-produce with send_offsets_to_transaction, fencing of a second
producer instance, the transaction timeout. Then what only the bundled broker can be put
through here: kill -9 mid-transaction, and a crash between the two phases of a commit."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker.reading import read_partition
from tests.support.eventually import eventually

# Compared with Apache Kafka on its single node (tests/backends/plugin.py).
pytestmark = [pytest.mark.integration, pytest.mark.single_node]


@pytest.fixture
def single_node(cluster):
    if cluster.nodes != 1:
        pytest.skip("client-level transaction semantics are compared on single nodes")
    return cluster


def create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(15)


def txn_producer(bootstrap: str, transactional_id: str, **extra) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 60000, "linger.ms": 5, **extra})
    producer.init_transactions(30)
    return producer


def read(bootstrap: str, topic: str, isolation: str) -> list[str]:
    """Every value of partition 0 a consumer with this isolation level sees."""
    return [value.decode() for _key, value in read_partition(bootstrap, topic, isolation)]


def watermarks(bootstrap: str, topic: str, isolation: str) -> int:
    """The end a consumer with this isolation level sees: the log end, or the LSO."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "offsets", "isolation.level": isolation})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)[1]
    finally:
        consumer.close()


def test_commit_and_abort_as_each_isolation_level_sees_them(single_node, unique_name):
    b, topic = single_node.bootstrap, unique_name("txn")
    create(b, topic)
    producer = txn_producer(b, unique_name("tx"))
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=f"c{i}", partition=0)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, value=f"a{i}", partition=0)
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, value="c3", partition=0)
    producer.commit_transaction(30)

    assert read(b, topic, "read_committed") == ["c0", "c1", "c2", "c3"]
    assert read(b, topic, "read_uncommitted") == ["c0", "c1", "c2", "a0", "a1", "c3"]
    # Three markers among the records: 6 records + 3 markers.
    assert watermarks(b, topic, "read_committed") == watermarks(b, topic, "read_uncommitted") == 9

    # An open transaction holds read_committed consumers at its first offset.
    producer.begin_transaction()
    producer.produce(topic, value="o0", partition=0)
    producer.flush(30)
    assert (watermarks(b, topic, "read_committed"), watermarks(b, topic, "read_uncommitted")) == (9, 10)
    assert read(b, topic, "read_committed") == ["c0", "c1", "c2", "c3"]
    assert read(b, topic, "read_uncommitted")[-1] == "o0"
    producer.commit_transaction(30)
    assert read(b, topic, "read_committed")[-1] == "o0"


def test_consume_transform_produce_commits_offsets_with_the_records(single_node, unique_name):
    b, source, sink, group = single_node.bootstrap, unique_name("in"), unique_name("out"), unique_name("g")
    create(b, source)
    create(b, sink)
    plain = Producer({"bootstrap.servers": b})
    for i in range(10):
        plain.produce(source, value=f"v{i}", partition=0)
    assert plain.flush(15) == 0

    consumer = Consumer({"bootstrap.servers": b, "group.id": group, "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([source])
    producer = txn_producer(b, unique_name("tx"))

    def transform(expected: int, commit: bool) -> None:
        taken, deadline = [], time.monotonic() + 30
        while len(taken) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                taken.append(message)
        assert len(taken) == expected
        producer.begin_transaction()
        for message in taken:
            producer.produce(sink, value=message.value().upper(), partition=0)
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.flush(30)  # sent, then aborted (abort_transaction drops unsent records)
            producer.abort_transaction(30)

    def committed() -> int:
        return consumer.committed([TopicPartition(source, 0)], timeout=10)[0].offset

    transform(10, commit=True)
    assert committed() == 10
    for i in range(10, 15):
        plain.produce(source, value=f"v{i}", partition=0)
    assert plain.flush(15) == 0
    transform(5, commit=False)
    assert committed() == 10  # the aborted transaction's offsets were never committed
    consumer.close()
    assert read(b, sink, "read_committed") == [f"V{i}" for i in range(10)]
    assert len(read(b, sink, "read_uncommitted")) == 15


def test_a_second_instance_fences_the_first(single_node, unique_name):
    b, topic, transactional_id = single_node.bootstrap, unique_name("fence"), unique_name("tx")
    create(b, topic)
    first = txn_producer(b, transactional_id)
    first.begin_transaction()
    first.produce(topic, value="zombie", partition=0)
    first.flush(30)

    second = txn_producer(b, transactional_id)  # aborts the first instance's transaction
    second.begin_transaction()
    second.produce(topic, value="live", partition=0)
    second.commit_transaction(30)

    with pytest.raises(KafkaException) as raised:
        first.commit_transaction(30)
    error = raised.value.args[0]
    assert error.fatal() or error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH), error
    assert read(b, topic, "read_committed") == ["live"]
    assert read(b, topic, "read_uncommitted") == ["zombie", "live"]


def test_a_transaction_past_its_timeout_is_aborted(single_node, unique_name):
    b, topic = single_node.bootstrap, unique_name("timeout")
    create(b, topic)
    producer = txn_producer(b, unique_name("tx"), **{"transaction.timeout.ms": 2000})
    producer.begin_transaction()
    producer.produce(topic, value="late", partition=0)
    producer.flush(30)
    assert watermarks(b, topic, "read_committed") == 0

    # The coordinator aborts it (an ABORT marker moves the last stable offset past it).
    def aborted():
        assert watermarks(b, topic, "read_committed") == 2

    eventually(aborted, timeout=20)
    assert read(b, topic, "read_committed") == []
    with pytest.raises(KafkaException):
        producer.commit_transaction(30)


# -- the bundled broker's durability --------------------------------------------------------------


def test_kill_9_mid_transaction_then_restart(broker, unique_name):
    """The broker is killed with a transaction open and one aborted: after a restart the
    open one commits (its producer never noticed), the aborted one stays invisible."""
    b = broker.bootstrap
    create(b, "kill9")
    producer = txn_producer(b, "kill9-tx", **{"message.timeout.ms": 60000})
    producer.begin_transaction()
    producer.produce("kill9", value="gone", partition=0)
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce("kill9", value=f"kept{i}", partition=0)
    producer.flush(30)

    broker.kill()
    broker.restart()
    producer.commit_transaction(60)
    assert read(b, "kill9", "read_committed") == ["kept0", "kept1", "kept2"]
    assert read(b, "kill9", "read_uncommitted") == ["gone", "kept0", "kept1", "kept2"]


def test_a_commit_cut_between_its_phases_is_completed_on_start(broker):
    """The coordinator wrote PrepareCommit, then the broker died before the markers: on
    start the commit is finished, as a new Kafka coordinator finishes it."""
    b = broker.bootstrap
    create(b, "prepared")
    producer = txn_producer(b, "prepared-tx")
    producer.begin_transaction()
    producer.produce("prepared", value="p0", partition=0)
    producer.flush(30)
    assert read(b, "prepared", "read_committed") == []

    broker.kill()
    journal = broker.data_dir / "transaction-state.jsonl"
    last = json.loads(journal.read_text().splitlines()[-1])
    assert (last["id"], last["state"]) == ("prepared-tx", "Ongoing")
    journal.write_text(journal.read_text() + json.dumps({**last, "state": "PrepareCommit"}) + "\n")
    broker.restart()

    assert read(b, "prepared", "read_committed") == ["p0"]
    assert json.loads(journal.read_text().splitlines()[-1])["state"] == "CompleteCommit"


def test_kafka_python_and_aiokafka_transactional_producers(single_node, unique_name):
    """The pure-Python clients' transactional producers (both implement KIP-98)."""
    import asyncio

    from aiokafka import AIOKafkaProducer
    from kafka import KafkaProducer

    b, topic = single_node.bootstrap, unique_name("pytxn")
    create(b, topic)
    producer = KafkaProducer(bootstrap_servers=b, transactional_id=unique_name("kp"))
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, b"kp-committed", partition=0)
    producer.commit_transaction()
    producer.begin_transaction()
    producer.send(topic, b"kp-aborted", partition=0)
    producer.flush()
    producer.abort_transaction()
    producer.close()

    async def aio() -> None:
        aio_producer = AIOKafkaProducer(bootstrap_servers=b, transactional_id=unique_name("aio"))
        await aio_producer.start()
        try:
            async with aio_producer.transaction():
                await aio_producer.send_and_wait(topic, b"aio-committed", partition=0)
            await aio_producer.begin_transaction()
            await aio_producer.send_and_wait(topic, b"aio-aborted", partition=0)
            await aio_producer.abort_transaction()
        finally:
            await aio_producer.stop()

    asyncio.run(aio())
    assert read(b, topic, "read_committed") == ["kp-committed", "aio-committed"]
    assert read(b, topic, "read_uncommitted") == ["kp-committed", "kp-aborted", "aio-committed", "aio-aborted"]
