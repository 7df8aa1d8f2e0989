"""kctl cluster: the cluster as a whole."""

from __future__ import annotations

import click

from kctl.cli._app import App
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options, pass_app, runs, yes_option
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec, human_bytes

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from kctl.admin.cluster.balance import BalancePlan, BrokerBalance, Skew
    from kctl.admin.cluster.controllers import VoterChange
    from kctl.admin.cluster.layout import ClusterFacts
    from kctl.admin.cluster.replication import MoveRow, Reassignment
    from kctl.admin.cluster.usage import SkewRow, UsageReport


@click.group(cls=LazyGroup, aliases={"describe": "info"})
def cluster() -> None:
    """Show the cluster: id, controller, brokers, health, the metadata quorum."""


@cluster.command("info")
@global_options
@runs("kctl.cli.reads.cluster:info")
def info() -> None:
    """Show the cluster id, the controller and every broker with host:port and rack.

    In KRaft clusters the controller shown is the broker DescribeCluster names;
    the active quorum controller is not exposed to clients through it.

    \b
    Examples:
      kctl cluster info
      kctl cluster info -o json | jq -r .cluster_id
    """



def _count(name: str, title: str) -> Field:
    return Field(name, title, get=lambda h: len(getattr(h, name)))


HEALTH_DOCUMENT = DocumentSpec(
    fields=(
        Field("status", "STATUS"),
        Field("reasons", "REASONS", get=lambda h: "; ".join(h.reasons) or None),
        Field("cluster_id", "CLUSTER-ID"),
        Field("controller_id", "CONTROLLER-ID"),
        Field("brokers", "BROKERS"),
        Field("offline_brokers", "OFFLINE-BROKERS"),
        Field("partitions", "PARTITIONS"),
        _count("offline_partitions", "OFFLINE"),
        _count("unavailable_partitions", "UNAVAILABLE"),
        _count("under_min_isr_partitions", "UNDER-MIN-ISR"),
        _count("under_replicated_partitions", "UNDER-REPLICATED"),
        _count("at_min_isr_partitions", "AT-MIN-ISR"),
        _count("elr_recoverable_partitions", "ELR-RECOVERABLE"),
        _count("elr_unrecoverable_partitions", "ELR-UNRECOVERABLE"),
    ),
)


@cluster.command("health")
@click.option("-w", "--watch", is_flag=True, help="Check again every --interval until Ctrl-C (exit: the last check's status).")
@click.option("--interval", type=click.FloatRange(min=0.1), default=5.0, show_default=True, metavar="SECONDS", help="Time between checks with --watch.")
@click.option("--exit-when-healthy", is_flag=True, help="With --watch: stop (status 0) once the cluster is healthy.")
@click.option("--max-wait", type=click.FloatRange(min=0), metavar="SECONDS", help="With --watch: stop after this long with the last status.")
@global_options
@pass_app
def health(app: App, watch: bool, interval: float, exit_when_healthy: bool, max_wait: float | None) -> None:
    """Judge the cluster's health, with a Nagios-style exit status.

    CRITICAL (2): offline or unavailable partitions, partitions under
    min.insync.replicas, or no broker reachable. WARNING (1): under-replicated
    partitions, partitions at min.insync.replicas (with more than one replica), or
    brokers holding replicas that are not alive. OK (0) otherwise; UNKNOWN (3) when the
    state could not be read. The lists of affected partitions are in -o json.

    \b
    Examples:
      kctl cluster health
      kctl cluster health -o json | jq '.under_replicated_partitions'
      kctl cluster health --watch --exit-when-healthy --max-wait 600
    """
    from kctl.admin.cluster.health import check
    from kctl.cli._watch import VERDICT_EXIT, failed, show, watch_loop
    from kctl.errors import KctlError

    def once() -> int:
        try:
            verdict = check(app.session)
        except KctlError as exc:
            return failed(app, exc)
        show(app, verdict, HEALTH_DOCUMENT, watch=watch)
        return VERDICT_EXIT[verdict.status]

    status = watch_loop(app, once, watch=watch, interval=interval, exit_when_healthy=exit_when_healthy, max_wait=max_wait)
    click.get_current_context().exit(status)


