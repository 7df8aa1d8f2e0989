"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics, the broker (its own
configs and the cluster-wide defaults) and the broker's loggers."""

from __future__ import annotations

import logging

from kctl.broker import configs as cfg
from kctl.broker import settings
from kctl.broker.handlers.common import storage_error_message
from kctl.broker.protocol import errors

TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LOGGERS = ("root", "kctl.broker", "kctl.broker.server", "kctl.broker.storage",
           "kctl.broker.coordinator", "kctl.broker.produce")
_SYNONYM_DEFS = {d.synonym: d for d in cfg.TOPIC_CONFIGS.values()} | cfg.BROKER_CONFIGS
DYNAMIC_BROKER_LOGGER_CONFIG = 6


class _Failure(Exception):
    def __init__(self, code: int, message: str):
        self.code, self.message = code, message


# Static settings Kafka's shipped server.properties leaves out: their defaults are Kafka's.
_DEFAULTED = frozenset({"connections.max.idle.ms", "fetch.max.bytes", "max.connections.per.ip.overrides"})


def _static_broker_configs(broker) -> dict[str, str]:
    c = broker.config
    fixed = {
        "node.id": str(c.node_id), "broker.id": str(c.node_id),
        "process.roles": "broker,controller",
        "listeners": ",".join(str(listener) for listener in c.listeners),
        "advertised.listeners": ",".join(f"{listener.protocol}://{c.advertised_host or listener.host}:{c.advertised_port_of(listener)}"
                                         for listener in c.listeners),
        "sasl.enabled.mechanisms": ",".join(c.sasl_mechanisms),
        "super.users": ";".join(c.super_users),
        "allow.everyone.if.no.acl.found": str(c.allow_everyone_if_no_acl_found).lower(),
        "authorizer.class.name": ("org.apache.kafka.metadata.authorizer.StandardAuthorizer"
                                  if c.authorizer else ""),
        "log.dirs": str(c.data_dir), "num.partitions": str(c.num_partitions),
        "auto.create.topics.enable": str(c.auto_create_topics).lower(),
        "default.replication.factor": "1", "offsets.topic.replication.factor": "1",
        "group.initial.rebalance.delay.ms": str(c.group_initial_rebalance_delay_ms),
        "socket.request.max.bytes": str(c.max_request_bytes),
        "log.retention.check.interval.ms": str(c.retention_check_interval_ms),
        "transaction.max.timeout.ms": str(c.transaction_max_timeout_ms),
        "transaction.state.log.replication.factor": "1",
        "log.cleaner.enable": str(c.log_cleaner_enable).lower(),
        "connections.max.idle.ms": str(c.connections_max_idle_ms),
        "fetch.max.bytes": str(c.fetch_max_bytes),
        "max.connections.per.ip.overrides": ",".join(f"{h}:{n}" for h, n in c.max_connections_per_ip_overrides.items()),
    }
    # The rest of what --config gave (dynamic ones are listed with their dynamic values).
    return fixed | {name: value for name, value in c.static_configs.items()
                    if name not in fixed and name not in cfg.DYNAMIC_BROKER_CONFIGS and name not in settings.RETENTION}


def _static_chain(broker, synonym: str) -> list[tuple[str, str, int]]:
    """The static (--config) entries behind a log.* default, as Kafka lists them: for
    log.retention.ms, each of log.retention.ms, .minutes and .hours that was given."""
    given = broker.config.static_configs
    names = [n for n in settings.RETENTION if n in given] if synonym == "log.retention.ms" else [synonym]
    return [(n, given[n], cfg.STATIC_BROKER_CONFIG) for n in names if n in given]


def _entry(name, value, source, read_only, synonyms, config_type, doc):
    return {"name": name, "value": value, "read_only": read_only, "config_source": source,
            "is_default": source == cfg.DEFAULT_CONFIG, "is_sensitive": False,
            "synonyms": synonyms, "config_type": config_type, "documentation": doc}


