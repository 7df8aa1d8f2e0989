"""kctl mirror: MirrorMaker 2 between two clusters — replication health, consumer-group
offsets translated from MM2's checkpoints, and failover/failback that commit them."""

from __future__ import annotations

import re

import click

from kctl.cli._app import App
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import RegexType, global_options, pass_app, yes_option
from kctl.cli._resets import run_reset
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TypeVar

    from kctl.admin.mirror.pair import MirrorPair
    from kctl.admin.mirror.translate import Translation

    _F = TypeVar("_F", bound=Callable[..., Any])
    _Command = Callable[..., None]

TRANSLATION_TABLE = TableSpec((
    Column("group", "GROUP"),
    Column("remote_topic", "TARGET-TOPIC"),
    Column("partition", "PARTITION", align="right"),
    Column("committed", "SOURCE-OFFSET", align="right"),
    Column("translated", "TARGET-OFFSET", align="right"),
    Column("method", "FROM"),
    Column("note", "NOTE"),
    Column("topic", "SOURCE-TOPIC", wide=True),
    Column("checkpoint_upstream", "CHECKPOINT-UPSTREAM", align="right", wide=True),
    Column("checkpoint_downstream", "CHECKPOINT-DOWNSTREAM", align="right", wide=True),
    Column("checkpoint_time", "CHECKPOINT-TIME", align="right", wide=True),
))
PARTITION_TABLE = TableSpec((
    Column("topic", "TOPIC"),
    Column("remote_topic", "TARGET-TOPIC"),
    Column("partition", "PARTITION", align="right"),
    Column("source_end", "SOURCE-END", align="right"),
    Column("target_end", "TARGET-END", align="right"),
    Column("lag", "LAG", align="right"),
    Column("lag_seconds", "LAG-SECONDS", align="right", get=lambda p: None if p.lag_seconds is None else round(p.lag_seconds, 1)),
    Column("sync_upstream", "SYNC-UPSTREAM", align="right", wide=True),
    Column("sync_downstream", "SYNC-DOWNSTREAM", align="right", wide=True),
))
GROUP_TABLE = TableSpec((
    Column("group", "GROUP"),
    Column("state", "CHECKPOINTS"),
    Column("partitions", "PARTITIONS", align="right"),
    Column("behind", "BEHIND", align="right"),
    Column("checkpoint_age_seconds", "AGE-SECONDS", align="right",
           get=lambda g: None if g.checkpoint_age_seconds is None else round(g.checkpoint_age_seconds, 1)),
))


def _age(seconds: float | None) -> str | None:
    return None if seconds is None else f"{seconds:.1f} s"


STATUS_DOCUMENT = DocumentSpec(
    fields=(
        Field("status", "STATUS"),
        Field("reasons", "REASONS", get=lambda s: "; ".join(s.reasons) or None),
        Field("source_alias", "SOURCE-ALIAS"),
        Field("target_alias", "TARGET-ALIAS"),
        Field("policy", "POLICY"),
        Field("heartbeat_age_seconds", "HEARTBEAT-AGE", get=lambda s: _age(s.heartbeat_age_seconds)),
        Field("replicated_heartbeat_age_seconds", "REPLICATED-HEARTBEAT-AGE", get=lambda s: _age(s.replicated_heartbeat_age_seconds)),
        Field("topics", "TOPICS"),
        Field("lag", "LAG"),
    ),
    sections=(Section("partitions", "PARTITIONS", PARTITION_TABLE), Section("groups", "GROUPS", GROUP_TABLE)),
)


@click.group(cls=LazyGroup)
def mirror() -> None:
    """MirrorMaker 2: replication health and consumer-group failover between two clusters.

    kctl reads MM2's own topics on the clusters (checkpoints and heartbeats on the
    target, offset syncs on the source), so it needs neither MM2's configuration nor
    Connect's REST API, and a failover works while the source cluster is down. Name
    the clusters with --source and --target: a context, or host:port; --target
    defaults to the command's cluster (-b, --context, the current context).
    """


