"""Record filters for consume: --key, --grep, --header and --where, all of which must match."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kctl.records.model import ConsumedRecord

Filter = Callable[[ConsumedRecord], bool]


def build(key: str | None = None, grep: re.Pattern[bytes] | None = None, headers: Sequence[tuple[str, str | None]] = (),
          where: Filter | None = None) -> Filter | None:
    """A predicate over consumed records, or None when nothing filters; `where` (kctl.
    records.where) is asked last, after the cheap checks."""
    checks: list[Filter] = []
    if key is not None:
        wanted = key.encode()
        checks.append(lambda m: m.key() == wanted)
    if grep is not None:
        search = grep.search
        checks.append(lambda m: (v := m.value()) is not None and search(v) is not None)
    for name, value in headers:
        checks.append(_header_check(name, None if value is None else value.encode()))
    if where is not None:
        checks.append(where)
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]
    return lambda m: all(check(m) for check in checks)


def _header_check(name: str, value: bytes | None) -> Filter:
    if value is None:
        return lambda m: any(k == name for k, _ in m.headers() or ())
    return lambda m: any(k == name and v == value for k, v in m.headers() or ())