def _ago(ms: int | None) -> str | None:
    import time

    return None if ms is None else f"{max(0, int(time.time() * 1000) - ms)} ms ago"


REPLICA_TABLE = TableSpec(
    (
        Column("node_id", "NODE-ID", align="right"),
        Column("status", "STATUS"),
        Column("log_end_offset", "LOG-END-OFFSET", align="right"),
        Column("lag", "LAG", align="right"),
        Column("last_fetch_timestamp", "LAST-FETCH", get=lambda r: _ago(r.last_fetch_timestamp)),
        Column("last_caught_up_timestamp", "LAST-CAUGHT-UP", get=lambda r: _ago(r.last_caught_up_timestamp)),
        Column("directory_id", "DIRECTORY-ID", wide=True),
        Column("endpoints", "ENDPOINTS", get=lambda r: ",".join(r.endpoints) or None, wide=True),
    )
)
QUORUM_DOCUMENT = DocumentSpec(
    fields=(
        Field("leader_id", "LEADER-ID"),
        Field("leader_epoch", "LEADER-EPOCH"),
        Field("high_watermark", "HIGH-WATERMARK"),
        Field("max_follower_lag", "MAX-FOLLOWER-LAG"),
        Field("max_follower_lag_time_ms", "MAX-FOLLOWER-LAG-TIME-MS"),
        Field("kraft_version", "KRAFT-VERSION"),
        Field("dynamic", "DYNAMIC"),
    ),
    sections=(Section("voters", "VOTERS", REPLICA_TABLE), Section("observers", "OBSERVERS", REPLICA_TABLE)),
)


@cluster.command("quorum")
@click.option("--replication", is_flag=True, help="Only the replicas: voters and observers, one row each (kafka-metadata-quorum --replication).")
@global_options
@pass_app
def quorum(app: App, replication: bool) -> None:
    """Describe the KRaft metadata quorum: leader, epoch, high watermark, and each voter's
    and observer's log end offset, lag and last fetch, as kafka-metadata-quorum does.

    LAG is the leader's log end offset minus the replica's. MAX-FOLLOWER-LAG-TIME-MS is
    how long before the leader the furthest-behind voter last caught up (-1: unknown).
    KRAFT-VERSION is the finalized kraft.version: 1 is a dynamic quorum (DYNAMIC true:
    controllers can be added and removed at run time, Kafka 3.9+ formatted with
    --standalone or --initial-controllers), 0 a static one (controller.quorum.voters),
    empty before Kafka 3.9.
    Timestamps show as "N ms ago"; -o json has them as epoch milliseconds.

    \b
    Examples:
      kctl cluster quorum
      kctl cluster quorum --replication
      kctl cluster quorum -o json | jq '.voters | length'
    """
    from kctl.admin.cluster.features import describe_quorum

    found = describe_quorum(app.session)
    if replication:
        app.out.table([*found.voters, *found.observers], REPLICA_TABLE)
    else:
        app.out.document(found, QUORUM_DOCUMENT)


API_VERSIONS_TABLE = TableSpec(
    (
        Column("broker", "BROKER", align="right"),
        Column("address", "ADDRESS", wide=True),
        Column("api", "API"),
        Column("key", "KEY", align="right"),
        Column("min_version", "MIN", align="right"),
        Column("max_version", "MAX", align="right"),
        Column("usable_version", "USABLE", align="right"),
    )
)


