"""DescribeClientQuotas and AlterClientQuotas (KIP-546), stored durably with Kafka's
validation: entity types user, client-id and ip (an ip entity stands alone), the quota
keys each accepts, a name or the default (null) per type. Describing needs
DESCRIBE_CONFIGS on the cluster, altering ALTER_CONFIGS. producer_byte_rate and
consumer_byte_rate are enforced (kctl/broker/quotas.py); the others are stored only."""

from __future__ import annotations

import ipaddress

from kctl.broker.handlers.common import answer_storage_errors
from kctl.broker.protocol import errors
from kctl.broker.security import authorizer as az

USER_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
IP_KEYS = ("connection_creation_rate",)
ENTITY_TYPES = ("user", "client-id", "ip")
# The keys Kafka types as LONG (ClientQuotaControlManager): whole numbers only.
_WHOLE = frozenset({"producer_byte_rate", "consumer_byte_rate", "connection_creation_rate"})
EXACT, DEFAULT, ANY = 0, 1, 2


def _denied(broker, context, operation) -> bool:
    return not context.allowed(broker, operation, az.CLUSTER, az.CLUSTER_NAME)


async def describe_client_quotas(broker, context, request):
    answer = {"throttle_time_ms": 0, "error_code": errors.NONE, "error_message": "", "entries": []}
    if _denied(broker, context, az.DESCRIBE_CONFIGS):
        return {**answer, "error_code": errors.CLUSTER_AUTHORIZATION_FAILED, "error_message": None, "entries": None}
    components = request.components or []
    types = [c.entity_type for c in components]
    for c in components:
        if c.entity_type not in ENTITY_TYPES:
            return {**answer, "error_code": errors.INVALID_REQUEST, "entries": None,
                    "error_message": f"Custom entity type '{c.entity_type}' not supported"}
        if types.count(c.entity_type) > 1:
            return {**answer, "error_code": errors.INVALID_REQUEST, "entries": None,
                    "error_message": f"Duplicate entity type {c.entity_type}"}
        if c.match_type not in (EXACT, DEFAULT, ANY) or (c.match_type == EXACT and c.match is None):
            return {**answer, "error_code": errors.INVALID_REQUEST, "entries": None,
                    "error_message": f"Invalid match for entity type {c.entity_type}"}
    for entity, values in sorted(broker.security.quotas.items(), key=lambda item: repr(item[0])):
        names = dict(entity)
        if request.strict and set(names) != set(types):
            continue
        if not all(c.entity_type in names and _matches(c, names[c.entity_type]) for c in components):
            continue
        answer["entries"].append({
            "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
            "values": [{"key": k, "value": v} for k, v in sorted(values.items())]})
    return answer


def _matches(component, name) -> bool:
    if component.match_type == EXACT:
        return name == component.match
    if component.match_type == DEFAULT:
        return name is None
    return True


def _entity_problem(entity) -> str | None:
    types = [e.entity_type for e in entity]
    if not entity:
        return "Invalid empty client quota entity"
    for e in entity:
        if e.entity_type not in ENTITY_TYPES:
            return f"Unhandled client quota entity type: {e.entity_type}"
        if types.count(e.entity_type) > 1:
            return f"Duplicate {e.entity_type} entity"
        if e.entity_type == "ip" and e.entity_name is not None:
            try:
                ipaddress.ip_address(e.entity_name)
            except ValueError:
                return f"{e.entity_name} is not a valid IP or resolvable host."
    if "ip" in types and len(types) > 1:
        return "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
    return None


async def alter_client_quotas(broker, context, request):
    entries = request.entries or []
    if _denied(broker, context, az.ALTER_CONFIGS):
        return {"throttle_time_ms": 0, "entries": [
            {"error_code": errors.CLUSTER_AUTHORIZATION_FAILED, "error_message": "Cluster authorization failed.",
             "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity]}
            for entry in entries]}
    quotas = {entity: dict(values) for entity, values in broker.security.quotas.items()}
    results = []
    for entry in entries:
        result = {"error_code": errors.NONE, "error_message": None,
                  "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity]}
        results.append(result)
        problem = _entity_problem(entry.entity)
        keys = IP_KEYS if any(e.entity_type == "ip" for e in entry.entity) else USER_KEYS
        for op in entry.ops or []:
            if problem:
                break
            if op.key not in keys:
                problem = f"Invalid configuration key {op.key}"
            elif not op.remove and op.key in _WHOLE and op.value != int(op.value):
                problem = f"Configuration {op.key} must be a Long value"
            elif not op.remove and op.value <= 0:
                problem = f"Configuration {op.key} must be greater than 0"
        if problem:
            result.update(error_code=errors.INVALID_REQUEST, error_message=problem)
            continue
        if request.validate_only:
            continue
        entity = tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity))
        values = quotas.setdefault(entity, {})
        for op in entry.ops or []:
            if op.remove:
                values.pop(op.key, None)
            else:
                values[op.key] = float(op.value)
        if not values:
            del quotas[entity]
    if quotas != broker.security.quotas:
        try:
            broker.security.update(quotas=quotas)
        except OSError as exc:
            answer_storage_errors(results, "store client quotas", exc)
    return {"throttle_time_ms": 0, "entries": results}


HANDLERS = {48: describe_client_quotas, 49: alter_client_quotas}
