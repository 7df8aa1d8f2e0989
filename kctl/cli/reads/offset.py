"""The offset read, `offset get`: its body and columns, free of click so the console
script runs it without it (kctl.cli.direct); kctl.cli.offset declares its options and help."""

from __future__ import annotations

from kctl.cli._app import App
from kctl.output.spec import Column, TableSpec


def _iso(key: str):
    def get(row):
        from kctl.timespec import format_instant

        return format_instant(getattr(row, key))

    return get


BASE_COLUMNS = (
    Column("topic", "TOPIC"),
    Column("partition", "PARTITION", align="right"),
    Column("earliest", "EARLIEST", align="right"),
    Column("latest", "LATEST", align="right"),
    Column("span", "SPAN", align="right"),
)
AT_COLUMNS = (Column("offset_at", "OFFSET-AT", align="right"), Column("timestamp_at", "TIMESTAMP-AT", get=_iso("timestamp_at")))
MAX_COLUMNS = (
    Column("max_timestamp_offset", "MAX-TIMESTAMP-OFFSET", align="right"),
    Column("max_timestamp", "MAX-TIMESTAMP", get=_iso("max_timestamp")),
)


def get(app: App, selectors, regex, at, max_timestamp, isolation) -> None:
    from kctl.admin.topics.offsets import TIERED_POSITIONS, list_offsets, parse_selector, resolve_partitions
    from kctl.errors import UsageError
    from kctl.timespec import format_instant, parse_instant

    if not selectors and regex is None:
        raise UsageError("name at least one TOPIC[:PARTITIONS], or give --regex", hint="see 'kctl offset get --help'")
    parsed = [parse_selector(s) for s in selectors]
    at_ms: int | None
    if at in TIERED_POSITIONS:
        at_ms = TIERED_POSITIONS[at]
    else:
        at_ms = parse_instant(at) if at is not None else None
        if at_ms is not None:
            app.note(f"--at {at} is {format_instant(at_ms)} ({at_ms})")
    leaders: dict[tuple[str, int], int] = {}
    pairs = resolve_partitions(app.session, parsed, regex, leaders=leaders)
    rows = list_offsets(app.session, pairs, at_ms=at_ms, max_timestamp=max_timestamp, isolation=isolation, leaders=leaders)
    columns = BASE_COLUMNS + (AT_COLUMNS if at_ms is not None else ()) + (MAX_COLUMNS if max_timestamp else ())
    app.out.table(rows, TableSpec(columns))
