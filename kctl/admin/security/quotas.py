"""Client quotas (KIP-546): the rates Kafka allows users, client ids and IPs, listed,
resolved to what applies to a client, and altered incrementally as kafka-configs does.

librdkafka has no quota API, so DescribeClientQuotas and AlterClientQuotas go through
kctl's wire client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kctl.admin.client.errors import for_kafka_code
from kctl.admin.client.session import AdminSession
from kctl.errors import UsageError
from kctl.messages import apis

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from kctl.messages import types as t

USER, CLIENT_ID, IP = "user", "client-id", "ip"
# An entity's default (Kafka: entity name null) is shown and written as this.
DEFAULT = "<default>"
KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate", "connection_creation_rate")
IP_KEYS = ("connection_creation_rate",)
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2
# What a broker without the quota APIs (the bundled one) is said not to support.
_NEEDS = "client quotas (no DescribeClientQuotas/AlterClientQuotas API, KIP-546)"


@dataclass(frozen=True)
class Entity:
    """A quota entity: a user, a client id, both, or an IP; a name or DEFAULT each."""

    user: str | None = None
    client_id: str | None = None
    ip: str | None = None

    def parts(self) -> list[tuple[str, str | None]]:
        """(entity type, name) pairs as the protocol wants them: DEFAULT is a null name."""
        pairs = [(USER, self.user), (CLIENT_ID, self.client_id), (IP, self.ip)]
        return [(kind, None if name == DEFAULT else name) for kind, name in pairs if name is not None]

    def __str__(self) -> str:
        return ", ".join(f"{kind} {name if name is not None else DEFAULT}" for kind, name in self.parts())

    def names(self) -> dict[str, str]:
        """The names given, by field (user, client_id, ip): resource files' `entity`."""
        return {k: v for k, v in (("user", self.user), ("client_id", self.client_id), ("ip", self.ip)) if v is not None}


@dataclass(frozen=True)
class Quota:
    """One quota value set on one entity."""

    user: str | None
    client_id: str | None
    ip: str | None
    quota: str
    value: float


@dataclass(frozen=True)
class EffectiveQuota:
    """The value that applies to a client for one quota, and the entity it was set on."""

    quota: str
    value: float | None
    source: str


def entity_of(user: str | None, client_id: str | None, ip: str | None) -> Entity:
    if ip is not None and (user is not None or client_id is not None):
        raise UsageError(cause="an IP quota stands alone: give {ip} (or {default_ip}) without {user} or {client_id}")
    if user is None and client_id is None and ip is None:
        raise UsageError(cause="name the entity: {user}, {client_id} (or both), {ip}, or their defaults ({default_user}, {default_client_id}, "
                               "{default_ip})")
    if ip not in (None, DEFAULT):
        import ipaddress

        try:
            ipaddress.ip_address(ip)
        except ValueError as exc:
            raise UsageError(cause=f"{{ip}} {ip!r} is not an IPv4 or IPv6 address") from exc
    return Entity(user, client_id, ip)


def parse_key(text: str, entity: Entity) -> str:
    key = text.strip().lower().replace("-", "_")
    accepted = IP_KEYS if entity.ip is not None else tuple(k for k in KEYS if k not in IP_KEYS)
    if key not in accepted:
        raise UsageError(f"unknown quota {text!r} for {'an IP' if entity.ip is not None else 'users and client ids'}; accepted: {', '.join(accepted)}")
    return key


def parse_value(key: str, text: str) -> float:
    """A rate: bytes per second (with units, 1MiB, 10MB/s) for the byte rates, a number otherwise."""
    from kctl.sizes import parse_bytes

    if key.endswith("byte_rate"):
        value = float(parse_bytes(text, f"quota {key}"))
    else:
        try:
            value = float(text)
        except ValueError as exc:
            raise UsageError(action=f"parse quota {key} {text!r}", cause="expected a number") from exc
    if value <= 0:
        raise UsageError(cause=f"quota {key} must be positive, not {text}", hint="remove a quota with `kctl quota delete`")
    return value


# -- describe --------------------------------------------------------------------------------


def _component(kind: str, name: str | None) -> t.DescribeClientQuotasRequestComponentData:
    if name is None:
        return {"entity_type": kind, "match_type": MATCH_ANY, "match": None}
    if name == DEFAULT:
        return {"entity_type": kind, "match_type": MATCH_DEFAULT, "match": None}
    return {"entity_type": kind, "match_type": MATCH_EXACT, "match": name}


def _describe(session: AdminSession, components: Sequence[tuple[str, str | None]], strict: bool) -> list[Quota]:
    action = "describe client quotas"
    fields: t.DescribeClientQuotasRequest = {"components": [_component(k, n) for k, n in components], "strict": strict}
    response = session.ask(action, apis.DESCRIBE_CLIENT_QUOTAS, fields, 0, 1, needs=_NEEDS)
    if response.error_code:
        raise for_kafka_code(response.error_code, response.error_message, action)
    quotas = []
    for entry in response.entries or []:
        names = {e.entity_type: (DEFAULT if e.entity_name is None else e.entity_name) for e in entry.entity}
        for value in entry.values:
            quotas.append(Quota(names.get(USER), names.get(CLIENT_ID), names.get(IP), value.key, value.value))
    return sorted(quotas, key=lambda q: (q.user or "", q.client_id or "", q.ip or "", q.quota))


def list_quotas(session: AdminSession, user: str | None = None, client_id: str | None = None, ip: str | None = None) -> list[Quota]:
    """Every quota, or those of entities matching the names given (DEFAULT: the default)."""
    components = [(k, n) for k, n in ((USER, user), (CLIENT_ID, client_id), (IP, ip)) if n is not None]
    return _describe(session, components, strict=False)


