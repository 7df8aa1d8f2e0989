"""Configs of topics, brokers (one broker, or the cluster-wide default), broker loggers,
groups (KIP-848 group configs) and client-metrics subscriptions (KIP-714): describe with
their sources, and alter incrementally (set, delete, append, subtract).

Topics and brokers go through librdkafka; the others, which librdkafka cannot address,
through kctl's wire client. A client-metrics subscription exists while it has configs: it is
created by setting them and removed by deleting them all. Sensitive values are never
shown: Kafka does not send them, and kctl masks any it is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kctl.admin.client.errors import for_kafka_code, no_such_topic
from kctl.admin.client.kafka import CONFIG_SOURCES
from kctl.admin.client.session import AdminSession, unknown_topic
from kctl.config.secrets import MASK
from kctl.errors import InvalidError, KctlError, NotFoundError, Partial, UsageError
from kctl.messages import apis
from kctl.values import Value

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from confluent_kafka.admin import ResourceType

    from kctl.messages import types as t

# kctl's entity types -> Kafka's ConfigResource type names.
ENTITY_TYPES = ("topic", "broker", "broker-default", "broker-logger", "group", "client-metrics")
# The types librdkafka cannot address, by their ConfigResource type codes: kctl's wire
# client serves them (the cluster default is a broker resource named "").
_RESOURCE_TYPES = {"broker-default": 4, "broker-logger": 8, "group": 32, "client-metrics": 16}
# IncrementalAlterConfigs' operations, in the order of their codes (SET=0 ... SUBTRACT=3).
OPERATIONS = ("set", "delete", "append", "subtract")
DEFAULT_CONFIG = 5


class ConfigValue(Value):
    __slots__ = ("name", "value", "source", "is_default", "read_only", "sensitive")

    def __init__(self, *, name: str, value: str | None, source: str, is_default: bool, read_only: bool, sensitive: bool):
        self.name = name
        self.value = value
        # Kafka's ConfigSource: DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG,
        # DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, ...
        self.source = source
        self.is_default = is_default
        self.read_only = read_only
        self.sensitive = sensitive


class ResourceConfig(Value):
    __slots__ = ("entity_type", "entity_name", "configs")

    def __init__(self, *, entity_type: str, entity_name: str, configs: tuple[ConfigValue, ...]):
        self.entity_type = entity_type
        self.entity_name = entity_name
        self.configs = configs


class ConfigChange(Value):
    """One incremental operation: set/append/subtract take a value, delete does not."""

    __slots__ = ("operation", "name", "value")

    def __init__(self, *, operation: str, name: str, value: str | None = None):
        self.operation = operation
        self.name = name
        self.value = value


class AlterResult(Value):
    __slots__ = ("entity_type", "entity_name", "status", "changes", "error")

    def __init__(self, *, entity_type: str, entity_name: str, status: str, changes: tuple[str, ...], error: str | None = None):
        self.entity_type = entity_type
        self.entity_name = entity_name
        # altered | validated | failed
        self.status = status
        self.changes = changes
        self.error = error


def resource_name(entity_type: str, name: str | None) -> str:
    """Check and normalise the entity name for its type."""
    if entity_type == "broker-default":
        if name:
            raise UsageError("broker-default takes no name: it is the cluster-wide default of every broker")
        return ""
    if not name:
        what = {"topic": "", "group": " (a group id)", "client-metrics": " (a subscription name)"}.get(entity_type, " (a broker id)")
        raise UsageError(f"{entity_type} needs a name{what}")
    if entity_type in ("broker", "broker-logger") and not name.isdigit():
        raise UsageError(f"{entity_type} takes a broker id, not {name!r}")
    return name


def _display_name(entity_type: str, name: str) -> str:
    if entity_type == "broker-default":
        return "cluster default"
    return f"client-metrics subscription {name}" if entity_type == "client-metrics" else f"{entity_type} {name}"


def _confluent_type(entity_type: str) -> ResourceType:
    from confluent_kafka.admin import ResourceType

    return ResourceType.TOPIC if entity_type == "topic" else ResourceType.BROKER


def describe_configs(
    session: AdminSession, entity_type: str, names: Sequence[str | None], *, include_defaults: bool = False, keys: Sequence[str] = ()
) -> Partial[list[ResourceConfig]]:
    """Configs of each entity, sorted by name; overrides only unless `include_defaults`.
    client-metrics without a name: every subscription."""
    if entity_type == "client-metrics" and list(names) == [None]:
        names = list_subscriptions(session)
        if not names:
            return Partial([], {})
    resolved = [resource_name(entity_type, n) for n in names]
    if entity_type in _RESOURCE_TYPES:
        found, errors = _describe_on_wire(session, entity_type, resolved)
    else:
        found, errors = _describe_kafka(session, entity_type, resolved)
    out = []
    for resource in found:
        configs = [
            c
            for c in resource.configs
            if (include_defaults or keys or c.source not in ("DEFAULT_CONFIG", "STATIC_BROKER_CONFIG") or entity_type == "broker-logger")
            and (not keys or c.name in keys)
        ]
        out.append(ResourceConfig(entity_type=resource.entity_type, entity_name=resource.entity_name, configs=tuple(configs)))
    return Partial(out, errors)


def _describe_kafka(session: AdminSession, entity_type: str, names: Sequence[str]) -> tuple[list[ResourceConfig], dict[str, KctlError]]:
    """Topics' and brokers' configs through the session's Kafka operations (kctl's wire
    client unless a setting needs librdkafka: one DescribeConfigs for the topics, one to
    each broker asked); an unknown topic is said after one answer."""
    from kctl.admin.client.kafka import BROKER, TOPIC

    kind = TOPIC if entity_type == "topic" else BROKER
    answer = session.kafka.describe_configs([(kind, n) for n in names], f"describe {entity_type} configs")
    found, errors = [], {}
    for name in names:
        if (kind, name) in answer.errors:
            errors[name] = _not_found_for_unknown(answer.errors[(kind, name)], entity_type, name)
            continue
        values = sorted((ConfigValue(name=c.name, value=MASK if c.sensitive and c.value is not None else c.value, source=c.source,
                                     is_default=c.source == "DEFAULT_CONFIG", read_only=c.read_only, sensitive=c.sensitive)
                         for c in answer.results.get((kind, name), {}).values()), key=lambda c: c.name)
        found.append(ResourceConfig(entity_type=entity_type, entity_name=name, configs=tuple(values)))
    return found, errors


def _not_found_for_unknown(error: KctlError, entity_type: str, name: str) -> KctlError:
    if entity_type == "topic" and unknown_topic(error):
        return no_such_topic(f"describe configs of topic {name}", name)
    return error


def list_subscriptions(session: AdminSession) -> list[str]:
    """Names of the cluster's client-metrics subscriptions (ListConfigResources, KIP-714 and
    KIP-1142; version 0 is Kafka 3.7-4.0's ListClientMetricsResources)."""
    answer = session.ask("list client-metrics subscriptions", apis.LIST_CONFIG_RESOURCES,
                         {"resource_types": [_RESOURCE_TYPES["client-metrics"]]}, 0, 1, needs=_needs("client-metrics"))
    if answer.error_code:
        raise for_kafka_code(answer.error_code, None, "list client-metrics subscriptions")
    return sorted(r.resource_name for r in answer.config_resources
                  if getattr(r, "resource_type", _RESOURCE_TYPES["client-metrics"]) == _RESOURCE_TYPES["client-metrics"])


