"""kctl record: records in topics."""

from __future__ import annotations

import click

from kctl.cli._app import App, pass_app
from kctl.cli._batch import report
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options, yes_option
from kctl.output.spec import Column, TableSpec

DELETE_TABLE = TableSpec(
    (
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("log_start_offset", "LOG-START-OFFSET", align="right"),
        Column("log_end_offset", "LOG-END-OFFSET", align="right"),
        Column("delete_before", "DELETE-BEFORE", align="right"),
        Column("records_deleted", "RECORDS-DELETED", align="right"),
        Column("status", "STATUS"),
        Column("low_watermark", "LOW-WATERMARK", align="right", wide=True),
        Column("error", "ERROR", wide=True),
    )
)


@click.group(cls=LazyGroup)
def record():
    """Produce, consume and delete records.

    produce and consume arrive in a later kctl release.
    """


@record.command("delete")
@click.argument("selectors", nargs=-1, required=True, metavar="TOPIC[:PARTITIONS]...")
@click.option("--before", required=True, metavar="OFFSET|@TIME|end", help="Delete records below OFFSET, older than @TIME (ISO-8601, epoch ms, @-1d), or all (end).")
@click.option("--dry-run", is_flag=True, help="Show what would be deleted, delete nothing.")
@yes_option
@global_options
@pass_app
def delete(app: App, selectors, before, dry_run, yes):
    """Delete records at the start of partitions (moves the log start offset).

    Kafka can only delete a prefix of a partition: every record below the given offset.
    The plan (records to delete per partition) is shown first; deleting needs
    confirmation on a terminal and --yes without one. Offsets beyond the log end are
    clamped to it, and partitions already past the target are left unchanged.

    \b
    Examples:
      kctl record delete orders --before 1000 --dry-run
      kctl record delete orders:0,2 --before @2026-11-01T00:00:00Z --yes
      kctl record delete logs --before @-7d --yes
      kctl record delete scratch --before end --yes
    """
    from kctl.admin.offsets import delete_records, parse_selector, plan_delete_records, resolve_partitions
    from kctl.errors import UsageError
    from kctl.timespec import format_instant, parse_instant

    before_offset = before_ms = None
    to_end = before == "end"
    if before.startswith("@"):
        before_ms = parse_instant(before[1:])
        app.note(f"--before {before} is {format_instant(before_ms)} ({before_ms})")
    elif not to_end:
        if not before.isdigit():
            raise UsageError(f"unable to parse --before {before!r}: expected an offset, @TIME or end")
        before_offset = int(before)
    pairs = resolve_partitions(app.session, [parse_selector(s) for s in selectors])
    plans = plan_delete_records(app.session, pairs, before_offset=before_offset, before_ms=before_ms, to_end=to_end)
    total = sum(p.records_deleted for p in plans)
    if dry_run or total == 0:
        app.out.table(plans, DELETE_TABLE)
        app.note(f"{'would delete' if dry_run else 'nothing to delete:'} {total} record(s) in {sum(1 for p in plans if p.records_deleted)} partition(s)")
        return
    app.confirm(
        f"Delete {total} record(s) from {sum(1 for p in plans if p.records_deleted)} partition(s)? This cannot be undone.",
        yes=yes,
        action="delete records",
    )
    results, errors = delete_records(app.session, plans)
    report(app, results, errors, DELETE_TABLE, "delete records")
