"""Cluster health: one verdict, in the Nagios plugin convention, from one snapshot.

  CRITICAL  partitions without a usable leader (offline or unavailable), or under
            min.insync.replicas (acks=all producers are refused), or no broker reachable
  WARNING   partitions under-replicated or at min.insync.replicas (one failure from
            CRITICAL), or brokers hosting replicas that are not alive
  OK        none of the above
  UNKNOWN   the state could not be read completely

Offline partitions whose ISR is empty are told apart by their eligible leader replicas
(KIP-966, where the cluster reports them): those an ELR member will lead again cleanly
once it returns, and those only an unclean election can bring back.
"""

from __future__ import annotations

from dataclasses import dataclass

from kctl.admin.cluster.partitions import PartitionHealth, PartitionSnapshot

OK, WARNING, CRITICAL, UNKNOWN = "OK", "WARNING", "CRITICAL", "UNKNOWN"
STATUS_ORDER = (OK, WARNING, CRITICAL, UNKNOWN)


@dataclass(frozen=True, kw_only=True)
class PartitionRef:
    topic: str
    partition: int


@dataclass(frozen=True, kw_only=True)
class ClusterHealth:
    status: str
    # One sentence per condition found, most severe first.
    reasons: tuple[str, ...]
    cluster_id: str | None
    controller_id: int | None
    brokers: tuple[int, ...]
    # Brokers named as replicas that are not alive.
    offline_brokers: tuple[int, ...]
    partitions: int
    offline_partitions: tuple[PartitionRef, ...]
    unavailable_partitions: tuple[PartitionRef, ...]
    under_min_isr_partitions: tuple[PartitionRef, ...]
    under_replicated_partitions: tuple[PartitionRef, ...]
    at_min_isr_partitions: tuple[PartitionRef, ...]
    # Empty ISR: an eligible leader replica can lead again cleanly, or none can.
    elr_recoverable_partitions: tuple[PartitionRef, ...] = ()
    elr_unrecoverable_partitions: tuple[PartitionRef, ...] = ()

    @property
    def healthy(self) -> bool:
        return self.status == OK


def _refs(partitions: tuple[PartitionHealth, ...], flag: str) -> tuple[PartitionRef, ...]:
    return tuple(PartitionRef(topic=p.topic, partition=p.partition) for p in partitions if getattr(p, flag))


def evaluate(snapshot: PartitionSnapshot, *, cluster_id: str | None, controller_id: int | None) -> ClusterHealth:
    parts = snapshot.partitions
    offline = _refs(parts, "offline")
    unavailable = _refs(parts, "unavailable")
    under_min_isr = _refs(parts, "under_min_isr")
    under_replicated = _refs(parts, "under_replicated")
    at_min_isr = _refs(parts, "at_min_isr")
    recoverable = _refs(parts, "elr_recoverable")
    unrecoverable = _refs(parts, "elr_unrecoverable")
    # A partition at min ISR is only a warning when losing one replica would matter:
    # with replication factor 1 and min.insync.replicas 1 it is the normal state.
    at_risk = tuple(
        ref for ref, p in ((PartitionRef(topic=p.topic, partition=p.partition), p) for p in parts if p.at_min_isr) if len(p.replicas) > 1
    )
    assigned = {r for p in parts for r in p.replicas}
    offline_brokers = tuple(sorted(assigned - set(snapshot.live_brokers)))

    reasons: list[str] = []
    status = OK
    if offline or unavailable or under_min_isr:
        status = CRITICAL
        if offline:
            reasons.append(f"{len(offline)} offline partition(s) (no leader)")
        if recoverable:
            reasons.append(f"{len(recoverable)} partition(s) with an empty ISR that an eligible leader replica can lead again once it returns")
        if unrecoverable:
            reasons.append(f"{len(unrecoverable)} partition(s) with an empty ISR and no eligible leader replica (only an unclean election brings them back)")
        if len(unavailable) > len(offline):
            reasons.append(f"{len(unavailable) - len(offline)} partition(s) led by a broker that is not alive")
        if under_min_isr:
            reasons.append(f"{len(under_min_isr)} partition(s) under min.insync.replicas")
    if under_replicated or at_risk or offline_brokers:
        status = status if status == CRITICAL else WARNING
        if offline_brokers:
            reasons.append(f"broker(s) {', '.join(map(str, offline_brokers))} hold replicas but are not alive")
        if under_replicated:
            reasons.append(f"{len(under_replicated)} under-replicated partition(s)")
        if at_risk:
            reasons.append(f"{len(at_risk)} partition(s) at min.insync.replicas")
    return ClusterHealth(
        status=status,
        reasons=tuple(reasons),
        cluster_id=cluster_id,
        controller_id=controller_id,
        brokers=snapshot.live_brokers,
        offline_brokers=offline_brokers,
        partitions=len(parts),
        offline_partitions=offline,
        unavailable_partitions=unavailable,
        under_min_isr_partitions=under_min_isr,
        under_replicated_partitions=under_replicated,
        at_min_isr_partitions=at_min_isr,
        elr_recoverable_partitions=recoverable,
        elr_unrecoverable_partitions=unrecoverable,
    )


def check(session) -> ClusterHealth:
    """Take a snapshot of the whole cluster (internal topics included) and judge it."""
    from kctl.admin.cluster.brokers import describe_cluster
    from kctl.admin.cluster.partitions import snapshot

    info = describe_cluster(session)
    return evaluate(snapshot(session, include_internal=True, with_elr=True), cluster_id=info.cluster_id, controller_id=info.controller_id)