@cluster.command("api-versions")
@click.option("--broker", "brokers", type=int, multiple=True, metavar="ID", help="Only this broker (repeatable; default: every broker).")
@global_options
@pass_app
def api_versions(app: App, brokers: tuple[int, ...]) -> None:
    """List the API versions each broker supports (ApiVersions, asked of every broker on
    its own connection), as kafka-broker-api-versions.sh and Kafka 4.4's `kafka-cluster.sh
    api-versions` print them.

    MIN and MAX are the broker's range; USABLE is the highest version kctl would use with
    it (empty: none in common, or an API kctl does not speak, such as the brokers' own).
    Brokers that cannot be reached are named on stderr, and the exit status is 4 (69 when
    none could be).

    \b
    Examples:
      kctl cluster api-versions
      kctl cluster api-versions --broker 1 -o wide
      kctl cluster api-versions -o json | jq '.[] | select(.api == "Fetch") | .max_version'
    """
    from kctl.admin.cluster.api_versions import describe_api_versions
    from kctl.errors import PartialFailure, UnreachableError

    found = describe_api_versions(app.session, brokers)
    action = "describe API versions"
    if found.unreachable and not found.apis:
        raise UnreachableError(action=action, cause=f"no broker answered ({', '.join(map(str, found.unreachable))})",
                               hint="check -b/--bootstrap-server, the context, and that the brokers are up")
    app.out.table(found.apis, API_VERSIONS_TABLE)
    for broker in found.unreachable:
        app.error_line(f"error: unable to {action} of broker {broker}: unreachable")
    if found.unreachable:
        raise PartialFailure(action=action, cause=f"{len(found.unreachable)} broker(s) unreachable")


CONTROLLER_CHANGE_DOCUMENT = DocumentSpec(
    fields=(
        Field("change", "CHANGE"),
        Field("node_id", "NODE-ID"),
        Field("directory_id", "DIRECTORY-ID"),
        Field("endpoints", "ENDPOINTS", get=lambda c: ",".join(c.endpoints) or None),
        Field("voters_before", "VOTERS-BEFORE"),
        Field("voters", "VOTERS"),
        Field("status", "STATUS"),
    ),
)


def _change_voters(app: App, plan: VoterChange, *, dry_run: bool, no_wait: bool, yes: bool) -> None:
    from kctl.admin.cluster.controllers import apply

    if dry_run:
        app.out.document(plan, CONTROLLER_CHANGE_DOCUMENT)
        app.note("dry run: nothing was changed")
        return
    verb = "Add" if plan.change == "add" else "Remove"
    app.confirm(f"{verb} controller {plan.node_id} ({plan.directory_id}): the voters become {', '.join(map(str, plan.voters))}?",
                yes=yes, action=f"{plan.change} controller {plan.node_id}")
    app.out.document(apply(app.session, plan, wait=not no_wait), CONTROLLER_CHANGE_DOCUMENT)


@cluster.command("add-controller")
@click.argument("node_id", type=int, metavar="ID")
@click.option("--dry-run", is_flag=True, help="Show the change (directory id, endpoints, voters) without making it.")
@click.option("--no-wait", is_flag=True, help="Return once the controller accepted the change, before the quorum shows it.")
@yes_option
@global_options
@pass_app
def add_controller(app: App, node_id: int, dry_run: bool, no_wait: bool, yes: bool) -> None:
    """Make a controller that observes the metadata quorum one of its voters (KIP-853).

    The controller must be running as an observer of a dynamic quorum (Kafka 3.9+,
    kraft.version 1): process.roles=controller, formatted --no-initial-controllers, with
    controller.quorum.bootstrap.servers. Its directory id comes from the quorum and its
    endpoints from the controllers' own registrations: no config file is needed, unlike
    kafka-metadata-quorum add-controller. Waits until the quorum lists it as a voter
    (--timeout) unless --no-wait. A static quorum, a node that is not an observing
    controller, or Kafka before 3.9: one line, exit 65 (or 5 when absent, 6 when it is
    already a voter).

    \b
    Examples:
      kctl cluster add-controller 2 --dry-run
      kctl cluster add-controller 2 --yes
    """
    from kctl.admin.cluster.controllers import plan_add

    _change_voters(app, plan_add(app.session, node_id), dry_run=dry_run, no_wait=no_wait, yes=yes)


@cluster.command("remove-controller")
@click.argument("node_id", type=int, metavar="ID")
@click.option("--directory-id", metavar="ID", help="The controller's directory id, for a voter the quorum no longer describes "
              "(default: the one the quorum reports).")
