"""Waiting for replica moves and reporting them, shared by `replication reassign`, `topic
alter --replication-factor` and `apply`."""

from __future__ import annotations

import time

from kctl.cli._app import App
from kctl.output.spec import Column, TableSpec

MOVE_TABLE = TableSpec(
    (
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("current_replicas", "CURRENT"),
        Column("target_replicas", "TARGET"),
        Column("adding", "ADDING"),
        Column("removing", "REMOVING"),
        Column("status", "STATUS"),
        Column("error", "ERROR", wide=True),
    )
)

def wait_for_moves(app: App, moves, *, wait_timeout: float | None, preserve_throttles: bool = False, session=None):
    """Poll until every partition is done (or the wait times out), with progress on stderr;
    on `session` when the moves are on another cluster than the command's."""
    from kctl.admin.cluster.replication import verify
    from kctl.cli._progress import progress

    with progress(app, "reassignment", total=len(moves), unit="partitions") as shown:
        while True:
            rows = verify(session or app.session, moves, clear=not preserve_throttles)
            done = sum(1 for r in rows if r.status == "done")
            shown.update(done)
            shown.summary = f"reassignment: {done}/{len(rows)} partition(s) done in {shown.seconds:.0f}s"
            if done == len(rows) or any(r.status == "failed" for r in rows):
                return rows
            if wait_timeout is not None and shown.seconds > wait_timeout:
                return rows
            time.sleep(1.0)


def finish(app: App, rows, action: str) -> None:
    """Render the final rows; anything not done is an error for the exit status."""
    from kctl.errors import KctlError, TimeoutError_

    app.out.table(rows, MOVE_TABLE)
    failed = [r for r in rows if r.status == "failed"]
    pending = [r for r in rows if r.status == "in-progress"]
    if failed:
        for r in failed:
            app.error_line(f"unable to {action} {r.topic}-{r.partition}: {r.error}")
        raise KctlError(action=action, cause=f"{len(failed)} partition(s) failed")
    if pending:
        raise TimeoutError_(
            action=action, cause=f"{len(pending)} partition(s) still moving",
            hint="kctl replication reassign verify PLAN shows progress; throttles stay until it reports done",
        )
