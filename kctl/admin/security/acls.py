"""ACLs: list, create and delete the bindings Kafka's authorizer enforces.

An ACL binds a resource pattern (resource type, name, pattern type) to an entry
(principal, host, operation, permission type). Names are Kafka's: the resource type
librdkafka calls BROKER is CLUSTER here, as in kafka-acls and the protocol. Listing goes
through the session's Kafka operations (kctl's wire client unless a setting needs
librdkafka); confluent-kafka's create/delete_acls do the writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from kctl.admin.client.kafka import AclBindingFilter
from kctl.admin.client.session import AdminSession
from kctl.errors import InvalidError, KctlError, UsageError

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any

# Kafka's names, in the order kafka-acls documents them.
RESOURCE_TYPES = ("TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID")
PATTERN_TYPES = ("LITERAL", "PREFIXED")
PATTERN_FILTERS = ("LITERAL", "PREFIXED", "MATCH", "ANY")
OPERATIONS = (
    "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
    "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE",
)
PERMISSION_TYPES = ("ALLOW", "DENY")
# The one name Kafka's cluster resource has.
CLUSTER_NAME = "kafka-cluster"
_PRINCIPAL = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*:.+$")


@dataclass(frozen=True, order=True)
class Acl:
    """One ACL binding; its JSON form is what `acl create --file` reads back."""

    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission_type: str


@dataclass(frozen=True)
class AclFilter:
    """What list and delete match; None matches anything."""

    resource_type: str | None = None
    resource_name: str | None = None
    pattern_type: str = "ANY"
    principal: str | None = None
    host: str | None = None
    operation: str | None = None
    permission_type: str | None = None


@dataclass(frozen=True, order=True)
class AclResult(Acl):
    """The outcome of creating or deleting one ACL: the ACL's fields, status and error."""

    status: str = ""
    error: str | None = None

    @classmethod
    def of(cls, acl: Acl, status: str, error: str | None = None) -> AclResult:
        return cls(**asdict(acl), status=status, error=error)


# -- parsing user input ----------------------------------------------------------------------


def _canonical(value: str) -> str:
    """READ for read, Read, 'describe-configs' → DESCRIBE_CONFIGS, DescribeConfigs too."""
    text = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", value.strip())
    return text.replace("-", "_").upper()


def parse_choice(value: str, accepted: Sequence[str], what: str, *, error=UsageError) -> str:
    name = _canonical(value)
    if name == "BROKER" and "CLUSTER" in accepted:
        name = "CLUSTER"  # librdkafka's name for it
    if name not in accepted:
        shown = ", ".join(a.lower().replace("_", "-") for a in accepted)
        raise error(cause=f"unknown {what} {value!r}; accepted: {shown}")
    return name


def parse_principal(value: str, *, error=UsageError) -> str:
    """`User:alice`, `User:*`, `Group:ops`: a principal type, a colon and a name."""
    text = value.strip()
    if not _PRINCIPAL.match(text):
        hint_name = text if text and ":" not in text else "alice"
        raise error(cause=f"principal {value!r} is not of the form TYPE:NAME (e.g. User:{hint_name}, User:*)")
    return text


def acl_from_row(row: Any, where: str) -> Acl:
    """An Acl from one JSON object as `acl list -o json` prints it; `where` it is (item 3,
    line 5) leads the cause of an error, whose action the caller names."""
    if not isinstance(row, dict):
        raise InvalidError(cause=f"{where}: expected an object with the keys of `kctl acl list -o json`")
    names = [f.name for f in fields(Acl)]
    missing = [n for n in names if n not in row]
    if missing:
        raise InvalidError(cause=f"{where}: missing key(s) {', '.join(missing)}")
    unknown = sorted(set(row) - set(names))
    if unknown:
        raise InvalidError(cause=f"{where}: unknown key(s) {', '.join(unknown)}; expected {', '.join(names)}")
    if not all(isinstance(row[n], str) and row[n] for n in names):
        raise InvalidError(cause=f"{where}: every value must be a non-empty string")
    try:
        return Acl(
            resource_type=parse_choice(row["resource_type"], RESOURCE_TYPES, "resource type", error=InvalidError),
            resource_name=row["resource_name"],
            pattern_type=parse_choice(row["pattern_type"], PATTERN_TYPES, "pattern type", error=InvalidError),
            principal=parse_principal(row["principal"], error=InvalidError),
            host=row["host"],
            operation=parse_choice(row["operation"], OPERATIONS, "operation", error=InvalidError),
            permission_type=parse_choice(row["permission_type"], PERMISSION_TYPES, "permission type", error=InvalidError),
        )
    except InvalidError as exc:
        raise exc.but(cause=f"{where}: {exc.cause}") from exc


