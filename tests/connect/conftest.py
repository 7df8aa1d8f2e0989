"""What the Connect tests share: where kctl finds the worker and the cluster."""

from __future__ import annotations

import pytest


@pytest.fixture
def env(connect, cluster):
    """Where kctl finds the Connect cluster and the Kafka cluster: the environment."""
    values = {"KCTL_CONNECT_URL": connect.url, "KCTL_BOOTSTRAP_SERVERS": cluster.bootstrap}
    if connect.basic_auth:
        user, password = next(iter(connect.basic_auth.items()))
        values["KCTL_CONNECT_BASIC_AUTH"] = f"{user}:{password}"
    return values
