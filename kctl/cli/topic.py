"""kctl topic: list, describe, create and delete topics."""

from __future__ import annotations

import re

import click

from kctl.cli._app import App
from kctl.cli._batch import report
from kctl.cli._configs import change_options, run_alter
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import KeyValueType, RegexType, global_options, pass_app, runs, yes_option
from kctl.errors import NotFoundError, Resource
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from kctl.records.clone import CloneReport

RESULT_TABLE = TableSpec(
    (
        Column("name", "NAME"),
        Column("status", "STATUS"),
        Column("partitions", "PARTITIONS", align="right"),
        Column("replication_factor", "REPLICATION-FACTOR", align="right"),
        Column("error", "ERROR", wide=True),
    )
)
DELETE_TABLE = TableSpec((Column("name", "NAME"), Column("status", "STATUS"), Column("error", "ERROR", wide=True)))


@click.group(cls=LazyGroup, aliases={"ls": "list", "rm": "delete"})
def topic() -> None:
    """List, describe, create and delete topics."""


@topic.command("list")
@click.option("-r", "--regex", type=RegexType(), help="Only topics whose whole name matches this regular expression.")
@click.option("-i", "--internal", is_flag=True, help="Include internal topics (__consumer_offsets, ...).")
@click.option("--under-replicated", "filters", flag_value="under_replicated", multiple=True, help="Only topics with under-replicated partitions.")
@click.option("--under-min-isr", "filters", flag_value="under_min_isr", multiple=True, help="Only topics with partitions under min.insync.replicas.")
@click.option("--at-min-isr", "filters", flag_value="at_min_isr", multiple=True, help="Only topics with partitions at min.insync.replicas.")
@click.option("--unavailable", "filters", flag_value="unavailable", multiple=True, help="Only topics with partitions without a live leader.")
@click.option("--offline", "filters", flag_value="offline", multiple=True, help="Only topics with partitions without any leader.")
@click.option("--with-overrides", is_flag=True, help="Only topics with config overrides.")
@click.option("--tiered", is_flag=True, help="Only topics with tiered storage (remote.storage.enable=true).")
@click.option("--overrides", "count_overrides", is_flag=True, help="Count each topic's config overrides (always with -o wide).")
@global_options
@runs("kctl.cli.reads.topic:list_")
def list_() -> None:
    """List topics: partitions, replication factor, config overrides.

    The health filters keep topics having at least one partition in that condition
    (see `kctl partition list` for the partitions themselves); -o wide adds the counts
    of under-replicated and offline partitions, config overrides and the topic id.
    Counting overrides reads every topic's configs, slow on large clusters, so JSON
    has config_overrides null unless --overrides (or --with-overrides, -o wide).

    \b
    Examples:
      kctl topic list
      kctl topic list -r 'orders\\..*' -o json
      kctl topic list --under-replicated --unavailable
      kctl topic list --with-overrides -o wide
      kctl topic list --overrides -o json
      kctl topic list --tiered
    """


@topic.command("describe")
@click.argument("names", nargs=-1, required=True, metavar="TOPIC...")
@click.option("-d", "--detail", is_flag=True, help="Also each leader replica's size and in-progress reassignments (ADDING, REMOVING).")
@global_options
@runs("kctl.cli.reads.topic:describe")
def describe() -> None:
    """Show topics partition by partition: leader and epoch, replicas, ISR, offsets.

    OFFLINE-REPLICAS are replicas on brokers that are not alive. LOG-START-OFFSET and
    LOG-END-OFFSET bound the records stored. --detail adds the leader replica's size on
    disk and the replicas being added and removed by a reassignment (null in JSON
    without it). JSON output is always a list, one object per topic. A compacted topic
    on brokers whose log cleaner is off (log.cleaner.enable=false) gets a note on
    stderr: its records are not compacted.

    ELR and LAST-KNOWN-ELR (KIP-966) are shown where the cluster reports them (Kafka
    3.8+; see `kctl partition list`). A topic with tiered storage (REMOTE-STORAGE true)
    also shows its retention in all and on local disk (-2: as retention) and per
    partition EARLIEST-LOCAL (the first offset on the leader's disk: a consumer below
    it reads from remote storage), LATEST-TIERED (the last offset uploaded; blank: none
    yet) and LOCAL-SIZE. Kafka does not report the size kept in remote storage through
    its API (a note says where to read it: the brokers' RemoteLogSizeBytes metric).

    \b
    Examples:
      kctl topic describe orders
      kctl topic describe orders --detail
      kctl topic describe orders payments -o json
    """


