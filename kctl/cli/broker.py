"""kctl broker: the brokers of the cluster."""

from __future__ import annotations

import click

from kctl.cli._app import App
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options, pass_app, runs, yes_option
from kctl.output.spec import Column, TableSpec, human_bytes


@click.group(cls=LazyGroup, aliases={"ls": "list"})
def broker():
    """List, balance, drain and unregister the cluster's brokers."""


@broker.command("list")
@click.option("--include-fenced", is_flag=True, help="Also the brokers the controller has fenced (stopped, starting, or shut down but still registered), with a STATE column (Kafka 4.0+).")
@global_options
@runs("kctl.cli.reads.broker:list_")
def list_():
    """List brokers: id, host, port, rack, and which one is the controller.

    A fenced broker is registered but takes no traffic: it stopped heartbeating, or is
    starting or shutting down. Only --include-fenced lists them (STATE fenced or unfenced),
    as kafka-cluster list-endpoints --include-fenced-brokers does.

    \b
    Examples:
      kctl broker list
      kctl broker list -o plain --no-headers | cut -f2,3
      kctl broker list --include-fenced
    """



BALANCE_TABLE = TableSpec(
    (
        Column("broker", "BROKER", align="right"),
        Column("alive", "ALIVE"),
        Column("leaders", "LEADERS", align="right"),
        Column("replicas", "REPLICAS", align="right"),
        Column("in_sync", "IN-SYNC", align="right"),
        Column("out_of_sync", "OUT-OF-SYNC", align="right"),
        Column("preferred_leaders", "PREFERRED-LEADERS", align="right"),
        Column("not_leading_preferred", "NOT-LEADING-PREFERRED", align="right"),
    )
)


@broker.command("balance")
@click.option("-i", "--internal", is_flag=True, help="Count internal topics' partitions too.")
@global_options
@pass_app
def balance(app: App, internal: bool):
    """Show how partitions spread over brokers: leaders, replicas, ISR membership.

    PREFERRED-LEADERS counts partitions whose first replica is the broker;
    NOT-LEADING-PREFERRED counts those it should lead but does not, which a preferred
    leader election would move back. OUT-OF-SYNC counts its replicas outside the ISR.
    `kctl cluster balance` evens replicas, bytes and leaders out.

    \b
    Examples:
      kctl broker balance
      kctl broker balance --internal -o json
    """
    from kctl.admin.cluster.partitions import balance as broker_balance
    from kctl.admin.cluster.partitions import snapshot

    app.out.table(broker_balance(snapshot(app.session, include_internal=internal)), BALANCE_TABLE)


LOG_DIR_TABLE = TableSpec(
    (
        Column("broker", "BROKER", align="right"),
        Column("log_dir", "LOG-DIR"),
        Column("size_bytes", "SIZE", get=human_bytes("size_bytes"), align="right"),
        Column("replicas", "REPLICAS", align="right"),
        Column("usable_bytes", "USABLE", get=human_bytes("usable_bytes"), align="right"),
        Column("total_bytes", "TOTAL", get=human_bytes("total_bytes"), align="right"),
        Column("error", "ERROR"),
        Column("cordoned", "CORDONED", wide=True),
        Column("size_bytes", "SIZE-BYTES", wide=True, align="right"),
    )
)
REPLICA_SIZE_TABLE = TableSpec(
    (
        Column("broker", "BROKER", align="right"),
        Column("log_dir", "LOG-DIR"),
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("size_bytes", "SIZE", get=human_bytes("size_bytes"), align="right"),
        Column("offset_lag", "OFFSET-LAG", align="right"),
        Column("is_future", "FUTURE"),
        Column("size_bytes", "SIZE-BYTES", wide=True, align="right"),
    )
)


@broker.command("log-dirs")
@click.option("-t", "--topic", "topics", multiple=True, metavar="TOPIC", help="Only these topics' replicas (repeatable).")
@click.option("--broker", "brokers", multiple=True, type=int, metavar="ID", help="Only these brokers (repeatable).")
@click.option("--replicas", is_flag=True, help="One row per replica instead of per log directory.")
@global_options
@pass_app
def log_dirs(app: App, topics: tuple[str, ...], brokers: tuple[int, ...], replicas: bool):
    """Show log directories: size used, replicas, free and total space.

    Sizes are human-readable in tables and exact bytes in JSON and CSV (SIZE-BYTES
    with -o wide). With --topic, SIZE counts only those topics' replicas.

    \b
    Examples:
      kctl broker log-dirs
      kctl broker log-dirs --topic orders --replicas
      kctl broker log-dirs --broker 1 -o json
    """
    from kctl.admin.cluster.logdirs import describe_log_dirs
    from kctl.admin.topics.topics import validate_topic_name

    for topic in topics:
        validate_topic_name(topic)
    dirs, sizes = describe_log_dirs(app.session, topics=topics, brokers=brokers)
    app.out.table(sizes if replicas else dirs, REPLICA_SIZE_TABLE if replicas else LOG_DIR_TABLE)


