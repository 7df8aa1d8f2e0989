"""Lag over time, one function per way of looking at it: one sample (with time lag from
record timestamps or from the lag history), samples with rates every interval
(`group lag --watch`), and waiting until a group has caught up (`--until-caught-up`, a
deploy gate). The exporter's sampler (`--serve`) is kctl.lag_exporter. Callers render;
nothing here prints."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence

from kctl.admin.client.session import AdminSession
from kctl.admin.groups.lag import group_lag, with_history
from kctl.admin.groups.lag_rates import LagRate, rates
from kctl.admin.groups.models import GroupLag, PartitionLag
from kctl.errors import KctlError, Partial, UsageError
from kctl.values import Value

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from pathlib import Path


def sample(session: AdminSession, groups: Sequence[str] | None, *, topics: Sequence[str] = (), isolation: str = "read_uncommitted",
           time_lag: str = "none", history: Path | None = None) -> Partial[list[GroupLag]]:
    """Lag of `groups` (None: every group) with lag in seconds by `time_lag`: "record"
    reads the timestamp of each lagging partition's next record, "interp" interpolates
    from the lag history in `history`; with `history` this sample is added to it. Raises
    the first error when no group could be measured; otherwise returns the errors."""
    if time_lag == "interp" and history is None:
        raise UsageError(action="interpolate time lag", cause="no lag history file given")
    found, errors = group_lag(session, groups, topics=topics, isolation=isolation, time_lag="record" if time_lag == "record" else "none")
    if errors and not found:
        raise next(iter(errors.values()))
    if history is not None:
        found, _histories = with_history(found, history, interpolate=time_lag == "interp")
    return Partial(found, errors)


def behind(found: Sequence[GroupLag], max_lag: int, max_seconds: float | None = None) -> list[PartitionLag]:
    """Partitions whose lag is above `max_lag` (or, with `max_seconds`, further behind)."""
    return [p for g in found for p in g.partitions
            if (p.lag or 0) > max_lag or (max_seconds is not None and (p.lag_seconds or 0) > max_seconds)]


class CatchUp(Value):
    __slots__ = ("found", "errors", "behind", "first_lag", "seconds")

    def __init__(self, *, found: list[GroupLag], errors: dict[str, KctlError], behind: list[PartitionLag], first_lag: int, seconds: float):
        self.found = found
        self.errors = errors
        self.behind = behind
        self.first_lag = first_lag
        self.seconds = seconds


def until_caught_up(session: AdminSession, groups: Sequence[str] | None, *, max_lag: int, max_seconds: float | None = None,
                    interval: float, limit: float | None = None, topics: Sequence[str] = (), isolation: str = "read_uncommitted",
                    time_lag: str = "none", history: Path | None = None,
                    progress: Callable[[CatchUp], None] = lambda state: None, clock: Callable[[], float] = time.monotonic,
                    sleep: Callable[[float], None] = time.sleep) -> CatchUp:
    """Sample every `interval` seconds until no partition is behind, or until the next
    sample would end after `limit` seconds; `progress` is told of every sample."""
    started = clock()
    first_lag = None
    while True:
        found, errors = sample(session, groups, topics=topics, isolation=isolation, time_lag="record" if max_seconds is not None else time_lag,
                               history=history)
        late = behind(found, max_lag, max_seconds)
        total = sum(g.lag_sum for g in found)
        first_lag = total if first_lag is None else max(first_lag, total)
        state = CatchUp(found=found, errors=errors, behind=late, first_lag=first_lag, seconds=clock() - started)
        progress(state)
        if not late or (limit is not None and state.seconds + interval > limit):
            return state
        sleep(interval)


def watch(session: AdminSession, groups: Sequence[str] | None, *, interval: float, limit: float | None = None, topics: Sequence[str] = (),
          isolation: str = "read_uncommitted", clock: Callable[[], float] = time.monotonic,
          sleep: Callable[[float], None] = time.sleep) -> Iterator[Partial[list[LagRate]]]:
    """Every `interval` seconds, lag with the rates since the previous sample (consumed
    and produced per second, time to catch up), and the groups that failed; ends when
    the next sample would come after `limit` seconds (never, without one)."""
    started = clock()
    previous, previous_at = None, None
    while True:
        found, errors = group_lag(session, groups, topics=topics, isolation=isolation)
        now = clock()
        yield Partial(rates(found, previous, now - previous_at if previous_at is not None else None), errors)
        previous, previous_at = found, now
        if limit is not None and now - started + interval > limit:
            return
        sleep(interval)
