"""What a cluster has, as the resource kinds see it: topics with their overrides and
replicas, dynamic cluster and broker configs, ACLs, quotas and SCRAM credentials.

Each kind is read with one request per API whatever the number of topics (Metadata,
one DescribeConfigs for every topic, DescribeAcls, DescribeClientQuotas,
DescribeUserScramCredentials), so a diff of thousands of topics costs a handful of
round trips.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kctl.admin.client.session import AdminSession, unknown_topic
from kctl.errors import KctlError

# ConfigSource values (librdkafka): set on the topic, set on one broker.
_DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"
_DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"


@dataclass(frozen=True)
class LiveTopic:
    name: str
    replicas: tuple[tuple[int, ...], ...]  # by partition id
    configs: dict[str, str]  # overrides (DYNAMIC_TOPIC_CONFIG) only
    sensitive: frozenset[str] = frozenset()

    @property
    def partitions(self) -> int:
        return len(self.replicas)

    @property
    def replication_factor(self) -> int:
        return max((len(r) for r in self.replicas), default=0)


@dataclass
class ClusterState:
    """None for a kind not read (not asked for, or the cluster does not support it)."""

    topics: dict[str, LiveTopic] | None = None
    cluster_configs: dict[str, dict[str, str]] | None = None  # "default" or broker id -> overrides
    acls: set | None = None  # of Acl
    quotas: dict | None = None  # Entity -> {quota: value}
    users: dict[str, tuple[tuple[str, int], ...]] | None = None
    # Kafka Connect's connectors (name -> LiveConnector), read from the Connect cluster.
    connectors: dict | None = None
    brokers: dict[int, str | None] = field(default_factory=dict)  # id -> rack
    # Why a kind was not read, for `export` to say.
    skipped: dict[str, str] = field(default_factory=dict)


def read(session: AdminSession, kinds: Sequence[str], *, topic_regex: re.Pattern[str] | None = None, topics: Sequence[str] | None = None,
         lenient: bool = False, connect=None) -> ClusterState:
    """The kinds asked for. `topics` limits the topic configs read to those names (a diff
    needs only the topics its files list). With `lenient`, a kind the cluster does not
    support (no authorizer, no quota API, no Connect cluster configured) is recorded in
    `skipped` instead of raised. `connect`: the Kafka Connect client, for Connector."""
    state = ClusterState()
    readers: dict[str, Callable[[AdminSession, ClusterState], None]] = {
        "ClusterConfig": _cluster_configs, "Acl": _acls, "Quota": _quotas, "User": _users}
    for kind in kinds:
        try:
            if kind == "Topic":
                _topics(session, state, topic_regex, topics)
            elif kind == "Connector":
                from kctl.admin.declarative import connectors

                state.connectors = connectors.read(connect)
            else:
                readers[kind](session, state)
        except KctlError as exc:
            if not lenient or not _unsupported(exc):
                raise
            state.skipped[kind] = exc.message
    return state


def _unsupported(error: KctlError) -> bool:
    """Whether `error` says the cluster lacks what the reader asked for: no authorizer
    (SECURITY_DISABLED), no such API (UNSUPPORTED_VERSION), no Connect cluster set."""
    from kctl.admin.connect.rest import NoConnectCluster

    return isinstance(error, NoConnectCluster) or error.kafka_error in ("SECURITY_DISABLED", "UNSUPPORTED_VERSION")


def _topics(session: AdminSession, state: ClusterState, regex: re.Pattern[str] | None, only: Sequence[str] | None) -> None:
    from kctl.admin.client.kafka import TOPIC
    from kctl.admin.cluster.brokers import describe_cluster

    metadata = session.metadata("list topics")
    # Racks, for rack-aware placement and reassignments (Metadata in librdkafka's API has none).
    state.brokers = {b.id: b.rack for b in describe_cluster(session).brokers}
    names = sorted(
        n
        for n, t in metadata.topics.items()
        if not n.startswith("__") and t.error is None and (regex is None or regex.fullmatch(n)) and (only is None or n in only)
    )
    results, unread = session.kafka.describe_configs([(TOPIC, n) for n in names], "describe topic configs")
    for error in unread.values():
        if not unknown_topic(error):  # one deleted meanwhile is left out
            raise error
    configs: dict[str, dict[str, str]] = {}
    sensitive: dict[str, set[str]] = {}
    for (_kind, name), result in results.items():
        overrides = {e.name: e for e in result.values() if e.source == "DYNAMIC_TOPIC_CONFIG"}
        configs[name] = {k: e.value for k, e in overrides.items() if e.value is not None and not e.sensitive}
        sensitive[name] = {k for k, e in overrides.items() if e.sensitive}
    state.topics = {}
    for name in names:
        if name not in configs:
            continue
        partitions = metadata.topics[name].partitions
        replicas = tuple(tuple(partitions[p].replicas) for p in sorted(partitions))
        state.topics[name] = LiveTopic(name, replicas, configs[name], frozenset(sensitive[name]))


def _cluster_configs(session: AdminSession, state: ClusterState) -> None:
    from kctl.admin.topics.configs import describe_configs

    metadata = session.metadata("describe brokers")
    ids = sorted(metadata.brokers)
    out: dict[str, dict[str, str]] = {}
    defaults, errors = describe_configs(session, "broker-default", [None])
    if errors:
        raise next(iter(errors.values()))
    out["default"] = {c.name: c.value for r in defaults for c in r.configs if c.source == _DYNAMIC_DEFAULT_BROKER_CONFIG and not c.sensitive and c.value is not None}
    per_broker, errors = describe_configs(session, "broker", [str(i) for i in ids])
    if errors:
        raise next(iter(errors.values()))
    for resource in per_broker:
        overrides = {c.name: c.value for c in resource.configs if c.source == _DYNAMIC_BROKER_CONFIG and not c.sensitive and c.value is not None}
        out[resource.entity_name] = overrides
    state.cluster_configs = out


def _acls(session: AdminSession, state: ClusterState) -> None:
    from kctl.admin.security.acls import list_acls

    state.acls = set(list_acls(session))


def _quotas(session: AdminSession, state: ClusterState) -> None:
    from kctl.admin.security.quotas import quotas_by_entity

    state.quotas = quotas_by_entity(session)


def _users(session: AdminSession, state: ClusterState) -> None:
    from kctl.admin.security.users import list_users

    users: dict[str, list[tuple[str, int]]] = {}
    for credential in list_users(session):
        users.setdefault(credential.user, []).append((credential.mechanism, credential.iterations))
    state.users = {u: tuple(sorted(c)) for u, c in users.items()}
