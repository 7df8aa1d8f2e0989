"""The plan: the changes that make a cluster match resource files, in the order apply
makes them, each with one readable line and a machine payload.

Pure: files and a ClusterState in, Changes out, so a plan is reviewed before anything
moves and a re-run after a partial failure plans only what is left. Changes Kafka
cannot make (fewer partitions, more replicas than brokers) and changes a topic's policy
forbids are planned as `refused`, with the reason, and never applied.

What a document owns (and so what it removes without --prune):
- a Topic its configs: an override the file does not list is deleted (unless its policy
  says allow_config_delete: false);
- a ClusterConfig the dynamic configs of its entity (the cluster default or one broker);
- Acl documents the ACLs of every principal their rows name;
- a Quota its entity's quotas; a User its SCRAM credentials;
- a Connector its whole config and its state (connectors.py).
Whole resources the files do not list (topics, principals' ACLs, quota entities, users,
connectors)
are deleted only with --prune; never topics whose names start with '_' (by convention
other systems' internal topics: _schemas, _confluent-*), nor the credentials of the user
kctl itself logs in as.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kctl.admin.declarative.connectors import is_secret as is_secret_key
from kctl.admin.declarative.resources import AclSet, ClusterConfig, Connector, QuotaSet, Resource, Topic, User
from kctl.admin.declarative.state import ClusterState, LiveTopic

# The order apply goes in: what others depend on first, removals last.
ACTIONS = (
    "create", "alter-config", "add-partitions", "reassign",
    "add-acl", "set-quota", "set-password", "set-state", "refused",
    "remove-acl", "remove-quota", "delete-credential", "delete",
)
SYMBOLS = {"create": "+", "add-acl": "+", "set-password": "+", "refused": "!"}
REMOVALS = ("remove-acl", "remove-quota", "delete-credential", "delete")


@dataclass(frozen=True)
class Change:
    action: str
    kind: str
    name: str
    # One readable line: "retention.ms 604800000 -> 86400000".
    detail: str
    # FILE:LINE of the document asking for it; None for what --prune removes.
    source: str | None = None
    reason: str | None = None
    # What apply needs, JSON-ready: see each planner for its keys.
    data: dict[str, Any] = field(default_factory=dict)
    # The kctl context of the cluster it is for (None: the command's).
    context: str | None = None

    @property
    def symbol(self) -> str:
        return SYMBOLS.get(self.action, "-" if self.action in REMOVALS else "~")


def plan(resources: Sequence[Resource], state: ClusterState, *, prune: bool = False, login_user: str | None = None,
         env: Mapping[str, str] | None = None) -> list[Change]:
    """`login_user`: the SCRAM user the session authenticates as, which --prune keeps;
    `env`: where connectors' secrets are read from."""
    changes: list[Change] = []
    topics = [r for r in resources if isinstance(r, Topic)]
    if state.topics is not None:
        for topic in topics:
            changes += _topic(topic, state.topics.get(topic.name), state)
        if prune:
            listed = {t.name for t in topics}
            changes += [
                Change("delete", "Topic", name, "not in the files (--prune)")
                for name in sorted(state.topics)
                if name not in listed and not name.startswith("_")
            ]
    if state.cluster_configs is not None:
        for config in (r for r in resources if isinstance(r, ClusterConfig)):
            changes += _cluster_config(config, state)
    if state.acls is not None:
        changes += _acls([r for r in resources if isinstance(r, AclSet)], state.acls, prune)
    if state.quotas is not None:
        changes += _quotas([r for r in resources if isinstance(r, QuotaSet)], state.quotas, prune)
    if state.users is not None:
        changes += _users([r for r in resources if isinstance(r, User)], state.users, prune, login_user)
    if state.connectors is not None:
        changes += _connectors([r for r in resources if isinstance(r, Connector)], state.connectors, env or {}, prune)
    return sorted(changes, key=_order)


def _order(change: Change) -> tuple:
    """ACTIONS' order, with connectors after everything else they may need (topics, ACLs)
    and removed before it (a connector goes before its topics do)."""
    connector = change.kind == "Connector"
    if change.action in REMOVALS:
        phase = 2 if connector else 3
    else:
        phase = 1 if connector else 0
    return (phase, ACTIONS.index(change.action), change.kind, change.name)


def summary(changes: Sequence[Change]) -> str:
    counts = {"to create": 0, "to change": 0, "to remove": 0, "refused": 0}
    for change in changes:
        if change.action == "refused":
            counts["refused"] += 1
        elif change.action in REMOVALS:
            counts["to remove"] += 1
        elif change.action in ("create", "add-acl"):
            counts["to create"] += 1
        else:
            counts["to change"] += 1
    if not changes:
        return "no changes: the cluster matches the files"
    return "plan: " + ", ".join(f"{n} {what}" for what, n in counts.items() if n)


