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
