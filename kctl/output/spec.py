"""Column and table specifications: titles are UPPER-KEBAB Kafka terms, keys are the
dataclass fields (snake_case) that JSON, JSONL and CSV use as their stable keys."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

FORMATS = ("auto", "table", "wide", "plain", "json", "jsonl", "csv")


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    # Shown only with -o wide (JSON/CSV always carry every field).
    wide: bool = False
    # Derives the cell from the row when it is not simply the attribute `key`.
    get: Callable[[Any], Any] | None = None
    align: str = "left"

    def value(self, row: Any) -> Any:
        return self.get(row) if self.get is not None else getattr(row, self.key)


@dataclass(frozen=True)
class TableSpec:
    columns: Sequence[Column]

    def visible(self, wide: bool) -> list[Column]:
        return [c for c in self.columns if wide or not c.wide]


@dataclass(frozen=True)
class Field:
    """One `TITLE  value` line of a document's summary."""

    key: str
    title: str
    get: Callable[[Any], Any] | None = None

    def value(self, obj: Any) -> Any:
        return self.get(obj) if self.get is not None else getattr(obj, self.key)


@dataclass(frozen=True)
class Section:
    """A titled table inside a document, e.g. a topic's PARTITIONS."""

    key: str
    title: str
    spec: TableSpec


@dataclass(frozen=True)
class DocumentSpec:
    """How to show one object: summary fields, then titled tables. JSON is the whole object."""

    fields: Sequence[Field] = ()
    sections: Sequence[Section] = field(default_factory=tuple)
