"""The broker read, `broker list`: its body, free of click so the console script runs it
without it (kctl.cli.direct); kctl.cli.broker declares its options and help."""

from __future__ import annotations

from kctl.cli._app import App
from kctl.cli._brokers import BROKER_TABLE


def list_(app: App, include_fenced) -> None:
    if include_fenced:
        from kctl.admin.cluster.brokers import registered_brokers
        from kctl.cli._brokers import BROKER_STATE_TABLE

        app.out.table(registered_brokers(app.session), BROKER_STATE_TABLE)
        return
    from kctl.admin.cluster.brokers import describe_cluster

    app.out.table(describe_cluster(app.session).brokers, BROKER_TABLE)
