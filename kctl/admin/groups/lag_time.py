"""Lag in seconds for the samplers that run on (`kctl top`, `group lag --serve`).

Each sample adds a (time, log end) point per partition. A lagging partition's time lag is
then, in this order:
- interpolated between the two points whose log ends bracket its committed offset, when
  the log end passed the commit while the sampler watched (kafka-lag-exporter's method):
  the answer is within one sampling interval of when the record was written;
- otherwise (the commit is older than every point kept, or the topic is idle) the
  timestamp of the record at the committed offset, as `group lag --time-lag record` reads
  it: read once per (partition, offset) and kept while the commit stays there, so a stuck
  group costs one read, not one per sample;
- otherwise unknown, with the reason. Never extrapolated beyond the points seen (an
  extrapolation from the rate of the last minutes put an hour-old commit at 18 s).

At most READS_PER_SAMPLE record timestamps are read per sample (the largest lags first):
on a cluster with 100,000 stuck partitions the first samples say "not read yet" for the
rest and later samples fill them in. A position that could not be read is not asked again
for RETRY_SAMPLES samples.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kctl.admin.groups.lag import next_offset
from kctl.admin.groups.lag_history import lag_seconds_at
from kctl.admin.groups.models import GroupLag, PartitionLag
from kctl.values import replace

POINTS_KEPT = 30
READS_PER_SAMPLE = 1000
RETRY_SAMPLES = 10

Position = tuple[str, int, int]  # topic, partition, offset of the next record to consume


@dataclass(frozen=True, slots=True)
class TimeLag:
    seconds: float | None
    # caught_up | interp | record | none (the sources `group lag` names)
    source: str
    # Why it is unknown (source "none"), for the drill-down.
    reason: str | None = None


class TimeLagEstimator:
    """The points and record timestamps one sampler keeps between its samples."""

    def __init__(self, *, points_kept: int = POINTS_KEPT, reads_per_sample: int = READS_PER_SAMPLE):
        self.points_kept = points_kept
        self.reads_per_sample = reads_per_sample
        # (topic, partition) -> (times in ms, log ends)
        self._ends: dict[tuple[str, int], tuple[array, array]] = {}
        self._stamps: dict[Position, int] = {}
        # position -> the sample number after which it may be asked again
        self._failed: dict[Position, int] = {}
        self._sample = 0

    def add(self, groups: Sequence[GroupLag], now_ms: int,
            read_timestamps: Callable[[list[Position]], dict[Position, int]],
            log_ends: Mapping[tuple[str, int], int | None] | None = None) -> list[GroupLag]:
        """`groups` with every partition's lag_seconds (and source) filled in, after adding
        this sample's log ends (the groups' partitions', and `log_ends` of partitions no
        group reads yet: a commit there later is dated by them); `read_timestamps` reads
        the records the points cannot date."""
        self._sample += 1
        self._observe(groups, now_ms, log_ends or {})
        wanted = self._wanted(groups)
        if wanted:
            found = read_timestamps(wanted)
            for position in wanted:
                if position in found and found[position] >= 0:
                    self._stamps[position] = found[position]
                else:
                    self._failed[position] = self._sample + RETRY_SAMPLES
        live = {_position(p) for g in groups for p in g.partitions if p.lag}
        self._stamps = {k: v for k, v in self._stamps.items() if k in live}
        self._failed = {k: v for k, v in self._failed.items() if k in live and v > self._sample}
        return [self._timed(g, now_ms) for g in groups]

    def time_lag(self, p: PartitionLag, now_ms: int) -> TimeLag:
        """One partition's lag in seconds, as the module docstring says."""
        if p.committed is None or p.lag is None:
            return TimeLag(None, "none", "no committed offset")
        if p.lag == 0:
            return TimeLag(0.0, "caught_up")
        position = _position(p)
        points = self._points(p.topic, p.partition)
        if points is not None and position[2] >= points[0][1]:
            seconds = lag_seconds_at(points, position[2], now_ms)
            if seconds is not None:
                return TimeLag(seconds, "interp")
        stamp = self._stamps.get(position)
        if stamp is not None:
            return TimeLag(max(0.0, (now_ms - stamp) / 1000), "record")
        if position in self._failed:
            return TimeLag(None, "none", f"the record at offset {position[2]} could not be read")
        return TimeLag(None, "none", f"the record at offset {position[2]} is not read yet")

    def _observe(self, groups: Sequence[GroupLag], now_ms: int, log_ends: Mapping[tuple[str, int], int | None]) -> None:
        ends = {key: end for key, end in log_ends.items() if end is not None}
        ends.update({(p.topic, p.partition): p.log_end for g in groups for p in g.partitions if p.log_end is not None})
        for key, end in ends.items():
            history = self._ends.get(key)
            if history is None:
                history = self._ends[key] = (array("q"), array("q"))
            times, offsets = history
            times.append(now_ms)
            offsets.append(end)
            if len(times) > self.points_kept:
                del times[0]
                del offsets[0]
        if len(self._ends) > len(ends):
            self._ends = {k: v for k, v in self._ends.items() if k in ends}

    def _points(self, topic: str, partition: int) -> list[tuple[int, int]] | None:
        """The partition's (time, log end) points, None when the log end never moved in
        them (then no point says when a lagging commit was passed)."""
        times, ends = self._ends.get((topic, partition), ((), ()))
        if not ends or min(ends) == max(ends):
            return None
        return sorted(set(zip(times, ends)))

    def _wanted(self, groups: Sequence[GroupLag]) -> list[Position]:
        """The positions whose record timestamp this sample should read: lagging, not
        datable by the points, not known, not recently failed; the largest lags first."""
        candidates: dict[Position, int] = {}
        for g in groups:
            for p in g.partitions:
                if not p.lag or p.committed is None:
                    continue
                position = _position(p)
                if position in self._stamps or position in self._failed:
                    continue
                times, ends = self._ends.get((p.topic, p.partition), ((), ()))
                if ends and min(ends) != max(ends) and position[2] >= ends[0]:
                    continue  # the points date it
                candidates[position] = max(candidates.get(position, 0), p.lag)
        ranked = sorted(candidates, key=lambda k: -candidates[k])
        return ranked[:self.reads_per_sample]

    def _timed(self, g: GroupLag, now_ms: int) -> GroupLag:
        rows = []
        for p in g.partitions:
            answer = self.time_lag(p, now_ms)
            rows.append(replace(p, lag_seconds=answer.seconds, lag_seconds_source=answer.source))
        known = [r.lag_seconds for r in rows if r.lag_seconds is not None]
        return replace(g, partitions=tuple(rows), lag_seconds_max=max(known) if known else None)


def _position(p: PartitionLag) -> Position:
    return (p.topic, p.partition, next_offset(p))
