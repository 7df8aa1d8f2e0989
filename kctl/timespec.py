"""Parsing instants and durations the way people type them.

Instants: epoch milliseconds (13 digits or more, as Kafka stores them), ISO-8601 with or
without a zone (no zone means UTC, as kafka-consumer-groups.sh reads --to-datetime),
Kafka's own 'YYYY-MM-DDTHH:mm:SS.sss', `now`, and relative times
`-30s`, `-15m`, `-2h`, `-1d`, `-1w` (before now). Durations: `30s`, `15m`, `2h`,
`1d`, `1w`, ISO-8601 `PT1H30M`, or plain seconds.

Pure functions with an injectable clock; no I/O.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable

from kctl.errors import UsageError

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_ISO_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", re.IGNORECASE)


def parse_duration(text: str) -> float:
    """Seconds in `text`: '90', '90s', '15m', '1h30m', '2d', 'PT1H'."""
    value = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value)
    if value and _DURATION.sub("", value) == "" and _DURATION.search(value):
        return sum(float(n) * _UNITS[u] for n, u in _DURATION.findall(value))
    iso = _ISO_DURATION.fullmatch(value)
    if iso and value.upper() not in ("P", "PT") and any(iso.groups()):
        days, hours, minutes, seconds = (float(g) if g else 0.0 for g in iso.groups())
        return days * 86400 + hours * 3600 + minutes * 60 + seconds
    raise UsageError(action=f"parse duration {text!r}", cause="expected e.g. 30s, 15m, 2h, 1d, PT1H")


def parse_instant(text: str, *, now: Callable[[], float] = time.time) -> int:
    """Epoch milliseconds for `text`."""
    value = text.strip()
    if value.lower() == "now":
        return int(now() * 1000)
    if value.startswith("-") and len(value) > 1:
        return int((now() - parse_duration(value[1:])) * 1000)
    if re.fullmatch(r"\d{11,}", value):
        return int(value)
    candidate = value.replace(" ", "T", 1) if re.match(r"\d{4}-\d\d-\d\d \d", value) else value
    if candidate.endswith("Z") or candidate.endswith("z"):
        candidate = candidate[:-1] + "+00:00"
    try:
        parsed = dt.datetime.fromisoformat(candidate)
    except ValueError:
        raise UsageError(
            action=f"parse time {text!r}", cause="expected ISO-8601 (2026-11-22T10:00:00Z), epoch milliseconds, now, or -1h"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)  # Kafka's tools append Z
    return int(parsed.timestamp() * 1000)


def format_instant(ms: int | None) -> str | None:
    """ISO-8601 in UTC with milliseconds, e.g. 2026-11-22T10:00:00.000Z."""
    if ms is None or ms < 0:
        return None
    moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
