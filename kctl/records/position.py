"""Where consuming starts (--from) and stops (--to), as people type them.

--from: earliest | latest | committed | OFFSET | -N (the last N records of each
partition) | @TIME (the first record at or after TIME: ISO-8601, epoch ms, @-1h).
--to:   end (the log end when consuming starts; the default) | OFFSET (exclusive) |
@TIME (records before TIME).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kctl.errors import UsageError

EARLIEST = "earliest"
LATEST = "latest"
COMMITTED = "committed"
_ALIASES = {"beginning": EARLIEST, "start": EARLIEST, "oldest": EARLIEST, "end": LATEST, "newest": LATEST, "stored": COMMITTED}


@dataclass(frozen=True)
class Position:
    """One of: kind in (earliest, latest, committed); an absolute offset; the last `tail`
    records; or the first offset at or after `at_ms`."""

    kind: str
    offset: int | None = None
    tail: int | None = None
    at_ms: int | None = None


def parse_from(text: str, *, now: Callable[[], float] = time.time) -> Position:
    value = text.strip().lower()
    value = _ALIASES.get(value, value)
    if value in (EARLIEST, LATEST, COMMITTED):
        return Position(value)
    if value.isdigit():
        return Position("offset", offset=int(value))
    if value.startswith("-") and value[1:].isdigit():
        return Position("tail", tail=int(value[1:]))
    if value.startswith("@") and len(value) > 1:
        return _at(text, now)
    raise UsageError(action=f"parse --from {text!r}", cause="expected earliest, latest, committed, OFFSET, -N or @TIME (e.g. @-1h)")


def parse_to(text: str, *, now: Callable[[], float] = time.time) -> Position:
    value = text.strip().lower()
    if value in ("end", "latest"):
        return Position(LATEST)
    if value.isdigit():
        return Position("offset", offset=int(value))
    if value.startswith("@") and len(value) > 1:
        return _at(text, now)
    raise UsageError(action=f"parse --to {text!r}", cause="expected end, OFFSET or @TIME (e.g. @2026-11-22T10:00:00Z)")


def _at(text: str, now: Callable[[], float]) -> Position:
    from kctl.timespec import parse_instant

    return Position("time", at_ms=parse_instant(text.strip()[1:], now=now))
