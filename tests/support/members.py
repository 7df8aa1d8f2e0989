"""Closing a group's librdkafka consumers without librdkafka's close hang."""

from __future__ import annotations

import time
from collections.abc import Sequence

from confluent_kafka import Consumer


def close_members(members: Sequence[Consumer], timeout: float = 30.0) -> None:
    """Close several members of one group. Closed one after another, the second can be
    handed the partitions the first gave up while it is itself closing, and librdkafka
    then waits forever (confluentinc/librdkafka#4527, #4883: seen here once, under load,
    on the consumer protocol). So each unsubscribes first, all are polled until none holds
    a partition (the rebalance done while they still poll), and only then closed."""
    for member in members:
        member.unsubscribe()
    end = time.monotonic() + timeout
    while any(member.assignment() for member in members) and time.monotonic() < end:
        for member in members:
            member.poll(0.1)
    for member in members:
        member.close()