def _describe_topic(broker, name, with_synonyms):
    info = broker.logs.topics.get(name)
    if info is None:
        raise _Failure(errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist")
    values = broker.logs.resolved_configs(info)
    out = []
    for key, definition in cfg.TOPIC_CONFIGS.items():
        chain = []
        if key in info.configs:
            chain.append((key, info.configs[key], cfg.DYNAMIC_TOPIC_CONFIG))
        if definition.synonym in broker.logs.broker_overrides:
            chain.append((definition.synonym, broker.logs.broker_overrides[definition.synonym],
                          cfg.DYNAMIC_BROKER_CONFIG))
        if definition.synonym in broker.logs.broker_defaults:
            chain.append((definition.synonym, broker.logs.broker_defaults[definition.synonym],
                          cfg.DYNAMIC_DEFAULT_BROKER_CONFIG))
        if definition.synonym in broker.logs.static_defaults:
            chain += _static_chain(broker, definition.synonym)
        chain.append((definition.synonym or key, definition.default, cfg.DEFAULT_CONFIG))
        synonyms = [{"name": n, "value": v, "source": s} for n, v, s in chain] if with_synonyms else []
        out.append(_entry(key, values[key], chain[0][2], False, synonyms, definition.type,
                          definition.doc))
    return out


def _describe_broker(broker, name, with_synonyms):
    logs = broker.logs
    if name and name != str(broker.node_id):
        raise _Failure(errors.INVALID_REQUEST, f"Broker {name} is not this node ({broker.node_id})")
    static = _static_broker_configs(broker)
    out = []
    for key, value in static.items():
        source = cfg.DEFAULT_CONFIG if key in _DEFAULTED and key not in broker.config.static_configs else cfg.STATIC_BROKER_CONFIG
        if name == "":
            continue  # the cluster-default resource lists only dynamic defaults
        if key in settings.SENSITIVE:
            value = None  # as Kafka reports a PASSWORD: marked sensitive, its value left out
        synonyms = [{"name": key, "value": value, "source": source}] if with_synonyms else []
        entry = _entry(key, value, source, key not in cfg.DYNAMIC_BROKER_CONFIGS, synonyms,
                       cfg.PASSWORD if key in settings.SENSITIVE else cfg.STRING, None)
        entry["is_sensitive"] = key in settings.SENSITIVE
        out.append(entry)
    for key in sorted(cfg.DYNAMIC_BROKER_CONFIGS - set(static)):
        definition = _SYNONYM_DEFS.get(key)
        chain = []
        if name and key in logs.broker_overrides:
            chain.append((logs.broker_overrides[key], cfg.DYNAMIC_BROKER_CONFIG))
        if key in logs.broker_defaults:
            chain.append((logs.broker_defaults[key], cfg.DYNAMIC_DEFAULT_BROKER_CONFIG))
        if name == "" and not chain:
            continue
        # Given with --config: log.retention.ms resolved from .minutes or .hours too.
        given = logs.static_defaults.get(key, broker.config.static_configs.get(key))
        if given is not None:
            chain.append((given, cfg.STATIC_BROKER_CONFIG))
        if definition is not None:
            chain.append((definition.default, cfg.DEFAULT_CONFIG))
        if not chain:
            continue
        if name == "":
            chain = [c for c in chain if c[1] != cfg.DEFAULT_CONFIG]
        synonyms = [{"name": key, "value": v, "source": s} for v, s in chain] if with_synonyms else []
        out.append(_entry(key, chain[0][0], chain[0][1], False, synonyms,
                          definition.type if definition else cfg.STRING,
                          definition.doc if definition else None))
    return out


_set_loggers: set[str] = set()


def _describe_loggers(broker, name):
    if name and name != str(broker.node_id):
        raise _Failure(errors.INVALID_REQUEST, f"Broker {name} is not this node ({broker.node_id})")
    out = []
    for logger_name in sorted(set(LOGGERS) | _set_loggers):
        logger = logging.getLogger() if logger_name == "root" else logging.getLogger(logger_name)
        level = logging.getLevelName(logger.getEffectiveLevel())
        level = {"WARNING": "WARN", "CRITICAL": "FATAL"}.get(level, level)
        out.append(_entry(logger_name, level, DYNAMIC_BROKER_LOGGER_CONFIG if logger.level else
                          cfg.DEFAULT_CONFIG, False, [], cfg.STRING, None))
    return out


async def describe_configs(broker, context, request):
    results = []
    for resource in request.resources:
        result = {"error_code": errors.NONE, "error_message": "",  # Kafka's: "", not null
                  "resource_type": resource.resource_type,
                  "resource_name": resource.resource_name, "configs": []}
        try:
            if resource.resource_type == TOPIC:
                entries = _describe_topic(broker, resource.resource_name, request.include_synonyms)
            elif resource.resource_type == BROKER:
                entries = _describe_broker(broker, resource.resource_name, request.include_synonyms)
            elif resource.resource_type == BROKER_LOGGER:
                entries = _describe_loggers(broker, resource.resource_name)
            elif resource.resource_type == GROUP:
                entries = _describe_group(broker, resource.resource_name)
            else:
                raise _Failure(errors.INVALID_REQUEST,
                               f"Unsupported resource type {resource.resource_type}")
            keys = resource.configuration_keys
            if keys is not None:
                entries = [e for e in entries if e["name"] in keys]
            result["configs"] = entries
        except _Failure as failure:
            result.update(error_code=failure.code, error_message=failure.message)
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}


