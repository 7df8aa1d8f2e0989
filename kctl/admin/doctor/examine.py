"""Read what kctl doctor's checks need, through the protocol alone, and run them.

One Metadata request (brokers, topics, replicas, ISR; eligible leader replicas where the
cluster reports them), one DescribeConfigs of every topic (min.insync.replicas, unclean
leader election, retention), every group's lag with the age of its next record (ListGroups,
the group describes, OffsetFetch, ListOffsets, one fetch per lagging partition), and the
producers of every partition (DescribeProducers) for hanging transactions. A part the
cluster cannot answer (an API it lacks, a refusal) is named in `unread`, and the verdict is
UNKNOWN unless a worse finding stands: the rest is still examined.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from kctl.admin.client.session import AdminSession
from kctl.admin.doctor import checks
from kctl.admin.doctor.findings import Finding, ordered, status
from kctl.errors import KctlError, NotAuthorizedError, UnreachableError
from kctl.values import Value

T = TypeVar("T")
_CONFIGS = ("min.insync.replicas", "unclean.leader.election.enable", "retention.ms")
# How a part the cluster lacks the API of is said (session.ask's `needs`): an info finding.
_UNSUPPORTED = "the cluster does not support"


class Examination(Value):
    """What kctl doctor found: the verdict, the findings worst first, and the parts of the
    cluster it could not read (each with why)."""

    __slots__ = ("status", "findings", "unread", "seconds")

    def __init__(self, *, status: str, findings: list[Finding], unread: dict[str, str], seconds: float):
        self.status = status
        self.findings = findings
        self.unread = unread
        self.seconds = seconds


def examine(session: AdminSession, *, transaction_age_ms: int | None = None) -> Examination:
    """Examine the whole cluster (internal topics included); a transaction open longer than
    `transaction_age_ms` hangs (default: the brokers' transaction.max.timeout.ms, past
    which no coordinator keeps one open)."""
    from kctl.admin.client.kafka import TOPIC
    from kctl.admin.cluster.features import describe_quorum
    from kctl.admin.cluster.logdirs import describe_log_dirs
    from kctl.admin.cluster.partitions import snapshot
    from kctl.admin.groups.lag import group_lag

    started = time.monotonic()
    unread: dict[str, str] = {}
    metadata = session.metadata("examine the cluster")
    found: list[Finding] = []
    partitions = snapshot(session, include_internal=True, metadata=metadata, with_elr=True)
    found += checks.partitions(partitions) + checks.offline_brokers(partitions) + checks.preferred_leaders(partitions)
    names = sorted(name for name, t in metadata.topics.items() if t.partitions)
    configs = _part("topic configs", unread, lambda: session.kafka.describe_configs([(TOPIC, t) for t in names], "describe topic configs",
                                                                                     keys=_CONFIGS))
    retention: dict[str, int | None] = {}
    if configs is not None:
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
    lag = _part("group lag", unread, lambda: group_lag(session, None, time_lag="record"))
    if lag is not None:
        groups, refused = lag
        if refused:
            unread["group lag"] = f"{len(refused)} group(s) could not be read: " + ", ".join(sorted(refused)[:5])
        found += checks.unread_losses(groups) + checks.retention_ahead(groups, retention)
    pairs = [(name, p) for name in names for p in sorted(metadata.topics[name].partitions)]
    hanging = _part("transactions", unread, lambda: _hanging(session, pairs, transaction_age_ms))
    if hanging is not None:
        found += checks.hanging_transactions(hanging)
    dirs = _part("log dirs", unread, lambda: describe_log_dirs(session, with_replicas=False, metadata=metadata)[0])
    if dirs is not None:
        found += checks.log_dirs(dirs)
    quorum = _part("controller quorum", unread, lambda: describe_quorum(session))
    if quorum is not None:
        found += checks.quorum(quorum, int(time.time() * 1000))
    for part in [p for p, why in unread.items() if why.startswith(_UNSUPPORTED)]:
        found.append(checks.unsupported(part, unread.pop(part)))
    findings = ordered(found)
    return Examination(status=status(findings, complete=not unread), findings=findings, unread=unread,
                       seconds=round(time.monotonic() - started, 2))


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