# Kafka's precedence for user and client-id quotas, most specific first (KIP-55,
# docs "Quotas"): each (user, client-id) pattern names where a value is looked up.
_PRECEDENCE = (
    ("user", "client"), ("user", "default-client"), ("user", None),
    ("default-user", "client"), ("default-user", "default-client"), ("default-user", None),
    (None, "client"), (None, "default-client"),
)


def quotas_by_entity(session: AdminSession) -> dict[Entity, dict[str, float]]:
    """Every quota on the cluster, by entity (three requests: non-strict matching of one
    entity type finds every entity that has it)."""
    by_entity: dict[Entity, dict[str, float]] = {}
    for components in ([(USER, None)], [(CLIENT_ID, None)], [(IP, None)]):
        for quota in _describe(session, components, strict=False):
            by_entity.setdefault(Entity(quota.user, quota.client_id, quota.ip), {})[quota.quota] = quota.value
    return by_entity


def effective_quotas(session: AdminSession, entity: Entity) -> list[EffectiveQuota]:
    """What applies to a client of `entity`: for each quota the most specific value set,
    following Kafka's precedence, and where it comes from ("-": no quota, unlimited)."""
    if entity.ip is not None:
        candidates = [Entity(ip=entity.ip)] + ([Entity(ip=DEFAULT)] if entity.ip != DEFAULT else [])
        keys: tuple[str, ...] = IP_KEYS
        components: list[tuple[str, str | None]] = [(IP, None)]
    else:
        candidates = _user_client_chain(entity)
        keys = tuple(k for k in KEYS if k not in IP_KEYS)
        components = [(USER, None), (CLIENT_ID, None)]
    # One request for every quota of the entity types involved; the chain is resolved here.
    by_entity: dict[Entity, dict[str, float]] = {}
    for quota in _describe_all(session, components):
        by_entity.setdefault(Entity(quota.user, quota.client_id, quota.ip), {})[quota.quota] = quota.value
    effective = []
    for key in keys:
        source = next((c for c in candidates if key in by_entity.get(c, {})), None)
        effective.append(EffectiveQuota(key, by_entity[source][key] if source else None, str(source) if source else "-"))
    return effective


def _describe_all(session: AdminSession, components: Sequence[tuple[str, str | None]]) -> list[Quota]:
    if len(components) == 1:
        return _describe(session, components, strict=False)
    # Entities with a user, with a client id, or both: non-strict matches any entity having
    # the component, so two requests cover the three shapes.
    found = set(_describe(session, [components[0]], strict=False)) | set(_describe(session, [components[1]], strict=False))
    return sorted(found, key=lambda q: (q.user or "", q.client_id or "", q.quota))


def _user_client_chain(entity: Entity) -> list[Entity]:
    names = {"user": entity.user, "default-user": DEFAULT, "client": entity.client_id, "default-client": DEFAULT, None: None}
    chain = []
    for user_part, client_part in _PRECEDENCE:
        if user_part == "user" and entity.user in (None, DEFAULT):
            continue
        if client_part == "client" and entity.client_id in (None, DEFAULT):
            continue
        candidate = Entity(names[user_part], names[client_part])
        if candidate not in chain and (candidate.user or candidate.client_id):
            chain.append(candidate)
    return chain


# -- alter -----------------------------------------------------------------------------------


def alter_quotas(session: AdminSession, entity: Entity, set_values: Mapping[str, float], remove: Sequence[str], dry_run: bool) -> None:
    """Set and remove quotas of one entity; every other quota of it stays as it is.
    With dry_run the broker validates the change (validate_only) and applies nothing."""
    ops: list[t.AlterClientQuotasRequestOpData] = [{"key": k, "value": v, "remove": False} for k, v in set_values.items()]
    ops += [{"key": k, "value": 0.0, "remove": True} for k in remove]
    entity_data: list[t.AlterClientQuotasRequestEntityData] = [{"entity_type": k, "entity_name": n} for k, n in entity.parts()]
    action = f"alter the quotas of {entity}"
    # Sent again after a dropped connection, it sets the same values: no harm.
    response = session.ask(action, apis.ALTER_CLIENT_QUOTAS, {"entries": [{"entity": entity_data, "ops": ops}], "validate_only": dry_run},
                           0, 1, needs=_NEEDS)
    for entry in response.entries:
        if entry.error_code:
            raise for_kafka_code(entry.error_code, entry.error_message, action)


def quotas_of(session: AdminSession, entity: Entity) -> dict[str, float]:
    """The quotas set on exactly this entity (strict: no entity with more components)."""
    components = [(k, n) for k, n in ((USER, entity.user), (CLIENT_ID, entity.client_id), (IP, entity.ip)) if n is not None]
    return {q.quota: q.value for q in _describe(session, components, strict=True)}


def quotas_after(session: AdminSession, entity: Entity, set_values: Mapping[str, float], removed: Sequence[str]) -> dict[str, float]:
    """The entity's quotas once the broker answering shows a change just made.

    AlterClientQuotas goes to the controller; DescribeClientQuotas is answered from a
    broker's copy of the metadata, which may lag for a moment, so ask until it agrees.
    """
    from kctl.polling import poll

    def applied(values) -> bool:
        return all(values.get(k) == v for k, v in set_values.items()) and not any(k in values for k in removed)

    return poll(lambda: quotas_of(session, entity), applied, timeout=session.timeout, interval=0.1)
