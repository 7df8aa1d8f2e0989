"""Read what kctl doctor's checks need, through the protocol alone, and run them.

One Metadata request (brokers, topics, replicas, ISR; eligible leader replicas where the
cluster reports them), one DescribeConfigs of every topic (min.insync.replicas, unclean
leader election, retention), every group's lag with the age of its next record (ListGroups,
the group describes, OffsetFetch, ListOffsets, one fetch per lagging partition) and its
members' subscriptions, the producers of every partition (DescribeProducers) for hanging
transactions, every broker's log directories with their replicas' sizes, the API versions
each broker's connection was told, the controller quorum and the client quotas. A scope (a group, a topic,
a broker) reads and judges only what concerns it. A part the cluster cannot answer (an API
it lacks, a refusal) is named in `unread`, and the verdict is UNKNOWN unless a worse
finding stands: the rest is still examined. Two looks some time apart (the earlier one's
Sample passed to the later) add the trend checks (kctl.admin.doctor.trends).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from kctl.admin.client.session import AdminSession
from kctl.admin.doctor import checks, spread, trends
from kctl.admin.doctor.findings import Finding, ordered, status
from kctl.admin.doctor.trends import Sample
from kctl.errors import InvalidError, KctlError, NotAuthorizedError, NotFoundError, UnreachableError
from kctl.values import Value, replace

T = TypeVar("T")
_CONFIGS = ("min.insync.replicas", "unclean.leader.election.enable", "retention.ms")
# How a part the cluster lacks the API of is said (session.ask's `needs`): an info finding.
_UNSUPPORTED = "the cluster does not support"


class Scope(Value):
    """What to examine: the whole cluster (kind None), or what concerns one group, topic or
    broker."""

    __slots__ = ("kind", "name")

    def __init__(self, *, kind: str | None = None, name: str = ""):
        self.kind = kind
        self.name = name


CLUSTER = Scope()


class Examination(Value):
    """What kctl doctor found: the verdict, the findings worst first, and the parts of the
    cluster it could not read (each with why); with two looks at it, how far apart."""

    __slots__ = ("status", "findings", "unread", "seconds", "window_seconds")

    def __init__(self, *, status: str, findings: list[Finding], unread: dict[str, str], seconds: float,
                 window_seconds: float | None = None):
        self.status = status
        self.findings = findings
        self.unread = unread
        self.seconds = seconds
        # The time since the earlier look the trend checks compared with (--sample,
        # --watch); null after one look.
        self.window_seconds = window_seconds


def examine(session: AdminSession, *, transaction_age_ms: int | None = None, scope: Scope = CLUSTER,
            previous: Sample | None = None, sampled: bool = False, ignore_groups: Sequence[re.Pattern[str]] = ()
            ) -> tuple[Examination, Sample]:
    """Examine the cluster (internal topics included), or what of it `scope` names; a
    transaction open longer than `transaction_age_ms` hangs (default: the brokers'
    transaction.max.timeout.ms, past which no coordinator keeps one open); groups whose
    whole id matches one of `ignore_groups` are left out of the group checks. With
    `sampled` the sample returned holds the log end and last stable offsets too, and with
    `previous` (an earlier look's sample) the trend checks compare the two."""
    from kctl.admin.cluster.partitions import snapshot
    from kctl.admin.groups import protocol
    from kctl.admin.groups.groups import subscriptions as subscribed
    from kctl.admin.groups.lag import group_lag

    started = time.monotonic()
    unread: dict[str, str] = {}
    metadata = session.metadata("examine the cluster")
    cluster = snapshot(session, include_internal=True, metadata=metadata, with_elr=True)
    topics = sorted(name for name, t in metadata.topics.items() if t.partitions)
    broker = _in_scope(scope, metadata, cluster, topics)
    groups = None
    # ListGroups once, for the lag and the members' subscriptions both.
    listed = _part("group lag", unread, lambda: protocol.list_groups(session)) if scope.kind != "broker" else None
    if listed is not None:
        lag = _part("group lag", unread, lambda: group_lag(session, [scope.name] if scope.kind == "group" else None,
                                                          topics=[scope.name] if scope.kind == "topic" else (), time_lag="record",
                                                          listed=listed))
        if lag is not None:
            groups, refused = lag
            if scope.kind == "group" and scope.name in refused:
                raise refused[scope.name].but(action=f"examine group {scope.name}")
            if refused:
                unread["group lag"] = f"{len(refused)} group(s) could not be read: " + ", ".join(sorted(refused)[:5])
            groups = [g for g in groups if (g.partitions or scope.kind != "topic") and not _ignored(g.group, ignore_groups)]
    if scope.kind == "topic":
        topics = [scope.name]
    elif scope.kind == "group":
        topics = sorted({p.topic for g in groups or () for p in g.partitions} & set(topics))
    elif scope.kind == "broker":
        topics = sorted({p.topic for p in cluster.partitions if broker in p.replicas})
    chosen = set(topics)
    partitions = replace(cluster, partitions=tuple(p for p in cluster.partitions if p.topic in chosen and (broker is None or broker in p.replicas)))
    found = checks.partitions(partitions) + checks.offline_brokers(partitions) + checks.preferred_leaders(partitions)
    retention = _topic_checks(session, metadata, topics, unread, found)
    if groups is not None:
        found += (checks.unread_losses(groups) + checks.retention_ahead(groups, retention) + checks.lag_without_members(groups))
    if groups is not None and scope.kind != "topic":  # (a topic that exists is no missing subscription)
        asked = [g for g in listed or () if scope.kind != "group" or g["group_id"] == scope.name]
        subscriptions = _part("group members", unread, lambda: subscribed(session, asked))
        if subscriptions is not None:
            found += checks.missing_subscriptions({g: members for g, members in subscriptions.items() if not _ignored(g, ignore_groups)},
                                                  metadata.topics)
    pairs = [(name, p) for name in topics for p in sorted(metadata.topics[name].partitions)]
    hanging = _part("transactions", unread, lambda: _hanging(session, pairs, transaction_age_ms))
    if hanging is not None:
        found += checks.hanging_transactions(hanging)
    found += _broker_checks(session, metadata, cluster, scope, broker, unread)
    for part in [p for p, why in unread.items() if why.startswith(_UNSUPPORTED)]:
        found.append(checks.unsupported(part, unread.pop(part)))
    sample = _sample(session, partitions, groups, pairs if sampled else [])
    if previous is not None:
        found += trends.compare(previous, sample)
    findings = ordered(found)
    window = None if previous is None else round(sample.taken - previous.taken, 1)
    return Examination(status=status(findings, complete=not unread), findings=findings, unread=unread,
                       seconds=round(time.monotonic() - started, 2), window_seconds=window), sample


def _in_scope(scope: Scope, metadata, cluster, topics: list[str]) -> int | None:
    """Check that what `scope` names exists (the group is checked as its lag is read); the
    broker's id for a broker scope."""
    from kctl.admin.topics.topics import no_such_topic

    if scope.kind == "topic" and scope.name not in topics:
        raise no_such_topic(f"examine topic {scope.name}", scope.name)
    if scope.kind != "broker":
        return None
    try:
        broker = int(scope.name)
    except ValueError:
        raise InvalidError(action="examine a broker", cause=f"{scope.name!r} is not a broker id (a number)") from None
    # A broker that is down still holds its replicas: it is examined too.
    if broker not in metadata.brokers and not any(broker in p.replicas for p in cluster.partitions):
        raise NotFoundError(action=f"examine broker {broker}",
                            cause=f"no such broker (brokers: {', '.join(map(str, sorted(metadata.brokers)))})")
    return broker


def _topic_checks(session: AdminSession, metadata, topics: list[str], unread: dict[str, str], found: list[Finding]) -> dict[str, int | None]:
    """The durability checks of `topics`' configs (appended to `found`); each topic's
    retention.ms."""
    from kctl.admin.client.kafka import TOPIC

    retention: dict[str, int | None] = {}
    if not topics:
        return retention
    configs = _part("topic configs", unread, lambda: session.kafka.describe_configs([(TOPIC, t) for t in topics], "describe topic configs",
                                                                                     keys=_CONFIGS))
    if configs is None:
        return retention
    results, errors = configs
    if errors:
        unread["topic configs"] = f"{len(errors)} topic(s) could not be read"
    facts = []
    for (_kind, name), values in results.items():
        retention[name] = _number(values.get("retention.ms"))
        unclean = values.get("unclean.leader.election.enable")
        facts.append(checks.TopicFacts(
            topic=name, replication_factor=max(len(p.replicas) for p in metadata.topics[name].partitions.values()),
            min_isr=_number(values.get("min.insync.replicas")), retention_ms=retention[name],
            unclean_leader_election=unclean is not None and unclean.value == "true"))
    found += checks.durability(facts, len(metadata.brokers))
    return retention


def _broker_checks(session: AdminSession, metadata, cluster, scope: Scope, broker: int | None, unread: dict[str, str]) -> list[Finding]:
    """Log directories (offline, disks nearly full), large partitions, skew, versions and
    the controller quorum: of the whole cluster, of one broker, or (a topic scope) the
    topic's large partitions alone; none for a group."""
    from kctl.admin.cluster.features import describe_quorum
    from kctl.admin.cluster.logdirs import describe_log_dirs
    from kctl.admin.security.quotas import quotas_by_entity

    if scope.kind == "group":
        return []
    topics = [scope.name] if scope.kind == "topic" else []
    found: list[Finding] = []
    dirs = _part("log dirs", unread, lambda: describe_log_dirs(session, topics=topics, metadata=metadata))
    if dirs is not None:
        found += spread.large_partitions([r for r in dirs[1] if broker is None or r.broker == broker])
        if scope.kind != "topic":
            found += checks.log_dirs([d for d in dirs[0] if broker is None or d.broker == broker])
            found += [f for f in spread.skew(cluster, dirs[0]) if broker is None or broker in f.evidence["brokers_above"]]
    if scope.kind == "topic":
        return found
    versions = _part("broker versions", unread, lambda: session.broker_api_versions(metadata.brokers))
    if versions is not None:
        found += spread.versions_differ(versions)
    if scope.kind is None:
        quorum = _part("controller quorum", unread, lambda: describe_quorum(session))
        if quorum is not None:
            found += checks.quorum(quorum, int(time.time() * 1000))
        quotas = _part("client quotas", unread, lambda: quotas_by_entity(session))
        if quotas is not None:
            found += checks.quotas({str(entity): values for entity, values in quotas.items()})
    return found


def _ignored(group: str, patterns: Sequence[re.Pattern[str]]) -> bool:
    return any(p.fullmatch(group) for p in patterns)


def _sample(session: AdminSession, partitions, groups, pairs: list[tuple[str, int]]) -> trends.Sample:
    """What a later look compares with: ISRs and groups (already read), and with `pairs`
    their log end and last stable offsets (two ListOffsets rounds of the latest offset,
    to the leaders the snapshot names)."""
    from kctl.admin.client.kafka import LATEST_TIMESTAMP

    leaders = {(p.topic, p.partition): p.leader for p in partitions.partitions if p.leader is not None}

    def latest(isolation: str) -> dict:
        found, _errors = session.kafka.list_offsets(pairs, (LATEST_TIMESTAMP,), isolation, "read log end offsets", leaders)
        return {k: answer.offset for k, (answer,) in found.items() if answer is not None}

    ends = latest("read_uncommitted") if pairs else {}
    stable = latest("read_committed") if pairs else {}
    return trends.Sample(taken=time.monotonic(), isr={(p.topic, p.partition): p.isr for p in partitions.partitions},
                         log_end=ends, stable=stable, groups={g.group: g for g in groups or ()})


def _part(name: str, unread: dict[str, str], read: Callable[[], T]) -> T | None:
    """What `read()` returns, or None with why in `unread` when the cluster refuses or
    lacks what it asks (an unreachable cluster ends the examination)."""
    try:
        return read()
    except UnreachableError:
        raise
    except NotAuthorizedError as exc:
        unread[name] = f"not authorized: {exc.cause}"
    except KctlError as exc:
        unread[name] = exc.cause
    return None


def _hanging(session: AdminSession, pairs: list[tuple[str, int]], age_ms: int | None) -> list:
    from kctl.admin.cluster.transactions import max_transaction_timeout_ms, open_transactions

    if not pairs:
        return []
    return open_transactions(session, pairs, age_ms if age_ms is not None else max_transaction_timeout_ms(session))


def _number(entry) -> int | None:
    """A config's value as a number, None when unset or not a number (or -1: no limit)."""
    try:
        value = int(entry.value) if entry is not None and entry.value is not None else None
    except ValueError:
        return None
    return None if value is None or value < 0 else value
