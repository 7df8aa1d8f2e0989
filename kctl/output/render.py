"""Rendering rows and documents in every output format.

auto   a table on a terminal, plain when piped
table  aligned columns (rich on a terminal, tabulate otherwise: no escape codes in files)
wide   table with the extra columns
plain  tab-separated, one record per line, no alignment: for cut/awk/while-read
json   one JSON value (a list for listings), keys are the result's fields; indented on
       a terminal, compact when piped
jsonl  one compact JSON object per line
csv    RFC 4180 with a header row
prom   Prometheus text exposition, only for `group lag` (others refuse it)

rich is imported only when a terminal table is drawn, tabulate only for a piped table;
json, csv, base64 and datetime only when their format or a value needs them (a plain read
pays for none: issue 59).
"""

from __future__ import annotations

import enum
import re
import sys
from collections.abc import Sequence

from kctl.output.spec import Column, DocumentSpec, TableSpec
from kctl.values import Value

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import TextIO

# Wide enough that rich never folds or truncates a cell; the terminal wraps long lines.
_RICH_WIDTH = 100_000


_FIELDS: dict[type[object], tuple[str, ...]] = {}
_PLAIN = (str, int, float, bool, type(None))
_PLAIN_TYPES = frozenset(_PLAIN)


def to_jsonable(value: object) -> object:
    """JSON-ready data; dataclass fields in declaration order (their names are the keys).

    Hot for large listings (100,000 lag rows), hence the fast paths: plain values and
    tuples of plain values pass through (json encodes tuples as arrays).
    """
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return value
    names = _FIELDS.get(kind)
    if names is None:
        names = _field_names(value)
    if names is not None:
        out = {}
        for name in names:
            item = getattr(value, name)
            item_kind = type(item)
            if item_kind in _PLAIN_TYPES or (item_kind is tuple and all(type(x) in _PLAIN_TYPES for x in item)):
                out[name] = item
            else:
                out[name] = to_jsonable(item)
        return out
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | frozenset | set):
        return [to_jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bytes):
        import base64

        return base64.b64encode(value).decode("ascii")
    datetime = sys.modules.get("datetime")  # no value is a datetime unless it was imported
    if datetime is not None and isinstance(value, datetime.datetime):
        return value.isoformat()
    return value


def _field_names(value: object) -> tuple[str, ...] | None:
    """A result's field names in declaration order (its JSON keys), remembered per type:
    a Value's (kctl.values) or a dataclass's; None for anything else. dataclasses is not
    imported to ask: nothing is a dataclass unless it was."""
    if isinstance(value, Value):
        names = value.__slots__
    else:
        dataclasses = sys.modules.get("dataclasses")
        if dataclasses is None or not dataclasses.is_dataclass(value) or isinstance(value, type):
            return None
        names = tuple(f.name for f in dataclasses.fields(value))
    _FIELDS[type(value)] = names
    return names


def _encode_default(value: object) -> object:
    """json's hook for what it cannot encode itself: dataclasses become dicts whose values
    the C encoder walks on its own, so large listings are not walked in Python."""
    kind = type(value)
    names = _FIELDS.get(kind)
    if names is None:
        names = _field_names(value)
    if names is not None:
        return {name: getattr(value, name) for name in names}
    converted = to_jsonable(value)
    if converted is value:
        raise TypeError(f"{kind.__name__} is not JSON serializable")
    return converted


def dumps(value: object, *, indent: int | None = None) -> str:
    """JSON text of `value` as to_jsonable shapes it (compact unless `indent`).

    The C encoder with a default hook is several times faster than to_jsonable's walk
    on 100,000 lag rows (measured: 0.8 s of 2.7 s under the profiler). It refuses
    mapping keys that are not strings, numbers, booleans or None, so such values take
    to_jsonable's way (which would write a True or None key as "True", "None", where
    json writes "true", "null": no kctl result has such keys).
    """
    import json

    separators = None if indent else (",", ":")
    try:
        return json.dumps(value, default=_encode_default, indent=indent, separators=separators, check_circular=False)
    except TypeError:
        return json.dumps(to_jsonable(value), indent=indent, separators=separators)