@click.option("--dry-run", is_flag=True, help="Show the change without making it.")
@click.option("--no-wait", is_flag=True, help="Return once the controller accepted the change, before the quorum shows it.")
@yes_option
@global_options
@pass_app
def remove_controller(app: App, node_id: int, directory_id: str | None, dry_run: bool, no_wait: bool, yes: bool) -> None:
    """Remove a voter from the metadata quorum (KIP-853); it may go on as an observer.

    Its directory id comes from the quorum (--directory-id for one it no longer
    describes). The last voter is refused: the cluster would have no controller. Waits
    until the quorum no longer lists it (--timeout) unless --no-wait. A static quorum,
    or Kafka before 3.9: one line, exit 65.

    \b
    Examples:
      kctl cluster remove-controller 2 --dry-run
      kctl cluster remove-controller 2 --yes
    """
    from kctl.admin.cluster.controllers import parse_directory_id, plan_remove

    given = parse_directory_id(directory_id) if directory_id is not None else None
    _change_voters(app, plan_remove(app.session, node_id, given), dry_run=dry_run, no_wait=no_wait, yes=yes)


def _change(before: str, after: str, *, size: bool = False) -> Callable[[object], str]:
    """'before -> after' of two fields of a row (human sizes with `size`)."""
    def get(row: object) -> str:
        from kctl.sizes import format_bytes

        old, new = getattr(row, before), getattr(row, after)
        if size:
            old, new = format_bytes(old), format_bytes(new)
        return str(new) if old == new else f"{old} -> {new}"

    return get


BAR_WIDTH = 20


