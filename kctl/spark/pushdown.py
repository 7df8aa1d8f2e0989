"""Predicates Spark pushes to a `kctl_kafka` scan, turned into the scan's read ranges.

`kctl spark sql` turns Spark's filter push-down on: Spark's optimizer splits a WHERE
clause into conjuncts, folds constants (`now() - INTERVAL 1 HOUR` is a literal by then,
`BETWEEN` two comparisons) and hands the scan those on its own columns. The ones on
`partition`, `offset` and `timestamp` narrow what is read:

- partition: =, IN, <, <=, >, >= keep only the partitions they admit;
- offset: =, IN, <, <=, >, >= cut every partition's [start, end);
- timestamp: >, >= start each partition at the first record at or after the bound (a
  ListOffsets by time, as `kctl spark dump --from @TIME` does); <, <= end it at the first
  record at or after the bound (as `--to @TIME` and Spark's endingTimestamp do).

Every predicate is also handed back to Spark, which still evaluates it on what is read:
narrowing never decides a row alone. A start bound by time is exact (no record before
the offset Kafka finds has a timestamp at or after the bound); an end bound by time is
exact while a partition's timestamps do not go backwards (a producer whose clock lags
can write an earlier CreateTime after a later one, and such a record past the end is
not read).

Pure Python (filters are read by their class name): no pyspark, no Kafka client.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_COMPARISONS = {"EqualTo", "EqualNullSafe", "GreaterThan", "GreaterThanOrEqual", "LessThan", "LessThanOrEqual", "In"}
_SYMBOLS = {"EqualTo": "=", "EqualNullSafe": "<=>", "GreaterThan": ">", "GreaterThanOrEqual": ">=", "LessThan": "<", "LessThanOrEqual": "<="}


@dataclass(frozen=True)
class Limits:
    """What a scan's pushed predicates admit; None is no bound. Ends are exclusive."""

    partitions: frozenset[int] | None = None
    partition_low: int | None = None
    partition_end: int | None = None
    offset_low: int | None = None
    offset_end: int | None = None
    time_low_ms: int | None = None
    time_end_ms: int | None = None
    pushed: tuple[str, ...] = field(default=())  # the predicates used, as text for --explain

    @property
    def by_time(self) -> bool:
        return self.time_low_ms is not None or self.time_end_ms is not None

    def admits_partition(self, partition: int) -> bool:
        if self.partitions is not None and partition not in self.partitions:
            return False
        if self.partition_low is not None and partition < self.partition_low:
            return False
        return self.partition_end is None or partition < self.partition_end


def _micros(value) -> int | None:
    """Microseconds since the epoch of a pushed timestamp (tz-aware from Spark; naive is UTC)."""
    if not isinstance(value, dt.datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return (value - _EPOCH) // dt.timedelta(microseconds=1)


def _ceil_ms(micros: int) -> int:
    return -(-micros // 1000)


def _integer_bounds(kind: str, value) -> tuple[int | None, int | None] | None:
    """[low, end) of the integers a comparison admits, or None when it is not one on integers."""
    if kind == "In":
        values = [v for v in value if type(v) is int]
        if not values or len(values) != len(value):
            return None
        return min(values), max(values) + 1
    if type(value) is not int:
        return None
    return {
        "EqualTo": (value, value + 1),
        "EqualNullSafe": (value, value + 1),
        "GreaterThan": (value + 1, None),
        "GreaterThanOrEqual": (value, None),
        "LessThan": (None, value),
        "LessThanOrEqual": (None, value + 1),
    }[kind]


def _time_bounds(kind: str, value) -> tuple[int | None, int | None] | None:
    """[low, end) in whole milliseconds (record timestamps are milliseconds)."""
    if kind == "In":
        stamps = [_micros(v) for v in value]
        if not stamps or any(s is None for s in stamps):
            return None
        return _ceil_ms(min(stamps)), max(stamps) // 1000 + 1
    micros = _micros(value)
    if micros is None:
        return None
    return {
        "EqualTo": (_ceil_ms(micros), micros // 1000 + 1),
        "EqualNullSafe": (_ceil_ms(micros), micros // 1000 + 1),
        "GreaterThan": (micros // 1000 + 1, None),
        "GreaterThanOrEqual": (_ceil_ms(micros), None),
        "LessThan": (None, _ceil_ms(micros)),
        "LessThanOrEqual": (None, micros // 1000 + 1),
    }[kind]


def _tighter(low: int | None, end: int | None, new: tuple[int | None, int | None]) -> tuple[int | None, int | None]:
    new_low, new_end = new
    if new_low is not None:
        low = new_low if low is None else max(low, new_low)
    if new_end is not None:
        end = new_end if end is None else min(end, new_end)
    return low, end


def describe_filter(kind: str, column: str, value) -> str:
    if isinstance(value, dt.datetime):
        text = value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    elif kind == "In":
        return f"{column} IN ({', '.join(describe_filter('EqualTo', column, v).split(' = ', 1)[1] for v in value)})"
    else:
        text = str(value)
    return f"{column} {_SYMBOLS[kind]} {text}"


def limits_of(filters) -> Limits:
    """The Limits of a list of pushed filters (pyspark.sql.datasource.Filter objects)."""
    limits = Limits()
    for item in filters:
        kind = type(item).__name__
        attribute = getattr(item, "attribute", ())
        if kind not in _COMPARISONS or len(attribute) != 1:
            continue
        column, value = attribute[0], item.value
        if column == "partition":
            bounds = _integer_bounds(kind, value)
            if bounds is None:
                continue
            if kind in ("In", "EqualTo", "EqualNullSafe"):
                admitted = frozenset(value) if kind == "In" else frozenset((value,))
                partitions = admitted if limits.partitions is None else limits.partitions & admitted
                limits = replace(limits, partitions=partitions)
            else:
                low, end = _tighter(limits.partition_low, limits.partition_end, bounds)
                limits = replace(limits, partition_low=low, partition_end=end)
        elif column == "offset":
            bounds = _integer_bounds(kind, value)
            if bounds is None:
                continue
            low, end = _tighter(limits.offset_low, limits.offset_end, bounds)
            limits = replace(limits, offset_low=low, offset_end=end)
        elif column == "timestamp":
            bounds = _time_bounds(kind, value)
            if bounds is None:
                continue
            low, end = _tighter(limits.time_low_ms, limits.time_end_ms, bounds)
            limits = replace(limits, time_low_ms=low, time_end_ms=end)
        else:
            continue
        if (column, kind, value) != ("offset", "GreaterThanOrEqual", 0):  # kctl spark sql's own, always true
            limits = replace(limits, pushed=limits.pushed + (describe_filter(kind, column, value),))
    return limits


def narrowed(start: int, end: int, partition: int, limits: Limits, time_start: int | None = None, time_end: int | None = None) -> tuple[int, int]:
    """A partition's [start, end) cut by the limits; time_start/time_end are the offsets
    the time bounds resolved to (None: no bound). An empty range has start == end."""
    if not limits.admits_partition(partition):
        return start, start
    low, high = start, end
    for bound in (limits.offset_low, time_start):
        if bound is not None:
            low = max(low, bound)
    for bound in (limits.offset_end, time_end):
        if bound is not None:
            high = min(high, bound)
    if low < high:
        return low, high
    empty = min(low, end)  # nothing to read: an empty range inside the partition's own
    return empty, empty