# -- topics ----------------------------------------------------------------------------------


def _refused(resource: Resource, reason: str, **data) -> Change:
    return Change("refused", resource.kind, resource.name, reason, resource.where, reason, data)


def _topic(topic: Topic, live: LiveTopic | None, state: ClusterState) -> list[Change]:
    brokers = state.brokers
    if live is None:
        return [_create(topic, brokers)]
    out = []
    if topic.partitions < live.partitions:
        out.append(_refused(topic, f"partitions {live.partitions} -> {topic.partitions}: Kafka cannot remove partitions"))
    elif topic.partitions > live.partitions:
        if not topic.policy.allow_partition_increase:
            out.append(_refused(topic, f"partitions {live.partitions} -> {topic.partitions}: the topic's policy does not allow adding partitions"))
        else:
            new = topic.replicas[live.partitions :] if topic.replicas else None
            out.append(
                Change(
                    "add-partitions", "Topic", topic.name, f"partitions {live.partitions} -> {topic.partitions}", topic.where,
                    data={"before": live.partitions, "after": topic.partitions, "replicas": [list(r) for r in new] if new else None},
                )
            )
    config = _config_change("Topic", topic.name, topic.where, topic.configs, live.configs, allow_delete=topic.policy.allow_config_delete)
    if config:
        out.append(config)
    out += _replication(topic, live, brokers)
    return out


def _create(topic: Topic, brokers: dict[int, str | None]) -> Change:
    rf = topic.replication_factor
    if topic.replicas:
        unknown = sorted({b for r in topic.replicas for b in r} - set(brokers))
        if unknown:
            return _refused(topic, f"replicas name broker(s) {', '.join(map(str, unknown))}, which the cluster does not have (brokers: {', '.join(map(str, sorted(brokers)))})")
    elif rf is not None and rf > len(brokers):
        return _refused(topic, f"replication factor {rf} is larger than the {len(brokers)} broker(s) available")
    parts = [f"partitions {topic.partitions}", f"replication factor {rf if rf is not None else 'broker default'}"]
    if topic.configs:
        parts.append(", ".join(f"{k}={v}" for k, v in sorted(topic.configs.items())))
    return Change(
        "create", "Topic", topic.name, "; ".join(parts), topic.where,
        data={
            "partitions": topic.partitions,
            "replication_factor": rf,
            "configs": dict(sorted(topic.configs.items())),
            "replicas": [list(r) for r in topic.replicas] if topic.replicas else None,
        },
    )


def _replication(topic: Topic, live: LiveTopic, brokers: dict[int, str | None]) -> list[Change]:
    """A reassignment when explicit replicas or the replication factor differ."""
    from kctl.admin.cluster.replication import generate

    current = {(topic.name, p): r for p, r in enumerate(live.replicas)}
    if topic.replicas:
        targets = {(topic.name, p): tuple(r) for p, r in enumerate(topic.replicas[: live.partitions])}
        unknown = sorted({b for r in targets.values() for b in r} - set(brokers))
        if unknown:
            return [_refused(topic, f"replicas name broker(s) {', '.join(map(str, unknown))}, which the cluster does not have")]
        what = "replica placement"
    elif topic.replication_factor is not None and topic.replication_factor != live.replication_factor:
        if topic.replication_factor > len(brokers):
            return [_refused(topic, f"replication factor {live.replication_factor} -> {topic.replication_factor}: larger than the {len(brokers)} broker(s) available")]
        moves = generate(current, brokers, replication_factor=topic.replication_factor)
        targets = {(m.topic, m.partition): m.target for m in moves}
        what = f"replication factor {live.replication_factor} -> {topic.replication_factor}"
    elif topic.placement == "rack-aware" and (off := _off_rack(current, brokers)):
        # Rebuild each partition that could span more racks around its leader; generate()
        # adds replicas on racks the partition does not use yet, least loaded first.
        racks = {r for r in brokers.values() if r is not None}
        targets = dict(current)
        for rf in sorted({len(current[key]) for key in off}):
            group = {key: current[key][:1] for key in off if len(current[key]) == rf}
            targets.update({(m.topic, m.partition): m.target for m in generate(group, brokers, replication_factor=rf)})
        what = f"rack-aware placement over {len(racks)} racks"
    else:
        return []
    moving = sorted(key for key, target in targets.items() if tuple(current[key]) != target)
    if not moving:
        return []
    if not topic.policy.allow_replication_change:
        return [_refused(topic, f"{what}: the topic's policy does not allow reassignments")]
    shifts = [{"partition": p, "current": list(current[(t, p)]), "target": list(targets[(t, p)])} for t, p in moving]
    return [Change("reassign", "Topic", topic.name, f"{what} ({len(shifts)} partition(s) move)", topic.where, data={"moves": shifts})]


