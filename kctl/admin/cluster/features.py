"""Feature flags (KIP-584) and the KRaft metadata quorum (KIP-595, KIP-853).

Features: every broker reports in ApiVersions the levels it supports and the levels the
cluster has finalized; UpdateFeatures (forwarded to the active controller) upgrades and
downgrades finalized levels. kctl asks every broker, because during a rolling upgrade
they differ, and the level a cluster can move to is the one all of them support.

The quorum: DescribeQuorum on the `__cluster_metadata` partition names the leader, its
epoch and high watermark, and each voter's and observer's log end offset and last fetch.

librdkafka has neither API; both go through kctl's wire client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from kctl.admin.client.errors import for_kafka_code
from kctl.admin.client.session import AdminSession
from kctl.errors import InvalidError, UsageError
from kctl.messages import apis

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

    from kctl.messages import types as t

# Kafka's MetadataVersion levels and names (server-common MetadataVersion, production
# versions of Apache Kafka 4.4). tests/admin/test_feature_tables.py checks both tables
# against the jars the tests run.
METADATA_VERSIONS: Mapping[int, str] = {
    7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0",
    13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3",
    19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2",
    25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0", 29: "4.2-IV1", 30: "4.3-IV0",
    31: "4.4-IV0", 32: "4.4-IV1", 33: "4.4-IV2",
}
# What `kafka-features upgrade --release-version X.Y` finalizes: each feature's default
# level for the release's last metadata version.
_FEATURE_ORDER = ("metadata.version", "kraft.version", "transaction.version", "group.version",
                  "eligible.leader.replicas.version", "share.version", "streams.version")
RELEASES: Mapping[str, Mapping[str, int]] = {
    release: dict(zip(_FEATURE_ORDER, levels))
    for release, levels in {
        "3.3": (7, 0, 0, 0, 0, 0, 0), "3.4": (8, 0, 0, 0, 0, 0, 0), "3.5": (11, 0, 0, 0, 0, 0, 0),
        "3.6": (14, 0, 0, 0, 0, 0, 0), "3.7": (19, 0, 0, 0, 0, 0, 0), "3.8": (20, 0, 0, 0, 0, 0, 0),
        "3.9": (21, 1, 0, 0, 0, 0, 0), "4.0": (25, 1, 2, 1, 0, 0, 0), "4.1": (27, 1, 2, 1, 1, 0, 0),
        "4.2": (29, 1, 2, 1, 1, 1, 1), "4.3": (30, 1, 2, 1, 1, 1, 1),
        "4.4": (33, 1, 2, 1, 1, 2, 1),
    }.items()
}
_METADATA_VERSION = "metadata.version"
_NEEDS_FEATURES = "feature flags (ApiVersions v3 and UpdateFeatures, Kafka 2.7+)"
_NEEDS_QUORUM = "the KRaft metadata quorum (DescribeQuorum, Kafka 3.3+ in KRaft mode; kctl's bundled broker runs no quorum)"


@dataclass(frozen=True)
class Feature:
    name: str
    # 0 when the feature is not finalized (disabled), as Kafka reports it.
    finalized_level: int
    # The range every reachable broker supports (None when a broker does not know it).
    supported_min_level: int | None
    supported_max_level: int | None
    # metadata.version's level as Kafka names it (4.3-IV0); None for other features.
    finalized_version: str | None
    finalized_epoch: int | None
    # Brokers whose own supported range differs from the others' (a rolling upgrade).
    brokers_differ: bool


@dataclass(frozen=True)
class FeatureUpdate:
    feature: str
    from_level: int
    to_level: int
    # upgrade | safe-downgrade | unsafe-downgrade
    upgrade_type: str
    # planned | validated | updated | unchanged | failed
    status: str
    error: str | None = None


@dataclass(frozen=True)
class QuorumReplica:
    node_id: int
    # Leader | Follower | Observer
    status: str
    directory_id: str | None
    log_end_offset: int
    # The leader's log end offset minus this replica's (the leader: 0).
    lag: int
    last_fetch_timestamp: int | None
    last_caught_up_timestamp: int | None
    endpoints: tuple[str, ...]


@dataclass(frozen=True)
class Quorum:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    max_follower_lag: int
    max_follower_lag_time_ms: int
    voters: tuple[QuorumReplica, ...]
    observers: tuple[QuorumReplica, ...]
    # The finalized kraft.version: 1 is a dynamic quorum (KIP-853: controllers added and
    # removed at run time), 0 a static one (controller.quorum.voters); None before Kafka
    # 3.9, which has no kraft.version and only static quorums.
    kraft_version: int | None = None
    dynamic: bool = False


# -- features -------------------------------------------------------------------------------


def version_name(feature: str, level: int) -> str | None:
    return METADATA_VERSIONS.get(level) if feature == _METADATA_VERSION else None


def parse_level(feature: str, text: str) -> int:
    """A feature level from the command line: a number, or for metadata.version a
    MetadataVersion name (4.3-IV0) or a release (4.3, its last metadata version)."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    if feature == _METADATA_VERSION:
        by_name = {name: level for level, name in METADATA_VERSIONS.items()}
        if text in by_name:
            return by_name[text]
        if text in RELEASES:
            return RELEASES[text][_METADATA_VERSION]
        raise UsageError(
            action=f"parse metadata.version {text!r}", cause=f"give a level ({min(METADATA_VERSIONS)}-{max(METADATA_VERSIONS)}), "
            f"a release ({', '.join(RELEASES)}) or a name such as {METADATA_VERSIONS[max(METADATA_VERSIONS)]}"
        )
    raise UsageError(action=f"parse the level of {feature}", cause=f"{text!r} is not a number")