def bar(value: float | None, scale: float | None) -> str | None:
    """`value` as a bar of BAR_WIDTH cells, full at `scale` (eighths of a cell)."""
    if value is None or not scale:
        return None
    eighths = round(max(0.0, min(1.0, value / scale)) * BAR_WIDTH * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")).ljust(BAR_WIDTH, "·")


def _share_bar(rows: Sequence[BrokerBalance]) -> Callable[[BrokerBalance], str | None]:
    """The BAR column of the brokers' table: bytes after the plan, full at the largest."""
    scale = max((max(r.bytes_before, r.bytes_after) for r in rows), default=0)
    return lambda row: bar(row.bytes_after, scale)


PLAN_BROKER_COLUMNS = (
    Column("broker", "BROKER", align="right"),
    Column("rack", "RACK"),
    Column("bytes_after", "BYTES", get=_change("bytes_before", "bytes_after", size=True), align="right"),
    Column("bytes_target", "SHARE", get=lambda r: f"{r.bytes_after / r.bytes_target:.2f}x" if r.bytes_target else None, align="right"),
    Column("replicas_after", "REPLICAS", get=_change("replicas_before", "replicas_after"), align="right"),
    Column("leaders_after", "LEADERS", get=_change("leaders_before", "leaders_after"), align="right"),
    Column("bytes_in", "IN", get=human_bytes("bytes_in"), align="right"),
    Column("bytes_out", "OUT", get=human_bytes("bytes_out"), align="right"),
    Column("used_bytes_after", "DISK-USED", get=lambda r: f"{100 * r.used_bytes_after / r.capacity_bytes:.0f}%"
           if r.capacity_bytes and r.used_bytes_after is not None else None, align="right"),
)
PLAN_MOVE_TABLE = TableSpec(
    (
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("current", "CURRENT"),
        Column("target", "TARGET"),
        Column("size_bytes", "SIZE", get=human_bytes("size_bytes"), align="right"),
        Column("reason", "GOAL"),
        Column("bytes_moved", "BYTES-MOVED", wide=True, align="right"),
    )
)


def _plan_document(plan: BalancePlan) -> DocumentSpec:
    brokers = TableSpec((*PLAN_BROKER_COLUMNS[:3], Column("bytes_after", "", get=_share_bar(plan.brokers)), *PLAN_BROKER_COLUMNS[3:]))
    skew = {s.measure: s for s in plan.skew}
    return DocumentSpec(
        fields=(
            Field("moves", "MOVES", get=lambda p: f"{len(p.moves)} partition(s)"),
            Field("bytes_moved", "BYTES-MOVED", get=_moved),
            *(Field("skew", f"{name.upper()}-SKEW", get=_skew_text(skew[name])) for name in ("bytes", "replicas", "leaders")),
            Field("elect", "ELECT", get=lambda p: f"{len(p.elect)} partition(s) get their preferred leader" if p.elect else None),
            Field("left_alone", "LEFT-ALONE", get=lambda p: f"{p.left_alone} partition(s) moving, leaderless or on a dead broker"
                  if p.left_alone else None),
            Field("unmet", "UNMET", get=lambda p: "; ".join(p.unmet) or None),
        ),
        sections=(Section("brokers", "BROKERS", brokers), Section("moves", "MOVES", PLAN_MOVE_TABLE, optional=True)),
    )


def _skew_text(skew: Skew) -> Callable[[object], str]:
    return lambda _plan: f"{skew.before:.2f}x -> {skew.after:.2f}x (max/mean)"


def _moved(plan: BalancePlan) -> str:
    from kctl.sizes import format_bytes

    bound = plan.lower_bound_bytes
    ratio = f", {plan.bytes_moved / bound:.2f}x the lower bound {format_bytes(bound)}" if bound else ""
    return f"{format_bytes(plan.bytes_moved)}{ratio}"


def _percent(key: str) -> Callable[[object], str | None]:
    return lambda row: None if getattr(row, key) is None else f"{getattr(row, key):.0f}%"


def _rate(key: str) -> Callable[[object], str | None]:
    def get(row: object) -> str | None:
        from kctl.sizes import format_bytes

        value = getattr(row, key)
        return None if value is None else f"{format_bytes(int(value))}/s"

    return get


def _measure(skew: SkewRow, value: float) -> str | float | None:
    """A skew row's figure: bytes as du -h shows them, counts whole where they are."""
    from kctl.sizes import format_bytes

    if skew.measure == "bytes":
        return format_bytes(int(value))
    return int(value) if value == int(value) else value  # a count, or a mean of counts


def _held(report: UsageReport) -> str:
    """Every replica's bytes, of the brokers' disks where they report capacity."""
    from kctl.sizes import format_bytes

    disks = f" of {format_bytes(report.capacity_bytes)} disk" if report.capacity_bytes else ""
    return f"{format_bytes(report.bytes)}{disks}"


def _usage_document(report: UsageReport) -> DocumentSpec:
    # Against the broker holding most: the skew at a glance (DISK-USED says how full).
    scale = max((b.bytes for b in report.brokers), default=0)
    brokers = TableSpec((
        Column("broker", "BROKER", align="right"),
        Column("rack", "RACK"),
        Column("bytes", "BYTES", get=human_bytes("bytes"), align="right"),
        Column("bytes", "", get=lambda b: bar(b.bytes, scale)),
        Column("share_of_mean", "OF-MEAN", get=lambda b: f"{b.share_of_mean:.2f}x", align="right"),
        Column("replicas", "REPLICAS", align="right"),
        Column("leaders", "LEADERS", align="right"),
        Column("used_percent", "DISK-USED", get=_percent("used_percent"), align="right"),
        Column("usable_bytes", "FREE", get=human_bytes("usable_bytes"), align="right"),
        Column("bytes_per_second", "GROWTH", get=_rate("bytes_per_second"), align="right"),
        Column("bytes", "BYTES-EXACT", wide=True, align="right"),
    ))
    dirs = TableSpec((
        Column("broker", "BROKER", align="right"),
        Column("log_dir", "LOG-DIR"),
        Column("bytes", "BYTES", get=human_bytes("bytes"), align="right"),
        Column("replicas", "REPLICAS", align="right"),
        Column("used_percent", "DISK-USED", get=_percent("used_percent"), align="right"),
        Column("usable_bytes", "FREE", get=human_bytes("usable_bytes"), align="right"),
        Column("total_bytes", "TOTAL", get=human_bytes("total_bytes"), align="right"),
        Column("bytes_per_second", "GROWTH", get=_rate("bytes_per_second"), align="right"),
        Column("cordoned", "CORDONED", get=lambda d: "yes" if d.cordoned else None),
        Column("days_until_full", "DAYS-TO-FULL", get=lambda d: "bounded by retention" if d.bounded else d.days_until_full, align="right"),
        Column("error", "ERROR"),
    ))
    skew = TableSpec((
        Column("measure", "MEASURE"),
        Column("skew", "SKEW", get=lambda s: f"{s.skew:.2f}x", align="right"),
        Column("max", "MAX", get=lambda s: _measure(s, s.max), align="right"),
        Column("mean", "MEAN", get=lambda s: _measure(s, s.mean), align="right"),
        Column("broker", "ON-BROKER", align="right"),
    ))
    topics = TableSpec((
        Column("topic", "TOPIC"),
        Column("partitions", "PARTITIONS", align="right"),
        Column("replication_factor", "RF", align="right"),
        Column("bytes", "BYTES", get=human_bytes("bytes"), align="right"),
        Column("records_per_second", "RECORDS/S", align="right"),
        Column("bytes_per_second", "GROWTH", get=_rate("bytes_per_second"), align="right"),
    ))
    partitions = TableSpec((
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("bytes", "BYTES", get=human_bytes("bytes"), align="right"),
        Column("replicas", "REPLICAS"),
        Column("leader", "LEADER", align="right"),
    ))
    return DocumentSpec(
        fields=(
            Field("bytes", "BYTES", get=_held),
            Field("sampled_seconds", "SAMPLED", get=lambda r: None if r.sampled_seconds is None else f"{r.sampled_seconds:.1f} s"),
        ),
        sections=(Section("brokers", "BROKERS", brokers), Section("skew", "SKEW", skew), Section("log_dirs", "LOG-DIRS", dirs),
                  Section("topics", "LARGEST TOPICS", topics), Section("partitions", "LARGEST PARTITIONS", partitions)),
    )


@cluster.command("usage")
@click.option("--sample", metavar="DURATION", help="Look twice this far apart (e.g. 30s, 5m) for write rates and days until full.")
@click.option("-t", "--topic", "topics", multiple=True, metavar="TOPIC", help="Only these topics in the largest topics and partitions (repeatable).")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, metavar="N", help="How many of the largest topics and partitions.")
@global_options
@pass_app
def usage(app: App, sample: str | None, topics: tuple[str, ...], top: int) -> None:
    """Show what each broker holds: bytes, disk, replicas, leaders, their skew, and growth.

    BROKERS has each broker's bytes (every replica's size, as DescribeLogDirs reports
    it) with a bar against the broker holding most, its bytes against the mean,
    replicas, leaders and its disks' use (where brokers report capacity, KIP-827). SKEW is max/mean of bytes, replicas and leaders (1.00x is even;
    `kctl cluster balance` evens them). LOG-DIRS has every log dir's size and capacity,
    and CORDONED for one its broker's cordoned.log.dirs names (KIP-1066, Kafka 4.3+).
    LARGEST TOPICS and PARTITIONS list the --top largest.

    With --sample, a second look that long after the first gives GROWTH (bytes per
    second per broker, log dir and topic, RECORDS/S from the log end offsets) and
    DAYS-TO-FULL per log dir at that rate: "bounded by retention" when every topic
    growing there has a retention that deletes (it stops growing).

    \b
    Examples:
      kctl cluster usage
      kctl cluster usage --sample 5s --top 5
      kctl cluster usage -o json | jq '.skew[] | select(.skew > 1.1)'
    """
    from kctl.admin.cluster.usage import usage as read_usage
    from kctl.admin.topics.topics import validate_topic_name
    from kctl.timespec import parse_duration

    for topic in topics:
        validate_topic_name(topic)
    seconds = parse_duration(sample) if sample else None
    report = read_usage(app.session, sample=seconds, largest=top, topics=topics)
    app.out.document(report, _usage_document(report))


