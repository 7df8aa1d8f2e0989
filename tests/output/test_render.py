"""Every output format, exactly, for a listing and a document, on a terminal and piped."""

from __future__ import annotations

import io
from dataclasses import dataclass

from kctl.output.render import Output
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec


@dataclass(frozen=True)
class Row:
    name: str
    count: int
    ids: tuple[int, ...]
    note: str | None
    flag: bool


ROWS = [Row("a", 1, (1, 2), None, True), Row("b\tc", 12, (), "x", False)]
SPEC = TableSpec((Column("name", "NAME"), Column("count", "COUNT", align="right"), Column("ids", "IDS"), Column("note", "NOTE", wide=True), Column("flag", "FLAG")))


class Terminal(io.StringIO):
    def isatty(self):
        return True


def render(fmt, rows=ROWS, *, tty=False, no_headers=False):
    stream = Terminal() if tty else io.StringIO()
    Output(fmt, stream, tty=tty, color=False, no_headers=no_headers).table(rows, SPEC)
    return stream.getvalue()


def test_plain_is_tab_separated_with_escapes():
    assert render("plain") == "NAME\tCOUNT\tIDS\tFLAG\na\t1\t1,2\ttrue\nb\\tc\t12\t\tfalse\n"
    assert render("auto") == render("plain")
    assert render("plain", no_headers=True) == "a\t1\t1,2\ttrue\nb\\tc\t12\t\tfalse\n"


def test_piped_table():
    assert render("table") == "NAME      COUNT  IDS    FLAG\na             1  1,2    yes\nb\\tc         12  -      no\n"


def test_terminal_table_and_wide():
    assert render("auto", tty=True) == (
        "NAME  COUNT  IDS  FLAG\n"
        "a         1  1,2  yes \n"
        "b\\tc     12  -    no  \n"
    )
    assert "NOTE" in render("wide", tty=True).splitlines()[0]
    assert "NOTE" not in render("table", tty=True)


def test_json_jsonl_csv_carry_every_field():
    # Indented on a terminal, compact (and C-encoded) when piped.
    assert render("json", tty=True) == (
        '[\n  {\n    "name": "a",\n    "count": 1,\n    "ids": [\n      1,\n      2\n    ],\n    "note": null,\n    "flag": true\n  },\n'
        '  {\n    "name": "b\\tc",\n    "count": 12,\n    "ids": [],\n    "note": "x",\n    "flag": false\n  }\n]\n'
    )
    assert render("json") == '[{"name":"a","count":1,"ids":[1,2],"note":null,"flag":true},{"name":"b\\tc","count":12,"ids":[],"note":"x","flag":false}]\n'
    assert render("jsonl") == (
        '{"name":"a","count":1,"ids":[1,2],"note":null,"flag":true}\n'
        '{"name":"b\\tc","count":12,"ids":[],"note":"x","flag":false}\n'
    )
    assert render("csv") == "name,count,ids,note,flag\na,1,\"1,2\",,true\nb\tc,12,,x,false\n"


def test_empty_listings():
    assert render("json", rows=[]) == "[]\n"
    assert render("jsonl", rows=[]) == ""
    assert render("plain", rows=[]) == "NAME\tCOUNT\tIDS\tFLAG\n"


@dataclass(frozen=True)
class Doc:
    title: str
    rows: tuple[Row, ...]


DOC_SPEC = DocumentSpec(fields=(Field("title", "TITLE"),), sections=(Section("rows", "ROWS", SPEC),))


def test_documents():
    doc = Doc("t", (ROWS[0],))
    stream = io.StringIO()
    Output("plain", stream, tty=False, color=False).documents([doc], DOC_SPEC)
    assert stream.getvalue() == "TITLE\tt\n\nROWS\nNAME\tCOUNT\tIDS\tFLAG\na\t1\t1,2\ttrue\n"
    stream = io.StringIO()
    Output("json", stream, tty=False, color=False).document(doc, DOC_SPEC)
    assert stream.getvalue().startswith('{"title":"t","rows":[')
    stream = io.StringIO()
    Output("csv", stream, tty=False, color=False).documents([doc], DOC_SPEC)
    assert stream.getvalue() == "title,name,count,ids,note,flag\nt,a,1,\"1,2\",,true\n"


def test_rich_never_reads_markup():
    rows = [Row("[bold]x[/bold]", 1, (), None, True)]
    assert "[bold]x[/bold]" in render("table", rows=rows, tty=True)


def test_dumps_matches_to_jsonable():
    """The C encoder's way and to_jsonable's walk give the same text for what kctl prints,
    including what the encoder cannot take itself (tuple keys, sets, bytes, enums)."""
    import datetime
    import enum
    import json

    from kctl.output.render import dumps, to_jsonable

    class Kind(enum.Enum):
        A = "a"

    @dataclass(frozen=True)
    class Outer:
        rows: tuple[Row, ...]
        by_name: dict
        kind: Kind
        raw: bytes
        at: datetime.datetime
        tags: frozenset

    value = Outer(tuple(ROWS), {"x": ROWS[0], 3: [ROWS[1]]}, Kind.A, b"\x00\xff", datetime.datetime(2026, 1, 2, 3, 4, 5), frozenset({"t"}))
    for item in (value, ROWS, [value], {("t", 0): 1}, {"k": {1, 2}}):
        assert dumps(item) == json.dumps(to_jsonable(item), separators=(",", ":"))
        assert dumps(item, indent=2) == json.dumps(to_jsonable(item), indent=2)


def test_shows_says_which_columns_a_format_prints():
    def shows(fmt, key):
        return Output(fmt, io.StringIO(), tty=False, color=False).shows(SPEC, key)

    assert not shows("plain", "note") and not shows("table", "note")
    assert shows("wide", "note") and shows("json", "note") and shows("jsonl", "note") and shows("csv", "note")
    assert shows("plain", "name")
