"""Time lag by interpolation and Burrow-style verdicts from sample windows (pure)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kctl.admin.groups.lag_history import Sample, interpolated_lag_seconds, judge, partition_status, record


def window(*triples):
    return [Sample(t=t, committed=c, log_end=h) for t, c, h in triples]


def test_interpolation_between_samples():
    history = window((0, 0, 100), (10_000, 0, 200))
    # Offset 150 was written half-way between the samples: 5 s in; now is 20 s.
    assert interpolated_lag_seconds(history, 150, 20_000) == pytest.approx(15.0)
    assert interpolated_lag_seconds(history, 200, 20_000) == 0.0
    # Before the oldest sample: unknown, never extrapolated from the samples' rate.
    assert interpolated_lag_seconds(history, 50, 20_000) is None
    assert interpolated_lag_seconds(history, 100, 20_000) == pytest.approx(20.0)
    assert interpolated_lag_seconds(history, None, 20_000) is None
    assert interpolated_lag_seconds(window((0, 0, 100)), 50, 20_000) is None
    # A log end that never moved says nothing about when older offsets were written.
    assert interpolated_lag_seconds(window((0, 0, 100), (10_000, 0, 100)), 50, 20_000) is None


@pytest.mark.parametrize(
    ("samples", "members", "expected"),
    [
        (window((0, 10, 20), (1, 15, 25), (2, 20, 30)), 0, "OK"),
        (window((0, 10, 20), (1, 8, 25)), 1, "REWIND"),
        (window((0, 10, 20), (1, 10, 30), (2, 10, 40)), 0, "STOP"),
        (window((0, 10, 20), (1, 10, 30), (2, 10, 40)), 2, "STALL"),
        (window((0, 10, 20), (1, 12, 30), (2, 14, 40)), 1, "WARN"),
        (window((0, 10, 20), (1, 30, 30), (2, 31, 40)), 1, "OK"),
        (window((0, 10, 20), (1, 10, 20)), 0, "STOP"),
        # No commit: judged by what waits (a backlog of 50 here).
        (window((0, None, 50), (1, None, 60)), 1, "STALL"),
        (window((0, None, 50), (1, None, 60)), 0, "STOP"),
    ],
)
def test_partition_status(samples, members, expected):
    assert partition_status(samples, members, len(samples), backlog=50) == expected


def test_no_verdict_before_the_window_has_its_samples():
    stuck = window((0, 10, 20), (1, 10, 30), (2, 10, 40))
    assert partition_status(stuck, 1, 10) == "OK"
    assert partition_status(stuck, 1, 3) == "STALL"
    assert partition_status(window((0, None, 5), (1, None, 9)), 1, 2, backlog=0) == "OK"


def test_a_partition_without_commit_is_judged_by_its_backlog():
    partition = SimpleNamespace(group="g", topic="t", partition=0, committed=None, log_start=6, log_end=100, lag=None, lag_seconds=None)
    group = SimpleNamespace(group="g", state="Stable", members=1, lag_sum=0, partitions=[partition])
    histories = {("g", "t", 0): window((0, None, 94), (1, None, 100))}
    (verdict,) = judge([group], histories, window=2)
    assert (verdict.status, verdict.partitions[0].reason) == ("STALL", "no committed offset while 94 record(s) wait")
    (verdict,) = judge([group], histories, window=10, warn_lag=50)
    assert (verdict.status, verdict.partitions[0].reason) == ("WARN", "lag 94 >= 50")


def test_thresholds_escalate():
    partition = SimpleNamespace(group="g", topic="t", partition=0, committed=30, log_start=0, log_end=530, lag=500, lag_seconds=30.0)
    group = SimpleNamespace(group="g", state="Stable", members=1, lag_sum=500, partitions=[partition])
    histories = {("g", "t", 0): window((0, 10, 20), (1, 30, 40))}
    (verdict,) = judge([group], histories, window=10)
    assert verdict.status == "OK"
    (verdict,) = judge([group], histories, window=10, warn_lag=100)
    assert (verdict.status, verdict.partitions[0].reason) == ("WARN", "lag 500 >= 100")
    (verdict,) = judge([group], histories, window=10, warn_lag=100, crit_seconds=20)
    assert (verdict.status, verdict.partitions[0].reason) == ("ERR", "lag seconds 30 >= 20")


def test_history_file_keeps_the_last_samples(tmp_path):
    path = tmp_path / "lag.json"
    for t in range(40):
        histories = record(path, {("g", "t", 0): Sample(t=t, committed=t, log_end=t + 1)})
    assert [s.t for s in histories[("g", "t", 0)]] == list(range(10, 40))
    path.write_text("{broken")
    assert len(record(path, {("g", "t", 0): Sample(t=99, committed=1, log_end=2)})[("g", "t", 0)]) == 1
