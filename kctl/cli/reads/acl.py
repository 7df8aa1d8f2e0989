"""The ACL read, `acl list`: its body, table and filters, free of click so the console
script runs it without it (kctl.cli.direct); kctl.cli.acl declares its options and help,
and shares the filters and the table with `acl create` and `acl delete`."""

from __future__ import annotations

import itertools

from kctl.cli._app import App
from kctl.output.spec import Column, TableSpec

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from kctl.admin.security.acls import AclFilter

OPERATION_NAMES = "all, read, write, create, delete, alter, describe, cluster-action, describe-configs, alter-configs, idempotent-write"
ACL_COLUMNS = (
    Column("principal", "PRINCIPAL"),
    Column("host", "HOST"),
    Column("operation", "OPERATION"),
    Column("permission_type", "PERMISSION"),
    Column("resource_type", "RESOURCE-TYPE"),
    Column("resource_name", "RESOURCE-NAME"),
    Column("pattern_type", "PATTERN-TYPE"),
)
ACL_TABLE = TableSpec(ACL_COLUMNS)


def split(values: Iterable[str]) -> list[str]:
    """Repeatable options that also take comma lists: --operation read,describe."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def resources_of(topics: Iterable[str], groups: Iterable[str], transactional_ids: Iterable[str], cluster: bool) -> list[tuple[str, str]]:
    from kctl.admin.security.acls import CLUSTER_NAME

    resources = [("TOPIC", t) for t in topics] + [("GROUP", g) for g in groups]
    resources += [("TRANSACTIONAL_ID", t) for t in transactional_ids]
    if cluster:
        resources.append(("CLUSTER", CLUSTER_NAME))
    return resources


def filters_of(topics: Sequence[str], groups: Sequence[str], transactional_ids: Sequence[str], cluster: bool, principals: Sequence[str],
               hosts: Sequence[str | None], operations: Sequence[str], pattern: str, permission: str | None) -> list[AclFilter]:
    """One AclFilter per combination of the values given; an option not given matches anything."""
    from kctl.admin.security.acls import OPERATIONS, PATTERN_FILTERS, PERMISSION_TYPES, AclFilter, parse_choice, parse_principal

    pattern_type = parse_choice(pattern, PATTERN_FILTERS, "pattern type")
    resources: list[tuple[str | None, str | None]] = [*resources_of(topics, groups, transactional_ids, cluster)] or [(None, None)]
    # The parameters, rebound to what the filters match (None: anything); mypy keeps their declared type.
    principals = [parse_principal(p) for p in principals] or [None]  # type: ignore[list-item]
    operations = [parse_choice(o, OPERATIONS, "operation") for o in split(operations)] or [None]  # type: ignore[list-item]
    permission_type = parse_choice(permission, PERMISSION_TYPES, "permission type") if permission else None
    return [
        AclFilter(resource_type, name, pattern_type, principal, host, operation, permission_type)
        for (resource_type, name), principal, host, operation in itertools.product(resources, principals, list(hosts) or [None], operations)
    ]


def list_(app: App, topics: tuple[str, ...], groups: tuple[str, ...], transactional_ids: tuple[str, ...], cluster: bool,
          principals: tuple[str, ...], hosts: tuple[str, ...], operations: tuple[str, ...], pattern: str, permission: str | None) -> None:
    from kctl.admin.security.acls import list_acls

    filters = filters_of(topics, groups, transactional_ids, cluster, principals, hosts, operations, pattern, permission)
    app.out.table(list_acls(app.session, filters), ACL_TABLE)
