"""The tables of `kctl top`: which columns each view has, how a cell is written, and in what
order the columns give way when the terminal is narrow.

A column is (key, header, format, priority, width): `key` names the row's attribute (the
sort key too), `priority` 0 is never dropped and higher numbers drop first, `width` is
what the column needs at least (its header or its usual content).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


def count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.1f}s" if value < 10 else f"{value:.0f}s"
    if value < 3600:
        return f"{value / 60:.0f}m{value % 60:02.0f}s"
    return f"{value / 3600:.0f}h{value % 3600 / 60:02.0f}m"


def rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}/s"


def brokers(value: Sequence[int]) -> str:
    return ",".join(map(str, value))


def text(value: Any) -> str:
    return "" if value is None else str(value)


def yes(value: bool) -> str:
    return "yes" if value else ""


def stuck(value: Sequence[str]) -> str:
    if not value:
        return ""
    return ", ".join(value[:3]) + (f" +{len(value) - 3}" if len(value) > 3 else "")


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    format: Callable[[Any], str] = text
    priority: int = 0
    width: int = 8
    numeric: bool = False


GROUPS = (
    Column("group", "GROUP", width=12),
    Column("type", "TYPE", priority=3, width=8),
    Column("state", "STATE", priority=2, width=11),
    Column("members", "MEMBERS", count, priority=4, width=7, numeric=True),
    Column("lag", "LAG", count, width=8, numeric=True),
    Column("lag_seconds", "LAG-TIME", seconds, priority=1, width=8, numeric=True),
    Column("trend", "TREND", priority=2, width=20),
    Column("direction", "DIRECTION", priority=1, width=14),
    Column("stuck", "STUCK", stuck, priority=5, width=12),
)
GROUP_PARTITIONS = (
    Column("topic", "TOPIC", width=16),
    Column("partition", "PARTITION", width=9, numeric=True),
    Column("owner", "OWNER", priority=3, width=16),
    Column("committed", "COMMITTED", count, priority=4, width=10, numeric=True),
    Column("log_end", "LOG-END", count, priority=4, width=10, numeric=True),
    Column("lag", "LAG", count, width=8, numeric=True),
    Column("lag_seconds", "LAG-TIME", seconds, priority=1, width=8, numeric=True),
    Column("trend", "TREND", priority=2, width=20),
    Column("stuck", "STUCK", yes, priority=1, width=5),
)
TOPICS = (
    Column("topic", "TOPIC", width=16),
    Column("partitions", "PARTITIONS", count, priority=3, width=10, numeric=True),
    Column("rate", "RATE", rate, width=10, numeric=True),
    Column("trend", "TREND", priority=2, width=20),
    Column("under_replicated", "UNDER-REPLICATED", count, priority=1, width=16, numeric=True),
    Column("groups", "GROUPS", count, priority=3, width=6, numeric=True),
    Column("worst_lag", "WORST-LAG", count, priority=1, width=9, numeric=True),
    Column("worst_group", "OF-GROUP", priority=2, width=12),
)
BROKERS = (
    Column("broker", "BROKER", width=6, numeric=True),
    Column("host", "HOST", priority=2, width=16),
    Column("rack", "RACK", priority=4, width=6),
    Column("controller", "CONTROLLER", yes, priority=3, width=10),
    Column("alive", "ALIVE", lambda v: "yes" if v else "NO", width=5),
    Column("leaders", "LEADERS", count, width=7, numeric=True),
    Column("replicas", "REPLICAS", count, priority=1, width=8, numeric=True),
    Column("out_of_isr", "OUT-OF-ISR", count, priority=1, width=10, numeric=True),
)
PARTITIONS = (
    Column("topic", "TOPIC", width=16),
    Column("partition", "PARTITION", width=9, numeric=True),
    Column("leader", "LEADER", text, width=6, numeric=True),
    Column("replicas", "REPLICAS", brokers, priority=2, width=8),
    Column("isr", "ISR", brokers, priority=1, width=8),
    Column("min_isr", "MIN-ISR", text, priority=4, width=7, numeric=True),
    Column("status", "STATUS", width=16),
    Column("log_start", "LOG-START", count, priority=5, width=10, numeric=True),
    Column("log_end", "LOG-END", count, priority=3, width=10, numeric=True),
    Column("rate", "RATE", rate, priority=2, width=10, numeric=True),
)
CONNECTORS = (
    Column("connector", "CONNECTOR", width=16),
    Column("type", "TYPE", priority=3, width=6),
    Column("state", "STATE", width=10),
    Column("tasks", "TASKS", priority=1, width=5, numeric=True),
    Column("failed", "FAILED", count, width=6, numeric=True),
    Column("worker", "WORKER", priority=2, width=16),
    Column("class_name", "CLASS", priority=4, width=16),
)
RECORDS = (
    Column("offset", "OFFSET", count, width=8, numeric=True),
    Column("timestamp", "TIMESTAMP", priority=2, width=24),
    Column("key", "KEY", priority=1, width=12),
    Column("value", "VALUE", width=30),
)

# The partition list's filters, as toggles of the partitions view: key -> (row flag, label).
PARTITION_FILTERS = {
    "u": ("under_replicated", "under-replicated"),
    "m": ("under_min_isr", "under-min-isr"),
    "a": ("at_min_isr", "at-min-isr"),
    "x": ("offline", "offline"),
}


def fitting(columns: Sequence[Column], width: int) -> tuple[Column, ...]:
    """The columns that fit in `width` cells, dropping the highest priority numbers first
    (a narrow terminal loses columns rather than wrapping)."""
    kept = list(columns)
    # DataTable pads each cell by one cell on each side.
    while len(kept) > 1 and sum(c.width + 2 for c in kept) > width:
        droppable = [c for c in kept if c.priority > 0]
        if not droppable:
            break
        kept.remove(max(droppable, key=lambda c: (c.priority, columns.index(c))))
    return tuple(kept)


def ordered(rows: Sequence[Any], key: str, reverse: bool) -> list[Any]:
    """Rows ordered by attribute `key` (a tuple by its length), unknown values (None) last
    whichever the direction."""
    known = [r for r in rows if getattr(r, key) is not None]
    unknown = [r for r in rows if getattr(r, key) is None]
    if known and isinstance(getattr(known[0], key), (tuple, list)):
        known.sort(key=lambda r: len(getattr(r, key)), reverse=reverse)
    else:
        known.sort(key=lambda r: getattr(r, key), reverse=reverse)
    return known + unknown
