"""Retrying assertions about cluster state that propagates asynchronously.

In a multi-broker cluster each broker applies the metadata log on its own, and a client
asks whichever broker it likes: right after a change, one answer may still be old.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def within(predicate: Callable[[], T], timeout: float, interval: float = 0.2) -> T | None:
    """The first truthy value of `predicate`, asked every `interval` seconds; None when
    `timeout` passes first. An exception `predicate` raises ends the wait (a process that
    died, say). The suite's one way to wait for something to happen: every other wait in
    tests/ goes through here, and a fixed sleep is left only where time itself must pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value or None
        time.sleep(interval)


def eventually(check: Callable[[], T], timeout: float = 15.0, interval: float = 0.2) -> T:
    """Call `check` until it stops raising AssertionError; its last error if time runs out."""
    return _again_while(check, lambda exc: isinstance(exc, AssertionError), timeout, interval)


def until(predicate: Callable[[], T], timeout: float = 60.0, interval: float = 0.5) -> T:
    """The first truthy value of `predicate`, asked until `timeout`."""

    def check() -> T:
        value = predicate()
        assert value, "condition not reached in time"
        return value

    return eventually(check, timeout, interval)


def retried(action: Callable[[], T], retriable: Callable[[Exception], bool], timeout: float = 30.0,
            interval: float = 0.3) -> T:
    """What `action` returns, called again while it raises an exception `retriable` accepts
    (a cluster just started still electing coordinators, say); the last such exception
    when `timeout` passes."""
    return _again_while(action, retriable, timeout, interval)


def _again_while(call: Callable[[], T], failed: Callable[[Exception], bool], timeout: float, interval: float) -> T:
    """What `call` returns, called again while it raises an exception `failed` accepts;
    the last of them when `timeout` passes (any other is raised at once)."""
    failure: Exception | None = None

    def attempt() -> tuple[T] | None:
        nonlocal failure
        try:
            return (call(),)  # a tuple: true even when call returns None
        except Exception as exc:
            if not failed(exc):
                raise
            failure = exc
            return None

    result = within(attempt, timeout, interval)
    if result is None:
        assert failure is not None
        raise failure
    return result[0]


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
