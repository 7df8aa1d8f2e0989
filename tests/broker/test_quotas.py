"""Client quotas on the bundled broker: producer_byte_rate and consumer_byte_rate slow a
client down with throttle_time_ms (which librdkafka reports through throttle_cb) and a
muted connection; other clients are not slowed; nothing is lost or read twice."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer

from kctl.broker.quotas import WINDOW_MS, WINDOWS, quota_for
from tests.broker.clients import _create

pytestmark = pytest.mark.integration

RECORD = b"q" * 1024
# Kafka measures a rate over (WINDOWS - 1) windows at least: 1,200 KiB sent at once is
# 120 KiB/s, 20% over a 100 KiB/s quota, which asks for ~2 s of throttle.
QUOTA = 100 * 1024
RECORDS = 1200


def _set(kctl, bootstrap, *args):
    result = kctl("-b", bootstrap, "quota", "set", *args)
    assert result.exit_code == 0, result.stderr


def _producer(bootstrap, client_id, throttles):
    return Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
                     "throttle_cb": lambda event: throttles.append(event.throttle_time)})


def _produce(producer, topic, records=RECORDS) -> float:
    started = time.monotonic()
    for _ in range(records):
        producer.produce(topic, RECORD)
        producer.poll(0)
    assert producer.flush(30) == 0
    elapsed = time.monotonic() - started
    producer.poll(0.1)  # serve the throttle callbacks still queued
    return elapsed


def test_a_producer_over_its_quota_is_throttled_and_others_are_not(broker, kctl):
    _create(broker.bootstrap, "quota-produce")
    _set(kctl, broker.bootstrap, "--client-id", "slow-producer", "--set", f"producer_byte_rate={QUOTA}")
    throttles: list[float] = []
    slow = _producer(broker.bootstrap, "slow-producer", throttles)
    _produce(slow, "quota-produce")
    assert throttles and max(throttles) >= 1.0, throttles  # seconds, as librdkafka reports them
    # The throttled answer came back at once; the connection then rests: the next record waits.
    assert _produce(slow, "quota-produce", 1) >= throttles[-1] * 0.5
    fast: list[float] = []
    assert _produce(_producer(broker.bootstrap, "fast-producer", fast), "quota-produce") < 2
    assert not fast


def test_a_consumer_over_its_quota_gets_every_record_once_slower(broker, kctl):
    """Throttled until the quota is removed (at 100 KiB/s the 1,200 KiB would take ~12 s:
    a rate is measured over 10 s at least), then read on at full speed."""
    _create(broker.bootstrap, "quota-fetch")
    _produce(_producer(broker.bootstrap, "writer", []), "quota-fetch")
    _set(kctl, broker.bootstrap, "--client-id", "slow-consumer", "--set", f"consumer_byte_rate={QUOTA}")
    throttles: list[float] = []
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "client.id": "slow-consumer", "group.id": "quota-fetch",
                         "auto.offset.reset": "earliest", "max.partition.fetch.bytes": 65536,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    consumer.subscribe(["quota-fetch"])
    offsets, deadline, removed = [], time.monotonic() + 40, False
    while len(offsets) < RECORDS and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            offsets.append(message.offset())
        if throttles and not removed:
            assert len(offsets) < RECORDS  # throttled before the end
            assert kctl("-b", broker.bootstrap, "quota", "delete", "--client-id", "slow-consumer", "--yes").exit_code == 0
            removed = True
    consumer.close()
    assert throttles and max(throttles) >= 0.5, throttles
    assert offsets == list(range(RECORDS))


def test_the_most_specific_quota_applies():
    quotas = {
        (("client-id", None),): {"producer_byte_rate": 1.0},
        (("client-id", "app"),): {"producer_byte_rate": 2.0},
        (("user", None),): {"producer_byte_rate": 3.0},
        (("client-id", None), ("user", "alice")): {"producer_byte_rate": 4.0},
        (("client-id", "app"), ("user", "alice")): {"producer_byte_rate": 5.0},
    }
    assert quota_for(quotas, "producer_byte_rate", "alice", "app") == 5.0
    assert quota_for(quotas, "producer_byte_rate", "alice", "other") == 4.0
    assert quota_for(quotas, "producer_byte_rate", "bob", "app") == 3.0  # a user quota before a client one
    assert quota_for(quotas, "producer_byte_rate", None, "app") == 2.0
    assert quota_for(quotas, "producer_byte_rate", None, "other") == 1.0
    assert quota_for(quotas, "consumer_byte_rate", "alice", "app") is None
    assert WINDOWS * WINDOW_MS == 11_000  # Kafka's defaults: 11 windows of 1 s