def pair_options(command: _F) -> _F:
    options: tuple[Callable[[_F], _F], ...] = (
        click.option("--source", "source", metavar="CONTEXT|HOST:PORT", help="The cluster MM2 replicates from."),
        click.option("--target", "target", metavar="CONTEXT|HOST:PORT", help="The cluster MM2 replicates to (default: the command's cluster)."),
        click.option("--source-alias", metavar="ALIAS", help="MM2's name of the source cluster (default: found from the checkpoints topic)."),
        click.option("--target-alias", metavar="ALIAS", help="MM2's name of the target cluster (default: found from the offset-syncs topic)."),
        click.option("--policy", type=click.Choice(["default", "identity"]), default="default", show_default=True,
                     help="MM2's replication.policy.class: DefaultReplicationPolicy (prefixes topics) or IdentityReplicationPolicy."),
        click.option("--separator", default=".", show_default=True, metavar="SEP", help="MM2's replication.policy.separator."),
    )
    for option in reversed(options):
        command = option(command)
    return command


def _pair(app: App, source: str | None, target: str | None, source_alias: str | None, target_alias: str | None, policy: str,
          separator: str, *, need_source: bool, swap: bool = False) -> MirrorPair:
    """The MirrorPair of the options (`swap`: MM2's reverse flow, for a failback). A
    source that cannot be reached is left out with a warning unless `need_source`."""
    from kctl.admin.mirror.pair import find_pair
    from kctl.admin.mirror.policy import ReplicationPolicy
    from kctl.errors import TimeoutError_, UnreachableError, UsageError

    if (need_source or swap) and source is None:
        raise click.UsageError("--source is required" + (": a failback commits on it" if swap else ""))
    target_session = app.session_for(target, "--target")
    source_session = app.session_for(source, "--source") if source is not None else None
    if source_session is not None and _same(source_session.settings.bootstrap_servers, target_session.settings.bootstrap_servers):
        raise UsageError(f"unable to use {source_session.settings.bootstrap_servers} as both the source and the target",
                         hint="--source and --target name the two clusters MM2 replicates between")
    if swap:
        source_session, target_session = target_session, source_session
        source_alias, target_alias = target_alias, source_alias
    if source_session is not None and not need_source:
        try:
            source_session.metadata("reach the source cluster")
        except (UnreachableError, TimeoutError_) as exc:
            app.warn(f"the source cluster is not reachable ({exc.message}); translating from the target's checkpoints alone")
            source_session = None
    policy_ = ReplicationPolicy(policy, separator)
    pair = find_pair(target_session, source_session, source_alias=source_alias, target_alias=target_alias, policy=policy_,
                     target_name=target_session.settings.bootstrap_servers or "the target",
                     source_name=(source_session.settings.bootstrap_servers if source_session else None) or "the source")
    if pair.source_cluster_id is not None and pair.source_cluster_id == pair.target_cluster_id:
        raise UsageError(f"unable to use cluster {pair.target_cluster_id} as both the source and the target",
                         hint="--source and --target reach the same cluster")
    return pair


def _same(a: str | None, b: str | None) -> bool:
    def norm(text: str | None) -> list[str]:
        return sorted(s.strip().lower().replace("localhost", "127.0.0.1") for s in (text or "").split(","))
    return a is not None and norm(a) == norm(b)


@mirror.command("status")
@pair_options
@click.option("--max-heartbeat-age", type=click.FloatRange(min=0), default=60, show_default=True, metavar="SECONDS",
              help="CRITICAL when MM2's newest heartbeat on the target is older.")
@click.option("--max-lag", type=click.IntRange(min=0), metavar="RECORDS", help="WARNING when a partition is further behind.")
@click.option("--max-lag-seconds", type=click.FloatRange(min=0), default=300, show_default=True, metavar="SECONDS",
              help="WARNING when the copy of a partition with lag is older.")
