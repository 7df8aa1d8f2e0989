"""kctl cluster: the cluster as a whole."""

from __future__ import annotations

import click

from kctl.cli._app import App, pass_app
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options
from kctl.cli.broker import BROKER_TABLE
from kctl.output.spec import DocumentSpec, Field, Section


@click.group(cls=LazyGroup, aliases={"describe": "info"})
def cluster():
    """Show the cluster: id, controller, brokers."""


CLUSTER_DOCUMENT = DocumentSpec(
    fields=(Field("cluster_id", "CLUSTER-ID"), Field("controller_id", "CONTROLLER-ID")),
    sections=(Section("brokers", "BROKERS", BROKER_TABLE),),
)


@cluster.command("info")
@global_options
@pass_app
def info(app: App):
    """Show the cluster id, the controller and every broker with host:port and rack.

    In KRaft clusters the controller shown is the broker DescribeCluster names;
    the active quorum controller is not exposed to clients through it.

    \b
    Examples:
      kctl cluster info
      kctl cluster info -o json | jq -r .cluster_id
    """
    from kctl.admin.cluster import describe_cluster

    app.out.document(describe_cluster(app.session), CLUSTER_DOCUMENT)
