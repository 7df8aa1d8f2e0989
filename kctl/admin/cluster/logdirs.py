"""Log directories (DescribeLogDirs, through kafka-python): sizes per broker, directory,
topic and partition replica, and each directory's capacity."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kctl.admin.client.errors import no_such_topic
from kctl.admin.client.session import AdminSession


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


def describe_log_dirs(session: AdminSession, *, topics: Sequence[str] = (), brokers: Sequence[int] = ()) -> tuple[list[LogDir], list[ReplicaSize]]:
    from kafka import errors as kafka_errors

    from kctl.errors import NotFoundError

    metadata = session.metadata("describe log dirs", topics)
    for broker in brokers:
        if broker not in metadata.brokers:
            raise NotFoundError(f"unable to describe log dirs of broker {broker}: no such broker (brokers: {', '.join(map(str, sorted(metadata.brokers)))})")
    for topic in topics:
        if not metadata.has(topic):
            raise no_such_topic(f"describe log dirs of topic {topic}", topic)
    raw = session.run_kafka_python(
        lambda c: c.describe_log_dirs(topic_partitions=list(topics) or None, brokers=list(brokers) or None), "describe log dirs"
    )
    dirs, replicas = [], []
    for broker_entry in sorted(raw, key=lambda e: e["broker"]):
        broker = broker_entry["broker"]
        for d in sorted(broker_entry["log_dirs"], key=lambda d: d["log_dir"]):
            mine = [
                ReplicaSize(
                    broker=broker,
                    log_dir=d["log_dir"],
                    topic=t["name"],
                    partition=p["partition_index"],
                    size_bytes=p["partition_size"],
                    offset_lag=p["offset_lag"],
                    is_future=bool(p["is_future_key"]),
                )
                for t in d.get("topics", [])
                for p in t["partitions"]
            ]
            mine.sort(key=lambda r: (r.topic, r.partition))
            replicas += mine
            error = None
            if d.get("error_code"):
                error = getattr(kafka_errors.for_code(d["error_code"]), "message", str(d["error_code"]))
            total, usable = d.get("total_bytes"), d.get("usable_bytes")
            dirs.append(
                LogDir(
                    broker=broker,
                    log_dir=d["log_dir"],
                    size_bytes=sum(r.size_bytes for r in mine),
                    replicas=len(mine),
                    total_bytes=total if total is not None and total >= 0 else None,
                    usable_bytes=usable if usable is not None and usable >= 0 else None,
                    error=error,
                )
            )
    return dirs, replicas
