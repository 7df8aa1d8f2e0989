"""kctl replication: partition reassignment and leader election."""

from __future__ import annotations

import sys

import click

from kctl.cli._app import App
from kctl.cli._batch import report
from kctl.cli._lazy import LazyGroup
from kctl.cli._moves import MOVE_TABLE, finish, wait_for_moves
from kctl.cli._options import global_options, pass_app, yes_option
from kctl.output.spec import Column, TableSpec

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from kctl.admin.cluster.replication import PartitionMove

ONGOING_TABLE = TableSpec(
    (
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("replicas", "REPLICAS"),
        Column("adding_replicas", "ADDING"),
        Column("removing_replicas", "REMOVING"),
    )
)
ELECTION_TABLE = TableSpec(
    (
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("status", "STATUS"),
        Column("leader", "LEADER", align="right"),
        Column("error", "ERROR", wide=True),
    )
)


def _read_plan(app: App, path: str) -> list[PartitionMove]:
    from kctl.admin.cluster.replication import load_plan
    from kctl.errors import InvalidError

    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as exc:
        raise InvalidError(action=f"read reassignment plan {path}", cause=str(exc.strerror)) from exc
    return load_plan(app.session, text, "(stdin)" if path == "-" else path)


def _rate(text: str | None) -> int | None:
    from kctl.sizes import parse_bytes

    return parse_bytes(text, "--throttle") if text is not None else None


@click.group(cls=LazyGroup)
def replication() -> None:
    """Reassign partitions and elect leaders."""


@replication.group("reassign", cls=LazyGroup)
def reassign() -> None:
    """Move partition replicas between brokers (kafka-reassign-partitions compatible).

    Plans are kafka-reassign-partitions.sh's JSON, so either tool can generate, execute
    or verify what the other made.
    """


@reassign.command("generate")
@click.option("-t", "--topic", "topics", multiple=True, required=True, metavar="TOPIC", help="Topic to place (repeatable).")
@click.option("--brokers", metavar="ID,ID,...", help="Brokers to place replicas on (default: every broker).")
@click.option("--replication-factor", "--rf", "replication_factor", type=click.IntRange(min=1), metavar="N", help="Change the replication factor too.")
@click.option("--disable-rack-aware", is_flag=True, help="Ignore broker racks.")
@click.option("--rollback-out", type=click.Path(dir_okay=False, writable=True), help="Also write the current assignment here, to undo with.")
@global_options
@pass_app
def generate(app: App, topics: tuple[str, ...], brokers: str | None, replication_factor: int | None, disable_rack_aware: bool,
             rollback_out: str | None) -> None:
    """Propose a balanced, rack-aware placement and print it as a plan.

    Replicas that can stay do stay; the rest go to the least-loaded brokers, preferring
    racks the partition does not use yet. The plan (Kafka's JSON) goes to stdout unless
    -o table/plain/wide is asked for; a summary goes to stderr. Nothing changes.

    \b
    Examples:
      kctl replication reassign generate -t orders --brokers 1,2,3 > plan.json
      kctl replication reassign generate -t orders -t payments --rf 3 --rollback-out undo.json
      kctl replication reassign generate -t orders --brokers 1,2 -o table
    """
    from kctl.admin.cluster.replication import generate_plan, plan_to_json, preview
    from kctl.errors import UsageError

    broker_ids = None
    if brokers:
        try:
            broker_ids = [int(b) for b in brokers.split(",") if b.strip()]
        except ValueError:
            raise UsageError(action=f"parse --brokers {brokers!r}", cause="expected broker ids such as 1,2,3") from None
    moves = generate_plan(app.session, list(dict.fromkeys(topics)), broker_ids, replication_factor=replication_factor, rack_aware=not disable_rack_aware)
    if rollback_out:
        with open(rollback_out, "w", encoding="utf-8") as handle:
            handle.write(plan_to_json(moves, current=True))
    moving = [m for m in moves if m.target != m.current]
    app.note(f"{len(moving)} of {len(moves)} partition(s) move; {sum(len(m.adding) for m in moves)} replica(s) to copy")
    if app.output_format in ("table", "wide", "plain", "csv", "jsonl"):
        app.out.table(preview(moves), MOVE_TABLE)
    else:
        app.out.raw(plan_to_json(moves))


