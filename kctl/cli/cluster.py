"""kctl cluster: the cluster as a whole."""

from __future__ import annotations

import click

from kctl.cli._app import App
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options, pass_app, runs, yes_option
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec


@click.group(cls=LazyGroup, aliases={"describe": "info"})
def cluster():
    """Show the cluster: id, controller, brokers, health, the metadata quorum."""


@cluster.command("info")
@global_options
@runs("kctl.cli.reads.cluster:info")
def info():
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
def health(app: App, watch, interval, exit_when_healthy, max_wait):
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


def _ago(ms):
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
def quorum(app: App, replication):
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


def _change_voters(app: App, plan, *, dry_run: bool, no_wait: bool, yes: bool) -> None:
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
def add_controller(app: App, node_id, dry_run, no_wait, yes):
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
def remove_controller(app: App, node_id, directory_id, dry_run, no_wait, yes):
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
