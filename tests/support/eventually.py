"""Retrying assertions about cluster state that propagates asynchronously.

In a multi-broker cluster each broker applies the metadata log on its own, and a client
asks whichever broker it likes: right after a change, one answer may still be old.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(check: Callable[[], T], timeout: float = 15.0, interval: float = 0.2) -> T:
    """Call `check` until it stops raising AssertionError; its last error if time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(interval)


def until(predicate: Callable[[], T], timeout: float = 60.0, interval: float = 0.5) -> T:
    """The first truthy value of `predicate`, asked until `timeout`."""

    def check() -> T:
        value = predicate()
        assert value, "condition not reached in time"
        return value

    return eventually(check, timeout, interval)


def commit_offsets(admin, group: str, partitions: list) -> None:
    """Commit `partitions` (TopicPartitions with offsets) for `group` through AdminClient
    `admin`, again until every partition is accepted: alter_consumer_group_offsets
    reports a partition's refusal in the result instead of raising, and the coordinator
    of a topic created a moment ago may not know it yet (UNKNOWN_TOPIC_OR_PART, seen on
    three brokers). Without the retry the group silently does not exist."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    def accepted():
        result = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, partitions)])[group].result(30)
        refused = [(tp.topic, tp.partition, tp.error) for tp in result.topic_partitions if tp.error is not None]
        assert not refused, refused

    eventually(accepted)