def _off_rack(current: dict[tuple[str, int], tuple[int, ...]], brokers: dict[int, str | None]) -> list[tuple[str, int]]:
    """Partitions whose replicas span fewer racks than they could."""
    racks = {r for r in brokers.values() if r is not None}
    if not racks:
        return []
    return sorted(key for key, replicas in current.items() if len({brokers.get(b) for b in replicas}) < min(len(replicas), len(racks)))


def _config_change(kind: str, name: str, where: str, desired: Mapping[str, str], live: Mapping[str, str], *, allow_delete: bool,
                   scope: str = "topic") -> Change | None:
    set_ = {k: [live.get(k), v] for k, v in sorted(desired.items()) if not _same(scope, k, live.get(k), v)}
    delete = {k: v for k, v in sorted(live.items()) if k not in desired} if allow_delete else {}
    if not set_ and not delete:
        return None
    parts = [f"{k} {before if before is not None else '(default)'} -> {after}" for k, (before, after) in set_.items()]
    parts += [f"{k} {before} -> (default)" for k, before in delete.items()]
    return Change("alter-config", kind, name, "; ".join(parts), where, data={"set": set_, "delete": delete})


def _same(scope: str, key: str, live: str | None, desired: str) -> bool:
    """Equal as Kafka reads them: booleans ignore case, lists ignore spaces after commas."""
    if live is None:
        return False
    from kctl.admin.declarative.kafka_configs import definitions

    kind = definitions(scope).get(key)
    type_ = kind.type if kind else "STRING"
    if type_ == "BOOLEAN":
        return live.strip().lower() == desired.strip().lower()
    if type_ == "LIST":
        return [p.strip() for p in live.split(",")] == [p.strip() for p in desired.split(",")]
    if type_ in ("INT", "LONG", "SHORT"):
        try:
            return int(live) == int(desired)
        except ValueError:
            return live == desired
    if type_ == "DOUBLE":
        try:
            return float(live) == float(desired)
        except ValueError:
            return live == desired
    return live == desired


# -- cluster configs -------------------------------------------------------------------------


def _cluster_config(config: ClusterConfig, state: ClusterState) -> list[Change]:
    configs = state.cluster_configs or {}
    live = configs.get(config.name)
    if live is None:
        return [_refused(config, f"the cluster has no broker {config.name} (brokers: {', '.join(sorted(n for n in configs if n != 'default'))})")]
    change = _config_change("ClusterConfig", config.name, config.where, dict(config.configs), live, allow_delete=True, scope="broker")
    return [change] if change else []


# -- ACLs ------------------------------------------------------------------------------------


def _acls(sets: Sequence[AclSet], live: set, prune: bool) -> list[Change]:
    wanted: dict = {}
    for acl_set in sets:
        for acl in acl_set.acls:
            wanted.setdefault(acl, acl_set.where)
    owned = {acl.principal for acl in wanted}
    out = [Change("add-acl", "Acl", acl.principal, _acl_line(acl), where, data=asdict(acl)) for acl, where in sorted(wanted.items()) if acl not in live]
    for acl in sorted(live - set(wanted)):
        if acl.principal in owned or prune:
            reason = None if acl.principal in owned else "--prune"
            out.append(Change("remove-acl", "Acl", acl.principal, _acl_line(acl) + (" (--prune)" if reason else ""), None, data=asdict(acl)))
    return out


def _acl_line(acl) -> str:
    return f"{acl.permission_type} {acl.operation} on {acl.resource_type}:{acl.resource_name} ({acl.pattern_type.lower()}) from {acl.host}"


# -- quotas ----------------------------------------------------------------------------------


def _quotas(sets: Sequence[QuotaSet], live: dict, prune: bool) -> list[Change]:
    out = []
    listed = set()
    for quota_set in sets:
        listed.add(quota_set.entity)
        current = live.get(quota_set.entity, {})
        set_ = {k: [current.get(k), v] for k, v in sorted(quota_set.quotas.items()) if current.get(k) != v}
        remove = sorted(k for k in current if k not in quota_set.quotas)
        if set_ or remove:
            parts = [f"{k} {_rate(b)} -> {_rate(a)}" for k, (b, a) in set_.items()] + [f"{k} {_rate(current[k])} -> (none)" for k in remove]
            data = {"entity": quota_set.entity.names(), "set": {k: a for k, (_b, a) in set_.items()}, "remove": remove}
            out.append(Change("set-quota", "Quota", str(quota_set.entity), "; ".join(parts), quota_set.where, data=data))
    if prune:
        for entity, quotas in sorted(live.items(), key=lambda item: str(item[0])):
            if entity not in listed and quotas:
                data = {"entity": entity.names(), "set": {}, "remove": sorted(quotas)}
                out.append(Change("remove-quota", "Quota", str(entity), ", ".join(sorted(quotas)) + " (--prune)", None, data=data))
    return out


