"""Partition health across the cluster: ISR, leadership, min.insync.replicas, balance.

One Metadata request gives every partition's leader, replicas and ISR; one
DescribeConfigs request gives every topic's min.insync.replicas. The definitions
follow kafka-topics.sh (TopicCommand) so the filters select the same partitions:

  under-replicated  fewer in-sync replicas than replicas
  under-min-isr     no leader, or fewer in-sync replicas than min.insync.replicas
  at-min-isr        exactly min.insync.replicas in sync (one more failure stops acks=all writes)
  unavailable       no leader, or a leader that is not a live broker
  offline           no leader at all
  elr-recoverable   an empty ISR, and an eligible leader replica (KIP-966) that the
                    controller elects cleanly once it is back
  elr-unrecoverable an empty ISR and no eligible leader replica: only an unclean
                    election brings it back (the last known ELR says which replica
                    to prefer)

ELR and last known ELR come from DescribeTopicPartitions (kctl.admin.cluster.elr) where
the cluster answers it, else they are None (unknown).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kctl.admin.client.kafka import ClusterMetadata, PartitionLayout
from kctl.admin.client.session import AdminSession
from kctl.admin.cluster import elr
from kctl.values import Value

FILTERS = ("under_replicated", "under_min_isr", "at_min_isr", "unavailable", "offline", "elr_recoverable", "elr_unrecoverable")


class PartitionHealth(Value):
    __slots__ = ("topic", "partition", "leader", "replicas", "isr", "offline_replicas", "min_isr", "under_replicated", "under_min_isr", "at_min_isr", "unavailable", "offline", "elr", "last_known_elr", "elr_recoverable", "elr_unrecoverable")

    def __init__(
        self, *,
        topic: str, partition: int, leader: int | None, replicas: tuple[int, ...], isr: tuple[int, ...], offline_replicas: tuple[int, ...],
        min_isr: int | None, under_replicated: bool, under_min_isr: bool, at_min_isr: bool, unavailable: bool, offline: bool,
        elr: tuple[int, ...] | None = None, last_known_elr: tuple[int, ...] | None = None, elr_recoverable: bool = False,
        elr_unrecoverable: bool = False,
    ):
        self.topic = topic
        self.partition = partition
        self.leader = leader
        self.replicas = replicas
        self.isr = isr
        # Replicas on brokers that are not alive.
        self.offline_replicas = offline_replicas
        self.min_isr = min_isr
        self.under_replicated = under_replicated
        self.under_min_isr = under_min_isr
        self.at_min_isr = at_min_isr
        self.unavailable = unavailable
        self.offline = offline
        # Eligible leader replicas and the last known ELR; None where the cluster does not say.
        self.elr = elr
        self.last_known_elr = last_known_elr
        self.elr_recoverable = elr_recoverable
        self.elr_unrecoverable = elr_unrecoverable


class PartitionSnapshot(Value):
    """Every partition of the selected topics, and the brokers alive when it was taken."""

    __slots__ = ("live_brokers", "partitions", "overrides")

    def __init__(self, *, live_brokers: tuple[int, ...], partitions: tuple[PartitionHealth, ...], overrides: dict[str, int] | None = None):
        self.live_brokers = live_brokers
        self.partitions = partitions
        # Topic -> number of configs set on the topic itself; filled when asked for.
        self.overrides = dict() if overrides is None else overrides


def topic_configs(session: AdminSession, topics: Sequence[str]) -> tuple[dict[str, int | None], dict[str, int]]:
    """min.insync.replicas and the number of topic-level overrides, per topic (one
    DescribeConfigs request; a topic whose configs cannot be read has neither)."""
    if not topics:
        return {}, {}
    from kctl.admin.client.kafka import TOPIC

    results, _unread = session.kafka.describe_configs([(TOPIC, t) for t in topics], "describe topic configs")
    min_isr: dict[str, int | None] = {t: None for t in topics}
    overrides: dict[str, int] = {t: 0 for t in topics}
    for (_kind, name), result in results.items():
        entry = result.get("min.insync.replicas")
        min_isr[name] = int(entry.value) if entry is not None and entry.value is not None else None
        overrides[name] = sum(1 for e in result.values() if e.source == "DYNAMIC_TOPIC_CONFIG")
    return min_isr, overrides


def snapshot(
    session: AdminSession,
    *,
    topics: Sequence[str] = (),
    regex: re.Pattern[str] | None = None,
    include_internal: bool = True,
    overrides: bool = False,
    metadata: ClusterMetadata | None = None,
    filters: Sequence[str] = (),
    leader: int | None = None,
    with_elr: bool = False,
) -> PartitionSnapshot:
    """A snapshot from a fresh Metadata request, or from `metadata` the caller just fetched.

    With `filters` or `leader` (see select) it holds only the matching partitions; when
    they do not depend on min.insync.replicas, only those partitions' topics have their
    configs read (on a healthy cluster, none: `--under-replicated` of 18,000 partitions
    then costs one Metadata request instead of a DescribeConfigs of every topic too).
    Eligible leader replicas are asked of the same topics where the cluster reports them
    (`with_elr`, or an ELR filter, which fails on a cluster that does not).
    """
    if metadata is None:
        metadata = session.metadata("list partitions", topics)
    live = tuple(sorted(metadata.brokers))
    names = sorted(
        name
        for name in metadata.topics
        if (not topics or name in topics)
        and (regex is None or regex.fullmatch(name))
        and (include_internal or not name.startswith("__"))
        and metadata.topics[name].partitions
    )
    missing = [t for t in topics if not metadata.has(t)]
    if missing:
        from kctl.admin.client.errors import no_such_topic

        raise no_such_topic(f"list partitions of {', '.join(missing)}", missing[0])
    live_set = set(live)
    candidates = [(name, p) for name in names for p in metadata.topics[name].partitions.values()]
    wants_elr = bool(set(filters) & _NEEDS_ELR)
    if wants_elr and not elr.supported(session):
        from kctl.errors import InvalidError

        raise InvalidError(action="list partitions by eligible leader replicas", cause=f"the cluster does not support {elr.NEEDS_ELR}")
    if (filters or leader is not None) and not set(filters) & _NEEDS_MIN_ISR and not overrides:
        candidates = [(name, p) for name, p in candidates if _could_match(health_of(name, p, None, live_set), filters, leader)]
        names = sorted({name for name, _ in candidates})
    min_isr, override_counts = topic_configs(session, names)
    eligible = None
    if candidates and (wants_elr or with_elr) and elr.supported(session):
        eligible = elr.eligible_leaders(session, {name: len(metadata.topics[name].partitions) for name in names})
    partitions = [health_of(name, p, min_isr.get(name), live_set, None if eligible is None else eligible.get((name, p.partition), ((), ())))
                  for name, p in candidates]
    if filters or leader is not None:
        partitions = select(partitions, filters=filters, leader=leader)
    return PartitionSnapshot(live_brokers=live, partitions=tuple(partitions), overrides=override_counts if overrides else {})


# The health conditions that depend on a topic's min.insync.replicas, and on ELR.
_NEEDS_MIN_ISR = frozenset({"under_min_isr", "at_min_isr"})
_NEEDS_ELR = frozenset({"elr_recoverable", "elr_unrecoverable"})


def _could_match(health: PartitionHealth, filters: Sequence[str], leader: int | None) -> bool:
    """Whether a partition may match once its ELR is known (an ELR filter needs an empty ISR)."""
    if leader is not None and health.leader != leader:
        return False
    return not filters or any(not health.isr if f in _NEEDS_ELR else getattr(health, f) for f in filters)


def health_of(topic: str, layout: PartitionLayout, min_isr: int | None, live: set[int],
              eligible: tuple[tuple[int, ...], tuple[int, ...]] | None = None) -> PartitionHealth:
    """Health of one partition from its layout in a Metadata answer, and its (ELR, last
    known ELR) where known."""
    leader, replicas, isr = layout.leader, layout.replicas, layout.isr
    has_leader = leader is not None
    elr_, last_known = eligible if eligible is not None else (None, None)
    return PartitionHealth(
        topic=topic,
        partition=layout.partition,
        leader=leader,
        replicas=replicas,
        isr=isr,
        offline_replicas=tuple(r for r in replicas if r not in live),
        min_isr=min_isr,
        under_replicated=len(isr) < len(replicas),
        under_min_isr=not has_leader or (min_isr is not None and len(isr) < min_isr),
        at_min_isr=min_isr is not None and len(isr) == min_isr,
        unavailable=not has_leader or leader not in live,
        offline=not has_leader,
        elr=elr_,
        last_known_elr=last_known,
        elr_recoverable=not isr and bool(elr_),
        elr_unrecoverable=not isr and elr_ is not None and not elr_,
    )


def select(
    partitions: Iterable[PartitionHealth], *, filters: Sequence[str] = (), leader: int | None = None
) -> list[PartitionHealth]:
    """Partitions matching any of the health filters (all when none), led by `leader` if given."""
    chosen = []
    for p in partitions:
        if filters and not any(getattr(p, f) for f in filters):
            continue
        if leader is not None and p.leader != leader:
            continue
        chosen.append(p)
    return chosen


class BrokerBalance(Value):
    __slots__ = ("broker", "alive", "leaders", "replicas", "in_sync", "out_of_sync", "preferred_leaders", "not_leading_preferred")

    def __init__(
        self, *,
        broker: int, alive: bool, leaders: int, replicas: int, in_sync: int, out_of_sync: int, preferred_leaders: int, not_leading_preferred: int,
    ):
        self.broker = broker
        self.alive = alive
        self.leaders = leaders
        self.replicas = replicas
        # Replicas of this broker that are in their partition's ISR.
        self.in_sync = in_sync
        self.out_of_sync = out_of_sync
        # Partitions whose preferred (first) replica is this broker.
        self.preferred_leaders = preferred_leaders
        # Preferred here but led elsewhere: what a preferred election would move back.
        self.not_leading_preferred = not_leading_preferred


def balance(snapshot_: PartitionSnapshot) -> list[BrokerBalance]:
    brokers = set(snapshot_.live_brokers)
    for p in snapshot_.partitions:
        brokers.update(p.replicas)
    rows = []
    for broker in sorted(brokers):
        mine = [p for p in snapshot_.partitions if broker in p.replicas]
        preferred = [p for p in snapshot_.partitions if p.replicas and p.replicas[0] == broker]
        rows.append(
            BrokerBalance(
                broker=broker,
                alive=broker in snapshot_.live_brokers,
                leaders=sum(1 for p in snapshot_.partitions if p.leader == broker),
                replicas=len(mine),
                in_sync=sum(1 for p in mine if broker in p.isr),
                out_of_sync=sum(1 for p in mine if broker not in p.isr),
                preferred_leaders=len(preferred),
                not_leading_preferred=sum(1 for p in preferred if p.leader != broker),
            )
        )
    return rows
