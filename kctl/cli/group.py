"""kctl group: consumer groups, their members, committed offsets and lag."""

from __future__ import annotations

import click

from kctl.cli._app import App
from kctl.cli._batch import report
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import RegexType, global_options, pass_app, runs, yes_option
from kctl.cli._resets import run_reset
from kctl.output.spec import Column, DocumentSpec, TableSpec

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from collections.abc import Callable

    from kctl.admin.groups.resets import ResetSpec
    from kctl.errors import GroupActiveError

RESULT_TABLE = TableSpec((Column("group", "GROUP"), Column("status", "STATUS"), Column("error", "ERROR", wide=True)))
# kctl.admin.groups.STATES and TYPES, repeated here so that --help imports no client
# library (a test keeps them equal).
GROUP_STATES = ("Stable", "Empty", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling", "NotReady", "Dead", "Unknown")
GROUP_TYPES = ("classic", "consumer", "share", "streams")


@click.group(cls=LazyGroup, aliases={"ls": "list", "rm": "delete"})
def group() -> None:
    """Groups of every type (classic, consumer, share, streams): members, offsets, lag."""


@group.command("list")
@click.option("-r", "--regex", type=RegexType(), help="Only groups whose whole id matches.")
@click.option("-s", "--state", "states", multiple=True, type=click.Choice(GROUP_STATES, case_sensitive=False), metavar="STATE", help=f"Only groups in this state: {', '.join(GROUP_STATES)} (repeatable).")
@click.option("--type", "types", multiple=True, type=click.Choice(GROUP_TYPES, case_sensitive=False), metavar="TYPE", help=f"Only groups of this type: {', '.join(GROUP_TYPES)} (repeatable).")
@global_options
@runs("kctl.cli.reads.group:list_")
def list_() -> None:
    """List groups of every type with state, type, member count and assignor.

    Types are Kafka 4's: classic (the JoinGroup protocol), consumer (KIP-848,
    group.protocol=consumer), share (KIP-932 queues) and streams (KIP-1071). States
    are Kafka's names for each type: classic groups go through PreparingRebalance and
    CompletingRebalance, consumer and streams groups through Assigning and Reconciling,
    streams groups are NotReady until their internal topics exist.

    \b
    Examples:
      kctl group list
      kctl group list --state Empty -o json
      kctl group list --type share --type streams
      kctl group list -r 'billing-.*'
    """


@group.command("describe")
@click.argument("groups", nargs=-1, required=True, metavar="GROUP...")
@global_options
@runs("kctl.cli.reads.group:describe")
def describe() -> None:
    """Show groups: state, members (client id, host, assignment), offsets.

    Groups of every type are described with what Kafka knows of them. Consumer
    (KIP-848), share and streams groups add the group and assignment epochs (they
    differ while members reconcile) and each member's epoch; -o wide adds the target
    assignment a member reconciles towards and its subscription (topics or regex).
    Streams members own tasks, shown as SUBTOPOLOGY:PARTITIONS, and a streams group
    adds its TOPOLOGY: each subtopology's source topics and internal topics
    (repartition sources; -o wide: repartition sinks and changelogs). OFFSET is the
    committed offset, or for a share group the share-partition start offset. JSON
    output is a list, one object per group (null where a type has no such field).

    \b
    Examples:
      kctl group describe billing
      kctl group describe billing audit -o json
    """


@group.command("lag")
@click.argument("groups", nargs=-1, metavar="[GROUP...]")
@click.option("-a", "--all", "all_", is_flag=True, help="Every group of the cluster.")
@click.option("-t", "--topic", "topics", multiple=True, metavar="TOPIC", help="Only this topic's partitions (repeatable).")
@click.option("--isolation", type=click.Choice(["read_uncommitted", "read_committed"]), default="read_uncommitted", show_default=True, help="read_committed measures to the last stable offset (a note says when an open transaction holds it back).")
@click.option("--time-lag", type=click.Choice(["none", "record", "interp"]), default="none", show_default=True, help="Lag in seconds: record (timestamp of the next record) or interp (from the history of earlier runs).")
@click.option("--history", is_flag=True, help="Add this sample to the lag history (implied by --time-lag interp; group status always does).")
@click.option("--state-file", type=click.Path(dir_okay=False), metavar="PATH", help="Lag history file (default $XDG_STATE_HOME/kctl/lag/<bootstrap>.json).")
@click.option("-w", "--watch", is_flag=True, help="Refresh every --interval with consume and produce rates and time to catch up (jsonl when piped); Ctrl-C stops, exit 0.")
@click.option("--until-caught-up", is_flag=True, help="Check again every --interval until every partition's lag is at most --max-lag.")
@click.option("--max-lag", type=click.IntRange(min=0), default=0, show_default=True, metavar="N", help="With --until-caught-up: the lag that counts as caught up.")
@click.option("--max-seconds", type=click.FloatRange(min=0), metavar="S", help="With --until-caught-up: also require lag in seconds at most S (implies --time-lag record).")
@click.option("--for", "for_", metavar="DURATION", help="With --until-caught-up: give up (status 2) after DURATION; with --watch: stop after it.")
@click.option("--interval", type=click.FloatRange(min=0.1), default=5.0, show_default=True, metavar="SECONDS", help="Time between checks with --watch and --until-caught-up, between samples with --serve.")
@click.option("--serve", metavar="[HOST]:PORT", help="Serve the lag as Prometheus metrics on http://HOST:PORT/metrics (and /healthz), sampling every --interval, until Ctrl-C or SIGTERM (exit 0).")
@global_options
@runs("kctl.cli.reads.group:lag")
def lag() -> None:
    """Show lag per partition: committed offset, log start and end, records left.

    LAG is what is left to consume: log end minus the committed offset, counted from
    the log start when retention deleted records before they were consumed. FLAGS say
    when that happened (BELOW_LOG_START), when a partition has no committed offset
    (NO_COMMIT; LAG is empty) and when the commit is past the log end (AHEAD_OF_END).
    RAW-LAG (-o wide, JSON) is log end minus committed, unclamped. Groups without
    members are included: a stopped consumer is when lag matters most. On topics with
    tiered storage, a group whose next offset is below the earliest local offset reads
    from remote storage: a note says so, and remote_read is true in JSON.

    --time-lag record reads the timestamp of each lagging partition's next record
    (without joining the group); interp estimates it from the history of earlier runs
    kept in a state file (runs with --history, --time-lag interp and `group status` add
    to it), so cron jobs get time lag and trends without a daemon; a commit older than
    that history has no estimate (it is never extrapolated). -o prom prints
    kafka-lag-exporter's metrics.
    --until-caught-up is a deploy gate: status 0 once caught up, 2 when --for ends first.
    --serve runs an exporter: a scrape returns the last complete sample at once (time lag
    interpolated from the samples kept in memory while they bracket the commit, else the
    timestamp of the record at the commit), never waiting on the cluster; when the
    cluster cannot be read, kctl_lag_exporter_up is 0 and kctl_lag_exporter_sample_age_seconds
    grows, and /healthz answers 503 after three intervals without a good sample.

    \b
    Examples:
      kctl group lag billing
      kctl group lag --all -o json | jq '.[] | {group, lag_sum}'
      kctl group lag billing -t orders --isolation read_committed --time-lag record
      kctl group lag --all -o prom > /var/lib/node_exporter/kafka_lag.prom
      kctl group lag billing --until-caught-up --max-lag 100 --for 10m
      kctl group lag billing --watch --interval 2          # Ctrl-C stops it (exit 0)
      kctl group lag --all --serve :9308 --interval 30     # Ctrl-C stops it (exit 0)
    """


STATUS_TABLE = TableSpec(
    (
        Column("group", "GROUP"),
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("lag", "LAG", align="right"),
        Column("lag_seconds", "LAG-S", align="right"),
        Column("status", "STATUS"),
        Column("samples", "SAMPLES", align="right"),
        Column("reason", "REASON"),
    )
)


@group.command("status")
@click.argument("groups", nargs=-1, metavar="[GROUP...]")
@click.option("-a", "--all", "all_", is_flag=True, help="Every group of the cluster.")
@click.option("--window", type=click.IntRange(min=2), default=10, show_default=True, help="Samples of history to judge by.")
@click.option("--warn-lag", type=click.IntRange(min=0), metavar="N", help="WARN when a partition's lag reaches N.")
@click.option("--crit-lag", type=click.IntRange(min=0), metavar="N", help="ERR when a partition's lag reaches N.")
@click.option("--warn-seconds", type=click.FloatRange(min=0), metavar="S", help="WARN when a partition is S seconds behind.")
@click.option("--crit-seconds", type=click.FloatRange(min=0), metavar="S", help="ERR when a partition is S seconds behind.")
@click.option("--state-file", type=click.Path(dir_okay=False), metavar="PATH", help="Lag history file (default $XDG_STATE_HOME/kctl/lag/<bootstrap>.json).")
@global_options
@pass_app
def status(app: App, groups: tuple[str, ...], all_: bool, window: int, warn_lag: int | None, crit_lag: int | None, warn_seconds: float | None, crit_seconds: float | None, state_file: str | None) -> None:
    """Judge groups Burrow-style from the lag history, with Nagios exit statuses.

    Each run adds a sample to the history and judges each partition by the last
    --window samples: REWIND (the commit went backwards), STOP (lag, no progress, no
    members), STALL (lag, no progress, members present), WARN (lag grew in every
    sample), else OK; until the window has its samples a partition is OK. A partition
    without a committed offset is judged by its backlog (records waiting): STOP/STALL
    when records wait through the whole window, and the lag thresholds apply to it.
    --warn-*/--crit-* thresholds escalate to WARN/ERR. Exit status:
    0 OK, 1 WARN, 2 ERR/STOP/STALL/REWIND, 3 when the state could not be read. Run it
    from cron: the history builds up between runs.

    \b
    Examples:
      kctl group status billing
      kctl group status --all --crit-lag 100000 --warn-seconds 300 -o json
    """
    from kctl.admin.groups.lag import group_lag, with_history
    from kctl.admin.groups.lag_history import SEVERITY, judge
    from kctl.cli.reads.group import state_file_path
    from kctl.errors import KctlError

    if bool(groups) == all_:
        raise click.UsageError("name groups or give --all")
    try:
        found, errors = group_lag(app.session, None if all_ else groups)
    except KctlError as exc:
        app.error_line(exc.message)
        click.get_current_context().exit(3)
    found, histories = with_history(found, state_file_path(app, state_file), interpolate=True)
    verdicts = judge(found, histories, window=window, warn_lag=warn_lag, crit_lag=crit_lag, warn_seconds=warn_seconds, crit_seconds=crit_seconds)
    if app.out.format in ("json", "jsonl"):
        app.out.documents(verdicts, DocumentSpec())
    else:
        app.out.table([p for v in verdicts for p in v.partitions], STATUS_TABLE)
        for v in verdicts:
            app.note(f"{v.group}: {v.status} ({v.state}, {v.members} member(s), lag {v.lag_sum})")
    for error in errors.values():
        app.error_line(error.message)
    worst = max([SEVERITY[v.status] for v in verdicts] + ([3] if errors else []), default=0)
    click.get_current_context().exit(worst)


@group.command("delete")
@click.argument("groups", nargs=-1, required=True, metavar="GROUP...")
@click.option("--internal-topics", is_flag=True,
              help="Streams groups: also delete their internal (repartition and changelog) topics, as kafka-streams-groups --delete-all-internal-topics.")
@yes_option
@global_options
@pass_app
def delete(app: App, groups: tuple[str, ...], internal_topics: bool, yes: bool) -> None:
    """Delete groups and their committed offsets (only groups without members).

    With --internal-topics (streams groups only), the topics Kafka Streams made for each
    group go too, once the group is deleted: those its topology names and those named
    after its application id ("<group>-...-repartition", "<group>-...-changelog").

    \b
    Examples:
      kctl group delete old-consumer --yes
    """
    from kctl.admin.groups.groups import delete_groups
    from kctl.admin.groups.models import GroupResult

    ids = list(dict.fromkeys(groups))
    topics: dict[str, tuple[str, ...]] = {}
    question = f"Delete {len(ids)} group(s) and their committed offsets: {', '.join(ids)}?"
    if internal_topics:
        from kctl.admin.groups.streams import internal_topics as find

        topics = find(app.session, ids)
        named = [t for g in ids for t in topics.get(g, ())]
        question = question[:-1] + (f", and their internal topics: {', '.join(named)}?" if named else " (they have no internal topics)?")
    app.confirm(question, yes=yes, action="delete groups")
    results, errors = delete_groups(app.session, ids)
    doomed = [t for g in ids if g not in errors for t in topics.get(g, ())]
    if doomed:
        from kctl.admin.topics.topics import delete_topics

        deleted, failed = delete_topics(app.session, doomed)
        results = [*results, *(GroupResult(group=r.name, status=f"{r.status} (internal topic)", error=r.error) for r in deleted)]
        errors = {**errors, **{f"topic {name}": error for name, error in failed.items()}}
    report(app, results, errors, RESULT_TABLE, "delete groups")


def _spec(app: App, to_earliest: bool, to_latest: bool, to_current: bool, to_offset: int | None, shift_by: int | None,
          to_datetime: str | None, by_duration: str | None) -> ResetSpec:
    from typing import cast

    from kctl.admin.groups.resets import ResetSpec
    from kctl.timespec import format_instant, parse_duration, parse_instant

    # Each lambda is called only when its flag is given (so its value is not None).
    chosen = [
        (to_earliest, lambda: ResetSpec(mode="earliest")),
        (to_latest, lambda: ResetSpec(mode="latest")),
        (to_current, lambda: ResetSpec(mode="current")),
        (to_offset is not None, lambda: ResetSpec(mode="offset", value=to_offset)),
        (shift_by is not None, lambda: ResetSpec(mode="shift", value=shift_by)),
        (to_datetime is not None, lambda: ResetSpec(mode="timestamp", value=parse_instant(cast(str, to_datetime)))),
        (by_duration is not None, lambda: ResetSpec(mode="timestamp", value=parse_instant(f"-{parse_duration(cast(str, by_duration))}"))),
    ]
    picked = [make for given, make in chosen if given]
    if len(picked) != 1:
        raise click.UsageError("give exactly one of --to-earliest, --to-latest, --to-current, --to-offset, --shift-by, --to-datetime, --by-duration")
    spec = picked[0]()
    if spec.mode == "timestamp":
        app.note(f"resetting to the first offset at or after {format_instant(spec.value)} ({spec.value})")
    return spec


@group.command("reset-offsets")
@click.argument("groups", nargs=-1, required=True, metavar="GROUP...")
@click.option("--to-earliest", is_flag=True, help="The log start of each partition.")
@click.option("--to-latest", is_flag=True, help="The log end of each partition (skip everything).")
@click.option("--to-current", is_flag=True, help="Keep committed offsets; partitions without one go to the log end.")
@click.option("--to-offset", type=click.IntRange(min=0), metavar="N", help="Offset N in every selected partition.")
@click.option("--shift-by", type=int, metavar="±N", help="Move committed offsets by N (negative re-consumes).")
@click.option("--to-datetime", metavar="TIME", help="The first offset at or after TIME (ISO-8601, zone-less = UTC; epoch ms; -1h).")
@click.option("--by-duration", metavar="DURATION", help="The first offset at or after now minus DURATION (PT1H, 90m, 2d).")
@click.option("--from-file", "from_file", type=click.Path(dir_okay=False, allow_dash=True), metavar="CSV", help="Offsets from Kafka's CSV: topic,partition,offset or group,topic,partition,offset.")
@click.option("--to-group", "to_group", metavar="SOURCE", help="The offsets SOURCE has committed (for --topic, or all of them).")
@click.option("--export", "export", type=click.Path(dir_okay=False, writable=True), metavar="CSV", help="Also write the new offsets as Kafka's CSV.")
@click.option("--backup", "backup", type=click.Path(dir_okay=False, writable=True), metavar="CSV", help="With --execute: write the replaced offsets as Kafka's CSV first.")
@click.option("-t", "--topic", "topics", multiple=True, metavar="TOPIC[:P,P]", help="Topic (or some of its partitions) to reset (repeatable).")
@click.option("--all-topics", is_flag=True, help="Every partition the group has committed offsets for.")
@click.option("--execute", is_flag=True, help="Apply the plan (without it: a dry run).")
@click.option("--allow-new-group", is_flag=True, help="Create the group if it does not exist.")
@click.option("--undo", "undo", metavar="last|ID", help="Restore the offsets a journaled reset replaced; a partition that had none gets its offset deleted (GROUP is ignored).")
@yes_option
@global_options
@pass_app
def reset_offsets(app: App, groups: tuple[str, ...], to_earliest: bool, to_latest: bool, to_current: bool, to_offset: int | None, shift_by: int | None, to_datetime: str | None, by_duration: str | None, from_file: str | None, to_group: str | None, export: str | None, backup: str | None, topics: tuple[str, ...], all_topics: bool, execute: bool, allow_new_group: bool, undo: str | None, yes: bool) -> None:
    """Reset committed offsets: a dry run unless --execute.

    The plan shows each partition's current and new offset, the delta (negative
    re-consumes, positive skips) and why a target was adjusted (clamped to the log
    start or end, no record after the time). Groups with members are refused with
    --execute (exit 10, naming the consumers to stop); their dry run shows the plan
    with a warning. With --execute, an undo journal of the old offsets is
    written first ($XDG_STATE_HOME/kctl/resets), and the offsets are read back after;
    a reset the broker refused is never reported as done. Groups of every type are
    reset the same way; for a share group CURRENT and NEW are share-partition start
    offsets (what kafka-share-groups --reset-offsets sets).

    \b
    Examples:
      kctl group reset-offsets billing --to-earliest --all-topics
      kctl group reset-offsets billing -t orders --to-datetime 2026-11-22T09:00:00Z --execute --yes
      kctl group reset-offsets billing -t orders:0,1 --shift-by -100 --execute       # asks first
      kctl group reset-offsets billing audit -t orders --by-duration 2h
      kctl group reset-offsets billing --undo last --execute                         # asks first
      kctl group reset-offsets billing --from-file offsets.csv --execute \\
          --backup before.csv                                                        # asks first
      kctl group reset-offsets billing-v2 --to-group billing --all-topics --allow-new-group
    """
    import sys

    from kctl.admin.groups.resets import ResetSpec, copy_offsets, journal_dir, parse_offsets_csv, plan, plan_undo
    from kctl.errors import InvalidError

    ids = list(dict.fromkeys(groups))
    # A dry run of an active group is shown, with the refusal --execute would meet.
    on_active: Callable[[GroupActiveError], None] | None = None if execute else (
        lambda refusal: app.warn(f"{refusal.action}: {refusal.cause}; "
                                 "this plan is a preview: --execute is refused until then"))

    if undo is not None:
        entry, plans = plan_undo(app.session, journal_dir(app.env), undo, bootstrap=app.settings.bootstrap_servers, on_active=on_active)
        app.note(f"undoing reset {entry['id']} ({entry.get('command', '')})")
    elif from_file is not None:
        if topics or all_topics or any((to_earliest, to_latest, to_current, to_offset is not None, shift_by is not None, to_datetime, by_duration, to_group)):
            raise click.UsageError("--from-file gives the partitions and offsets; drop --topic/--all-topics and the other --to-* options")
        try:
            if from_file == "-":
                text = sys.stdin.read()
            else:
                with open(from_file, encoding="utf-8") as handle:
                    text = handle.read()
        except OSError as exc:
            raise InvalidError(action=f"read offsets file {from_file}", cause=str(exc.strerror)) from exc
        spec = ResetSpec(mode="explicit", offsets=parse_offsets_csv(text, ids, from_file))
        plans = plan(app.session, ids, spec, allow_new_group=allow_new_group, on_active=on_active)
    elif to_group is not None:
        if any((to_earliest, to_latest, to_current, to_offset is not None, shift_by is not None, to_datetime, by_duration)):
            raise click.UsageError("--to-group gives the offsets; drop the other --to-* options")
        spec = ResetSpec(mode="explicit", offsets=copy_offsets(app.session, to_group, ids, topics))
        plans = plan(app.session, ids, spec, allow_new_group=allow_new_group, on_active=on_active)
    else:
        if bool(topics) == all_topics:
            raise click.UsageError("choose the partitions: --topic TOPIC[:P,...] (repeatable) or --all-topics")
        spec = _spec(app, to_earliest, to_latest, to_current, to_offset, shift_by, to_datetime, by_duration)
        plans = plan(app.session, ids, spec, topics=topics, all_topics=all_topics, allow_new_group=allow_new_group,
                     on_active=on_active)
    run_reset(app, app.session, plans, execute, yes, export=export, backup=backup)


DELETION_TABLE = TableSpec(
    (
        Column("group", "GROUP"),
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("status", "STATUS"),
        Column("error", "ERROR", wide=True),
    )
)


@group.command("delete-offsets")
@click.argument("group_id", metavar="GROUP")
@click.option("-t", "--topic", "topics", multiple=True, required=True, metavar="TOPIC[:P,P]", help="Topic (or some of its partitions) to forget (repeatable).")
@yes_option
@global_options
@pass_app
def delete_offsets(app: App, group_id: str, topics: tuple[str, ...], yes: bool) -> None:
    """Delete a group's committed offsets for some topics or partitions.

    The group then starts those partitions from auto.offset.reset. Kafka refuses
    while a member of the group consumes the topic (GROUP_SUBSCRIBED_TO_TOPIC). For a
    share group the topic's share state (its start offsets) is forgotten, which Kafka
    does per topic only, and only while the group is empty.

    \b
    Examples:
      kctl group delete-offsets billing -t old-orders --yes
      kctl group delete-offsets billing -t orders:3,4 --yes
    """
    from kctl.admin.groups.groups import delete_offsets as forget
    from kctl.admin.groups.resets import parse_topic_scope

    scope = parse_topic_scope(topics)
    app.confirm(f"Delete the committed offsets of {group_id} for {', '.join(topics)}?", yes=yes, action="delete offsets")
    rows, errors = forget(app.session, group_id, scope)
    report(app, rows, errors, DELETION_TABLE, f"delete offsets of group {group_id}")
