"""kctl broker: the brokers of the cluster."""

from __future__ import annotations

import click

from kctl.cli._app import App, pass_app
from kctl.cli._brokers import BROKER_TABLE
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options
from kctl.output.spec import Column, TableSpec


@click.group(cls=LazyGroup, aliases={"ls": "list"})
def broker():
    """List the cluster's brokers."""


@broker.command("list")
@click.option("--include-fenced", is_flag=True, help="Also the brokers the controller has fenced (stopped, starting, or shut down but still registered), with a STATE column (Kafka 4.0+).")
@global_options
@pass_app
def list_(app: App, include_fenced):
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
    if include_fenced:
        from kctl.admin.cluster.brokers import registered_brokers
        from kctl.cli._brokers import BROKER_STATE_TABLE

        app.out.table(registered_brokers(app.session), BROKER_STATE_TABLE)
        return
    from kctl.admin.cluster.brokers import describe_cluster

    app.out.table(describe_cluster(app.session).brokers, BROKER_TABLE)


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
def balance(app: App, internal):
    """Show how partitions spread over brokers: leaders, replicas, ISR membership.

    PREFERRED-LEADERS counts partitions whose first replica is the broker;
    NOT-LEADING-PREFERRED counts those it should lead but does not, which a preferred
    leader election would move back. OUT-OF-SYNC counts its replicas outside the ISR.

    \b
    Examples:
      kctl broker balance
      kctl broker balance --internal -o json
    """
    from kctl.admin.cluster.partitions import balance as broker_balance
    from kctl.admin.cluster.partitions import snapshot

    app.out.table(broker_balance(snapshot(app.session, include_internal=internal)), BALANCE_TABLE)


def _human(key: str):
    def get(row):
        from kctl.sizes import format_bytes

        return format_bytes(getattr(row, key))

    return get


LOG_DIR_TABLE = TableSpec(
    (
        Column("broker", "BROKER", align="right"),
        Column("log_dir", "LOG-DIR"),
        Column("size_bytes", "SIZE", get=_human("size_bytes"), align="right"),
        Column("replicas", "REPLICAS", align="right"),
        Column("usable_bytes", "USABLE", get=_human("usable_bytes"), align="right"),
        Column("total_bytes", "TOTAL", get=_human("total_bytes"), align="right"),
        Column("error", "ERROR"),
        Column("size_bytes", "SIZE-BYTES", wide=True, align="right"),
    )
)
REPLICA_SIZE_TABLE = TableSpec(
    (
        Column("broker", "BROKER", align="right"),
        Column("log_dir", "LOG-DIR"),
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("size_bytes", "SIZE", get=_human("size_bytes"), align="right"),
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
def log_dirs(app: App, topics, brokers, replicas):
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