def read_acl_file(path: Path, text: str) -> list[Acl]:
    """ACLs from a JSON array (`-o json`) or JSON lines (`-o jsonl`)."""
    action = f"read ACL file {path}"
    stripped = text.strip()
    if not stripped:
        raise InvalidError(action=action, cause="it holds no ACLs")
    rows: list[tuple[str, Any]] = []
    if stripped.startswith("["):
        try:
            found = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise InvalidError(action=action, cause=f"not valid JSON: {exc}") from exc
        if not isinstance(found, list) or not found:
            raise InvalidError(action=action, cause="it holds no ACLs")
        rows = [(f"item {i}", row) for i, row in enumerate(found, 1)]
    else:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append((f"line {number}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise InvalidError(action=action, cause=f"line {number}: not valid JSON: {exc.msg}") from exc
        if not rows:
            raise InvalidError(action=action, cause="it holds no ACLs")
    acls = []
    for where, row in rows:
        try:
            acls.append(acl_from_row(row, where))
        except InvalidError as exc:
            raise exc.but(action=action) from exc
    return acls


def producer_acls(principal: str, host: str, topics: Iterable[str], pattern_type: str, transactional_ids: Iterable[str], idempotent: bool) -> list[Acl]:
    """What kafka-acls --producer grants: WRITE, DESCRIBE and CREATE on the topics; WRITE and
    DESCRIBE on transactional ids; IDEMPOTENT_WRITE on the cluster with --idempotent."""
    acls = [Acl("TOPIC", t, pattern_type, principal, host, op, "ALLOW") for t in topics for op in ("WRITE", "DESCRIBE", "CREATE")]
    acls += [Acl("TRANSACTIONAL_ID", t, pattern_type, principal, host, op, "ALLOW") for t in transactional_ids for op in ("WRITE", "DESCRIBE")]
    if idempotent:
        acls.append(Acl("CLUSTER", CLUSTER_NAME, "LITERAL", principal, host, "IDEMPOTENT_WRITE", "ALLOW"))
    return acls


def consumer_acls(principal: str, host: str, topics: Iterable[str], pattern_type: str, groups: Iterable[str]) -> list[Acl]:
    """What kafka-acls --consumer grants: READ and DESCRIBE on the topics, READ on the groups."""
    acls = [Acl("TOPIC", t, pattern_type, principal, host, op, "ALLOW") for t in topics for op in ("READ", "DESCRIBE")]
    acls += [Acl("GROUP", g, pattern_type, principal, host, "READ", "ALLOW") for g in groups]
    return acls


# -- confluent-kafka conversions -------------------------------------------------------------


def _resource_type(name: str | None) -> Any:
    from confluent_kafka.admin import ResourceType

    if name is None:
        return ResourceType.ANY
    return ResourceType.BROKER if name == "CLUSTER" else ResourceType[name]


def _binding(acl: Acl) -> Any:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType

    return AclBinding(
        _resource_type(acl.resource_type), acl.resource_name, ResourcePatternType[acl.pattern_type],
        acl.principal, acl.host, AclOperation[acl.operation], AclPermissionType[acl.permission_type],
    )


def _binding_filter(f: AclFilter) -> Any:
    from kctl.admin.client.librdkafka import binding_filter

    return binding_filter(_fields(f))


def _fields(f: AclFilter) -> AclBindingFilter:
    return (f.resource_type, f.resource_name, f.pattern_type, f.principal, f.host, f.operation, f.permission_type)


def _exact_filter(acl: Acl) -> Any:
    return _binding_filter(AclFilter(**asdict(acl)))


def _sort_key(acl: Acl) -> tuple:
    return (acl.resource_type, acl.resource_name, acl.pattern_type, acl.principal, acl.host, acl.operation, acl.permission_type)


def _not_enabled(error: KctlError) -> KctlError:
    """Kafka without an authorizer answers SECURITY_DISABLED; say so in words."""
    if error.kafka_error == "SECURITY_DISABLED":
        return error.but(cause="ACLs are not enabled on the cluster (SECURITY_DISABLED: no authorizer is configured)", kind=InvalidError,
                         hint="brokers enforce ACLs only with authorizer.class.name set (KRaft: org.apache.kafka.metadata.authorizer.StandardAuthorizer)")
    return error


# -- operations ------------------------------------------------------------------------------


def list_acls(session: AdminSession, filters: Sequence[AclFilter] = (AclFilter(),)) -> list[Acl]:
    """Every ACL matching any of the filters, sorted, without duplicates."""
    action = "list ACLs"
    try:
        found = session.describe_acls([_fields(f) for f in filters], action)
    except KctlError as exc:
        raise _not_enabled(exc) from exc
    return sorted((Acl(*binding) for binding in found), key=_sort_key)


def create_acls(session: AdminSession, acls: Sequence[Acl]) -> list[AclResult]:
    """Create the ACLs (existing ones are kept as they are: Kafka's create is idempotent)."""
    unique = sorted(set(acls), key=_sort_key)
    futures = session.client.create_acls([_binding(a) for a in unique], request_timeout=session.timeout)
    # Keyed by position so a per-item error reads "unable to create ACLs 3: NAME: ...".
    by_index = {i: futures[b] for i, b in enumerate(futures)}
    results = _outcomes(session.wait_all(by_index, "create ACLs"), "create ACLs")
    return [_result(acl, results[i], "created") for i, acl in enumerate(unique)]


def delete_acls(session: AdminSession, acls: Sequence[Acl]) -> list[AclResult]:
    """Delete exactly these ACLs: each is its own exact filter, so an ACL created after
    the user saw the list is never taken with it."""
    unique = sorted(set(acls), key=_sort_key)
    futures = session.client.delete_acls([_exact_filter(a) for a in unique], request_timeout=session.timeout)
    by_index = {i: futures[f] for i, f in enumerate(futures)}
    results = _outcomes(session.wait_all(by_index, "delete ACLs"), "delete ACLs")
    outcome = []
    for i, acl in enumerate(unique):
        if not isinstance(results[i], KctlError) and not results[i]:
            outcome.append(AclResult.of(acl, "not-found", "no such ACL (deleted meanwhile?)"))
        else:
            outcome.append(_result(acl, results[i], "deleted"))
    return outcome


def _outcomes(results: dict[int, Any], action: str) -> dict[int, Any]:
    """Per-item results, unless the cluster has no authorizer: then that is the one error."""
    for result in results.values():
        if isinstance(result, KctlError) and result.kafka_error == "SECURITY_DISABLED":
            raise _not_enabled(result)
    return results


def _result(acl: Acl, result: Any, done: str) -> AclResult:
    if isinstance(result, KctlError):
        return AclResult.of(acl, "failed", result.cause)
    return AclResult.of(acl, done)