@cluster.command("balance")
@click.option("-t", "--topic", "--topics", "topics", multiple=True, metavar="TOPIC", help="Only move these topics' partitions (repeatable).")
@click.option("--brokers", metavar="ID,ID,...", help="Only these brokers receive replicas (e.g. brokers just added).")
@click.option("--goal", "goals", multiple=True, type=click.Choice(["replicas", "disk", "leaders"]),
              help="Only these goals (repeatable; default: all three, rack safety and the disk limit always hold).")
@click.option("--max-move", metavar="BYTES", help="Move at most this many bytes (e.g. 50GB): the plan stops short of balance.")
@click.option("--disk-threshold", type=click.FloatRange(min=0, max=1, min_open=True), default=0.8, show_default=True,
              metavar="FRACTION", help="No broker fuller than this fraction of its disks, where brokers report their capacity.")
@click.option("--execute", is_flag=True, help="Run the plan (without it: a dry run that only shows it).")
@click.option("--throttle", metavar="RATE", help="Replication throttle while replicas move, e.g. 50MB/s.")
@click.option("--max-partitions", type=click.IntRange(min=1), default=5, show_default=True, metavar="N",
              help="With --execute: at most N partitions moving at once.")
@click.option("--wait-timeout", type=click.FloatRange(min=0), metavar="SECONDS",
              help="With --execute: stop starting moves after this long (those started go on; run again to resume).")
