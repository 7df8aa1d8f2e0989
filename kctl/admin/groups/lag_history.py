"""Lag history between invocations, and what it tells: time lag by interpolation and a
Burrow-style status per partition, without a daemon.

Every `group lag` / `group status` run appends one sample (t, committed, log end) per
partition to a state file, so cron jobs build the window Burrow and kafka-lag-exporter
keep in memory. The file is JSON, replaced atomically under a lock.

Status rules (Burrow's, adapted; kctl has no commit timestamps, so a partition whose
commit does not move is STOP when the group has no members and STALL when it has). As in
Burrow, no verdict is reached before the window holds its samples: until then a partition
is OK (thresholds still apply).
  REWIND  the committed offset went backwards within the window
  STOP    lag > 0 throughout and the commit never moved, no members
  STALL   the same with members (they consume without committing progress)
  WARN    lag grew between every pair of samples while commits moved
  OK      otherwise, and whenever lag reached 0 in the window
A partition with no committed offset has no lag; it is judged by its backlog (records
between the log start and end): with records waiting and no commit through the whole
window it is STOP or STALL, and the lag thresholds apply to the backlog.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kctl.config.file import state_dir

SAMPLES_KEPT = 30
SEVERITY = {"OK": 0, "WARN": 1, "STALL": 2, "STOP": 2, "REWIND": 2, "ERR": 2, "UNKNOWN": 3}


@dataclass(frozen=True, kw_only=True)
class Sample:
    t: int  # epoch ms
    committed: int | None
    log_end: int | None


def state_path(env: Mapping[str, str], bootstrap: str | None) -> Path:
    key = re.sub(r"[^A-Za-z0-9._-]+", "_", bootstrap or "default")[:120]
    return state_dir(env) / "lag" / f"{key}.json"


def _key(group: str, topic: str, partition: int) -> str:
    return f"{group}\t{topic}\t{partition}"


def record(path: Path, samples: Mapping[tuple[str, str, int], Sample]) -> dict[tuple[str, str, int], list[Sample]]:
    """Append samples, keep the last SAMPLES_KEPT per partition, return every history."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            data = json.loads(path.read_text()) if path.exists() else {}
        except (OSError, json.JSONDecodeError):
            data = {}  # a damaged history only costs trends, never the command
        for (group, topic, partition), sample in samples.items():
            series = data.setdefault(_key(group, topic, partition), [])
            series.append([sample.t, sample.committed, sample.log_end])
            del series[:-SAMPLES_KEPT]
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, separators=(",", ":")))
        os.replace(tmp, path)
    return {
        tuple(k.split("\t")[:2]) + (int(k.split("\t")[2]),): [Sample(t=s[0], committed=s[1], log_end=s[2]) for s in v]
        for k, v in data.items()
    }


def interpolated_lag_seconds(history: Sequence[Sample], committed: int | None, now_ms: int) -> float | None:
    """When did the log end pass `committed`? now minus that, from the (t, log end) samples
    (kafka-lag-exporter's method). None without two samples bracketing it: a commit older
    than every sample is not extrapolated (the rate of the samples says nothing of when
    older records were written)."""
    if committed is None:
        return None
    return lag_seconds_at(sorted({(s.t, s.log_end) for s in history if s.log_end is not None}), committed, now_ms)


def lag_seconds_at(points: Sequence[tuple[int, int]], committed: int, now_ms: int) -> float | None:
    """interpolated_lag_seconds from (t, log end) points sorted by time (kctl top sorts
    each partition's points once per sample, not once per group reading it)."""
    if not points:
        return None
    if committed >= points[-1][1]:
        return 0.0
    for (t0, o0), (t1, o1) in zip(points, points[1:]):
        if o0 <= committed <= o1 and o1 > o0:
            at = t0 + (committed - o0) * (t1 - t0) / (o1 - o0)
            return max(0.0, (now_ms - at) / 1000)
    return None


def partition_status(window: Sequence[Sample], members: int, size: int, backlog: int = 0) -> str:
    """The verdict of the last `size` samples (`window` holds at most that many); `backlog`
    is what waits in a partition that has no committed offset now."""
    if len(window) < size:
        return "OK"
    if all(s.committed is None for s in window):
        if backlog <= 0:
            return "OK"
        return "STALL" if members else "STOP"
    known = [(s.committed, s.log_end) for s in window if s.committed is not None and s.log_end is not None]
    if len(known) < 2:
        return "OK"
    lags = [max(0, end - committed) for committed, end in known]
    commits = [committed for committed, _end in known]
    if any(b < a for a, b in zip(commits, commits[1:])):
        return "REWIND"
    if 0 in lags:
        return "OK"
    if commits[0] == commits[-1]:
        return "STALL" if members else "STOP"
    if all(b > a for a, b in zip(lags, lags[1:])):
        return "WARN"
    return "OK"


@dataclass(frozen=True, kw_only=True)
class PartitionStatus:
    group: str
    topic: str
    partition: int
    lag: int | None
    lag_seconds: float | None
    # OK | WARN | ERR | STOP | STALL | REWIND
    status: str
    # Samples in the window (fewer than asked means the verdict rests on less history).
    samples: int
    reason: str | None


@dataclass(frozen=True, kw_only=True)
class GroupStatus:
    group: str
    state: str
    members: int
    # The worst partition status.
    status: str
    lag_sum: int
    partitions: tuple[PartitionStatus, ...]


def _backlog(p) -> int | None:
    """Records waiting in a partition without a committed offset (None when it has one)."""
    if p.committed is not None or p.log_start is None or p.log_end is None:
        return None
    return max(0, p.log_end - p.log_start)


def judge(
    groups: Sequence,
    histories: Mapping[tuple[str, str, int], Sequence[Sample]],
    *,
    window: int,
    warn_lag: int | None = None,
    crit_lag: int | None = None,
    warn_seconds: float | None = None,
    crit_seconds: float | None = None,
) -> list[GroupStatus]:
    """Burrow-style verdicts from the history, escalated by thresholds."""
    out = []
    for g in groups:
        rows = []
        for p in g.partitions:
            series = list(histories.get((p.group, p.topic, p.partition), []))[-window:]
            backlog = _backlog(p)
            status, reason = partition_status(series, g.members, window, backlog or 0), None
            if status != "OK":
                reason = {"REWIND": "committed offset went backwards", "STOP": "no progress and no members", "STALL": "members commit no progress", "WARN": "lag grew in every sample"}[status]
                if backlog is not None:
                    reason = f"no committed offset while {backlog} record(s) wait" + ("" if g.members else " and no members")
            lag = p.lag if backlog is None else backlog
            for limit, level, value, what in (
                (crit_lag, "ERR", lag, "lag"),
                (crit_seconds, "ERR", p.lag_seconds, "lag seconds"),
                (warn_lag, "WARN", lag, "lag"),
                (warn_seconds, "WARN", p.lag_seconds, "lag seconds"),
            ):
                if limit is not None and value is not None and value >= limit and SEVERITY[level] > SEVERITY[status]:
                    status, reason = level, f"{what} {value:g} >= {limit:g}"
            rows.append(
                PartitionStatus(
                    group=p.group, topic=p.topic, partition=p.partition, lag=p.lag, lag_seconds=p.lag_seconds,
                    status=status, samples=len(series), reason=reason,
                )
            )
        worst = max((r.status for r in rows), key=lambda s: SEVERITY[s], default="OK")
        out.append(GroupStatus(group=g.group, state=g.state, members=g.members, status=worst, lag_sum=g.lag_sum, partitions=tuple(rows)))
    return out
