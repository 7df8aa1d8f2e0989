"""Rates between two lag samples: consumption, production, and time to catch up."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class LagRate:
    group: str
    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    lag: int | None
    # Change of lag since the previous sample.
    lag_delta: int | None
    # Records per second committed and produced since the previous sample.
    consume_rate: float | None
    produce_rate: float | None
    # lag / (consume - produce); null without rates or when falling behind.
    eta_seconds: float | None
    # Produced faster than consumed while behind: the lag will not shrink.
    falling_behind: bool
    sampled_at: int


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
