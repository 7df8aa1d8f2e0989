"""kctl's share-group member (kctl.records.share) against the bundled broker and Kafka
4.x: two members split a topic's records, released ones come back with delivery count
2, rejected ones never do. (Work in progress: the library only; `record consume
--share-group` is next.)"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from kctl.admin.client.session import AdminSession
from kctl.config.model import ClientSettings
from kctl.records.share import ACCEPT, REJECT, RELEASE, ShareConsumer

pytestmark = pytest.mark.integration


def _drain(consumer: ShareConsumer, wanted: int, decide, timeout: float = 30) -> tuple[list[tuple[int, int, int]], set[tuple[int, int]]]:
    """(partition, offset, delivery count) of the first `wanted` records, each
    acknowledged as decide(record) says, and the records acquired beyond them (released
    on close)."""
    got: list[tuple[int, int, int]] = []
    beyond: set[tuple[int, int]] = set()
    deadline = time.monotonic() + timeout
    while len(got) < wanted and time.monotonic() < deadline:
        for record in consumer.poll(0.5):
            if len(got) < wanted:
                got.append((record.partition(), record.offset(), record.delivery_count))
                consumer.acknowledge(record, decide(record))
            else:
                beyond.add((record.partition(), record.offset()))
    return got, beyond


def test_two_members_split_the_records_and_released_ones_come_back(kctl, cluster, unique_name):
    if cluster.kafka is not None and cluster.kafka.version.startswith("3."):
        pytest.skip("share groups are Kafka 4.x")
    topic, group = unique_name("queue"), unique_name("workers")
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "3").exit_code == 0
    assert kctl("-b", cluster.bootstrap, "config", "alter", "group", group, "--set", "share.auto.offset.reset=earliest").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(60):
        producer.produce(topic, value=b"%d" % i, partition=i % 3)
    assert producer.flush(30) == 0
    session = AdminSession(ClientSettings(bootstrap_servers=cluster.bootstrap, properties={}, timeout=10, context=None))

    # The first member takes 40: offset 0 of each partition released, offset 1 rejected.
    def first_decision(record):
        return {0: RELEASE, 1: REJECT}.get(record.offset(), ACCEPT)

    with ShareConsumer(session, group, [topic]) as first:
        taken, beyond = _drain(first, 40, first_decision)
    assert len(taken) == 40 and all(count == 1 for *_, count in taken)
    released = {(p, o) for p, o, _ in taken if o == 0}
    rejected = {(p, o) for p, o, _ in taken if o == 1}
    accepted = {(p, o) for p, o, _ in taken} - released - rejected
    left = {(p, o) for p in range(3) for o in range(20)} - accepted - rejected
    with ShareConsumer(session, group, [topic]) as second:
        rest, _ = _drain(second, len(left), lambda record: ACCEPT)
    assert {(p, o) for p, o, _ in rest} == left  # nothing twice, nothing missing, the rejected never again
    # Released, or acquired beyond the 40 and released on leaving: delivered once before.
    assert {(p, o): c for p, o, c in rest} == {(p, o): 2 if (p, o) in released | beyond else 1 for p, o, _ in rest}
