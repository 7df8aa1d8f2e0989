"""The consumer group protocol (KIP-848, group.protocol=consumer) with librdkafka's consumer,
the same assertions on the bundled broker and on Apache Kafka: members joining and leaving
while records flow (nothing lost, duplicates only within the auto-commit window), a static
member coming back to its partitions, a regex subscription picking up a new topic, and an
empty group moving between the classic and the consumer protocol with its offsets."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.eventually import eventually

# Compared with Apache Kafka on its single node (tests/backends/plugin.py).
pytestmark = [pytest.mark.integration, pytest.mark.single_node]


@pytest.fixture
def single_node(cluster):
    if cluster.nodes != 1:
        pytest.skip("the consumer group protocol is compared on single nodes")
    return cluster


def create(bootstrap: str, *topics: str, partitions: int = 6) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, partitions, 1) for t in topics]).values():
        future.result(15)


class Member(threading.Thread):
    """A KIP-848 consumer polling in its own thread, recording what it reads."""

    def __init__(self, bootstrap: str, group: str, subscription: list[str], name: str, **extra):
        super().__init__(daemon=True)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                                  "client.id": name, "auto.offset.reset": "earliest", "auto.commit.interval.ms": 100,
                                  **extra})
        self.consumer.subscribe(subscription)
        self.read: list[tuple[str, int, int]] = []
        self.errors = []
        self.stopping = threading.Event()
        self.owned: set[tuple[str, int]] = set()

    def run(self):
        while not self.stopping.is_set():
            message = self.consumer.poll(0.1)
            self.owned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
            if message is None:
                continue
            if message.error():
                self.errors.append(message.error())
            else:
                self.read.append((message.topic(), message.partition(), message.offset()))
        self.consumer.close()

    def stop(self):
        self.stopping.set()
        self.join(30)


def wait_for(condition, timeout: float = 60) -> None:
    def check():
        assert condition()

    eventually(check, timeout=timeout, interval=0.2)


def settled(members: list[Member], partitions: set[tuple[str, int]]) -> None:
    """Every partition owned by exactly one member, as evenly as possible."""
    owned = [m.owned for m in members]
    assert sorted(tp for o in owned for tp in o) == sorted(partitions), owned
    sizes = sorted(len(o) for o in owned)
    assert sizes[-1] - sizes[0] <= 1, owned


def test_members_join_and_leave_while_records_flow(single_node, unique_name):
    b, topic, group = single_node.bootstrap, unique_name("flow"), unique_name("g")
    create(b, topic)
    partitions = {(topic, p) for p in range(6)}
    produced, stop_producing = [], threading.Event()

    def produce():
        producer = Producer({"bootstrap.servers": b, "linger.ms": 5})
        i = 0
        while not stop_producing.is_set():
            for _ in range(10):
                producer.produce(topic, value=b"%d" % i, partition=i % 6, on_delivery=lambda e, m: produced.append((m.partition(), m.offset())) if e is None else None)
                i += 1
            producer.poll(0)
            stop_producing.wait(0.05)  # ~200 records a second
        producer.flush(30)

    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    first, second = Member(b, group, [topic], "m1"), Member(b, group, [topic], "m2")
    first.start()
    second.start()
    try:
        eventually(lambda: settled([first, second], partitions), timeout=60, interval=0.2)
        third = Member(b, group, [topic], "m3")
        third.start()
        eventually(lambda: settled([first, second, third], partitions), timeout=60, interval=0.2)
        first.stop()  # leaves the group: its partitions move to the others
        eventually(lambda: settled([second, third], partitions), timeout=60, interval=0.2)
        # Records go on flowing to the two that stay before the producer stops.
        counts = len(second.read), len(third.read)
        wait_for(lambda: len(second.read) > counts[0] + 20 and len(third.read) > counts[1] + 20, timeout=30)
        stop_producing.set()
        writer.join(30)
        total = len(produced)
        wait_for(lambda: len({r[1:] for m in (first, second, third) for r in m.read}) >= total, timeout=30)
    finally:
        stop_producing.set()
        for member in (first, second, third):
            if member.is_alive():
                member.stop()
    read = [r[1:] for m in (first, second, third) for r in m.read]
    assert set(read) == set(produced)  # nothing lost
    # At-least-once: a partition that moves may be read again from its last commit, at most
    # one auto-commit interval (100 ms) of records; here that is at most ~40 per move.
    assert len(read) - len(set(read)) <= 200, len(read) - len(set(read))
    assert not [e for m in (first, second, third) for e in m.errors]


def test_a_static_member_comes_back_to_its_partitions(single_node, unique_name):
    b, topic, group = single_node.bootstrap, unique_name("static"), unique_name("g")
    create(b, topic)
    partitions = {(topic, p) for p in range(6)}
    a = Member(b, group, [topic], "a", **{"group.instance.id": "instance-a"})
    other = Member(b, group, [topic], "b", **{"group.instance.id": "instance-b"})
    a.start()
    other.start()
    try:
        eventually(lambda: settled([a, other], partitions), timeout=60, interval=0.2)
        before, others = set(a.owned), set(other.owned)
        a.stop()  # a static member leaves with epoch -2: its partitions wait for it
        again = Member(b, group, [topic], "a-again", **{"group.instance.id": "instance-a"})
        again.start()
        wait_for(lambda: again.owned == before, timeout=30)
        assert other.owned == others
        again.stop()
    finally:
        other.stop()


def test_a_regex_subscription_picks_up_a_new_topic(single_node, unique_name):
    b, prefix, group = single_node.bootstrap, unique_name("rx"), unique_name("g")
    create(b, f"{prefix}-one", partitions=2)
    member = Member(b, group, [f"^{prefix}-.*"], "rx")
    member.start()
    try:
        wait_for(lambda: member.owned == {(f"{prefix}-one", 0), (f"{prefix}-one", 1)})
        create(b, f"{prefix}-two", partitions=2)
        expected = {(f"{prefix}-{n}", p) for n in ("one", "two") for p in (0, 1)}
        wait_for(lambda: member.owned == expected)
    finally:
        member.stop()


def test_an_empty_group_moves_between_protocols_with_its_offsets(single_node, unique_name):
    b, topic, group = single_node.bootstrap, unique_name("convert"), unique_name("g")
    create(b, topic, partitions=1)
    producer = Producer({"bootstrap.servers": b})

    def produce(values):
        for value in values:
            producer.produce(topic, value=value, partition=0)
        assert producer.flush(15) == 0

    def consume(protocol: str, count: int) -> list[bytes]:
        consumer = Consumer({"bootstrap.servers": b, "group.id": group, "group.protocol": protocol,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe([topic])
        values, deadline = [], time.monotonic() + 60
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                values.append(message.value())
        consumer.commit(asynchronous=False)
        consumer.close()
        return values

    produce([b"c1", b"c2"])
    assert consume("classic", 2) == [b"c1", b"c2"]
    produce([b"k1", b"k2"])
    assert consume("consumer", 2) == [b"k1", b"k2"]  # the classic group's offsets carried over
    produce([b"c3"])
    assert consume("classic", 1) == [b"c3"]  # and back
