"""Static broker settings: what `--config KEY=VALUE` sets (kctl local start, python -m
kctl.broker), in the names of Kafka's server.properties.

Kafka reads these once, at start, from its properties file; the bundled broker reads them
from its command line, for the run they are given to (a restart without them is back to
the defaults, as a Kafka started with another file would be). DescribeConfigs reports
each with source STATIC_BROKER_CONFIG.

Three kinds: the settings of the broker itself (FIELDS: partitions of auto-created
topics, connection limits, ...); the cluster-wide defaults of topic configs under their
broker names (`log.retention.ms`, `log.segment.bytes`, `message.max.bytes`, ...: every
synonym in configs.TOPIC_CONFIGS, checked as the topic config is), with `log.retention.
minutes` and `log.retention.hours` in Kafka's order of precedence; and the replication
factors a single node can only have as 1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import cast

from kctl.broker import configs as cfg

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    # A BrokerConfig field's value, as parse gives it.
    _Setting = int | bool | str | dict[str, int] | dict[tuple[str, str], int]

OVERRIDES = "max.connections.per.ip.overrides"


def _at_least(lowest: int | None) -> Callable[[str, str], int]:
    """An integer setting's converter: its value, at least `lowest`."""
    def convert(name: str, value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise ValueError(f"--config {name}={value}: not an integer") from None
        if lowest is not None and number < lowest:
            raise ValueError(f"--config {name}={value}: must be at least {lowest}")
        if abs(number) > 2**63 - 1:
            raise ValueError(f"--config {name}={value}: out of range")
        return number

    return convert


def _boolean(name: str, value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise ValueError(f"--config {name}={value}: must be true or false")
    return value.lower() == "true"


def _text(name: str, value: str) -> str:
    if not value:
        raise ValueError(f"--config {name}= needs a value")
    return value


def _client_auth(name: str, value: str) -> str:
    if value not in ("none", "requested", "required"):
        raise ValueError(f"--config {name}={value}: must be one of none, requested, required")
    return value


def _mapping_rules(name: str, value: str) -> str:
    from kctl.broker.security.principal import parse_rules

    parse_rules(_text(name, value))  # ValueError names what is wrong
    return value


def _overrides(name: str, value: str) -> dict[str, int]:
    """max.connections.per.ip.overrides: host:count pairs, comma-separated (Kafka's form)."""
    out: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in value.split(","))):
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.isdigit():
            raise ValueError(f"--config {name}: {item!r} is not HOST:COUNT")
        out[host] = int(count)
    return out


# server.properties name -> (BrokerConfig field, the converter that checks its value)
FIELDS: dict[str, tuple[str, Callable[[str, str], _Setting]]] = {
    "num.partitions": ("num_partitions", _at_least(1)),
    "auto.create.topics.enable": ("auto_create_topics", _boolean),
    "socket.request.max.bytes": ("max_request_bytes", _at_least(1)),
    "fetch.max.bytes": ("fetch_max_bytes", _at_least(1024)),
    "connections.max.idle.ms": ("connections_max_idle_ms", _at_least(1)),
    "max.connections": ("max_connections", _at_least(0)),
    "max.connections.per.ip": ("max_connections_per_ip", _at_least(0)),
    OVERRIDES: ("max_connections_per_ip_overrides", _overrides),
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", _at_least(0)),
    "transaction.max.timeout.ms": ("transaction_max_timeout_ms", _at_least(1)),
    "log.retention.check.interval.ms": ("retention_check_interval_ms", _at_least(1)),
    "log.cleaner.enable": ("log_cleaner_enable", _boolean),
    "connections.max.reauth.ms": ("connections_max_reauth_ms", _at_least(0)),
    # The unsecured OAUTHBEARER validator's options (its JAAS options on Kafka:
    # unsecuredValidatorPrincipalClaimName, ...ScopeClaimName, ...AllowableClockSkewMs).
    "sasl.oauthbearer.sub.claim.name": ("oauthbearer_principal_claim", _text),
    "sasl.oauthbearer.scope.claim.name": ("oauthbearer_scope_claim", _text),
    "sasl.oauthbearer.clock.skew.seconds": ("oauthbearer_clock_skew_seconds", _at_least(0)),
    # Mutual TLS on the SSL listeners: whether clients must present a certificate, the
    # CAs (a PEM file) that must have signed it, and how its subject becomes the principal.
    "ssl.client.auth": ("ssl_client_auth", _client_auth),
    "ssl.truststore.location": ("ssl_truststore", _text),
    "ssl.principal.mapping.rules": ("ssl_principal_mapping_rules", _mapping_rules),
    # Delegation tokens (KIP-48): on when the secret key that signs their HMACs is set;
    # their longest life, and how long one lasts unless renewed (Kafka's names and defaults).
    "delegation.token.secret.key": ("delegation_token_secret_key", _text),
    "delegation.token.max.lifetime.ms": ("delegation_token_max_lifetime_ms", _at_least(1)),
    "delegation.token.expiry.time.ms": ("delegation_token_expiry_time_ms", _at_least(1)),
}
# Settings DescribeConfigs reports without their values (Kafka's PASSWORD type).
SENSITIVE = frozenset({"delegation.token.secret.key"})
# Replication factors a single node has as 1 (server.properties for one node sets them so).
SINGLE_NODE = ("default.replication.factor", "offsets.topic.replication.factor",
               "transaction.state.log.replication.factor", "share.coordinator.state.topic.replication.factor")