@click.option("--plan-out", type=click.Path(dir_okay=False, writable=True), metavar="PATH",
              help="Also write the plan as kafka-reassign-partitions JSON.")
@yes_option
@global_options
@pass_app
def balance(app: App, topics: tuple[str, ...], brokers: str | None, goals: tuple[str, ...], max_move: str | None, disk_threshold: float, execute: bool, throttle: str | None, max_partitions: int, wait_timeout: float | None, plan_out: str | None, yes: bool) -> None:
    """Even out replicas, disk bytes and leaders over the brokers, moving the least data.

    Plans from what the brokers report (partition sizes from DescribeLogDirs, racks,
    disk capacity where reported): no metrics reporter, capacity file or service. Goals,
    in priority order: rack safety (no two replicas of a partition in one rack; unsafe
    partitions are fixed first), the disk limit (no broker above --disk-threshold of its
    capacity at any step), replica count (within 10% of the mean), disk bytes (within 5%
    of each broker's share: the mean, or in proportion to capacity), leaders (preferred
    leaders evened out by reordering replicas, no data moved). Disk moves take, for each
    pair of brokers, the largest replica that fits what both lack: BYTES-MOVED is shown
    beside the lower bound (what the brokers below their share lack). The same cluster
    always gives the same plan. A broker whose log dirs are all cordoned (KIP-1066)
    receives nothing.

    Without --execute it is a dry run. With it the moves run a few partitions at a time
    (--max-partitions), one new replica per partition per step, under --throttle, with
    progress on stderr; then the preferred leaders are elected. Killed or stopped by
    --wait-timeout, run it again: it waits for the moves in flight and plans the rest.
    A single broker has nothing to balance.

    \b
    Examples:
      kctl cluster balance
      kctl cluster balance --brokers 4 --max-move 500GB  # onto broker 4 only
      kctl cluster balance --goal leaders --execute --yes
      kctl cluster balance --execute --throttle 50MB/s --max-partitions 10 --yes
      kctl cluster balance --plan-out plan.json -o json | jq .bytes_moved
    """
    from kctl.admin.cluster.balance import Options, plan_cluster
    from kctl.admin.topics.topics import validate_topic_name
    from kctl.errors import UsageError
    from kctl.sizes import parse_bytes

    for topic in topics:
        validate_topic_name(topic)
    destinations = None
    if brokers:
        try:
            destinations = frozenset(int(b) for b in brokers.split(",") if b.strip())
        except ValueError:
            raise UsageError(action=f"parse --brokers {brokers!r}", cause="expected broker ids such as 5,6") from None
    options = Options(goals=tuple(goals) or ("replicas", "disk", "leaders"), topics=frozenset(topics) or None, destinations=destinations,
                      max_move_bytes=parse_bytes(max_move, "--max-move") if max_move else None, disk_threshold=disk_threshold)
    rate = parse_bytes(throttle, "--throttle") if throttle is not None else None
    plan, facts = plan_cluster(app.session, options)
    if execute and facts.in_flight:
        _wait_in_flight(app, facts.in_flight, wait_timeout)
        plan, facts = plan_cluster(app.session, options)
    if plan_out:
        from kctl.admin.cluster.replication import plan_to_json

        with open(plan_out, "w", encoding="utf-8") as handle:
            handle.write(plan_to_json([m.move for m in plan.moves]))
    if len(facts.brokers) < 2:
        app.out.document(plan, _plan_document(plan))
        app.note("one broker: nothing to balance")
        return
    if not execute or (not plan.moves and not plan.elect):
        app.out.document(plan, _plan_document(plan))
        if not plan.moves and not plan.elect:
            app.note("balanced: nothing to move")
        else:
            app.note(f"dry run: {len(plan.moves)} partition(s) would move; --execute runs it")
        return
    _run_plan(app, plan, facts, rate=rate, max_partitions=max_partitions, wait_timeout=wait_timeout, yes=yes)


