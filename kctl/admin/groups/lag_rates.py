"""Rates between two lag samples: consumption, production, and time to catch up."""

from __future__ import annotations

import time
from collections.abc import Sequence

from kctl.values import Value


class LagRate(Value):
    __slots__ = ("group", "topic", "partition", "committed", "log_end", "lag", "lag_delta", "consume_rate", "produce_rate", "eta_seconds", "falling_behind", "sampled_at")

    def __init__(
        self, *,
        group: str, topic: str, partition: int, committed: int | None, log_end: int | None, lag: int | None, lag_delta: int | None,
        consume_rate: float | None, produce_rate: float | None, eta_seconds: float | None, falling_behind: bool, sampled_at: int,
    ):
        self.group = group
        self.topic = topic
        self.partition = partition
        self.committed = committed
        self.log_end = log_end
        self.lag = lag
        # Change of lag since the previous sample.
        self.lag_delta = lag_delta
        # Records per second committed and produced since the previous sample.
        self.consume_rate = consume_rate
        self.produce_rate = produce_rate
        # lag / (consume - produce); null without rates or when falling behind.
        self.eta_seconds = eta_seconds
        # Produced faster than consumed while behind: the lag will not shrink.
        self.falling_behind = falling_behind
        self.sampled_at = sampled_at


def rates(current: Sequence, previous: Sequence | None, elapsed: float | None) -> list[LagRate]:
    before = {(p.group, p.topic, p.partition): p for g in (previous or []) for p in g.partitions}
    now_ms = int(time.time() * 1000)
    rows = []
    for g in current:
        for p in g.partitions:
            old = before.get((p.group, p.topic, p.partition))
            consume = produce = eta = delta = None
            falling = False
            if old is not None and elapsed:
                if p.committed is not None and old.committed is not None:
                    consume = (p.committed - old.committed) / elapsed
                if p.log_end is not None and old.log_end is not None:
                    produce = (p.log_end - old.log_end) / elapsed
                if p.lag is not None and old.lag is not None:
                    delta = p.lag - old.lag
                if consume is not None and produce is not None and p.lag:
                    if consume > produce:
                        eta = p.lag / (consume - produce)
                    else:
                        falling = True
            rows.append(
                LagRate(
                    group=p.group, topic=p.topic, partition=p.partition, committed=p.committed, log_end=p.log_end, lag=p.lag,
                    lag_delta=delta, consume_rate=consume, produce_rate=produce, eta_seconds=eta, falling_behind=falling, sampled_at=now_ms,
                )
            )
    return rows
