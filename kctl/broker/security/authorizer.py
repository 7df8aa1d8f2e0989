"""ACLs with the semantics of Kafka's StandardAuthorizer, the one place the handlers ask
"may this principal do this".

A decision, for (principal, host, operation, resource): super users may do anything; else
the ACLs on the resource — literal on its name, literal on `*`, prefixed on any prefix of
its name — are read: a DENY for the operation (or ALL) matching the principal (or
`User:*`) and host (or `*`) wins; else an ALLOW for it does, where READ, WRITE, DELETE and
ALTER also allow DESCRIBE and ALTER_CONFIGS allows DESCRIBE_CONFIGS; a resource with no
ACL at all is allowed only with allow.everyone.if.no.acl.found. Decisions are cached until
the ACLs change (an authorizer with 10,000 ACLs must not slow Produce down).
"""

from __future__ import annotations

from collections import defaultdict

from kctl.broker.security.store import Acl, SecurityStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Protocol

    class AclFilter(Protocol):
        """The fields of a DescribeAcls request or of one DeleteAcls filter (the decoded structs)."""
        resource_type_filter: int
        resource_name_filter: str | None
        pattern_type_filter: int
        principal_filter: str | None
        host_filter: str | None
        operation: int
        permission_type: int

# ResourceType
R_ANY, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = 1, 2, 3, 4, 5, 6, 7
RESOURCE_TYPES = {TOPIC: "TOPIC", GROUP: "GROUP", CLUSTER: "CLUSTER", TRANSACTIONAL_ID: "TRANSACTIONAL_ID",
                  DELEGATION_TOKEN: "DELEGATION_TOKEN", USER: "USER"}
# AclOperation
(OP_ANY, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
 ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS, TWO_PHASE_COMMIT) = range(1, 16)
# AclPermissionType, PatternType
P_ANY, DENY, ALLOW = 1, 2, 3
PATTERN_ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4

WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"
_IMPLIES_DESCRIBE = frozenset({READ, WRITE, DELETE, ALTER})
# The operations each resource type supports (Kafka's AclEntry.supportedOperations), for
# the authorized_operations bitfields of Metadata, DescribeCluster and the group describes.
SUPPORTED = {
    TOPIC: (READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    GROUP: (READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    CLUSTER: (CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE),
    TRANSACTIONAL_ID: (DESCRIBE, WRITE, TWO_PHASE_COMMIT),
}
_CACHE_LIMIT = 100_000


class Authorizer:
    def __init__(self, store: SecurityStore, enabled: bool, super_users: Iterable[str] = (), allow_if_no_acl: bool = False):
        self.store = store
        self.enabled = enabled
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._literal: dict[int, dict[str, list[Acl]]] = {}
        self._prefixed: dict[int, dict[str, list[Acl]]] = {}
        self._cache: dict[tuple[str, str, int, int, str], bool] = {}  # (principal, host, operation, type, name)
        store.listeners.append(self._reindex)
        self._reindex()

    def _reindex(self) -> None:
        literal: dict[int, dict[str, list[Acl]]] = defaultdict(lambda: defaultdict(list))
        prefixed: dict[int, dict[str, list[Acl]]] = defaultdict(lambda: defaultdict(list))
        for acl in self.store.acls:
            (literal if acl.pattern_type == LITERAL else prefixed)[acl.resource_type][acl.resource_name].append(acl)
        self._literal, self._prefixed = literal, prefixed
        self._cache = {}

    def _acls_on(self, resource_type: int, name: str) -> Iterator[Acl]:
        literal = self._literal.get(resource_type)
        if literal:
            yield from literal.get(name, ())
            if name != WILDCARD:
                yield from literal.get(WILDCARD, ())
        prefixed = self._prefixed.get(resource_type)
        if prefixed:
            for end in range(1, len(name) + 1):
                yield from prefixed.get(name[:end], ())

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        if not self.enabled or principal in self.super_users:
            return True
        key = (principal, host, operation, resource_type, name)
        decision = self._cache.get(key)
        if decision is None:
            decision = self._decide(principal, host, operation, resource_type, name)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache = {}
            self._cache[key] = decision
        return decision

    def _decide(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        found = allowed = False
        for acl in self._acls_on(resource_type, name):
            found = True
            if acl.principal not in (principal, "User:*") or acl.host not in (host, WILDCARD):
                continue
            if acl.permission_type == DENY:
                if acl.operation in (operation, ALL):
                    return False
            elif (acl.operation in (operation, ALL)
                  or (operation == DESCRIBE and acl.operation in _IMPLIES_DESCRIBE)
                  or (operation == DESCRIBE_CONFIGS and acl.operation == ALTER_CONFIGS)):
                allowed = True
        return allowed if found else self.allow_if_no_acl

    def authorize_by_resource_type(self, principal: str, host: str, operation: int, resource_type: int) -> bool:
        """Whether the principal may do `operation` on some resource of the type (Kafka's
        Authorizer.authorizeByResourceType, which StandardAuthorizer keeps): yes when a
        resource named "hardcode" would be allowed (super users, an ALLOW on `*`, no ACL
        with allow.everyone.if.no.acl.found), else when some literal or prefixed ALLOW is
        dominated by no DENY (a literal DENY of the same name, a prefixed DENY on a prefix
        of it); a literal DENY on `*` denies all."""
        if not self.enabled or self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allows: list[tuple[int, str]] = []
        for acl in self.store.acls:
            if (acl.resource_type != resource_type or acl.host not in (host, WILDCARD)
                    or acl.principal not in (principal, "User:*") or acl.operation not in (operation, ALL)):
                continue
            if acl.permission_type == DENY:
                if acl.pattern_type == LITERAL and acl.resource_name == WILDCARD:
                    return False
                (deny_literal if acl.pattern_type == LITERAL else deny_prefixed).add(acl.resource_name)
            elif acl.permission_type == ALLOW:
                if acl.pattern_type == LITERAL and acl.resource_name == WILDCARD:
                    return True
                allows.append((acl.pattern_type, acl.resource_name))
        for pattern_type, name in allows:
            if pattern_type == LITERAL and name in deny_literal:
                continue
            if not any(name[:end] in deny_prefixed for end in range(1, len(name) + 1)):
                return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        """The bitfield of operations allowed on the resource (Kafka's authorizedOperations)."""
        return sum(1 << op for op in SUPPORTED[resource_type]
                   if self.authorize(principal, host, op, resource_type, name))


def validate(acl: Acl) -> str | None:
    """Why CreateAcls refuses this binding (Kafka's words), or None."""
    if acl.resource_type not in RESOURCE_TYPES:
        return "Invalid resourceType " + str(acl.resource_type)
    if acl.pattern_type not in (LITERAL, PREFIXED):
        return "Invalid patternType " + str(acl.pattern_type)
    if not 2 <= acl.operation <= 15:
        return "Invalid operation " + str(acl.operation)
    if acl.permission_type not in (DENY, ALLOW):
        return "Invalid permissionType " + str(acl.permission_type)
    if not acl.resource_name:
        return "Resource name should not be empty"
    if acl.resource_type == CLUSTER and acl.resource_name != CLUSTER_NAME:
        return "The only valid name for the CLUSTER resource is " + CLUSTER_NAME
    if ":" not in acl.principal or not acl.principal.split(":", 1)[1]:
        return (f"Could not parse principal from `{acl.principal}` (no colon is present "
                "separating the principal type from the principal name)")
    if not acl.host:
        return "Invalid null host"
    return None


def matches_filter(acl: Acl, f: AclFilter) -> bool:
    """Whether a DescribeAcls/DeleteAcls filter (resource_type_filter, resource_name_filter,
    pattern_type_filter, principal_filter, host_filter, operation, permission_type) selects
    the binding; MATCH selects the bindings that apply to the name."""
    if f.resource_type_filter not in (R_ANY, acl.resource_type):
        return False
    name, pattern = f.resource_name_filter, f.pattern_type_filter
    if pattern == MATCH:
        if name is not None and not (
                (acl.pattern_type == LITERAL and acl.resource_name in (name, WILDCARD))
                or (acl.pattern_type == PREFIXED and name.startswith(acl.resource_name))):
            return False
    else:
        if pattern not in (PATTERN_ANY, acl.pattern_type):
            return False
        if name is not None and name != acl.resource_name:
            return False
    return (f.principal_filter in (None, acl.principal) and f.host_filter in (None, acl.host)
            and f.operation in (OP_ANY, acl.operation) and f.permission_type in (P_ANY, acl.permission_type))


def filter_problem(f: AclFilter) -> str | None:
    if f.resource_type_filter not in (R_ANY, *RESOURCE_TYPES):
        return "Invalid resourceType filter"
    if f.pattern_type_filter not in (PATTERN_ANY, MATCH, LITERAL, PREFIXED):
        return "Invalid patternType filter"
    if not 1 <= f.operation <= 15:
        return "Invalid operation filter"
    if f.permission_type not in (P_ANY, DENY, ALLOW):
        return "Invalid permissionType filter"
    return None
