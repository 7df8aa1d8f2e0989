"""The cluster read, `cluster info`: its body and document, free of click so the console
script runs it without it (kctl.cli.direct); kctl.cli.cluster declares its help."""

from __future__ import annotations

from kctl.cli._app import App
from kctl.cli._brokers import BROKER_TABLE
from kctl.output.spec import DocumentSpec, Field, Section

CLUSTER_DOCUMENT = DocumentSpec(
    fields=(Field("cluster_id", "CLUSTER-ID"), Field("controller_id", "CONTROLLER-ID")),
    sections=(Section("brokers", "BROKERS", BROKER_TABLE),),
)


def info(app: App) -> None:
    from kctl.admin.cluster.brokers import describe_cluster

    app.out.document(describe_cluster(app.session), CLUSTER_DOCUMENT)