def _node(entity_type: str, name: str) -> int | None:
    """The broker a request about the entity goes to: a broker's loggers are its own; any
    broker answers for the others (the controller's view, forwarded)."""
    return int(name) if entity_type == "broker-logger" else None


def _describe_on_wire(session: AdminSession, entity_type: str, names: Sequence[str]) -> tuple[list[ResourceConfig], dict[str, KctlError]]:
    """The types librdkafka cannot address (see _RESOURCE_TYPES), through kctl's wire client."""
    # Kafka describes any subscription name, existing or not, with default values.
    existing = set(list_subscriptions(session)) if entity_type == "client-metrics" else None
    found: list[ResourceConfig] = []
    errors: dict[str, KctlError] = {}
    for name in names:
        action = f"describe configs of {_display_name(entity_type, name)}"
        key = name or "cluster-default"
        if existing is not None and name not in existing:
            errors[key] = NotFoundError(action=action, cause="no such subscription")
            continue
        fields: t.DescribeConfigsRequest = {
            "resources": [{"resource_type": _RESOURCE_TYPES[entity_type], "resource_name": name, "configuration_keys": None}]}
        try:
            answer = session.ask(action, apis.DESCRIBE_CONFIGS, fields, 1, 4, node=_node(entity_type, name), needs=_needs(entity_type))
        except KctlError as exc:
            errors[key] = exc
            continue
        result = answer.results[0]
        if result.error_code:
            errors[key] = for_kafka_code(result.error_code, result.error_message, action)
            continue
        values = sorted(
            (
                ConfigValue(
                    name=c.name,
                    value=MASK if c.is_sensitive and c.value is not None else c.value,
                    source=CONFIG_SOURCES.get(c.config_source, "UNKNOWN"),
                    is_default=c.config_source == DEFAULT_CONFIG,
                    read_only=bool(c.read_only),
                    sensitive=bool(c.is_sensitive),
                )
                for c in result.configs
            ),
            key=lambda c: c.name,
        )
        found.append(ResourceConfig(entity_type=entity_type, entity_name=name, configs=tuple(values)))
    return found, errors


def _needs(entity_type: str) -> str | None:
    return {"group": "group configs (KIP-848, Kafka 4.0+)", "client-metrics": "client metrics (KIP-714, Kafka 3.7+)"}.get(entity_type)


def parse_changes(sets: Iterable[tuple[str, str]] = (), deletes: Iterable[str] = (), appends: Iterable[tuple[str, str]] = (),
                  subtracts: Iterable[tuple[str, str]] = ()) -> list[ConfigChange]:
    changes = [ConfigChange(operation="set", name=k, value=v) for k, v in sets]
    changes += [ConfigChange(operation="delete", name=k) for k in deletes]
    changes += [ConfigChange(operation="append", name=k, value=v) for k, v in appends]
    changes += [ConfigChange(operation="subtract", name=k, value=v) for k, v in subtracts]
    names = [c.name for c in changes]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise UsageError(action="alter configs", cause=f"{', '.join(duplicated)} given more than once")
    if not changes:
        raise UsageError("nothing to change: give --set, --delete, --append or --subtract")
    return changes


