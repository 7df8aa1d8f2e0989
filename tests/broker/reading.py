"""Reading a whole partition as a consumer with a given isolation level sees it."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition


def read_partition(bootstrap: str, topic: str, isolation: str = "read_uncommitted", partition: int = 0,
                   timeout: float = 15) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of every record, up to where the consumer stops: the log end, or the
    last stable offset for read_committed."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{time.time_ns()}",
                         "isolation.level": isolation, "enable.partition.eof": True, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0)])
    out, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise KafkaException(message.error())
            out.append((message.key(), message.value()))
        raise AssertionError(f"no end of partition within {timeout}s; read {out}")
    finally:
        consumer.close()