@click.option("--max-checkpoint-age", type=click.FloatRange(min=0), default=300, show_default=True, metavar="SECONDS",
              help="WARNING when a group moved past a checkpoint older than this.")
@click.option("--exclude-groups", type=RegexType(), metavar="REGEX",
              help="Groups MM2 does not checkpoint (its groups.exclude), left out of the groups judged.")
@click.option("-g", "--group", "required", multiple=True, metavar="GROUP",
              help="WARNING until GROUP is checkpointed at every offset it committed on a replicated topic (repeatable).")
@click.option("-w", "--watch", is_flag=True, help="Check again every --interval until Ctrl-C (exit: the last check's status).")
@click.option("--interval", type=click.FloatRange(min=0.1), default=5.0, show_default=True, metavar="SECONDS", help="Time between checks with --watch.")
@click.option("--exit-when-healthy", is_flag=True, help="With --watch: stop (status 0) once the pair is OK, e.g. before a planned failover.")
@click.option("--max-wait", type=click.FloatRange(min=0), metavar="SECONDS", help="With --watch: stop after this long with the last status.")
@global_options
@pass_app
def status(app: App, source: str | None, target: str | None, source_alias: str | None, target_alias: str | None, policy: str, separator: str, max_heartbeat_age: float, max_lag: int | None, max_lag_seconds: float,
           max_checkpoint_age: float, exclude_groups: re.Pattern[str] | None, required: tuple[str, ...], watch: bool, interval: float, exit_when_healthy: bool, max_wait: float | None) -> None:
    """Judge MM2's replication between two clusters, with a Nagios-style exit status.

    Shows the replicated topics and their names on the target, each partition's lag
    (records, and seconds: how old the copy's newest record is), the age of MM2's
    heartbeats, and each source group's checkpoints (current, behind, stale, none).
    CRITICAL (2): no recent heartbeat from the flow. WARNING (1): lag over
    --max-lag/--max-lag-seconds, stale checkpoints, groups never checkpointed, a --group
    not checkpointed at its committed offsets yet. OK (0); UNKNOWN (3) when a cluster
    could not be read. Before a planned failover, --watch --exit-when-healthy waits until
    the copy has caught up (--max-lag 0) and the groups' checkpoints are current.

    \b
    Examples:
      kctl mirror status --source primary --target backup
      kctl mirror status --source primary --target backup -o json | \\
          jq '.partitions[] | select(.lag > 0)'
      kctl mirror status --source localhost:9092 --target backup --max-lag 10000 \\
          --exclude-groups 'test-.*'
      kctl mirror status --source primary --target backup --max-lag 0 -g billing --watch \\
          --exit-when-healthy --max-wait 300
    """
    from kctl.admin.mirror.status import Thresholds
    from kctl.admin.mirror.status import status as judge
    from kctl.cli._watch import VERDICT_EXIT, failed, show, watch_loop
    from kctl.errors import TimeoutError_, UnreachableError

    thresholds = Thresholds(max_heartbeat_age=max_heartbeat_age, max_lag=max_lag, max_lag_seconds=max_lag_seconds,
                            max_checkpoint_age=max_checkpoint_age, exclude_groups=exclude_groups, groups=tuple(required))
    if source is None:
        raise click.UsageError("--source is required")

    def once() -> int:
        # A cluster down is CRITICAL (replication is broken), as in `cluster health`; one
        # too slow to answer is UNKNOWN. The pair is found again each time: --watch sees
        # a cluster come back.
        try:
            pair = _pair(app, source, target, source_alias, target_alias, policy, separator, need_source=True)
            verdict = judge(pair, thresholds)
        except (UnreachableError, TimeoutError_) as exc:
            return failed(app, exc)
        if verdict.skipped_records:
            app.warn(f"{verdict.skipped_records} record(s) of {pair.checkpoints_topic} did not decode and were skipped")
        show(app, verdict, STATUS_DOCUMENT, watch=watch)
        return VERDICT_EXIT[verdict.status]

    code = watch_loop(app, once, watch=watch, interval=interval, exit_when_healthy=exit_when_healthy, max_wait=max_wait)
    click.get_current_context().exit(code)


