"""Column and table specifications: titles are UPPER-KEBAB Kafka terms, keys are the
dataclass fields (snake_case) that JSON, JSONL and CSV use as their stable keys.

Plain slotted classes rather than dataclasses: every command imports these, and
building a dataclass costs about a millisecond of start-up each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kctl.output.formats import FORMATS  # noqa: F401 - re-exported for callers

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any


class Column:
    __slots__ = ("key", "title", "wide", "get", "align")

    def __init__(self, key: str, title: str, *, wide: bool = False, get: Callable[[Any], Any] | None = None, align: str = "left"):
        self.key = key
        self.title = title
        # Shown only with -o wide (JSON/CSV always carry every field).
        self.wide = wide
        # Derives the cell from the row when it is not simply the attribute `key`.
        self.get = get
        self.align = align

    def value(self, row: Any) -> Any:
        return self.get(row) if self.get is not None else getattr(row, self.key)


def human_bytes(key: str) -> Callable[[Any], str | None]:
    """A Column's `get` showing the bytes in field `key` as du -h does (1.5 KiB); JSON and
    CSV keep the exact figure."""
    def get(row: Any) -> str | None:
        from kctl.sizes import format_bytes  # only when a table is drawn

        return format_bytes(getattr(row, key))

    return get


class TableSpec:
    __slots__ = ("columns",)

    def __init__(self, columns: Sequence[Column]):
        self.columns = tuple(columns)

    def visible(self, wide: bool) -> list[Column]:
        return [c for c in self.columns if wide or not c.wide]


class Field:
    """One `TITLE  value` line of a document's summary."""

    __slots__ = ("key", "title", "get")

    def __init__(self, key: str, title: str, *, get: Callable[[Any], Any] | None = None):
        self.key = key
        self.title = title
        self.get = get

    def value(self, obj: Any) -> Any:
        return self.get(obj) if self.get is not None else getattr(obj, self.key)


class Section:
    """A titled table inside a document, e.g. a topic's PARTITIONS."""

    __slots__ = ("key", "title", "spec", "optional")

    def __init__(self, key: str, title: str, spec: TableSpec, *, optional: bool = False):
        self.key = key
        self.title = title
        self.spec = spec
        # Left out of text output when the object's value is None (a kind it does not apply to).
        self.optional = optional


class DocumentSpec:
    """How to show one object: summary fields, then titled tables. JSON is the whole object."""

    __slots__ = ("fields", "sections")

    def __init__(self, fields: Sequence[Field] = (), sections: Sequence[Section] = ()):
        self.fields = tuple(fields)
        self.sections = tuple(sections)