@topic.command("create")
@click.argument("names", nargs=-1, required=True, metavar="TOPIC...")
@click.option("-p", "--partitions", type=click.IntRange(min=1), metavar="N", help="Number of partitions (default: the broker's num.partitions).")
@click.option(
    "--replication-factor",
    "--rf",
    "replication_factor",
    type=click.IntRange(min=1),
    metavar="N",
    help="Replicas per partition (default: the broker's default.replication.factor).",
)
@click.option("-c", "--config", "configs", type=KeyValueType(), multiple=True, help="Topic config, e.g. -c retention.ms=86400000 (repeatable).")
@click.option("--replica-assignment", metavar="B:B,B:B,...", help="Replicas per partition, Kafka's syntax: 1:2,2:3,3:1 (excludes -p and --rf).")
@click.option("--if-not-exists", is_flag=True, help="Succeed when the topic already exists.")
@click.option("--dry-run", is_flag=True, help="Ask the brokers to validate the request without creating anything.")
@global_options
@pass_app
def create(app: App, names: tuple[str, ...], partitions: int | None, replication_factor: int | None, configs: tuple[tuple[str, str], ...], replica_assignment: str | None, if_not_exists: bool, dry_run: bool) -> None:
    """Create topics.

    Creating several topics is one request; each topic's outcome is reported, and the
    exit status is 4 (partial failure) when only some were created.

    \b
    Examples:
      kctl topic create orders
      kctl topic create orders payments -p 12 --rf 3 -c cleanup.policy=compact
      kctl topic create orders -p 6 --dry-run
      kctl topic create orders --replica-assignment 1:2,2:3,3:1
    """
    from kctl.admin.topics.topics import NewTopicSpec, create_topics, parse_replica_assignment

    assignment = None
    if replica_assignment is not None:
        if partitions is not None or replication_factor is not None:
            raise click.UsageError("--replica-assignment sets the partitions and replicas; drop -p/--rf")
        assignment = parse_replica_assignment(replica_assignment)
    specs = [
        NewTopicSpec(name=name, partitions=partitions, replication_factor=replication_factor, config=dict(configs), replica_assignment=assignment)
        for name in dict.fromkeys(names)
    ]
    results, errors = create_topics(app.session, specs, validate_only=dry_run, if_not_exists=if_not_exists)
    report(app, results, errors, RESULT_TABLE, "create topics")


CLONE_DOCUMENT = DocumentSpec(
    fields=(
        Field("source", "SOURCE"),
        Field("target", "TARGET"),
        Field("status", "STATUS"),
        Field("partitions", "PARTITIONS"),
        Field("replication_factor", "REPLICATION-FACTOR"),
        Field("configs", "CONFIGS", get=lambda r: ",".join(f"{k}={v}" for k, v in sorted(r.configs.items())) or None),
        Field("records", "RECORDS"),
    ),
    sections=(Section("groups", "GROUPS", TableSpec((Column("group", "GROUP"), Column("status", "STATUS"),
                                                     Column("offsets", "OFFSETS", get=lambda g: ",".join(f"{p}:{o}" for p, o in sorted(g.offsets.items()))),
                                                     Column("error", "ERROR")))),),
)


@topic.command("clone")
@click.argument("source", metavar="SOURCE")
@click.argument("target", metavar="TARGET")
@click.option("--to-context", "to_cluster", metavar="CONTEXT", help="Create TARGET on this cluster (a context, or HOST:PORT) instead of SOURCE's.")
@click.option("--replication-factor", "--rf", "replication_factor", type=click.IntRange(min=1), metavar="N",
              help="Replicas per partition (default: SOURCE's, or the target's default when it has fewer brokers).")
