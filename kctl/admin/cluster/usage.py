"""What each broker holds and how fast it grows (`kctl cluster usage`): bytes per broker
and log dir against their disks' capacity (KIP-827), replicas and leaders, the skew of
each (max/mean), the largest topics and partitions, and from two looks `sample` seconds
apart, write rates and the days until each log dir is full, and which log dirs are cordoned (KIP-1066),
from kctl.admin.cluster.layout's facts.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kctl.admin.client.kafka import LATEST_TIMESTAMP
from kctl.admin.client.session import AdminSession
from kctl.admin.cluster.layout import ClusterFacts, read_facts, replicas_and_leaders

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

    from kctl.admin.cluster.logdirs import ReplicaSize

# How many topics and partitions the report lists, largest first.
LARGEST = 10


@dataclass(frozen=True, kw_only=True)
class BrokerUsage:
    broker: int
    rack: str | None
    bytes: int
    # bytes / the mean of the live brokers'.
    share_of_mean: float
    replicas: int
    leaders: int
    log_dirs: int
    capacity_bytes: int | None
    usable_bytes: int | None
    used_percent: float | None
    # With a sample: how fast its replicas grew (bytes per second).
    bytes_per_second: float | None
    # Every log dir of it cordoned (KIP-1066): it takes no new replica.
    cordoned: bool


@dataclass(frozen=True, kw_only=True)
class LogDirUsage:
    broker: int
    log_dir: str
    bytes: int
    replicas: int
    total_bytes: int | None
    usable_bytes: int | None
    used_percent: float | None
    bytes_per_second: float | None
    # At that rate, when the disk has no usable bytes left; None when it is not growing,
    # its capacity is unknown, or retention bounds every topic growing in it (`bounded`).
    days_until_full: float | None
    bounded: bool | None
    error: str | None
    cordoned: bool


@dataclass(frozen=True, kw_only=True)
class TopicUsage:
    topic: str
    partitions: int
    replication_factor: int
    # Every replica's bytes.
    bytes: int
    records_per_second: float | None
    bytes_per_second: float | None


@dataclass(frozen=True, kw_only=True)
class PartitionUsage:
    topic: str
    partition: int
    bytes: int
    replicas: tuple[int, ...]
    leader: int | None


@dataclass(frozen=True, kw_only=True)
class SkewRow:
    measure: str
    max: float
    mean: float
    # max / mean: 1.0 is even.
    skew: float
    broker: int | None


@dataclass(frozen=True, kw_only=True)
class UsageReport:
    brokers: tuple[BrokerUsage, ...]
    skew: tuple[SkewRow, ...]
    log_dirs: tuple[LogDirUsage, ...]
    topics: tuple[TopicUsage, ...]
    partitions: tuple[PartitionUsage, ...]
    # The seconds between the two looks, or None without --sample.
    sampled_seconds: float | None
    bytes: int
    capacity_bytes: int | None


class _Look:
    def __init__(self, facts: ClusterFacts, ends: Mapping[tuple[str, int], int], taken: float):
        self.facts, self.ends, self.taken = facts, ends, taken


def _look(session: AdminSession, with_ends: bool) -> _Look:
    facts = read_facts(session, action="read the cluster's usage")
    ends: dict[tuple[str, int], int] = {}
    if with_ends:
        leaders = {(p.topic, p.partition): p.leader for p in facts.partitions if p.leader is not None}
        found, _errors = session.kafka.list_offsets(sorted(leaders), (LATEST_TIMESTAMP,), "read_uncommitted", "read log end offsets", leaders)
        ends = {k: answer.offset for k, (answer,) in found.items() if answer is not None}
    return _Look(facts, ends, time.monotonic())


def usage(session: AdminSession, *, sample: float | None = None, largest: int = LARGEST, topics: Sequence[str] = ()) -> UsageReport:
    """The report; with `sample` seconds, a second look that long after the first gives
    the rates. `topics` narrows the topic and partition lists (the brokers' figures are
    always every replica's)."""
    first = _look(session, sample is not None)
    second = None
    if sample is not None:
        time.sleep(sample)  # the point: the rates are what changed over this time
        second = _look(session, True)
    bounded = _retention_bounded(session, second) if second is not None else {}
    return report(first, second, bounded, largest=largest, topics=topics)


def _retention_bounded(session: AdminSession, look: _Look) -> dict[str, bool]:
    """Per topic: whether retention stops it growing (a time or size limit that deletes)."""
    from kctl.admin.topics.configs import describe_configs

    names = sorted({p.topic for p in look.facts.partitions})
    found, _errors = describe_configs(session, "topic", names, keys=("retention.ms", "retention.bytes", "cleanup.policy"))
    bounded = {}
    for resource in found:
        values = {c.name: c.value for c in resource.configs}
        deletes = "delete" in (values.get("cleanup.policy") or "delete")
        limited = any(values.get(k) not in (None, "-1") for k in ("retention.ms", "retention.bytes"))
        bounded[resource.entity_name] = deletes and limited
    return bounded


def report(first: _Look, second: _Look | None, bounded: Mapping[str, bool], *, largest: int = LARGEST,
           topics: Sequence[str] = ()) -> UsageReport:
    now = second or first
    facts = now.facts
    live = sorted(facts.brokers)
    seconds = (second.taken - first.taken) if second is not None else None

    def rate(after: float, before: float) -> float | None:
        return None if not seconds else round(max(0.0, after - before) / seconds, 1)

    count, leaders = replicas_and_leaders(facts.partitions, live)
    on_broker = _sizes(facts.replicas, lambda r: r.broker)
    held = {b: on_broker.get(b, 0) for b in live}
    before_dirs = {(d.broker, d.log_dir): d.size_bytes for d in first.facts.dirs}
    dirs = []
    growing: dict[tuple[int, str], set[str]] = defaultdict(set)
    if second is not None:
        earlier = {(r.broker, r.topic, r.partition): r.size_bytes for r in first.facts.replicas}
        for r in second.facts.replicas:
            if r.size_bytes > earlier.get((r.broker, r.topic, r.partition), r.size_bytes):
                growing[(r.broker, r.log_dir)].add(r.topic)
    for d in facts.dirs:
        per_second = rate(d.size_bytes, before_dirs.get((d.broker, d.log_dir), d.size_bytes))
        is_bounded = None
        days = None
        if per_second is not None and per_second > 0:
            grows = growing.get((d.broker, d.log_dir), set())
            is_bounded = bool(grows) and all(bounded.get(t, False) for t in grows)
            if d.usable_bytes is not None and not is_bounded:
                days = round(d.usable_bytes / per_second / 86400, 1)
        dirs.append(LogDirUsage(broker=d.broker, log_dir=d.log_dir, bytes=d.size_bytes, replicas=d.replicas, total_bytes=d.total_bytes,
                                usable_bytes=d.usable_bytes, used_percent=_percent(d.total_bytes, d.usable_bytes),
                                bytes_per_second=per_second, days_until_full=days, bounded=is_bounded, error=d.error,
                                cordoned=d.cordoned))
    mean = sum(held.values()) / len(live) if live else 0
    before_held = _sizes(first.facts.replicas, lambda r: r.broker)
    brokers = []
    for b in live:
        disks = facts.brokers[b]  # their capacity where every log dir reports it
        total = disks.capacity_bytes
        usable = None if total is None or disks.used_bytes is None else total - disks.used_bytes
        brokers.append(BrokerUsage(broker=b, rack=facts.brokers[b].rack, bytes=held[b], share_of_mean=round(held[b] / mean, 3) if mean else 1.0,
                                   replicas=count[b], leaders=leaders[b], log_dirs=len([d for d in facts.dirs if d.broker == b]),
                                   capacity_bytes=total, usable_bytes=usable, used_percent=_percent(total, usable),
                                   bytes_per_second=rate(held[b], before_held.get(b, held[b])), cordoned=facts.brokers[b].cordoned))
    wanted = set(topics)
    topic_bytes = _sizes(facts.replicas, lambda r: r.topic)
    ends_rate: dict[str, float] = defaultdict(float)
    bytes_rate: dict[str, float] = defaultdict(float)
    if second is not None and seconds:
        for key, end in second.ends.items():
            ends_rate[key[0]] += max(0, end - first.ends.get(key, end)) / seconds
        earlier_topic = _sizes(first.facts.replicas, lambda r: r.topic)
        for name, size in topic_bytes.items():
            bytes_rate[name] = max(0, size - earlier_topic.get(name, size)) / seconds
    layouts = facts.metadata.topics
    topic_rows = [TopicUsage(topic=name, partitions=len(t.partitions),
                             replication_factor=max((len(p.replicas) for p in t.partitions.values()), default=0),
                             bytes=topic_bytes.get(name, 0),
                             records_per_second=round(ends_rate[name], 1) if seconds else None,
                             bytes_per_second=round(bytes_rate[name], 1) if seconds else None)
                  for name, t in layouts.items() if t.partitions and (not wanted or name in wanted)]
    topic_rows.sort(key=lambda t: (-t.bytes, t.topic))
    partition_rows = [PartitionUsage(topic=p.topic, partition=p.partition, bytes=p.size_bytes, replicas=p.replicas, leader=p.leader)
                      for p in facts.partitions if not wanted or p.topic in wanted]
    partition_rows.sort(key=lambda p: (-p.bytes, p.topic, p.partition))
    capacities = [b.capacity_bytes for b in brokers]
    return UsageReport(brokers=tuple(brokers), skew=_skew(held, count, leaders), log_dirs=tuple(dirs), topics=tuple(topic_rows[:largest]),
                       partitions=tuple(partition_rows[:largest]), sampled_seconds=round(seconds, 1) if seconds else None,
                       bytes=sum(held.values()), capacity_bytes=sum(c or 0 for c in capacities) if capacities and all(capacities) else None)


def _sizes(replicas: Sequence[ReplicaSize], key: Callable[[ReplicaSize], Any]) -> dict[Any, int]:
    """The bytes of the replicas (not those being moved between log dirs) by `key`."""
    found: dict[Any, int] = defaultdict(int)
    for r in replicas:
        if not r.is_future:
            found[key(r)] += r.size_bytes
    return found


def _percent(total: int | None, usable: int | None) -> float | None:
    if not total or usable is None:
        return None
    return round(100 * (total - usable) / total, 1)


def _skew(*measures: Mapping[int, int]) -> tuple[SkewRow, ...]:
    rows = []
    for name, values in zip(("bytes", "replicas", "leaders"), measures):
        mean = sum(values.values()) / len(values) if values else 0
        top = max(values, key=lambda b: (values[b], -b)) if values else None
        rows.append(SkewRow(measure=name, max=values[top] if top is not None else 0, mean=round(mean, 1),
                            skew=round(values[top] / mean, 3) if top is not None and mean else 1.0, broker=top))
    return tuple(rows)