def _translations(app: App, pair: MirrorPair, groups: Sequence[str], group_regex: re.Pattern[str] | None,
                  fallback: str) -> list[Translation]:
    from kctl.admin.mirror.translate import translate

    rows, skipped = translate(pair, groups, group_regex=group_regex.pattern if group_regex else None, fallback=fallback)
    if skipped:
        app.warn(f"{skipped} record(s) of {pair.checkpoints_topic} did not decode and were skipped")
    if fallback == "timestamp" and any(r.method == "timestamp" for r in rows):
        app.note("--fallback timestamp: partitions without a checkpoint resume at the first target record at or after the "
                 "source's next record's time; records with the same timestamp may be delivered again")
    elif fallback == "latest" and any(r.method == "latest" for r in rows):
        app.warn("--fallback latest: partitions without a checkpoint resume at the target's end; records the group had not read are skipped")
    return rows


_FALLBACK = click.option("--fallback", type=click.Choice(["none", "timestamp", "latest", "earliest"]), default="none", show_default=True,
                         help="For partitions with no checkpoint: nothing (auto.offset.reset decides), the first target offset at "
                              "the source record's time (may redeliver), the target's end (may skip) or start.")
_GROUP_REGEX = click.option("--group-regex", type=RegexType(), metavar="REGEX", help="Every group matching (on the source, or in the checkpoints).")


@mirror.command("translate")
@click.argument("groups", nargs=-1, metavar="[GROUP...]")
@_GROUP_REGEX
@pair_options
@_FALLBACK
@global_options
@pass_app
def translate_(app: App, groups: tuple[str, ...], group_regex: re.Pattern[str] | None, source: str | None, target: str | None, source_alias: str | None, target_alias: str | None, policy: str, separator: str, fallback: str) -> None:
    """Show where groups would resume on the target: their offsets translated by MM2.

    Each partition's target offset is the newest checkpoint's (what
    RemoteClusterUtils.translateOffsets gives), beside the group's committed offset on
    the source when the source is reachable. NOTE source_moved: the group committed past
    the newest checkpoint (it will re-read those records until MM2 checkpoints again).
    Nothing is written; `mirror failover` commits the same offsets.

    \b
    Examples:
      kctl mirror translate billing --source primary --target backup
      kctl mirror translate --group-regex 'billing.*' --target backup --fallback timestamp \\
          --source primary
      kctl mirror translate billing --target backup -o json        # the source may be down
    """
    pair = _pair(app, source, target, source_alias, target_alias, policy, separator, need_source=False)
    app.out.table(_translations(app, pair, groups, group_regex, fallback), TRANSLATION_TABLE)


def _failover(app: App, groups: tuple[str, ...], group_regex: re.Pattern[str] | None, source: str | None, target: str | None,
              source_alias: str | None, target_alias: str | None, policy: str, separator: str, fallback: str,
              require_idle_source: bool, execute: bool, undo: str | None, yes: bool, *, swap: bool) -> None:
    from kctl.admin.groups.resets import journal_dir, plan_undo
    from kctl.admin.mirror.translate import failover_plan, require_idle

    if undo is not None:
        if groups or group_regex:
            raise click.UsageError("--undo restores a journalled failover; drop GROUP and --group-regex")
        session = app.session_for(source if swap else target, "--source" if swap else "--target")
        entry, plans = plan_undo(session, journal_dir(app.env), undo, bootstrap=session.settings.bootstrap_servers)
        app.note(f"undoing {entry['id']} ({entry.get('command', '')})")
        run_reset(app, session, plans, execute, yes)
        return
    pair = _pair(app, source, target, source_alias, target_alias, policy, separator, need_source=False, swap=swap)
    rows = _translations(app, pair, groups, group_regex, fallback)
    if require_idle_source:
        if pair.source is None:
            raise click.UsageError("--require-idle-source needs the source cluster: it is not reachable")
        require_idle(pair.source, sorted({r.group for r in rows}), "the target cluster" if swap else "the source cluster")
    app.out.table(rows, TRANSLATION_TABLE)
    skipped = [r for r in rows if r.translated is None]
    if skipped:
        app.note(f"{len(skipped)} partition(s) get no offset ({', '.join(sorted({r.note or '' for r in skipped}))}): "
                 f"their consumers start from auto.offset.reset")
    plans = failover_plan(pair, rows)
    run_reset(app, pair.target, plans, execute, yes)