def _rate(value: float | None) -> str:
    if value is None:
        return "(none)"
    return str(int(value)) if float(value).is_integer() else str(value)


# -- users -----------------------------------------------------------------------------------


def _users(users: Sequence[User], live: dict[str, tuple[tuple[str, int], ...]], prune: bool, login_user: str | None) -> list[Change]:
    out = []
    for user in users:
        current = dict(live.get(user.name, ()))
        for mechanism, iterations in user.credentials:
            if current.get(mechanism) == iterations:
                continue
            what = f"{mechanism} ({iterations} iterations)" if mechanism not in current else f"{mechanism} iterations {current[mechanism]} -> {iterations}"
            if not user.password_env:
                out.append(_refused(user, f"{what}: setting a credential needs a password; name the environment variable that holds it in password_env"))
                continue
            data = {"mechanism": mechanism, "iterations": iterations, "password_env": user.password_env}
            out.append(Change("set-password", "User", user.name, f"{what}, password from ${user.password_env}", user.where, data=data))
        wanted = {m for m, _i in user.credentials}
        for mechanism in sorted(set(current) - wanted):
            out.append(Change("delete-credential", "User", user.name, mechanism, user.where, data={"mechanism": mechanism}))
    if prune:
        listed = {u.name for u in users}
        for name, credentials in sorted(live.items()):
            if name not in listed and name != login_user:
                for mechanism, _iterations in credentials:
                    out.append(Change("delete-credential", "User", name, f"{mechanism} (--prune)", None, data={"mechanism": mechanism}))
    return out


# -- connectors ------------------------------------------------------------------------------


def _connectors(connectors: Sequence[Connector], live: Mapping, env: Mapping[str, str], prune: bool) -> list[Change]:
    """A connector's whole config (secrets from `env`; one whose variable is not set is
    not compared), and its state; creating one that needs an unset secret is refused."""
    out = []
    for connector in connectors:
        current = live.get(connector.name)
        wanted: dict[str, str] = dict(connector.config)
        missing: list[tuple[str, str]] = []
        for key, variable in sorted(connector.secrets.items()):
            if env.get(variable):
                wanted[key] = env[variable]
            else:
                missing.append((key, variable))
        data: dict[str, Any] = {"config": dict(sorted(wanted.items())), "state": connector.state, "missing": [list(m) for m in missing]}
        if current is None:
            detail = f"{wanted.get('connector.class', '?')}; {len(wanted)} config key(s); {connector.state}"
            out.append(_needs_secrets(Change("create", "Connector", connector.name, detail, connector.where, data=data), missing))
            continue
        # A secret whose variable is not set cannot be compared: the live value is kept.
        unknown = {key for key, _variable in missing}
        changed = _connector_config_lines(current.config, wanted, set(connector.secrets), unknown)
        if changed:
            data["config"] = {**{k: v for k, v in current.config.items() if k in unknown}, **wanted}
            out.append(Change("alter-config", "Connector", connector.name, "; ".join(changed), connector.where, data=data))
        if current.state != connector.state:
            out.append(Change("set-state", "Connector", connector.name, f"{current.state} -> {connector.state}", connector.where,
                              data={"state": connector.state}))
    if prune:
        listed = {c.name for c in connectors}
        out += [Change("delete", "Connector", name, "not in the files (--prune)") for name in sorted(live) if name not in listed]
    return out


def _needs_secrets(change: Change, missing: list[tuple[str, str]]) -> Change:
    if not missing:
        return change
    from dataclasses import replace

    names = ", ".join(f"${variable} ({key})" for key, variable in missing)
    return replace(change, action="refused", reason=f"creating it needs the secret(s) {names}, which are not set", detail=change.detail)


def _connector_config_lines(live: Mapping[str, str], wanted: Mapping[str, str], secret_keys: set[str], unknown: set[str]) -> list[str]:
    """`connect update`'s changes (kctl.admin.connect.connectors.config_changes), secrets
    masked; a key whose secret cannot be read (`unknown`) is not a removal."""
    from kctl.admin.connect.connectors import config_changes

    def shown(key: str, value: str | None) -> str:
        if value is None:
            return "(none)"
        return "(secret)" if key in secret_keys or is_secret_key(key) else value

    changes = sorted(config_changes(live, wanted), key=lambda c: (c.change == "removed", c.key))  # settings, then removals
    return [f"{c.key} {shown(c.key, c.old)} -> {shown(c.key, c.new)}" for c in changes
            if not (c.change == "removed" and c.key in unknown)]
