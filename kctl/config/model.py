"""The data model of kctl's configuration: contexts and the resolved client settings."""

from __future__ import annotations

from kctl.values import Value, replace

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


class Context(Value):
    """A named cluster connection, as stored in the config file."""

    __slots__ = ("name", "bootstrap_servers", "timeout", "properties", "aws_msk_iam", "schema_registry", "connect", "keyring",
                 "local_data_dir")

    def __init__(
        self, *,
        name: str, bootstrap_servers: str | None = None, timeout: float | None = None, properties: dict[str, str] | None = None,
        aws_msk_iam: dict[str, str] | None = None, schema_registry: dict[str, str] | None = None, connect: dict[str, dict[str, str]] | None = None,
        keyring: tuple[str, ...] = (), local_data_dir: str | None = None,
    ):
        self.name = name
        self.bootstrap_servers = bootstrap_servers
        self.timeout = timeout
        # librdkafka properties, passed to the client verbatim.
        self.properties = dict() if properties is None else properties
        # AWS MSK IAM authentication (region, profile, role-arn, role-session-name); empty: off.
        self.aws_msk_iam = dict() if aws_msk_iam is None else aws_msk_iam
        # The schema registry of this cluster (SCHEMA_REGISTRY_KEYS); empty: none.
        self.schema_registry = dict() if schema_registry is None else schema_registry
        # The Kafka Connect clusters beside it, by name (each CONNECT_KEYS); empty: none.
        self.connect = dict() if connect is None else connect
        # Properties whose values are in the OS keyring (kctl.config.os_keyring), not in
        # `properties`.
        self.keyring = keyring
        # The data directory of the bundled broker `kctl local start` saved this context
        # for: a cluster unreachable through it is a local broker to start.
        self.local_data_dir = local_data_dir


class ConfigFile(Value):
    """The whole config file: contexts and which one is current."""

    __slots__ = ("current_context", "contexts")

    def __init__(self, *, current_context: str | None = None, contexts: dict[str, Context] | None = None):
        self.current_context = current_context
        self.contexts = dict() if contexts is None else contexts

    def with_context(self, context: Context) -> ConfigFile:
        return replace(self, contexts={**self.contexts, context.name: context})


class ClientSettings(Value):
    """Everything needed to talk to a cluster, after layering defaults < file < env < flags."""

    __slots__ = ("bootstrap_servers", "properties", "timeout", "context", "aws_msk_iam", "schema_registry", "connect", "connect_env", "connect_name", "keyring")

    def __init__(
        self, *,
        bootstrap_servers: str | None, properties: dict[str, str], timeout: float, context: str | None, aws_msk_iam: dict[str, str] | None = None,
        schema_registry: dict[str, str] | None = None, connect: dict[str, dict[str, str]] | None = None, connect_env: dict[str, str] | None = None,
        connect_name: str | None = None, keyring: tuple[str, ...] = (),
    ):
        self.bootstrap_servers = bootstrap_servers
        self.properties = properties
        self.timeout = timeout
        self.context = context
        # AWS MSK IAM (see Context); tokens come from AWS's signer, for both clients.
        self.aws_msk_iam = dict() if aws_msk_iam is None else aws_msk_iam
        # The schema registry (see Context), KCTL_SCHEMA_REGISTRY_* over the context's.
        self.schema_registry = dict() if schema_registry is None else schema_registry
        # The context's Connect clusters (see Context), and the KCTL_CONNECT_* settings
        # (CONNECT_KEYS) and KCTL_CONNECT name the command's choice is made with.
        self.connect = dict() if connect is None else connect
        self.connect_env = dict() if connect_env is None else connect_env
        self.connect_name = connect_name
        # The context's properties whose values are still to be read from the OS keyring
        # (AdminSession reads them when it is built; nothing else needs them).
        self.keyring = keyring