def _describe_change(change: ConfigChange) -> str:
    symbol = {"set": "=", "append": "+=", "subtract": "-="}.get(change.operation)
    return f"{change.name}{symbol}{change.value}" if symbol else f"-{change.name}"


def alter_configs(
    session: AdminSession, entity_type: str, names: Sequence[str | None], changes: Sequence[ConfigChange], *, validate_only: bool = False
) -> Partial[list[AlterResult]]:
    resolved = [resource_name(entity_type, n) for n in names]
    described = [_describe_change(c) for c in changes]
    if entity_type in _RESOURCE_TYPES:
        outcomes = _alter_on_wire(session, entity_type, resolved, changes, validate_only)
    else:
        outcomes = _alter_confluent(session, entity_type, resolved, changes, validate_only)
    results, errors = [], {}
    for name in resolved:
        outcome = outcomes[name]
        if isinstance(outcome, KctlError):
            errors[name or "cluster-default"] = outcome
            results.append(AlterResult(entity_type=entity_type, entity_name=name, status="failed", changes=tuple(described), error=outcome.message))
        else:
            status = "validated" if validate_only else "altered"
            results.append(AlterResult(entity_type=entity_type, entity_name=name, status=status, changes=tuple(described)))
    return Partial(results, errors)


def _alter_confluent(session: AdminSession, entity_type: str, names: Sequence[str], changes: Sequence[ConfigChange],
                     validate_only: bool) -> dict[str, KctlError | None]:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    ops = {"set": AlterConfigOpType.SET, "delete": AlterConfigOpType.DELETE, "append": AlterConfigOpType.APPEND, "subtract": AlterConfigOpType.SUBTRACT}
    resources = [
        ConfigResource(
            _confluent_type(entity_type),
            name,
            incremental_configs=[ConfigEntry(c.name, c.value, incremental_operation=ops[c.operation]) for c in changes],
        )
        for name in names
    ]

    def ask() -> dict[str, KctlError | None]:
        futures = session.client.incremental_alter_configs(resources, validate_only=validate_only, request_timeout=session.timeout)
        return session.wait_all({resource.name: future for resource, future in futures.items()}, f"alter {entity_type} configs")

    results = ask()
    for name, result in results.items():
        if entity_type == "topic" and unknown_topic(result):
            results[name] = no_such_topic(f"alter configs of topic {name}", name)
        elif isinstance(result, KctlError):
            results[name] = result.but(action=f"alter configs of {_display_name(entity_type, name)}")
    return results


def _alter_on_wire(session: AdminSession, entity_type: str, names: Sequence[str], changes: Sequence[ConfigChange],
                   validate_only: bool) -> dict[str, KctlError | None]:
    """IncrementalAlterConfigs of the types librdkafka cannot address, one request per
    entity (a broker's loggers are altered on that broker), all sent at once."""
    if entity_type == "broker-logger" and any(c.operation in ("append", "subtract") for c in changes):
        raise InvalidError(action="alter broker-logger configs", cause="loggers take {sets} and {deletes} only")
    configs = [{"name": c.name, "config_operation": OPERATIONS.index(c.operation), "value": c.value} for c in changes]
    action = f"alter {entity_type} configs"
    requests = [(_node(entity_type, name), apis.INCREMENTAL_ALTER_CONFIGS,
                 {"resources": [{"resource_type": _RESOURCE_TYPES[entity_type], "resource_name": name, "configs": configs}],
                  "validate_only": validate_only}, 0, 1)
                for name in names]
    try:
        # Altering configs is idempotent, so the wire client's one retry on a dropped
        # connection changes nothing twice.
        answers = session.ask_all(action, requests, needs=_needs(entity_type))
    except KctlError as exc:
        return {name: exc.but(action=f"alter configs of {_display_name(entity_type, name)}") for name in names}
    results: dict[str, KctlError | None] = {}
    for name, answer in zip(names, answers):
        result = answer.responses[0]
        results[name] = for_kafka_code(result.error_code, result.error_message,
                                       f"alter configs of {_display_name(entity_type, name)}") if result.error_code else None
    return results


def delete_subscriptions(session: AdminSession, subscriptions: Sequence[ResourceConfig], *, validate_only: bool = False) -> Partial[list[AlterResult]]:
    """Remove described client-metrics subscriptions: every config each has is deleted,
    as kafka-client-metrics --delete does."""
    results: list[AlterResult] = []
    errors: dict[str, KctlError] = {}
    for resource in subscriptions:
        changes = [ConfigChange(operation="delete", name=c.name) for c in resource.configs]
        done, failed = alter_configs(session, "client-metrics", [resource.entity_name], changes, validate_only=validate_only)
        results += done
        errors.update(failed)
    return Partial(results, errors)