@click.option("--with-records", is_flag=True, help="Copy the records too (record copy, partitions kept; exactly-once on one cluster).")
@click.option("--with-groups", is_flag=True, help="With --with-records: commit, for each group reading SOURCE, its offsets mapped onto TARGET.")
@click.option("--dry-run", is_flag=True, help="Show what would be created; change nothing.")
@global_options
@pass_app
def clone(app: App, source: str, target: str, to_cluster: str | None, replication_factor: int | None, with_records: bool, with_groups: bool, dry_run: bool) -> None:
    """Create TARGET as a copy of SOURCE: partitions, replication factor, configs.

    The configs are those set on SOURCE itself (defaults stay the target's). With
    --with-records its records are copied (kctl record copy, partitions kept), and with
    --with-groups each group that committed offsets on SOURCE gets them on TARGET, mapped
    record for record (a source offset becomes the target offset of the first record
    copied at or after it: retention, compaction and transaction markers make them
    differ). A group with members takes no offsets from outside: it is reported failed
    (exit 4) and the rest goes on.

    \b
    Examples:
      kctl topic clone orders orders-v2 --dry-run
      kctl topic clone orders orders-v2 --with-records --with-groups
    """
    from kctl.records.clone import check_options, plan_clone
    from kctl.records.clone import clone as clone_topic

    check_options(with_groups, with_records)
    other = app.session_for(to_cluster, "--to-context") if to_cluster is not None else None
    plan = plan_clone(app.session, other or app.session, source, target, replication_factor=replication_factor, with_groups=with_groups)
    if plan.note:
        app.note(f"note: {plan.note}")
    if dry_run:
        from kctl.records.clone import CloneReport, GroupCloned

        planned = CloneReport(source=plan.source, target=plan.target, partitions=plan.partitions, replication_factor=plan.replication_factor,
                              configs=plan.configs, status="planned",
                              groups=tuple(GroupCloned(group=g, offsets=o, status="planned") for g, o in sorted(plan.groups.items())))
        app.out.document(planned, CLONE_DOCUMENT)
        return
    from kctl.cli._progress import moving

    done: CloneReport = moving(app, "clone", lambda stop, on_batch: clone_topic(app.session, other, plan, with_records=with_records,
                                                                                stop=stop, on_batch=on_batch), enabled=with_records)
    app.out.document(done, CLONE_DOCUMENT)
    if done.left_behind:
        app.warn(f"kctl's bookkeeping group {done.left_behind} was left behind (it could not be deleted): "
                 f"kctl group delete {done.left_behind} --yes removes it")
    failed = [g for g in done.groups if g.status == "failed"]
    if failed:
        from kctl.errors import PartialFailure

        raise PartialFailure(action=f"clone the offsets of {len(failed)} group(s) onto {target}", cause=f"{failed[0].group}: {failed[0].error}")


@topic.command("delete")
@click.argument("names", nargs=-1, metavar="[TOPIC...]")
@click.option("-r", "--regex", type=RegexType(), help="Also delete every topic whose whole name matches.")
@click.option("--if-exists", is_flag=True, help="Succeed when a named topic does not exist.")
@yes_option
@global_options
@pass_app
def delete(app: App, names: tuple[str, ...], regex: re.Pattern[str] | None, if_exists: bool, yes: bool) -> None:
    """Delete topics and all their records.

    Asks for confirmation on a terminal; without one, --yes is required. Internal
    topics are never matched by --regex.

    \b
    Examples:
      kctl topic delete orders                   # asks first
      kctl topic delete -r 'tmp-.*' --yes
      kctl topic delete orders --if-exists --yes
    """
    from kctl.admin.topics.topics import delete_topics, match_topics

    if not names and regex is None:
        raise click.UsageError("name at least one topic, or give --regex")
    chosen, missing = match_topics(app.session, names, regex)
    if missing and not if_exists:
        noun = "topic" if len(missing) == 1 else "topics"
        raise NotFoundError(
            action=f"delete {noun} {', '.join(missing)}", cause=f"UNKNOWN_TOPIC_OR_PARTITION: no such {noun}",
            hint="nothing was deleted; --if-exists skips missing topics", kafka_error="UNKNOWN_TOPIC_OR_PARTITION",
            resource=Resource("topic", missing[0]),
        )
    if not chosen:
        if if_exists:
            app.note("no topics to delete")
            return
        raise NotFoundError(action="delete topics", cause=f"no topic matches {regex.pattern if regex else names!r}")
    app.confirm(
        f"Delete {len(chosen)} topic(s) and all their records: {', '.join(chosen)}?",
        yes=yes,
        action="delete topics",
    )
    results, errors = delete_topics(app.session, chosen, if_exists=if_exists)
    report(app, results, errors, DELETE_TABLE, "delete topics")


@topic.command("alter-config")
@click.argument("names", nargs=-1, required=True, metavar="TOPIC...")
@change_options
@global_options
@pass_app
def alter_config(app: App, names: tuple[str, ...], sets: tuple[tuple[str, str], ...], deletes: tuple[str, ...], appends: tuple[tuple[str, str], ...], subtracts: tuple[tuple[str, str], ...], dry_run: bool) -> None:
    """Change topic configs incrementally (the same as `kctl config alter topic`).

    \b
    Examples:
      kctl topic alter-config orders --set retention.ms=86400000
      kctl topic alter-config orders payments --delete retention.bytes
      kctl topic alter-config orders --append cleanup.policy=compact --dry-run
    """
    run_alter(app, "topic", list(dict.fromkeys(names)), sets, deletes, appends, subtracts, dry_run)


