"""Plain client calls the broker's tests share: create a topic, produce values, read a
topic back through a group."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def _create(bootstrap: str, topic: str, partitions: int = 1, **configs) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, config={k.replace("_", "."): str(v) for k, v in configs.items()})])[topic].result(10)


def _produce(bootstrap: str, topic: str, values, **extra) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **extra})
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(15) == 0


def _consume_all(bootstrap: str, topic: str, expected: int, group: str | None = None, timeout: float = 20):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group or f"read-{time.time_ns()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    values = []
    deadline = time.monotonic() + timeout
    while len(values) < expected and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            values.append(message.value())
    if group:
        consumer.commit(asynchronous=False)
    consumer.close()
    return values