@reassign.command("execute")
@click.argument("plan", type=click.Path(dir_okay=False, allow_dash=True), metavar="PLAN")
@click.option("--throttle", metavar="RATE", help="Replication throttle, e.g. 50MB/s or 10MiB (bytes per second).")
@click.option("--wait/--no-wait", default=False, help="Wait until every partition has moved, then remove the throttle.")
@click.option("--wait-timeout", type=click.FloatRange(min=0), metavar="SECONDS", help="With --wait: give up waiting after this long.")
@click.option("--rollback-out", type=click.Path(dir_okay=False, writable=True), help="Write the current assignment here first, to undo with.")
@click.option("--dry-run", is_flag=True, help="Show the moves; change nothing.")
@yes_option
@global_options
@pass_app
def execute(app: App, plan: str, throttle: str | None, wait: bool, wait_timeout: float | None, rollback_out: str | None, dry_run: bool,
            yes: bool) -> None:
    """Start moving replicas as PLAN says (a file, or - for stdin).

    With --throttle the same replication throttles kafka-reassign-partitions sets are
    applied; `verify` (or --wait) removes them when every partition is done.

    \b
    Examples:
      kctl replication reassign execute plan.json --throttle 50MB --yes
      kctl replication reassign execute plan.json --wait --rollback-out undo.json --yes
      kctl replication reassign generate -t orders --brokers 2,3 | \\
          kctl replication reassign execute - --dry-run
    """
    from kctl.admin.cluster.replication import execute as start
    from kctl.admin.cluster.replication import plan_to_json, preview

    rate = _rate(throttle)
    moves = _read_plan(app, plan)
    moving = [m for m in moves if m.target != m.current]
    if dry_run or not moving:
        app.out.table(preview(moves), MOVE_TABLE)
        app.note(f"{len(moving)} partition(s) would move" if dry_run else "nothing to move: the replicas already match the plan")
        return
    if rollback_out:
        with open(rollback_out, "w", encoding="utf-8") as handle:
            handle.write(plan_to_json(moves, current=True))
    app.confirm(f"Move replicas of {len(moving)} partition(s)?", yes=yes, action="reassign partitions")
    rows, errors = start(app.session, moves, throttle=rate)
    if not wait or errors:
        report(app, rows, errors, MOVE_TABLE, "reassign partitions")
        return
    finish(app, wait_for_moves(app, moves, wait_timeout=wait_timeout), "reassign partitions")


@reassign.command("verify")
@click.argument("plan", type=click.Path(dir_okay=False, allow_dash=True), metavar="PLAN")
@click.option("--preserve-throttles", is_flag=True, help="Leave the throttles in place even when everything is done.")
@global_options
@pass_app
def verify_(app: App, plan: str, preserve_throttles: bool) -> None:
    """Report each partition of PLAN as done, in-progress or failed.

    When every partition is done the replication throttles are removed (unless
    --preserve-throttles). Exits 0 only when all are done.

    \b
    Examples:
      kctl replication reassign verify plan.json
      kctl replication reassign verify plan.json -o json | jq '.[] | select(.status != "done")'
    """
    from kctl.admin.cluster.replication import verify

    finish(app, verify(app.session, _read_plan(app, plan), clear=not preserve_throttles), "complete the reassignment of")


@reassign.command("cancel")
@click.argument("plan", required=False, type=click.Path(dir_okay=False, allow_dash=True), metavar="[PLAN]")
@click.option("--all", "all_", is_flag=True, help="Cancel every in-progress reassignment.")
@yes_option
@global_options
@pass_app
def cancel_(app: App, plan: str | None, all_: bool, yes: bool) -> None:
    """Cancel in-progress reassignments (those of PLAN, or --all).

    Replicas added so far are removed and the partitions keep their original replicas.

    \b
    Examples:
      kctl replication reassign cancel plan.json --yes
      kctl replication reassign cancel --all --yes
    """
    from kctl.admin.cluster.replication import cancel, clear_throttles

    if bool(plan) == all_:
        raise click.UsageError("give a PLAN or --all")
    moves = _read_plan(app, plan) if plan else None
    app.confirm("Cancel the in-progress reassignments?", yes=yes, action="cancel reassignments")
    cancelled = cancel(app.session, moves)
    if moves is not None:
        clear_throttles(app.session, moves)
    app.out.table(cancelled, ONGOING_TABLE)
    app.note(f"cancelled {len(cancelled)} reassignment(s)")


@reassign.command("list")
@global_options
@pass_app
def list_(app: App) -> None:
    """List reassignments in progress, with the replicas being added and removed.

    \b
    Examples:
      kctl replication reassign list
      kctl replication reassign list -o json
    """
    from kctl.admin.cluster.replication import list_reassignments

    app.out.table(list_reassignments(app.session), ONGOING_TABLE)


@replication.command("elect-leaders")
@click.argument("selectors", nargs=-1, metavar="[TOPIC[:PARTITIONS]...]")
@click.option("--preferred", "kind", flag_value="preferred", help="Move leadership back to each partition's first replica.")
@click.option("--unclean", "kind", flag_value="unclean", help="Elect an out-of-sync replica where no in-sync one is alive (may lose data).")
@click.option("--all", "all_", is_flag=True, help="Every partition of the cluster.")
@yes_option
@global_options
@pass_app
def elect_leaders(app: App, selectors: tuple[str, ...], kind: str | None, all_: bool, yes: bool) -> None:
    """Run preferred or unclean leader elections.

    Partitions already led by their preferred replica report not-needed. Unclean
    elections can lose acknowledged records and need confirmation (or --yes).

    \b
    Examples:
      kctl replication elect-leaders --preferred --all
      kctl replication elect-leaders --preferred orders:0-3
      kctl replication elect-leaders --unclean orders:2 --yes
    """
    from kctl.admin.cluster.replication import elect_leaders as elect
    from kctl.admin.topics.offsets import parse_selector, resolve_partitions

    if kind is None:
        raise click.UsageError("choose --preferred or --unclean")
    if bool(selectors) == all_:
        raise click.UsageError("name partitions (TOPIC[:PARTITIONS]) or give --all")
    pairs = None if all_ else resolve_partitions(app.session, [parse_selector(s) for s in selectors], action="elect leaders of")
    if kind == "unclean":
        app.confirm("Unclean elections may lose acknowledged records. Go on?", yes=yes, action="elect leaders")
    rows, errors = elect(app.session, pairs, unclean=kind == "unclean")
    report(app, rows, errors, ELECTION_TABLE, "elect leaders")
