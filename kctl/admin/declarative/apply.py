"""Making a plan's changes, in its order, each reported on its own.

Like kinds go in one request where Kafka takes a batch (topic creation, ACLs); the
rest one entity at a time. A failure stops nothing else: every change gets a result, and
since the plan is recomputed from the cluster, running apply again does what is left.
Reassignments are started here (with the throttle, if any); waiting for them is the
caller's, which shows progress.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kctl.admin.client.session import AdminSession
from kctl.admin.declarative.plan import Change
from kctl.errors import KctlError


@dataclass(frozen=True)
class ApplyResult:
    action: str
    kind: str
    name: str
    detail: str
    # applied | started (a reassignment under way) | refused | failed
    status: str
    error: str | None = None


def apply(session: AdminSession, changes: Sequence[Change], *, throttle: int | None = None, env: Mapping[str, str] | None = None,
          connect=None) -> tuple[list[ApplyResult], list]:
    """Results in plan order, and the PartitionMoves started (to wait for). `connect`:
    the Kafka Connect client the Connector changes go through, one at a time."""
    env = os.environ if env is None else env
    outcome: dict[int, KctlError | None] = {}
    moves: list = []
    by_action: dict[str, list[int]] = {}
    for index, change in enumerate(changes):
        if change.kind == "Connector" and change.action != "refused":
            by_action.setdefault("connector", []).append(index)
        else:
            by_action.setdefault(change.action, []).append(index)
    for action, indexes in by_action.items():
        batch = [changes[i] for i in indexes]
        if action == "refused":
            continue
        if action == "connector":
            errors = _connectors(connect, batch)
        elif action == "create":
            errors = _create(session, batch)
        elif action == "add-acl" or action == "remove-acl":
            errors = _acls(session, batch, remove=action == "remove-acl")
        elif action == "delete":
            errors = _delete(session, batch)
        elif action == "reassign":
            errors, started = _reassign(session, batch, throttle)
            moves += started
        else:
            single = _SINGLE[action]
            errors = {}
            for change in batch:
                try:
                    single(session, change, env)
                except KctlError as exc:
                    errors[id(change)] = exc
        for i in indexes:
            outcome[i] = errors.get(id(changes[i]))
    results = []
    for index, change in enumerate(changes):
        if change.action == "refused":
            results.append(ApplyResult(change.action, change.kind, change.name, change.detail, "refused", change.reason))
            continue
        error = outcome.get(index)
        status = "failed" if error else ("started" if change.action == "reassign" else "applied")
        results.append(ApplyResult(change.action, change.kind, change.name, change.detail, status, error.message if error else None))
    return results, moves


def _connectors(connect, batch: Sequence[Change]) -> dict[int, KctlError]:
    from kctl.admin.declarative.connectors import apply_change

    errors = {}
    for change in batch:
        try:
            apply_change(connect, change)
        except KctlError as exc:
            errors[id(change)] = exc
    return errors


def _create(session: AdminSession, batch: Sequence[Change]) -> dict[int, KctlError]:
    from kctl.admin.topics.topics import NewTopicSpec, create_topics

    specs = [
        NewTopicSpec(
            name=c.name,
            partitions=None if c.data["replicas"] else c.data["partitions"],
            replication_factor=None if c.data["replicas"] else c.data["replication_factor"],
            config=c.data["configs"],
            replica_assignment=tuple(tuple(r) for r in c.data["replicas"]) if c.data["replicas"] else None,
        )
        for c in batch
    ]
    _results, errors = create_topics(session, specs)
    return {id(c): errors[c.name] for c in batch if c.name in errors}


def _acls(session: AdminSession, batch: Sequence[Change], *, remove: bool) -> dict[int, KctlError]:
    from kctl.admin.security.acls import Acl, create_acls, delete_acls

    acls = [Acl(**c.data) for c in batch]
    results = (delete_acls if remove else create_acls)(session, acls)
    errors = {}
    for change, result in zip(batch, results, strict=True):
        if result.status == "failed":
            errors[id(change)] = KctlError(action=f"{'remove' if remove else 'add'} ACL of {change.name}", cause=str(result.error))
    return errors


def _delete(session: AdminSession, batch: Sequence[Change]) -> dict[int, KctlError]:
    from kctl.admin.topics.topics import delete_topics

    _results, errors = delete_topics(session, [c.name for c in batch])
    return {id(c): errors[c.name] for c in batch if c.name in errors}


def _reassign(session: AdminSession, batch: Sequence[Change], throttle: int | None) -> tuple[dict[int, KctlError], list]:
    from kctl.admin.cluster.replication import PartitionMove, execute

    moves = [PartitionMove(topic=c.name, partition=m["partition"], current=tuple(m["current"]), target=tuple(m["target"])) for c in batch for m in c.data["moves"]]
    try:
        _rows, failed = execute(session, moves, throttle=throttle)
    except KctlError as exc:
        return {id(c): exc for c in batch}, []
    errors = {}
    for change in batch:
        mine = [e for key, e in failed.items() if key.rsplit("-", 1)[0] == change.name]
        if mine:
            errors[id(change)] = mine[0]
    started = [m for m in moves if f"{m.topic}-{m.partition}" not in failed]
    return errors, started


def _alter_config(session: AdminSession, change: Change, _env) -> None:
    from kctl.admin.topics.configs import ConfigChange, alter_configs

    ops = [ConfigChange(operation="set", name=k, value=after) for k, (_before, after) in change.data["set"].items()]
    ops += [ConfigChange(operation="delete", name=k) for k in change.data["delete"]]
    if change.kind == "Topic":
        entity_type, name = "topic", change.name
    elif change.name == "default":
        entity_type, name = "broker-default", None
    else:
        entity_type, name = "broker", change.name
    _results, errors = alter_configs(session, entity_type, [name], ops)
    if errors:
        raise next(iter(errors.values()))


def _add_partitions(session: AdminSession, change: Change, _env) -> None:
    from kctl.admin.topics.topics import add_partitions

    assignment = tuple(tuple(r) for r in change.data["replicas"]) if change.data["replicas"] else None
    _results, errors = add_partitions(session, [change.name], total=change.data["after"], replica_assignment=assignment)
    if errors:
        raise next(iter(errors.values()))


def _set_quota(session: AdminSession, change: Change, _env) -> None:
    from kctl.admin.security.quotas import Entity, alter_quotas

    alter_quotas(session, Entity(**change.data["entity"]), change.data["set"], change.data["remove"], dry_run=False)


def _set_password(session: AdminSession, change: Change, env: Mapping[str, str]) -> None:
    from kctl.admin.security.users import set_password

    variable = change.data["password_env"]
    password = env.get(variable)
    if not password:
        raise KctlError(action=f"set the {change.data['mechanism']} credential of {change.name}", cause=f"${variable} is not set")
    _results, errors = set_password(session, change.name, password, [change.data["mechanism"]], change.data["iterations"])
    if errors:
        raise next(iter(errors.values()))


def _delete_credential(session: AdminSession, change: Change, _env) -> None:
    from kctl.admin.security.users import delete_credentials

    _results, errors = delete_credentials(session, change.name, [change.data["mechanism"]])
    if errors:
        raise next(iter(errors.values()))


_SINGLE = {
    "alter-config": _alter_config,
    "add-partitions": _add_partitions,
    "set-quota": _set_quota,
    "remove-quota": _set_quota,
    "set-password": _set_password,
    "delete-credential": _delete_credential,
}
