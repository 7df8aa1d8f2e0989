"""Trends over `kctl top`'s window: a fixed number of slices per series, drawn as sparklines.

A series keeps the last value of each of BUCKETS equal slices of the window in one
array('q') (a gap is -1), not a list of samples: 100,000 group partitions with a
15-minute window at a 2-second interval would otherwise hold 45 million samples. Memory
per series is ~300 bytes whatever the window and the interval.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

BUCKETS = 20
GAP = -1
BARS = "▁▂▃▄▅▆▇█"


class Trend:
    """One series: value per bucket, the newest bucket written last."""

    __slots__ = ("values", "last")

    def __init__(self) -> None:
        self.values = array("q", [GAP]) * BUCKETS
        self.last: int | None = None

    def add(self, bucket: int, value: int | None) -> None:
        """Record `value` (None: unknown) as bucket `bucket`'s; buckets skipped since the
        last one (no sample reached them: the cluster was unreachable) become gaps."""
        last = self.last
        if last is not None and bucket < last:
            return  # the clock went back: keep what is there
        if last is None or bucket - last >= BUCKETS:
            self.values = array("q", [GAP]) * BUCKETS
        else:
            for skipped in range(last + 1, bucket):
                self.values[skipped % BUCKETS] = GAP
        self.values[bucket % BUCKETS] = GAP if value is None else value
        self.last = bucket

    def points(self, now: int) -> list[int]:
        """The BUCKETS values ending at bucket `now`, oldest first (GAP where none)."""
        last = self.last
        if last is None:
            return [GAP] * BUCKETS
        out = []
        for bucket in range(now - BUCKETS + 1, now + 1):
            out.append(self.values[bucket % BUCKETS] if last - BUCKETS < bucket <= last else GAP)
        return out


def sparkline(points: Sequence[int]) -> str:
    """Bars from 0 to the largest point (so a flat non-zero lag draws high, and a lag that
    rises from 0 rises); a gap is a space."""
    top = max(points, default=0)
    if top <= 0:
        return "".join(" " if p == GAP else BARS[0] for p in points)
    scale = (len(BARS) - 1) / top
    return "".join(" " if p == GAP else BARS[round(p * scale)] for p in points)


def direction(recent: Sequence[int]) -> str:
    """Where a lag is heading over its last few samples (oldest first); no verdict on
    fewer than three."""
    if len(recent) < 3:
        return "measuring"
    first, last = recent[0], recent[-1]
    if last == 0:
        return "caught up"
    if last > first:
        return "falling behind"
    if last < first:
        return "catching up"
    return "stalled"