@topic.command("set-replication-factor")
@click.argument("name", metavar="TOPIC")
@click.argument("replication_factor", type=click.IntRange(min=1), metavar="N")
@click.option("--throttle", metavar="RATE", help="Replication throttle while copying, e.g. 50MB/s.")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait until every partition has its new replicas.")
@click.option("--wait-timeout", type=click.FloatRange(min=0), metavar="SECONDS", help="Give up waiting after this long (the move goes on).")
@click.option("--dry-run", is_flag=True, help="Show the plan; change nothing.")
@global_options
@pass_app
def set_replication_factor(app: App, name: str, replication_factor: int, throttle: str | None, wait: bool, wait_timeout: float | None, dry_run: bool) -> None:
    """Change a topic's replication factor: plan, execute and wait, with progress.

    New replicas go to the least-loaded brokers (rack-aware); when lowering, the
    leader is kept and the last replicas are dropped. The throttle, if any, is removed
    when the move completes. kafka-topics.sh cannot do this; it needs a hand-written
    reassignment plan.

    \b
    Examples:
      kctl topic set-replication-factor orders 3
      kctl topic set-replication-factor orders 3 --throttle 20MB --dry-run
      kctl topic set-replication-factor logs 2 --no-wait
    """
    from kctl.admin.cluster.replication import execute, generate_plan, preview
    from kctl.admin.topics.topics import validate_topic_name
    from kctl.cli._moves import MOVE_TABLE, finish, wait_for_moves
    from kctl.sizes import parse_bytes

    validate_topic_name(name)
    rate = parse_bytes(throttle, "--throttle") if throttle else None
    moves = generate_plan(app.session, [name], replication_factor=replication_factor)
    moving = [m for m in moves if m.target != m.current]
    if dry_run or not moving:
        app.out.table(preview(moves), MOVE_TABLE)
        app.note(f"{len(moving)} partition(s) would move" if dry_run else f"{name} already has replication factor {replication_factor}")
        return
    rows, errors = execute(app.session, moves, throttle=rate)
    if errors or not wait:
        report(app, rows, errors, MOVE_TABLE, f"set the replication factor of {name}")
        return
    finish(app, wait_for_moves(app, moves, wait_timeout=wait_timeout), f"set the replication factor of {name}")


PARTITIONS_RESULT_TABLE = TableSpec(
    (
        Column("name", "NAME"),
        Column("status", "STATUS"),
        Column("partitions_before", "BEFORE", align="right"),
        Column("partitions_after", "AFTER", align="right"),
        Column("error", "ERROR", wide=True),
    )
)


@topic.command("add-partitions")
@click.argument("names", nargs=-1, required=True, metavar="TOPIC...")
@click.option("--to", "total", type=click.IntRange(min=1), metavar="N", help="Grow to N partitions in total.")
@click.option("--add", type=click.IntRange(min=1), metavar="N", help="Add N partitions.")
@click.option("--replica-assignment", metavar="B:B,B:B,...", help="Replicas of the new partitions, Kafka's syntax.")
@click.option("--dry-run", is_flag=True, help="Ask the brokers to validate without adding anything.")
@global_options
@pass_app
def add_partitions(app: App, names: tuple[str, ...], total: int | None, add: int | None, replica_assignment: str | None,
                   dry_run: bool) -> None:
    """Add partitions to topics (Kafka can add partitions, never remove them).

    Keys hash to partitions by the partition count, so adding partitions moves where
    new records with existing keys go: consumers relying on per-key order see it change.

    \b
    Examples:
      kctl topic add-partitions orders --to 12
      kctl topic add-partitions orders payments --add 3 --dry-run
      kctl topic add-partitions orders --add 2 --replica-assignment 1:2,2:3
    """
    from kctl.admin.topics.topics import add_partitions as grow
    from kctl.admin.topics.topics import parse_replica_assignment

    if (total is None) == (add is None):
        raise click.UsageError("give exactly one of --to N and --add N")
    assignment = parse_replica_assignment(replica_assignment) if replica_assignment else None
    results, errors = grow(app.session, list(dict.fromkeys(names)), total=total, add=add, replica_assignment=assignment, validate_only=dry_run)
    report(app, results, errors, PARTITIONS_RESULT_TABLE, "add partitions")