def parse_updates(values: Sequence[str]) -> dict[str, int]:
    """--feature NAME=LEVEL values."""
    updates: dict[str, int] = {}
    for value in values:
        name, sep, level = value.partition("=")
        name = name.strip()
        if not sep or not name or not level.strip():
            raise UsageError(action=f"parse --feature {value!r}", cause="expected NAME=LEVEL, e.g. group.version=1")
        if name in updates:
            raise UsageError(action="update features", cause=f"{name} given more than once")
        updates[name] = parse_level(name, level)
    return updates


def release_levels(release: str) -> dict[str, int]:
    if release not in RELEASES:
        raise UsageError(action=f"upgrade to release {release!r}", cause=f"kctl knows {', '.join(RELEASES)}")
    return dict(RELEASES[release])


def describe_features(session: AdminSession) -> list[Feature]:
    """Every feature any broker supports or the cluster has finalized, by name."""
    action = "describe features"
    nodes = session.brokers(action)
    fields = {"client_software_name": "kctl", "client_software_version": "1"}
    responses = dict(zip(nodes, session.ask_all(action, [(node, apis.API_VERSIONS, fields, 3, 4) for node in nodes], needs=_NEEDS_FEATURES)))
    supported: dict[str, list[tuple[int, int] | None]] = {}
    finalized: dict[str, int] = {}
    epoch = None
    for index, response in enumerate(responses.values()):
        if response.error_code:
            raise for_kafka_code(response.error_code, None, action)
        answered = {f.name: (f.min_version, f.max_version) for f in response.supported_features or ()}
        for name in answered.keys() | supported.keys():
            supported.setdefault(name, [None] * index).append(answered.get(name))
        # The finalized levels of the broker with the newest metadata (highest epoch).
        this_epoch = response.finalized_features_epoch if response.finalized_features_epoch is not None and response.finalized_features_epoch >= 0 else None
        if epoch is None or (this_epoch is not None and this_epoch > epoch):
            epoch = this_epoch
            finalized = {f.name: f.max_version_level for f in response.finalized_features or ()}
    features = []
    for name in sorted(supported.keys() | finalized.keys()):
        ranges = supported.get(name, [])
        known = [r for r in ranges if r is not None]
        everywhere = len(known) == len(responses) and known
        level = finalized.get(name, 0)
        features.append(
            Feature(
                name=name,
                finalized_level=level,
                supported_min_level=max(r[0] for r in known) if everywhere else None,
                supported_max_level=min(r[1] for r in known) if everywhere else None,
                finalized_version=version_name(name, level),
                finalized_epoch=epoch if name in finalized else None,
                brokers_differ=len(set(ranges)) > 1,
            )
        )
    return features