def _cell(value: object, *, for_table: bool) -> str:
    if value is None:
        return "-" if for_table else ""
    if isinstance(value, bool):
        if for_table:
            return "yes" if value else "no"
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, list | tuple):
        if not value and for_table:
            return "-"
        return ",".join(_cell(v, for_table=for_table) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _plain_escape(text: str) -> str:
    # A tab or newline inside a cell would break the one-record-per-line contract.
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


_NEEDS_ESCAPE = re.compile(r"[\t\n\\]").search


def _plain_cell(value: object) -> str:
    """_plain_escape(_cell(value)) with a fast path for plain strings: listings of 10,000
    rows (ACLs, partitions) spent half their time here (measured: 0.17 s of 0.24 s)."""
    text = value if type(value) is str else _cell(value, for_table=False)
    return _plain_escape(text) if _NEEDS_ESCAPE(text) else text


class Output:
    """Writes data to one stream (stdout) in the chosen format."""

    def __init__(self, fmt: str, stream: TextIO, *, tty: bool, color: bool, no_headers: bool = False):
        self.stream = stream
        self.tty = tty
        self.color = color
        self.no_headers = no_headers
        self.format = ("table" if tty else "plain") if fmt == "auto" else fmt

    def _json(self, value: object) -> None:
        """One JSON value: indented on a terminal; compact when piped, which Python's
        C encoder writes ~10x faster (100,000 lag rows: 0.3 s instead of 3 s)."""
        if self.tty:
            self._write(dumps(value, indent=2) + "\n")
        else:
            self._write(dumps(value) + "\n")

    def _json_list(self, items: Sequence[object]) -> None:
        """A JSON array, streamed item by item when piped so memory stays flat."""
        if self.tty:
            self._json(list(items))
            return
        self.stream.write("[")
        for index, item in enumerate(items):
            if index:
                self.stream.write(",")
            self.stream.write(dumps(item))
        self._write("]\n")

    @property
    def is_structured(self) -> bool:
        return self.format in ("json", "jsonl")

    # -- listings -------------------------------------------------------------------------

    def _refuse_prom(self) -> None:
        if self.format == "prom":
            from kctl.errors import UsageError

            raise UsageError("-o prom is only for `kctl group lag`; use json, jsonl or csv here")

    def shows(self, spec: TableSpec, key: str) -> bool:
        """Whether `table(rows, spec)` would print the column `key` (JSON, jsonl and CSV
        carry every field), so commands can skip requests for what is not shown."""
        if self.format in ("json", "jsonl", "csv"):
            return True
        return any(c.key == key for c in spec.visible(wide=self.format == "wide"))

    def table(self, rows: Sequence[object], spec: TableSpec) -> None:
        self._refuse_prom()
        if self.format == "json":
            self._json_list(rows)
        elif self.format == "jsonl":
            for r in rows:
                self.stream.write(dumps(r) + "\n")
            self.stream.flush()
        elif self.format == "csv":
            self._csv(rows, spec.columns)
        elif self.format == "plain":
            self._plain(rows, spec.visible(wide=False))
        else:
            self._aligned(rows, spec.visible(wide=self.format == "wide"))

    # -- single objects -------------------------------------------------------------------

    def document(self, obj: object, spec: DocumentSpec) -> None:
        self._refuse_prom()
        if self.format == "json":
            self._json(obj)
        else:
            self.documents([obj], spec)

    def documents(self, objs: Sequence[object], spec: DocumentSpec) -> None:
        """Several objects of one kind; JSON is a list, jsonl a line each."""
        self._refuse_prom()
        if self.format == "json":
            self._json_list(objs)
            return
        if self.format == "jsonl":
            for o in objs:
                self.stream.write(dumps(o) + "\n")
            self.stream.flush()
            return
        if self.format == "csv":
            # CSV has one shape per file: the first section's rows, prefixed with the summary.
            section = spec.sections[0]
            prefix = [Column(f.key, f.title, get=f.get) for f in spec.fields]
            import csv

            writer = csv.writer(self.stream, lineterminator="\n")
            if not self.no_headers:
                writer.writerow([c.key for c in prefix] + [c.key for c in section.spec.columns])
            for obj in objs:
                head = [_cell(c.value(obj), for_table=False) for c in prefix]
                for row in getattr(obj, section.key):
                    writer.writerow(head + [_cell(c.value(row), for_table=False) for c in section.spec.columns])
            return
        for index, obj in enumerate(objs):
            if index:
                self._write("\n")
            self._document_text(obj, spec)

    def _document_text(self, obj: object, spec: DocumentSpec) -> None:
        plain = self.format == "plain"
        if spec.fields:
            pairs = [(f.title, _cell(f.value(obj), for_table=not plain)) for f in spec.fields]
            if plain:
                self._write("".join(f"{t}\t{_plain_escape(v)}\n" for t, v in pairs))
            else:
                width = max(len(t) for t, _ in pairs)
                self._write("".join(f"{t.ljust(width)}  {v}\n" for t, v in pairs))
        for section in spec.sections:
            rows = getattr(obj, section.key)
            if rows is None and section.optional:
                continue
            self._write(f"\n{section.title}\n")
            if plain:
                self._plain(rows, section.spec.visible(wide=False))
            else:
                self._aligned(rows, section.spec.visible(wide=self.format == "wide"))

    def raw(self, text: str) -> None:
        """Data that has its own fixed format (a reassignment plan, a screen redraw)."""
        self._write(text)

    # -- writers --------------------------------------------------------------------------

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def _plain(self, rows: Sequence[object], columns: list[Column]) -> None:
        lines = []
        if not self.no_headers:
            lines.append("\t".join(c.title for c in columns))
        for row in rows:
            lines.append("\t".join([_plain_cell(c.value(row)) for c in columns]))
        self._write("".join(line + "\n" for line in lines))

    def _csv(self, rows: Sequence[object], columns: Sequence[Column]) -> None:
        import csv

        writer = csv.writer(self.stream, lineterminator="\n")
        if not self.no_headers:
            writer.writerow([c.key for c in columns])
        for row in rows:
            writer.writerow([_cell(c.value(row), for_table=False) for c in columns])
        self.stream.flush()

    def _aligned(self, rows: Sequence[object], columns: list[Column]) -> None:
        cells = [[_plain_escape(_cell(c.value(row), for_table=True)) for c in columns] for row in rows]
        if self.tty:
            self._rich_table(cells, columns)
            return
        from tabulate import tabulate

        headers = () if self.no_headers else [c.title for c in columns]
        if not cells and not headers:
            return
        text: str = tabulate(
            cells,
            headers=headers,
            tablefmt="plain",
            disable_numparse=True,
            colalign=[c.align for c in columns] if cells else None,
        )
        self._write(text.rstrip() + "\n" if text else "")

    def _rich_table(self, cells: list[list[str]], columns: list[Column]) -> None:
        from rich.console import Console
        from rich.table import Table

        console = Console(
            file=self.stream,
            force_terminal=True,
            no_color=not self.color,
            markup=False,
            highlight=False,
            emoji=False,
            width=_RICH_WIDTH,
        )
        table = Table(
            box=None,
            show_header=not self.no_headers,
            header_style="bold" if self.color else "",
            pad_edge=False,
            padding=(0, 2, 0, 0),
        )
        for column in columns:
            table.add_column(column.title, justify=column.align, no_wrap=True)  # type: ignore[arg-type]
        for row in cells:
            table.add_row(*row)
        console.print(table, crop=False, soft_wrap=True)
