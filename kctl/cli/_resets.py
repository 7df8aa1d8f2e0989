"""What the commands that reset group offsets share (`group reset-offsets`, `mirror
failover`): the plan's table, the dry run, the confirmation and the journalled apply."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kctl.cli._app import App
from kctl.output.spec import Column, TableSpec

if TYPE_CHECKING:
    from kctl.admin.client.session import AdminSession

RESET_TABLE = TableSpec(
    (
        Column("group", "GROUP"),
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("current", "CURRENT", align="right"),
        Column("new", "NEW", align="right"),
        Column("delta", "DELTA", align="right"),
        Column("note", "NOTE"),
        Column("log_start", "LOG-START", align="right", wide=True),
        Column("log_end", "LOG-END", align="right", wide=True),
    )
)


def run_reset(app: App, session: AdminSession, plans, execute: bool, yes: bool, *, export: str | None = None,
              backup: str | None = None) -> None:
    """Show a reset plan; with `execute`, confirm, then journal, apply and verify it on
    `session` (resets.execute), telling where the undo journal is."""
    import shlex
    import sys

    from kctl.admin.groups import resets

    app.out.table(plans, RESET_TABLE)
    if export:
        resets.write_offsets_csv(export, plans)
    back, skip = resets.totals(plans)
    summary = f"{len(plans)} partition(s): {back} record(s) to re-consume, {skip} to skip"
    if not execute:
        app.note(f"dry run: {summary}; nothing changed (add --execute to apply)")
        return
    app.confirm(f"Reset offsets of {len(plans)} partition(s) ({back} to re-consume, {skip} to skip)?", yes=yes, action="reset offsets")
    journal = resets.journal_dir(app.env)
    resets.execute(session, plans, journal=journal, bootstrap=session.settings.bootstrap_servers, command=shlex.join(["kctl", *sys.argv[1:]]),
                   backup=backup, journaled=lambda journal_id: app.note(f"undo journal {journal_id} written to {journal}"))
    app.note(f"reset applied and verified: {summary}")