# log.retention.* in Kafka's precedence: ms over minutes over hours; each as milliseconds.
RETENTION = {"log.retention.ms": 1, "log.retention.minutes": 60_000, "log.retention.hours": 3_600_000}
# The topic configs' cluster-wide defaults, by their broker names.
LOG_DEFAULTS = {d.synonym: d for d in cfg.TOPIC_CONFIGS.values() if d.synonym}
# What a Kafka user may reach for that the bundled broker sets another way.
ELSEWHERE = {
    "log.dirs": "--data-dir", "log.dir": "--data-dir", "listeners": "--port, --host and --listener",
    "advertised.listeners": "--host", "sasl.enabled.mechanisms": "--sasl", "super.users": "--super-user",
    "authorizer.class.name": "--authorizer", "ssl.keystore.location": "--tls-cert and --tls-key",
    "ssl.keystore.certificate.chain": "--tls-cert", "ssl.keystore.key": "--tls-key",
}


# Kafka's listener- and mechanism-scoped form of connections.max.reauth.ms (a listener is
# named by its protocol here, as with Kafka's default listener.security.protocol.map).
_REAUTH_SCOPED = re.compile(r"listener\.name\.([a-z_]+)\.([a-z0-9-]+)\.connections\.max\.reauth\.ms")
SASL_LISTENERS = ("SASL_PLAINTEXT", "SASL_SSL")


def names() -> list[str]:
    """Every name --config takes."""
    return sorted({*FIELDS, *SINGLE_NODE, *LOG_DEFAULTS, *RETENTION, "ssl.truststore.type",
                   "listener.name.<listener>.<mechanism>.connections.max.reauth.ms"})


def parse(pairs: Sequence[str]) -> dict[str, Any]:  # BrokerConfig's keyword arguments, of its fields' types
    """BrokerConfig's fields from KEY=VALUE pairs: those FIELDS name, plus `log_defaults`
    ({broker name: value} of topic config defaults, log.retention.* resolved to
    log.retention.ms) and `static_configs` (every pair as given, for DescribeConfigs).
    A later pair wins over an earlier one of the same name. ValueError: one line."""
    given: dict[str, str] = {}
    value: str | int  # a pair's text, then log.retention.*'s number
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name, value = name.strip(), value.strip()
        if not name or not sep:
            raise ValueError(f"--config {pair!r} is not of the form KEY=VALUE")
        given[name] = value
    fields: dict[str, _Setting] = {}
    log_defaults: dict[str, str] = {}
    for name, value in given.items():
        scoped = _REAUTH_SCOPED.fullmatch(name)
        if scoped:  # listener.name.<listener>.<mechanism>.connections.max.reauth.ms
            listener, mechanism = scoped.group(1).upper(), scoped.group(2).upper()
            if listener not in SASL_LISTENERS:
                raise ValueError(f"--config {name}: {scoped.group(1)} is not a SASL listener "
                                 f"(listener names are {', '.join(n.lower() for n in SASL_LISTENERS)})")
            cast("dict[tuple[str, str], int]",  # the only value of that key
                 fields.setdefault("connections_max_reauth_ms_scoped", {}))[(listener, mechanism)] = _at_least(0)(name, value)
        elif name in FIELDS:
            field, convert = FIELDS[name]
            fields[field] = convert(name, value)
        elif name in SINGLE_NODE:
            if value != "1":
                raise ValueError(f"--config {name}={value}: the bundled broker is a single node, so {name} can only be 1")
        elif name in RETENTION:
            pass  # resolved below, in Kafka's order
        elif name in LOG_DEFAULTS:
            log_defaults[name] = _checked(LOG_DEFAULTS[name], name, value)
        elif name == "ssl.truststore.type":
            if value.upper() != "PEM":
                raise ValueError(f"--config {name}={value}: the bundled broker reads PEM files only")
        elif name in ELSEWHERE:
            raise ValueError(f"--config {name}: the bundled broker takes it as {ELSEWHERE[name]}")
        else:
            raise ValueError(f"--config {name}: not a setting the bundled broker has (it takes: {', '.join(names())})")
    for name, unit in RETENTION.items():
        if name in given:
            value = _at_least(None)(name, given[name])
            if value < -1 or (value == 0 and name != "log.retention.ms"):
                raise ValueError(f"--config {name}={given[name]}: must be -1 (no limit) or above 0")
            log_defaults["log.retention.ms"] = str(value * unit if value > 0 else value)
            break
    return {**fields, "log_defaults": log_defaults, "static_configs": given}


def _checked(definition: cfg.ConfigDef, name: str, value: str) -> str:
    try:
        checked = cfg.validate(definition, value)
    except cfg.InvalidConfig as exc:
        raise ValueError(f"--config {name}={value}: {exc}") from None
    return value if checked is None else checked
