"""kctl broker: the brokers of the cluster."""

from __future__ import annotations

import click

from kctl.cli._app import App, pass_app
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options
from kctl.output.spec import Column, TableSpec

BROKER_TABLE = TableSpec(
    (
        Column("id", "ID", align="right"),
        Column("host", "HOST"),
        Column("port", "PORT", align="right"),
        Column("rack", "RACK"),
        Column("is_controller", "CONTROLLER"),
    )
)


@click.group(cls=LazyGroup, aliases={"ls": "list"})
def broker():
    """List the cluster's brokers."""


@broker.command("list")
@global_options
@pass_app
def list_(app: App):
    """List brokers: id, host, port, rack, and which one is the controller.

    \b
    Examples:
      kctl broker list
      kctl broker list -o plain --no-headers | cut -f2,3
    """
    from kctl.admin.cluster import describe_cluster

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
    from kctl.admin.partitions import balance as broker_balance
    from kctl.admin.partitions import snapshot

    app.out.table(broker_balance(snapshot(app.session, include_internal=internal)), BALANCE_TABLE)