def _validate_topic_value(name, value):
    definition = cfg.TOPIC_CONFIGS.get(name)
    if definition is None:
        raise _Failure(errors.INVALID_CONFIG, f"Unknown topic config name: {name}")
    try:
        return cfg.validate(definition, value)
    except cfg.InvalidConfig as exc:
        raise _Failure(errors.INVALID_CONFIG, str(exc)) from None


def _validate_broker_value(name, value):
    if name not in cfg.DYNAMIC_BROKER_CONFIGS:
        raise _Failure(errors.INVALID_REQUEST if name in _static_names() else errors.INVALID_CONFIG,
                       f"Cannot update these configs dynamically: Set({name})")
    definition = _SYNONYM_DEFS.get(name)
    if definition is None or value is None:
        return value
    try:
        return cfg.validate(definition, value)
    except cfg.InvalidConfig as exc:
        # Kafka refuses bad dynamic broker values with INVALID_REQUEST, not INVALID_CONFIG.
        raise _Failure(errors.INVALID_REQUEST, str(exc)) from None


def _static_names():
    return {"node.id", "broker.id", "listeners", "advertised.listeners", "log.dirs",
            "process.roles", "sasl.enabled.mechanisms", "super.users", "allow.everyone.if.no.acl.found",
            "authorizer.class.name"}


