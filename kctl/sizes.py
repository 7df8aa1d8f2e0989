"""Byte sizes and rates as people type and read them: 50MB, 10MiB/s, 1.5G."""

from __future__ import annotations

import re

from kctl.errors import UsageError

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
          "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tb": 1000**4, "tib": 1024**4}


def parse_bytes(text: str, what: str = "size") -> int:
    """Bytes in '1048576', '50MB', '10MiB', '1.5G' (a trailing '/s' is allowed for rates)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)(?:/s)?\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        raise UsageError(action=f"parse {what} {text!r}", cause="expected bytes such as 1048576, 50MB or 10MiB")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def format_bytes(count: int | None) -> str | None:
    """1536 -> '1.5 KiB' (binary units, as du -h)."""
    if count is None:
        return None
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"
