"""The facts a balance plans from and a usage report shows: the live brokers (racks,
their disks' capacity and use, KIP-827) and every partition (replicas, leader, size),
from one Metadata, one DescribeLogDirs per broker and one ListPartitionReassignments.

A replica's size is what its broker reports (DescribeLogDirs); a partition's, its largest
replica's (a follower behind its leader holds less). A partition being reassigned is
taken where it is going.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from kctl.admin.client.kafka import ClusterMetadata
from kctl.admin.client.session import AdminSession
from kctl.admin.cluster.logdirs import LogDir, ReplicaSize, describe_log_dirs
from kctl.admin.cluster.replication import Reassignment, list_reassignments

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True, kw_only=True)
class BrokerFacts:
    id: int
    rack: str | None
    # Of its log dirs' disks, where every dir reports them (KIP-827, Kafka 3.3+): total,
    # and used by anything (total - usable).
    capacity_bytes: int | None = None
    used_bytes: int | None = None
    # Every log dir of it cordoned (KIP-1066): it takes no new replica.
    cordoned: bool = False


@dataclass(frozen=True, kw_only=True)
class PartitionFacts:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int | None
    size_bytes: int
    # Being reassigned now (replicas: where it is going).
    moving: bool = False


@dataclass(frozen=True, kw_only=True)
class ClusterFacts:
    metadata: ClusterMetadata
    brokers: dict[int, BrokerFacts]
    partitions: list[PartitionFacts]
    dirs: list[LogDir]
    replicas: list[ReplicaSize]
    in_flight: list[Reassignment]


def read_facts(session: AdminSession, *, action: str = "read the cluster's layout") -> ClusterFacts:
    """The live brokers (racks, disks) and every partition (replicas, leader, size)."""
    metadata = session.metadata(action)
    dirs, replicas = describe_log_dirs(session, metadata=metadata)
    in_flight = {(r.topic, r.partition): r for r in list_reassignments(session)}
    by_broker: dict[int, list[LogDir]] = defaultdict(list)
    for d in dirs:
        by_broker[d.broker].append(d)
    brokers = {}
    for node, broker in sorted(metadata.brokers.items()):
        mine = [d for d in by_broker.get(node, []) if d.error is None]
        reported = bool(mine) and all(d.total_bytes is not None and d.usable_bytes is not None for d in mine)
        brokers[node] = BrokerFacts(id=node, rack=broker.rack,
                                    capacity_bytes=sum(d.total_bytes or 0 for d in mine) if reported else None,
                                    used_bytes=sum((d.total_bytes or 0) - (d.usable_bytes or 0) for d in mine) if reported else None,
                                    cordoned=bool(mine) and all(d.cordoned for d in mine))
    sizes: dict[tuple[str, int], int] = {}
    for r in replicas:
        if not r.is_future:
            key = (r.topic, r.partition)
            sizes[key] = max(sizes.get(key, 0), r.size_bytes)
    partitions = []
    for name, topic in sorted(metadata.topics.items()):
        for number, layout in sorted(topic.partitions.items()):
            flight = in_flight.get((name, number))
            replicas_ = tuple(layout.replicas)
            if flight is not None:  # where it is going: the replicas it keeps and adds
                replicas_ = flight.move.target
            partitions.append(PartitionFacts(topic=name, partition=number, replicas=replicas_, leader=layout.leader,
                                             size_bytes=sizes.get((name, number), 0), moving=flight is not None))
    return ClusterFacts(metadata=metadata, brokers=brokers, partitions=partitions, dirs=dirs, replicas=replicas,
                        in_flight=sorted(in_flight.values(), key=lambda r: (r.topic, r.partition)))


def replicas_and_leaders(partitions: Iterable[Any], brokers: Iterable[int]) -> tuple[dict[int, int], dict[int, int]]:
    """How many replicas each of `brokers` holds and how many partitions it leads, of
    `partitions` (anything with `replicas` and `leader`); other brokers are not counted."""
    replicas = dict.fromkeys(brokers, 0)
    leaders = dict(replicas)
    for p in partitions:
        for broker in p.replicas:
            if broker in replicas:
                replicas[broker] += 1
        if p.leader in leaders:
            leaders[p.leader] += 1
    return replicas, leaders
