"""Log directories (DescribeLogDirs, through kctl's wire client): sizes per broker, directory,
topic and partition replica, and each directory's capacity."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kctl.admin.client.errors import for_kafka_code, no_such_topic
from kctl.admin.client.kafka import ClusterMetadata
from kctl.admin.client.session import AdminSession
from kctl.errors import NotFoundError
from kctl.messages import apis
from kctl.messages.errors import error_name


@dataclass(frozen=True, kw_only=True)
class ReplicaSize:
    broker: int
    log_dir: str
    topic: str
    partition: int
    size_bytes: int
    # How far a future replica (being moved between dirs) is behind; 0 otherwise.
    offset_lag: int
    is_future: bool


@dataclass(frozen=True, kw_only=True)
class LogDir:
    broker: int
    log_dir: str
    # Bytes of the replicas asked about (all of them when no topic filter was given).
    size_bytes: int
    replicas: int
    total_bytes: int | None
    usable_bytes: int | None
    error: str | None
    # Cordoned (KIP-1066, Kafka 4.3+: the broker's cordoned.log.dirs): no new replica is
    # placed in it. False where the broker does not say (before DescribeLogDirs v5).
    cordoned: bool = False


def describe_log_dirs(session: AdminSession, *, topics: Sequence[str] = (), brokers: Sequence[int] = (),
                      with_replicas: bool = True, metadata: ClusterMetadata | None = None) -> tuple[list[LogDir], list[ReplicaSize]]:
    """Every log directory of `brokers` (all when none is named), with the sizes of the
    replicas of `topics` in it (every replica when none is named; none without `with_replicas`:
    the directories alone, cheap on a cluster of many partitions): one DescribeLogDirs to
    each broker, all sent at once; `metadata`, when the caller has just read the cluster's."""
    action = "describe log dirs"
    if metadata is None:
        metadata = session.metadata(action, topics)
    for broker in brokers:
        if broker not in metadata.brokers:
            raise NotFoundError(action=f"describe log dirs of broker {broker}", cause=f"no such broker (brokers: {', '.join(map(str, sorted(metadata.brokers)))})")
    for topic in topics:
        if not metadata.has(topic):
            raise no_such_topic(f"describe log dirs of topic {topic}", topic)
    asked = [{"topic": t, "partitions": sorted(metadata.topics[t].partitions)} for t in dict.fromkeys(topics)] if topics else None
    if not with_replicas:
        asked = []
    nodes = sorted(brokers or metadata.brokers)
    answers = session.ask_all(action, [(node, apis.DESCRIBE_LOG_DIRS, {"topics": asked}, 1, 5) for node in nodes])
    dirs, replicas = [], []
    for broker, answer in zip(nodes, answers):
        if getattr(answer, "error_code", 0):
            raise for_kafka_code(answer.error_code, None, f"{action} of broker {broker}")
        for d in sorted(answer.results, key=lambda d: d.log_dir):
            mine = sorted(
                (ReplicaSize(broker=broker, log_dir=d.log_dir, topic=t.name, partition=p.partition_index, size_bytes=p.partition_size,
                             offset_lag=p.offset_lag, is_future=bool(p.is_future_key))
                 for t in d.topics for p in t.partitions),
                key=lambda r: (r.topic, r.partition),
            )
            replicas += mine
            total, usable = getattr(d, "total_bytes", -1), getattr(d, "usable_bytes", -1)
            dirs.append(
                LogDir(
                    broker=broker,
                    log_dir=d.log_dir,
                    size_bytes=sum(r.size_bytes for r in mine),
                    replicas=len(mine),
                    total_bytes=total if total >= 0 else None,
                    usable_bytes=usable if usable >= 0 else None,
                    error=error_name(d.error_code) if d.error_code else None,
                    cordoned=bool(getattr(d, "is_cordoned", False)),
                )
            )
    return dirs, replicas