def _apply(broker, resource, new_values: dict[str, str | None], incremental_ops, validate_only):
    """Compute and (unless validate_only) store a resource's new dynamic configs."""
    kind, name = resource.resource_type, resource.resource_name
    if kind == TOPIC:
        info = broker.logs.topics.get(name)
        if info is None:
            raise _Failure(errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist")
        current = dict(info.configs) if incremental_ops else {}
        validator = _validate_topic_value
    elif kind == BROKER:
        if name and name != str(broker.node_id):
            raise _Failure(errors.INVALID_REQUEST, f"Broker {name} is not this node")
        source = broker.logs.broker_overrides if name else broker.logs.broker_defaults
        current = dict(source) if incremental_ops else {}
        validator = _validate_broker_value
    elif kind == BROKER_LOGGER:
        return _apply_loggers(broker, name, new_values, incremental_ops, validate_only)
    elif kind == GROUP:
        return _apply_group(broker, name, new_values, incremental_ops, validate_only)
    else:
        raise _Failure(errors.INVALID_REQUEST, f"Unsupported resource type {kind}")
    for key, (op, value) in new_values.items():
        if op == DELETE:
            if kind == TOPIC and key not in cfg.TOPIC_CONFIGS:
                raise _Failure(errors.INVALID_CONFIG, f"Unknown topic config name: {key}")
            current.pop(key, None)
            continue
        if op in (APPEND, SUBTRACT):
            definition = cfg.TOPIC_CONFIGS.get(key) if kind == TOPIC else _SYNONYM_DEFS.get(key)
            if definition is None or definition.type != cfg.LIST:
                raise _Failure(errors.INVALID_CONFIG,
                               f"Config value append is not allowed for config key: {key}")
            base = current.get(key) or (definition.default if op == APPEND else "")
            items = [i for i in base.split(",") if i]
            for item in (value or "").split(","):
                if op == APPEND and item and item not in items:
                    items.append(item)
                elif op == SUBTRACT and item in items:
                    items.remove(item)
            value = ",".join(items)
        current[key] = validator(key, value)
    if validate_only:
        return
    try:
        if kind == TOPIC:
            broker.logs.set_topic_configs(name, current)
        elif name:
            broker.logs.set_broker_configs(broker.logs.broker_defaults, current)
        else:
            broker.logs.set_broker_configs(current, broker.logs.broker_overrides)
    except OSError as exc:
        raise _Failure(errors.KAFKA_STORAGE_ERROR, storage_error_message("save the configs", exc)) from None


def _apply_group(broker, name, new_values, incremental_ops, validate_only):
    """A group's dynamic configs (the share.* ones the share coordinator reads)."""
    from kctl.broker.coordinator.share import ConfigError, validate_config

    current = dict(broker.share_groups.configs.get(name, {}))
    changes: dict[str, str | None] = {} if incremental_ops else {key: None for key in current}
    for key, (op, value) in new_values.items():
        if op in (APPEND, SUBTRACT):
            raise _Failure(errors.INVALID_CONFIG, f"Config value append is not allowed for config key: {key}")
        try:
            changes[key] = None if op == DELETE else validate_config(key, value or "")
        except ConfigError as exc:
            raise _Failure(errors.INVALID_CONFIG, str(exc)) from None
    if validate_only:
        return
    try:
        broker.share_groups.set_configs(name, changes)
    except OSError as exc:
        raise _Failure(errors.KAFKA_STORAGE_ERROR, storage_error_message("save the group configs", exc)) from None


def _describe_group(broker, name):
    from kctl.broker.coordinator.share import CONFIGS

    own = broker.share_groups.configs.get(name, {})
    return [_entry(key, own.get(key, default), cfg.DYNAMIC_GROUP_CONFIG if key in own else cfg.DEFAULT_CONFIG,
                   False, [], cfg.INT if limits else cfg.STRING, "") for key, (default, limits) in CONFIGS.items()]


def _apply_loggers(broker, name, new_values, incremental_ops, validate_only):
    levels = {"TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
              "WARN": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
    changes = []
    for key, (op, value) in new_values.items():
        if op == DELETE:
            changes.append((key, logging.NOTSET))
        elif op == SET and (value or "").upper() in levels:
            changes.append((key, levels[value.upper()]))
        else:
            raise _Failure(errors.INVALID_REQUEST if op in (APPEND, SUBTRACT) else errors.INVALID_CONFIG,
                           f"Invalid log level {value} for logger {key}" if op == SET else
                           f"{('APPEND', 'SUBTRACT')[op - APPEND]} operation is not allowed for the BROKER_LOGGER resource")
    if not validate_only:
        for key, level in changes:
            (logging.getLogger() if key == "root" else logging.getLogger(key)).setLevel(level)
            (_set_loggers.add if level else _set_loggers.discard)(key)


async def _alter(broker, request, incremental: bool):
    responses = []
    for resource in request.resources:
        result = {"error_code": errors.NONE, "error_message": None,
                  "resource_type": resource.resource_type, "resource_name": resource.resource_name}
        try:
            values = {c.name: ((c.config_operation if incremental else SET), c.value)
                      for c in resource.configs}
            _apply(broker, resource, values, incremental, request.validate_only)
        except _Failure as failure:
            result.update(error_code=failure.code, error_message=failure.message)
        responses.append(result)
    return {"throttle_time_ms": 0, "responses": responses}


async def alter_configs(broker, context, request):
    return await _alter(broker, request, incremental=False)


async def incremental_alter_configs(broker, context, request):
    return await _alter(broker, request, incremental=True)


HANDLERS = {32: describe_configs, 33: alter_configs, 44: incremental_alter_configs}