def plan_updates(current: Sequence[Feature], targets: Mapping[str, int], *, downgrade: bool, unsafe: bool = False) -> list[FeatureUpdate]:
    """What UpdateFeatures would change, checked against the finalized levels: an upgrade
    never lowers a level and a downgrade never raises one (each says which to use)."""
    levels = {f.name: f for f in current}
    upgrade_type = "upgrade" if not downgrade else ("unsafe-downgrade" if unsafe else "safe-downgrade")
    plan = []
    for name, level in targets.items():
        feature = levels.get(name)
        if feature is None:
            known = ", ".join(sorted(levels)) or "none"
            raise InvalidError(action="update features", cause=f"the cluster does not know feature {name!r} (known: {known})")
        before = feature.finalized_level
        if not downgrade and level < before:
            raise InvalidError(action=f"upgrade {name} to {level}", cause=f"it is finalized at {before}; use `kctl feature downgrade`")
        if downgrade and level > before:
            raise InvalidError(action=f"downgrade {name} to {level}", cause=f"it is finalized at {before}; use `kctl feature upgrade`")
        status = "unchanged" if level == before else "planned"
        plan.append(FeatureUpdate(name, before, level, upgrade_type, status))
    return plan


def update_features(session: AdminSession, plan: Sequence[FeatureUpdate], *, validate_only: bool) -> list[FeatureUpdate]:
    """Send the planned changes in one UpdateFeatures request (Kafka applies all or none)."""
    changes = [u for u in plan if u.status == "planned"]
    if not changes:
        return list(plan)
    codes = {"upgrade": 1, "safe-downgrade": 2, "unsafe-downgrade": 3}
    fields: t.UpdateFeaturesRequest = {
        "timeout_ms": int(session.timeout * 1000),
        "feature_updates": [{"feature": u.feature, "max_version_level": u.to_level, "upgrade_type": codes[u.upgrade_type]} for u in changes],
        "validate_only": validate_only,
    }
    action = "validate feature updates" if validate_only else "update features"
    # Any broker forwards UpdateFeatures to the active controller. Version 1: validate_only
    # and upgrade_type need it (a broker without it cannot dry-run safely), and version 2
    # answers for the whole request only, where 1 says which feature failed. Sent again
    # after a dropped connection, it asks for the same levels: no harm.
    response = session.ask(action, apis.UPDATE_FEATURES, fields, 1, 1, needs=_NEEDS_FEATURES)
    if response.error_code:
        raise for_kafka_code(response.error_code, response.error_message, action)
    failed = {r.feature: (r.error_code, r.error_message) for r in response.results or () if r.error_code}
    done = "validated" if validate_only else "updated"
    out = []
    for update in plan:
        if update.status != "planned":
            out.append(update)
        elif update.feature in failed:
            code, message = failed[update.feature]
            out.append(replace(update, status="failed", error=for_kafka_code(code, message, f"update {update.feature}").message))
        else:
            out.append(replace(update, status=done))
    return out


# -- the metadata quorum --------------------------------------------------------------------