def _wait_in_flight(app: App, in_flight: Sequence[Reassignment], wait_timeout: float | None) -> None:
    """Wait for the reassignments in progress (a balance killed midway, or another tool's)
    before planning: their partitions would otherwise be planned around as they were."""
    from kctl.cli._moves import finish, wait_for_moves

    moving = [r.move for r in in_flight]
    app.note(f"{len(moving)} partition(s) moving now: waiting for them first")
    rows = wait_for_moves(app, moving, wait_timeout=wait_timeout, preserve_throttles=True)
    if any(r.status != "done" for r in rows):
        finish(app, rows, "balance the cluster")


def _run_plan(app: App, plan: BalancePlan, facts: ClusterFacts, *, rate: int | None, max_partitions: int, wait_timeout: float | None,
              yes: bool) -> None:
    from kctl.admin.cluster.replication import elect_leaders
    from kctl.admin.cluster.stepwise import run
    from kctl.cli._moves import MOVE_TABLE, finish
    from kctl.cli._progress import progress, stop_on_signals
    from kctl.errors import TimeoutError_

    app.confirm(f"Move {len(plan.moves)} partition(s) to balance the cluster ({_moved(plan)})?", yes=yes, action="balance the cluster")
    racks = {b: f.rack for b, f in facts.brokers.items()}
    rows: list[MoveRow] = []
    stop = stop_on_signals(interrupt=False)  # Ctrl-C: start nothing more, report where the moves stand
    if plan.moves:
        app.note(f"balancing: {len(plan.moves)} partition(s), {_moved(plan)}")
        with progress(app, "balance", total=len(plan.moves), unit="partitions") as shown:
            def advanced(done: int, total: int) -> None:
                shown.update(done)
                shown.summary = f"balance: {done}/{total} partition(s) moved in {shown.seconds:.0f}s"

            rows = run(app.session, [m.move for m in plan.moves], racks, max_partitions=max_partitions, throttle=rate,
                       wait_timeout=wait_timeout, stop=stop, on_progress=advanced)
    if all(r.status in ("done", "unchanged") for r in rows) and plan.elect:
        elected, errors = elect_leaders(app.session, list(plan.elect))
        for key, error in errors.items():
            app.warn(f"preferred leader of {key} not elected: {error.message}")
        app.note(f"preferred leaders elected for {sum(1 for r in elected if r.status == 'elected')} partition(s)")
    pending = [r for r in rows if r.status == "pending"]
    if pending and not any(r.status == "failed" for r in rows):
        app.out.table(rows, MOVE_TABLE)
        if stop.is_set():
            raise KeyboardInterrupt
        raise TimeoutError_(action="balance the cluster", cause=f"{len(pending)} partition(s) not started before --wait-timeout",
                            hint="run the same command again: it waits for the moves in flight, then plans the rest")
    finish(app, rows, "balance the cluster")
