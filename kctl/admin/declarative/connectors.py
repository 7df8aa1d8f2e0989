"""The Connector kind: a Kafka Connect connector as a resource document — its config
(owned whole by the file: a key it does not list is removed) and the state it should be
in (running, paused, stopped).

    kind: Connector
    metadata: {name: orders-sink}
    spec:
      state: running
      config: {connector.class: FileStreamSink, topics: orders, file: /data/orders.txt}
      secrets: {connection.password: ORDERS_SINK_CONNECTION_PASSWORD}

Secrets never sit in a file in clear: a value from a Connect config provider stays its
${provider:path:key} reference (Connect resolves it, kctl never sees the secret), and a
value whose key names a password, secret or key is exported as `secrets`: the environment
variable apply reads it from. Without that variable, diff cannot compare the value (it is
left out) and apply refuses a change that needs it.

Planned in plan.py (`_connectors`): a connector is created after the topics and ACLs of
the same plan (it may need them) and removed before its topics are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from kctl.errors import KctlError

STATES = ("running", "paused", "stopped")
# What Connect's status says of a connector, as the state a file asks for: a FAILED or
# UNASSIGNED connector is still meant to run.
_LIVE_STATES = {"RUNNING": "running", "FAILED": "running", "UNASSIGNED": "running", "RESTARTING": "running",
                "PAUSED": "paused", "STOPPED": "stopped"}
_SECRET_SUFFIXES = (".password", ".secret", ".key")
_REFERENCE = re.compile(r"^\$\{[^}]+\}$")


@dataclass(frozen=True)
class LiveConnector:
    name: str
    config: dict[str, str]
    # running | paused | stopped (see _LIVE_STATES)
    state: str


def is_secret(key: str) -> bool:
    key = key.lower()
    return key in ("password", "secret") or key.endswith(_SECRET_SUFFIXES)


def secret_variable(connector: str, key: str) -> str:
    """The environment variable export names for a secret: ORDERS_SINK_CONNECTION_PASSWORD."""
    return re.sub(r"[^A-Z0-9]+", "_", f"{connector}_{key}".upper()).strip("_")


# -- reading the Connect cluster -------------------------------------------------------------


def read(connect) -> dict[str, LiveConnector]:
    """Every connector's config and state, in one request."""
    if connect is None:
        from kctl.admin.connect.rest import NoConnectCluster

        raise NoConnectCluster(action="read connectors", cause="no Kafka Connect cluster is configured",
                               hint="kctl context set NAME --connect-url URL, or KCTL_CONNECT_URL")
    from kctl.admin.connect.connectors import expanded

    out = {}
    for name, answer in expanded(connect).items():
        config = dict((answer.get("info") or {}).get("config") or {})
        config.pop("name", None)
        state = ((answer.get("status") or {}).get("connector") or {}).get("state", "UNASSIGNED")
        out[name] = LiveConnector(name=name, config=config, state=_LIVE_STATES.get(state, "running"))
    return out


# -- documents -------------------------------------------------------------------------------


def document_spec(live: LiveConnector) -> dict:
    """The spec export writes: secrets as the environment variables that must fill them."""
    config, secrets = {}, {}
    for key, value in sorted(live.config.items()):
        if is_secret(key) and not _REFERENCE.match(value):
            secrets[key] = secret_variable(live.name, key)
        else:
            config[key] = value
    spec: dict = {"state": live.state, "config": config}
    if secrets:
        spec["secrets"] = secrets
    return spec


@dataclass(frozen=True)
class ConnectorResource:
    """Built by resources._connector (a Resource subclass lives there)."""

    config: Mapping[str, str]
    state: str
    secrets: Mapping[str, str] = field(default_factory=dict)


def check_spec(name: str, spec: Mapping, problem) -> ConnectorResource:
    from kctl.admin.declarative.kafka_configs import config_string

    config = {key: config_string(value) for key, value in spec["config"].items()}
    if "name" in config and config.pop("name") != name:
        problem("config name differs from metadata.name; leave it out (the connector's name is metadata.name)", "spec", "config", "name")
    if "connector.class" not in config:
        problem("config needs connector.class", "spec", "config")
    secrets = dict(spec.get("secrets") or {})
    for key in sorted(set(secrets) & set(config)):
        problem(f"{key} is in both config and secrets; keep it in one", "spec", "secrets", key)
    for key, value in sorted(config.items()):
        if is_secret(key) and not _REFERENCE.match(value):
            problem(f"config {key} looks like a secret: resource files are kept in Git, secrets are not; name the environment variable "
                    f"that holds it in secrets ({key}: {secret_variable(name, key)}), or use a config provider reference", "spec", "config", key)
    return ConnectorResource(config=config, state=spec.get("state", "running"), secrets=secrets)


# -- applying --------------------------------------------------------------------------------


def apply_change(connect, change) -> None:
    from kctl.admin.connect import connectors

    if connect is None:
        raise KctlError(action=f"apply Connector {change.name}", cause="no Kafka Connect cluster is configured")
    if change.action == "create":
        connectors.create(connect, connectors.ConnectorSpec(name=change.name, config=change.data["config"],
                                                            initial_state=change.data["state"]))
    elif change.action == "alter-config":
        connectors.update(connect, change.name, change.data["config"])
    elif change.action == "set-state":
        verb = {"running": connectors.resume, "paused": connectors.pause, "stopped": connectors.stop}[change.data["state"]]
        verb(connect, change.name)
    elif change.action == "delete":
        connectors.delete(connect, change.name)
    else:
        raise KctlError(action=f"apply Connector {change.name}", cause=f"no way to {change.action} a connector")
