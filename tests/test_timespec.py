"""Instants and durations as people type them."""

from __future__ import annotations

import pytest

from kctl.errors import UsageError
from kctl.timespec import format_instant, parse_duration, parse_instant

NOW = 1_790_000_000.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("90s", 90), ("15m", 900), ("1h30m", 5400), ("2d", 172800), ("1w", 604800), ("250ms", 0.25), ("PT1H", 3600), ("P1DT2H", 93600)],
)
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "h", "1x", "P", "PT", "-5m", "1h-"])
def test_bad_durations(text):
    with pytest.raises(UsageError, match="unable to parse duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1790000000000", 1_790_000_000_000),
        ("2026-09-21T14:13:20Z", 1_790_000_000_000),
        ("2026-09-21T14:13:20.000+00:00", 1_790_000_000_000),
        ("2026-09-21T16:13:20+02:00", 1_790_000_000_000),
        ("2026-09-21 14:13:20Z", 1_790_000_000_000),
        ("now", 1_790_000_000_000),
        ("-1h", 1_790_000_000_000 - 3_600_000),
        ("-90s", 1_790_000_000_000 - 90_000),
    ],
)
def test_instants(text, ms):
    assert parse_instant(text, now=lambda: NOW) == ms


def test_naive_times_are_utc_as_in_kafka_tools(monkeypatch):
    import time

    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        assert parse_instant("2026-09-21T14:13:20") == 1_790_000_000_000
        assert parse_instant("2026-09-21T14:13:20.000") == 1_790_000_000_000
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01", "12345", "-", "@1"])
def test_bad_instants(text):
    with pytest.raises(UsageError, match="unable to parse"):
        parse_instant(text, now=lambda: NOW)


def test_format_instant():
    assert format_instant(1_790_000_000_123) == "2026-09-21T14:13:20.123Z"
    assert format_instant(None) is None
    assert format_instant(-1) is None