def failover_options(command: _Command) -> _Command:
    options: tuple[Callable[[_Command], _Command], ...] = (
        click.argument("groups", nargs=-1, metavar="[GROUP...]"),
        _GROUP_REGEX,
        pair_options,
        _FALLBACK,
        click.option("--require-idle-source", is_flag=True, help="Refuse (exit 10) unless the groups have no members on the cluster left."),
        click.option("--execute", is_flag=True, help="Commit the offsets (without it: a dry run)."),
        click.option("--undo", metavar="last|ID", help="Restore the offsets a journalled failover replaced."),
        yes_option,
        global_options,
        pass_app,
    )
    for option in reversed(options):
        command = option(command)
    return command


@mirror.command("failover")
@failover_options
def failover(app: App, groups: tuple[str, ...], group_regex: re.Pattern[str] | None, source: str | None, target: str | None, source_alias: str | None, target_alias: str | None, policy: str, separator: str, fallback: str,
             require_idle_source: bool, execute: bool, undo: str | None, yes: bool) -> None:
    """Move groups to the target: commit their translated offsets there.

    A dry run unless --execute. The offsets are those of `mirror translate`, committed
    on the target as `group reset-offsets` commits: refused while a group has members on
    the target (exit 10, naming them), an undo journal written first
    ($XDG_STATE_HOME/kctl/resets), read back after. --require-idle-source also refuses
    while the group is still consuming on the source. The source may be down: the
    checkpoints are on the target.

    \b
    Examples:
      kctl mirror failover billing --source primary --target backup
      kctl mirror failover billing audit --source primary --target backup \\
          --require-idle-source --execute --yes
      kctl mirror failover --group-regex 'billing.*' --target backup --fallback timestamp \\
          --source primary --execute  # asks first
      kctl mirror failover --undo last --target backup --execute --yes
    """
    _failover(app, groups, group_regex, source, target, source_alias, target_alias, policy, separator, fallback,
              require_idle_source, execute, undo, yes, swap=False)


@mirror.command("failback")
@failover_options
def failback(app: App, groups: tuple[str, ...], group_regex: re.Pattern[str] | None, source: str | None, target: str | None, source_alias: str | None, target_alias: str | None, policy: str, separator: str, fallback: str,
             require_idle_source: bool, execute: bool, undo: str | None, yes: bool) -> None:
    """Move groups back to the source: commit on it the offsets MM2's reverse flow
    (target -> source) checkpointed.

    The same as `failover` with the clusters' roles swapped: --source and --target keep
    naming the original flow, the offsets come from the checkpoints of the target's
    alias on the source, and are committed on the source. Topics that came from the
    source get their original names back (`primary.orders` becomes `orders`); MM2 checkpoints
    them only where it has offset syncs, so --fallback timestamp is usually wanted.
    --require-idle-source refuses while the groups consume on the target.

    \b
    Examples:
      kctl mirror failback billing --source primary --target backup --fallback timestamp
      kctl mirror failback billing --source primary --target backup --fallback timestamp \\
          --require-idle-source --execute --yes
      kctl mirror failback --undo last --source primary --execute --yes
    """
    _failover(app, groups, group_regex, source, target, source_alias, target_alias, policy, separator, fallback,
              require_idle_source, execute, undo, yes, swap=True)