def describe_quorum(session: AdminSession) -> Quorum:
    """The metadata quorum as its leader sees it."""
    action = "describe the metadata quorum"
    request: t.DescribeQuorumRequest = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
    # Any broker forwards DescribeQuorum to the active controller; the same broker's
    # ApiVersions (sent before either answer is read) has the finalized kraft.version.
    versions: t.ApiVersionsRequest = {"client_software_name": "kctl", "client_software_version": "1"}
    answers: list[Any] = session.ask_all(action, [(None, apis.DESCRIBE_QUORUM, request, 0, 2), (None, apis.API_VERSIONS, versions, 3, 4)],
                                         needs=_NEEDS_QUORUM)
    answer: t.DescribeQuorumResponse = answers[0]
    features: t.ApiVersionsResponse = answers[1]
    if answer.error_code:
        raise for_kafka_code(answer.error_code, getattr(answer, "error_message", None), action)
    partition = answer.topics[0].partitions[0]
    if partition.error_code:
        raise for_kafka_code(partition.error_code, getattr(partition, "error_message", None), action)
    endpoints = {node.node_id: tuple(f"{e.name}://{e.host}:{e.port}" for e in node.listeners) for node in getattr(answer, "nodes", ())}
    leader, end = partition.leader_id, None
    for voter in partition.current_voters:
        if voter.replica_id == leader:
            end = voter.log_end_offset
    end = end if end is not None else partition.high_watermark

    def replica(state, observer: bool) -> QuorumReplica:
        node = state.replica_id
        return QuorumReplica(
            node_id=node,
            status="Observer" if observer else ("Leader" if node == leader else "Follower"),
            directory_id=_uuid_text(getattr(state, "replica_directory_id", None)),
            log_end_offset=state.log_end_offset,
            lag=end - state.log_end_offset,
            last_fetch_timestamp=_timestamp(getattr(state, "last_fetch_timestamp", None)),
            last_caught_up_timestamp=_timestamp(getattr(state, "last_caught_up_timestamp", None)),
            endpoints=endpoints.get(node, ()),
        )

    voters = tuple(sorted((replica(v, False) for v in partition.current_voters), key=lambda r: r.node_id))
    observers = tuple(sorted((replica(o, True) for o in partition.observers), key=lambda r: r.node_id))
    # As kafka-metadata-quorum computes them: the voter furthest behind the leader's log
    # end, and how long before the leader it last caught up (-1: unknown).
    head = next((v for v in voters if v.node_id == leader), None)
    slowest = min(voters, key=lambda v: v.log_end_offset, default=None)
    if head is None or slowest is None or slowest is head:
        lag_time = 0
    elif head.last_caught_up_timestamp is not None and slowest.last_caught_up_timestamp is not None:
        lag_time = head.last_caught_up_timestamp - slowest.last_caught_up_timestamp
    else:
        lag_time = -1
    kraft_version = _kraft_version(features)
    return Quorum(
        leader_id=leader,
        leader_epoch=partition.leader_epoch,
        high_watermark=partition.high_watermark,
        max_follower_lag=slowest.lag if slowest is not None else 0,
        max_follower_lag_time_ms=lag_time,
        voters=voters,
        observers=observers,
        kraft_version=kraft_version,
        dynamic=bool(kraft_version),
    )


def _kraft_version(features) -> int | None:
    """kraft.version's finalized level from an ApiVersions answer (0 when supported but not
    finalized: Kafka lists only finalized levels above 0); None when brokers do not know it."""
    if features.error_code or not any(f.name == "kraft.version" for f in features.supported_features or ()):
        return None
    return next((f.max_version_level for f in features.finalized_features or () if f.name == "kraft.version"), 0)


def _timestamp(value) -> int | None:
    return value if value is not None and value >= 0 else None


def _uuid_text(value) -> str | None:
    """Kafka prints directory ids as URL-safe base64 without padding; the zero id (no
    directory reported, as with static quorums) is None."""
    import base64
    import uuid

    if value is None:
        return None
    raw = value.bytes if isinstance(value, uuid.UUID) else bytes(value) if isinstance(value, (bytes, bytearray)) else None
    if raw is None:
        return str(value)
    if not any(raw):
        return None
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")
