"""The data model of kctl's configuration: contexts and the resolved client settings."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

DEFAULT_TIMEOUT = 10.0
# The settings of AWS MSK IAM authentication, in a context's aws-msk-iam table.
MSK_IAM_KEYS = ("region", "profile", "role-arn", "role-session-name")
# The settings of a context's schema registry, in its schema-registry table: the URL,
# HTTP basic credentials (user:password, or a file holding them) and TLS files.
SCHEMA_REGISTRY_KEYS = ("url", "basic-auth", "basic-auth-file", "bearer-token", "bearer-token-file", "logical-cluster",
                        "ssl-ca-location", "ssl-certificate-location", "ssl-key-location")
# The settings of one Kafka Connect cluster, in a context's connect.NAME table: the
# REST URL, basic auth or a bearer token (or files holding them) and TLS files.
CONNECT_KEYS = ("url", "basic-auth", "basic-auth-file", "bearer-token", "bearer-token-file",
                "ssl-ca-location", "ssl-certificate-location", "ssl-key-location")


@dataclass(frozen=True, kw_only=True)
class Context:
    """A named cluster connection, as stored in the config file."""

    name: str
    bootstrap_servers: str | None = None
    timeout: float | None = None
    # librdkafka properties, passed to the client verbatim.
    properties: dict[str, str] = field(default_factory=dict)
    # AWS MSK IAM authentication (region, profile, role-arn, role-session-name); empty: off.
    aws_msk_iam: dict[str, str] = field(default_factory=dict)
    # The schema registry of this cluster (SCHEMA_REGISTRY_KEYS); empty: none.
    schema_registry: dict[str, str] = field(default_factory=dict)
    # The Kafka Connect clusters beside it, by name (each CONNECT_KEYS); empty: none.
    connect: dict[str, dict[str, str]] = field(default_factory=dict)
    # Properties whose values are in the OS keyring (kctl.config.os_keyring), not in
    # `properties`.
    keyring: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ConfigFile:
    """The whole config file: contexts and which one is current."""

    current_context: str | None = None
    contexts: dict[str, Context] = field(default_factory=dict)

    def with_context(self, context: Context) -> ConfigFile:
        return dataclasses.replace(self, contexts={**self.contexts, context.name: context})


@dataclass(frozen=True, kw_only=True)
class ClientSettings:
    """Everything needed to talk to a cluster, after layering defaults < file < env < flags."""

    bootstrap_servers: str | None
    properties: dict[str, str]
    timeout: float
    context: str | None
    # AWS MSK IAM (see Context); tokens come from AWS's signer, for both clients.
    aws_msk_iam: dict[str, str] = field(default_factory=dict)
    # The schema registry (see Context), KCTL_SCHEMA_REGISTRY_* over the context's.
    schema_registry: dict[str, str] = field(default_factory=dict)
    # The context's Connect clusters (see Context), and the KCTL_CONNECT_* settings
    # (CONNECT_KEYS) and KCTL_CONNECT name the command's choice is made with.
    connect: dict[str, dict[str, str]] = field(default_factory=dict)
    connect_env: dict[str, str] = field(default_factory=dict)
    connect_name: str | None = None
    # The context's properties whose values are still to be read from the OS keyring
    # (AdminSession reads them when it is built; nothing else needs them).
    keyring: tuple[str, ...] = ()