@broker.command("drain")
@click.argument("brokers", nargs=-1, required=True, type=int, metavar="ID...")
@click.option("--execute", is_flag=True, help="Start the moves (without it: a dry run showing the plan).")
@click.option("--throttle", metavar="RATE", help="Replication throttle while replicas move, e.g. 50MB/s (bytes per second).")
@click.option("--wait/--no-wait", default=True, show_default=True, help="With --execute: wait until every partition has moved, then remove the throttle.")
@click.option("--wait-timeout", type=click.FloatRange(min=0), metavar="SECONDS", help="Give up waiting after this long (the moves go on).")
@click.option("--plan-out", type=click.Path(dir_okay=False, writable=True), metavar="PATH",
              help="Also write the plan as kafka-reassign-partitions JSON (for replication reassign verify or cancel).")
@yes_option
@global_options
@pass_app
def drain(app: App, brokers: tuple[int, ...], execute: bool, throttle: str | None, wait: bool, wait_timeout: float | None, plan_out: str | None, yes: bool):
    """Move every replica off brokers before they are retired.

    The plan moves each partition holding one of the brokers to the other live brokers,
    keeping its replication factor and rack spread and choosing the least loaded brokers
    (counting every partition); leadership leaves with the replicas. Without --execute
    it is a dry run. With --execute it starts the reassignment (--throttle as
    replication reassign execute sets it) and, unless --no-wait, shows progress until
    every partition has moved, then removes the throttle. Run again, it resumes: a
    partition already moving off the brokers is waited for, not moved twice. Once
    drained and stopped, a broker is removed with `kctl broker unregister`.

    \b
    Examples:
      kctl broker drain 3
      kctl broker drain 3 --execute --throttle 50MB/s --yes
    """
    from kctl.admin.cluster.drain import plan_drain
    from kctl.admin.cluster.replication import execute as start
    from kctl.admin.cluster.replication import plan_to_json, preview
    from kctl.cli._batch import report
    from kctl.cli._moves import MOVE_TABLE, finish, wait_for_moves
    from kctl.sizes import parse_bytes

    rate = parse_bytes(throttle, "--throttle") if throttle is not None else None
    plan = plan_drain(app.session, brokers)
    named = ", ".join(map(str, plan.brokers))
    everything = [*plan.moves, *plan.moving]
    if plan_out:
        with open(plan_out, "w", encoding="utf-8") as handle:
            handle.write(plan_to_json(everything))
    if not execute or not everything:
        app.out.table(preview(plan.moves) + [_in_progress(r) for r in preview(plan.moving)], MOVE_TABLE)
        if not everything:
            app.note(f"broker(s) {named} hold no replicas: nothing to move")
        else:
            app.note(f"dry run: {len(plan.moves)} partition(s) would move off broker(s) {named}"
                     + (f", {len(plan.moving)} already moving" if plan.moving else "") + "; --execute starts it")
        return
    if plan.moving and rate is not None:  # resumed with a new throttle: it applies to the moves in flight too
        from kctl.admin.cluster.replication import set_throttles

        set_throttles(app.session, list(plan.moving), rate)
    if plan.moves:
        app.confirm(f"Move the replicas of {len(plan.moves)} partition(s) off broker(s) {named}?", yes=yes, action=f"drain broker(s) {named}")
        rows, errors = start(app.session, list(plan.moves), throttle=rate)
        if errors or not wait:
            report(app, rows, errors, MOVE_TABLE, f"drain broker(s) {named}")
            return
    elif not wait:
        app.note(f"{len(plan.moving)} partition(s) already moving off broker(s) {named}")
        return
    finish(app, wait_for_moves(app, everything, wait_timeout=wait_timeout), f"drain broker(s) {named}")


def _in_progress(row):
    from dataclasses import replace

    return replace(row, status="in-progress")


@broker.command("unregister")
@click.argument("broker_id", type=int, metavar="ID")
@click.option("--force", is_flag=True, help="Unregister even a broker still named as a replica (those replicas stay offline).")
@yes_option
@global_options
@pass_app
def unregister(app: App, broker_id: int, force: bool, yes: bool):
    """Remove the registration of a broker that is gone (kafka-cluster unregister).

    A KRaft cluster keeps a stopped broker registered (fenced) until it is unregistered.
    Refused with one line (exit 65) for a broker that is alive, and for one still named
    as a replica unless --force: drain it first (`kctl broker drain`). A broker that is
    not registered is exit 5.

    \b
    Examples:
      kctl broker unregister 3 --yes
    """
    from kctl.admin.cluster.drain import unregister as remove

    remove(app.session, broker_id, force=force,
           confirm=lambda: app.confirm(f"Unregister broker {broker_id}?", yes=yes, action=f"unregister broker {broker_id}"))
    app.note(f"broker {broker_id} unregistered")
