"""Which librdkafka properties matter to kctl's wire client: the ones that only tune
librdkafka are ignored by it; a security property it cannot honour is refused by name,
never dropped."""

from __future__ import annotations

from collections.abc import Mapping

# kctl's own OAUTHBEARER settings: a token from a command or a file (kctl.admin.client.oauth).
TOKEN_COMMAND, TOKEN_FILE, TOKEN_LIFETIME = "sasl.oauthbearer.token.command", "sasl.oauthbearer.token.file", "sasl.oauthbearer.token.lifetime"
TOKEN_PROGRAM_PROPERTIES = (TOKEN_COMMAND, TOKEN_FILE, TOKEN_LIFETIME)
# kctl's own: sasl.username and sasl.password are a delegation token's id and HMAC (KIP-48),
# sent with SCRAM's `tokenauth=true` extension, which librdkafka cannot send.
TOKEN_AUTH = "sasl.scram.tokenauth"

# OAUTHBEARER's settings, read by kctl.admin.client.oauth to build a token source.
OAUTHBEARER_PROPERTIES = frozenset({
    "sasl.oauthbearer.config", "sasl.oauthbearer.method", "sasl.oauthbearer.client.id",
    "sasl.oauthbearer.client.secret", "sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.scope",
    "sasl.oauthbearer.extensions", "sasl.oauthbearer.grant.type", "https.ca.location",
    "enable.sasl.oauthbearer.unsecure.jwt", *TOKEN_PROGRAM_PROPERTIES,
})

# The ssl.* properties kctl's own TLS contexts honour (kctl.admin.client.tls); its own
# clients refuse any other ssl.* by name.
SSL_PROPERTIES = frozenset({
    "ssl.ca.location", "ssl.ca.pem", "ssl.certificate.location", "ssl.key.location", "ssl.key.password",
    "ssl.crl.location", "ssl.endpoint.identification.algorithm", "enable.ssl.certificate.verification",
})

# Properties that only tune librdkafka itself; the other clients have their own defaults.
IGNORED_PREFIXES = (
    "debug",
    "log",
    "socket.",
    "reconnect.",
    "retry.",
    "topic.metadata.",
    "metadata.",
    "broker.address.",
    "statistics.",
    "api.version",
    "client.rack",
    "enable.",
    "message.",
    "receive.",
    "queue",
    "linger.",
    "batch.",
    "compression.",
    "acks",
    # Consumer and producer settings (`record consume -X group.protocol=consumer`): the
    # admin requests have no use for them.
    "group.",
    "auto.",
    "fetch.",
    "isolation.",
    "partition.assignment.",
    "session.timeout.",
    "heartbeat.",
    "max.poll.",
    "check.crcs",
    "transactional.",
    "transaction.",
    "delivery.",
    "request.",
    "ssl.endpoint.identification.algorithm",
    "sasl.mechanism",
    "security.protocol",
)


def ignored(key: str) -> bool:
    return key.startswith(IGNORED_PREFIXES)


def uses_gssapi(properties: Mapping[str, object], aws_msk_iam: Mapping[str, str] | None = None) -> bool:
    """Whether client `properties` authenticate with SASL GSSAPI (Kerberos): librdkafka's
    default mechanism once security.protocol is SASL_* (AWS MSK IAM is OAUTHBEARER)."""
    if aws_msk_iam:
        return False
    mechanism = properties.get("sasl.mechanism") or properties.get("sasl.mechanisms") or default_mechanism(properties)
    return str(properties.get("security.protocol", "")).upper().startswith("SASL") and str(mechanism).upper() == "GSSAPI"


def uses_token_auth(properties: Mapping[str, object]) -> bool:
    """Whether the settings authenticate with a delegation token (sasl.scram.tokenauth)."""
    value = str(properties.get(TOKEN_AUTH, "false")).strip().lower()
    if value not in ("true", "false"):
        from kctl.errors import ConfigError

        raise ConfigError(action="connect", cause=f"{TOKEN_AUTH} must be true or false, not {properties.get(TOKEN_AUTH)!r}")
    return value == "true"


def uses_bridge(properties: Mapping[str, object], aws_msk_iam: Mapping[str, str] | None = None) -> bool:
    """Whether librdkafka's clients reach the cluster through kctl's loopback bridge
    (kctl.admin.client.bridge), which authenticates for them what they cannot: Kerberos
    (confluent-kafka's wheels lack GSSAPI) and delegation tokens (librdkafka has no
    SCRAM tokenauth)."""
    return uses_gssapi(properties, aws_msk_iam) or uses_token_auth(properties)


def uses_token_program(properties: Mapping[str, object]) -> bool:
    """Whether the settings name a token command or file."""
    return bool(properties.get(TOKEN_COMMAND) or properties.get(TOKEN_FILE))


def default_mechanism(properties: Mapping[str, object]) -> str:
    """The SASL mechanism when none is set: OAUTHBEARER with a token command or file
    (kctl's own settings), else librdkafka's default, GSSAPI."""
    return "OAUTHBEARER" if uses_token_program(properties) else "GSSAPI"
