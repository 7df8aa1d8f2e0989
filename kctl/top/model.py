"""One sample of the cluster, and the window `kctl top` keeps of them.

take() reads, in this order: the cluster (DescribeCluster), every partition with its ISR
and min.insync.replicas (the snapshot `cluster health` judges, judged the same way), then
every group's lag with the log offsets of every partition in the same ListOffsets round
(kctl.admin.groups.lag.cluster_lag). Window.add() folds a sample into the trends and
returns a Frame: the rows of every view, built on the sampler's thread so the screen only
draws them.

Rules, from `group status` (kctl.admin.groups.lag_history) and `group lag`:
- a partition is *stuck* when its committed offset stood still for STUCK_SAMPLES samples
  in a row with lag throughout (group status's STOP without members, STALL with them);
- lag in seconds is kctl.admin.groups.lag_time's (the lag exporter's too): interpolated
  from each partition's (time, log end) points while they bracket the commit, else the
  timestamp of the record at the commit, 0 when caught up, unknown (with its reason for
  the drill-down) otherwise; a group's is unknown while any lagging partition's is;
- a group's direction compares its lag now with RECENT samples ago (trend.direction).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kctl.admin.groups.groups import listed_type
from kctl.admin.groups.models import kctl_group
from kctl.top.trend import BUCKETS, Trend, direction, sparkline

if TYPE_CHECKING:
    from kctl.admin.client.session import AdminSession
    from kctl.admin.cluster.brokers import BrokerInfo
    from kctl.admin.cluster.health import ClusterHealth
    from kctl.admin.cluster.partitions import PartitionHealth
    from kctl.admin.connect.connectors import ConnectorSummary
    from kctl.admin.connect.rest import ConnectClient
    from kctl.admin.groups.lag_time import TimeLagEstimator
    from kctl.admin.groups.models import GroupLag
    from kctl.errors import KctlError

STUCK_SAMPLES = 5
RECENT = 5
# How long a sample waits for the records that date stuck commits (those not read in time
# are asked again later; the screen never waits on them).
RECORD_TIME_TIMEOUT = 5.0


@dataclass(frozen=True)
class ClusterSample:
    taken_at: float  # epoch seconds
    cluster_id: str | None
    controller_id: int | None
    brokers: tuple[BrokerInfo, ...]
    health: ClusterHealth
    partitions: tuple[PartitionHealth, ...]
    log: dict[tuple[str, int], tuple[int | None, int | None]]
    groups: list[GroupLag]
    listed: dict[str, dict[str, str | None]]  # what ListGroups said of each group (group_type, group_state)
    errors: dict[str, KctlError]  # group -> KctlError: groups that could not be read this time
    # Kafka Connect's connectors (kctl.admin.connect.connectors.ConnectorSummary), None
    # without a Connect cluster; why they could not be read this time.
    connectors: tuple[ConnectorSummary, ...] | None = None
    connect_error: str | None = None
    # Whether a Connect cluster is configured at all (the connectors view says how to).
    connect_configured: bool = False
    # (group, topic, partition) -> why a lagging partition's lag in seconds is unknown.
    time_lag_notes: dict[tuple[str, str, int], str | None] = field(default_factory=dict)


def take(session: AdminSession, *, isolation: str = "read_uncommitted", clock: Callable[[], float] = time.time,
         connect: ConnectClient | None = None, time_lag: TimeLagEstimator | None = None) -> ClusterSample:
    """One sample; `time_lag` (a kctl.admin.groups.lag_time.TimeLagEstimator kept by the
    sampler between samples) fills the lag in seconds."""
    from kctl.admin.cluster.brokers import describe_cluster
    from kctl.admin.cluster.health import evaluate
    from kctl.admin.cluster.partitions import snapshot
    from kctl.admin.groups.lag import cluster_lag, record_timestamps

    info = describe_cluster(session)
    partitions = snapshot(session, include_internal=True)
    (groups, errors), log, listed = cluster_lag(
        session, [(p.topic, p.partition) for p in partitions.partitions], isolation=isolation,
        leaders={(p.topic, p.partition): p.leader for p in partitions.partitions if p.leader is not None})
    taken_at = clock()
    notes: dict[tuple[str, str, int], str | None] = {}
    if time_lag is not None:
        now_ms = int(taken_at * 1000)
        timeout = min(session.timeout, RECORD_TIME_TIMEOUT)
        groups = time_lag.add(groups, now_ms, lambda wanted: record_timestamps(session, wanted, timeout=timeout),
                              {key: end for key, (_start, end) in log.items()})
        notes = {(g.group, p.topic, p.partition): time_lag.time_lag(p, now_ms).reason
                 for g in groups for p in g.partitions if p.lag and p.lag_seconds is None}
    health = evaluate(partitions, cluster_id=info.cluster_id, controller_id=info.controller_id)
    connectors, connect_error = _connectors(connect)
    return ClusterSample(taken_at, info.cluster_id, info.controller_id, info.brokers, health, partitions.partitions, log,
                         groups, listed, errors, connectors, connect_error, connect is not None, notes)


def _connectors(connect: ConnectClient | None) -> tuple[tuple[ConnectorSummary, ...] | None, str | None]:
    """The Connect cluster's connectors; a Connect cluster that cannot be read is shown as
    such, not an error of the whole sample (the Kafka cluster may be fine)."""
    if connect is None:
        return None, None
    from kctl.admin.connect.connectors import list_connectors
    from kctl.errors import KctlError

    try:
        return tuple(list_connectors(connect)), None
    except KctlError as exc:
        return None, exc.message


@dataclass(frozen=True, slots=True)
class GroupRow:
    group: str
    type: str
    state: str
    members: int
    lag: int | None
    lag_seconds: float | None
    trend: str
    direction: str
    # "topic:partition" of the stuck partitions.
    stuck: tuple[str, ...]
    error: str | None = None


@dataclass(frozen=True, slots=True)
class GroupPartitionRow:
    topic: str
    partition: int
    owner: str | None
    committed: int | None
    log_end: int | None
    lag: int | None
    lag_seconds: float | None
    trend: str
    stuck: bool
    # Why lag_seconds is unknown for a lagging partition.
    lag_seconds_note: str | None = None


@dataclass(frozen=True, slots=True)
class TopicRow:
    topic: str
    partitions: int
    rate: float | None  # records/s produced, from log end deltas
    trend: str
    under_replicated: int
    groups: int
    worst_lag: int | None
    worst_group: str | None


@dataclass(frozen=True, slots=True)
class BrokerRow:
    broker: int
    host: str
    rack: str | None
    controller: bool
    alive: bool
    leaders: int
    replicas: int
    # Replicas on this broker that are not in their partition's ISR.
    out_of_isr: int


@dataclass(frozen=True, slots=True)
class PartitionRow:
    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    min_isr: int | None
    # offline, under-min-isr, under-replicated, at-min-isr or ok (the worst that applies)
    status: str
    log_start: int | None
    log_end: int | None
    rate: float | None
    under_replicated: bool
    under_min_isr: bool
    at_min_isr: bool
    offline: bool


@dataclass(frozen=True, slots=True)
class ConnectorRow:
    connector: str
    type: str
    state: str
    # running/total, as `connect list` shows them
    tasks: str
    failed: int
    worker: str | None
    class_name: str


@dataclass(frozen=True)
class Frame:
    """What one sample shows, every view's rows."""

    taken_at: float
    cluster_id: str | None
    controller_id: int | None
    health: str
    reasons: tuple[str, ...]
    overview: tuple[tuple[str, str, bool], ...]  # (label, value, needs attention)
    groups: tuple[GroupRow, ...]
    topics: tuple[TopicRow, ...]
    brokers: tuple[BrokerRow, ...]
    partitions: tuple[PartitionRow, ...]
    connectors: tuple[ConnectorRow, ...]
    # What the connectors view says when it has no rows: how to configure a Connect
    # cluster, why it could not be read, or that it has no connectors.
    connectors_note: str | None
    errors: tuple[str, ...]
    _sample: ClusterSample = field(repr=False)
    _window: Window = field(repr=False)

    def group_partitions(self, group: str) -> tuple[GroupPartitionRow, ...] | None:
        """A group's partitions (drill-down), None when the group is not in this sample."""
        return self._window.group_partitions(self._sample, group)


NO_CONNECT = ("no Kafka Connect cluster configured: kctl context set NAME --connect-url URL, "
              "or KCTL_CONNECT_URL, or kctl top --connect NAME|URL")


def _connectors_note(sample: ClusterSample) -> str | None:
    if not sample.connect_configured:
        return NO_CONNECT
    if sample.connect_error is not None:
        return f"the Connect cluster could not be read: {sample.connect_error}"
    return None if sample.connectors else "the Connect cluster has no connectors"


def _status(p: PartitionHealth) -> str:
    for flag in ("offline", "under_min_isr", "under_replicated"):
        if getattr(p, flag):
            return flag.replace("_", "-")
    return "at-min-isr" if p.at_min_isr and len(p.replicas) > 1 else "ok"


def _internal(topic: str) -> bool:
    # Kafka's own topics (__consumer_offsets, __transaction_state, __share_group_state):
    # their writes are commits and markers, not what producers send.
    return topic.startswith("__")


class Window:
    """The trends of the last `seconds`, updated by add() on the sampler's thread."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.bucket_seconds = seconds / BUCKETS
        self.group_trends: dict[str, Trend] = {}
        self.partition_trends: dict[tuple[str, str, int], Trend] = {}
        self.topic_trends: dict[str, Trend] = {}
        self.recent: dict[str, deque[int]] = {}
        # (group, topic, partition) -> [committed, samples it stood still with lag]
        self.streaks: dict[tuple[str, str, int], list[int]] = {}
        self.previous: ClusterSample | None = None
        self.bucket_now = 0

    def add(self, sample: ClusterSample) -> Frame:
        bucket = self.bucket_now = int(sample.taken_at // self.bucket_seconds)
        group_rows = []
        reading: dict[str, dict[str, int]] = {}  # topic -> group -> lag on it
        live_partitions = set()
        for g in sample.groups:
            stuck = []
            worst_seconds: float | None = None
            seconds_unknown = False
            known = False
            for p in g.partitions:
                key = (g.group, p.topic, p.partition)
                live_partitions.add(key)
                streak = self.streaks.get(key)
                if p.lag and p.committed is not None:
                    if streak is not None and streak[0] == p.committed:
                        streak[1] += 1
                    else:
                        streak = self.streaks[key] = [p.committed, 1]
                    if streak[1] >= STUCK_SAMPLES:
                        stuck.append(f"{p.topic}:{p.partition}")
                elif streak is not None:
                    del self.streaks[key]
                seconds = p.lag_seconds
                if seconds is None and p.lag == 0:
                    seconds = 0.0
                if seconds is None and p.lag:
                    seconds_unknown = True  # the group's worst is not known either
                elif seconds is not None and (worst_seconds is None or seconds > worst_seconds):
                    worst_seconds = seconds
                trend = self.partition_trends.get(key)
                if trend is None:
                    trend = self.partition_trends[key] = Trend()
                trend.add(bucket, p.lag)
                if p.lag is not None:
                    known = True
                    on_topic = reading.setdefault(p.topic, {})
                    on_topic[g.group] = on_topic.get(g.group, 0) + p.lag
            lag = g.lag_sum if known else None
            trend = self.group_trends.get(g.group)
            if trend is None:
                trend = self.group_trends[g.group] = Trend()
            trend.add(bucket, lag)
            recent = self.recent.get(g.group)
            if recent is None:
                recent = self.recent[g.group] = deque(maxlen=RECENT)
            if lag is not None:
                recent.append(lag)
            listed = sample.listed.get(g.group, {})
            own = kctl_group(g.group)
            if own is not None:
                # kctl's bookkeeping (a redrive holding records back, a clone's progress): its
                # offsets stand still by design, so it is neither stalled nor stuck.
                shown, stuck = f"kctl's ({own})", []
            else:
                shown = direction(recent) if lag is not None else "no commits"
            group_rows.append(GroupRow(
                group=g.group, type=listed_type(listed), state=g.state, members=g.members, lag=lag,
                lag_seconds=None if seconds_unknown else worst_seconds, trend=sparkline(trend.points(bucket)),
                direction=shown, stuck=tuple(stuck)))
        for group, error in sample.errors.items():
            group_rows.append(GroupRow(group=group, type=listed_type(sample.listed.get(group, {})), state="?", members=0,
                                       lag=None, lag_seconds=None, trend="", direction="unreadable", stuck=(),
                                       error=getattr(error, "message", str(error))))
        self._forget(live_partitions, {g.group for g in sample.groups})

        partition_rows, topic_rows = self._topics(sample, reading, bucket)
        brokers = self._brokers(sample)
        overview = self._overview(sample, group_rows, topic_rows)
        self.previous = sample
        return Frame(
            taken_at=sample.taken_at, cluster_id=sample.cluster_id, controller_id=sample.controller_id,
            health=sample.health.status, reasons=sample.health.reasons, overview=overview, groups=tuple(group_rows),
            topics=tuple(topic_rows), brokers=brokers, partitions=tuple(partition_rows),
            connectors=tuple(ConnectorRow(connector=c.name, type=c.type, state=c.state, tasks=f"{c.tasks_running}/{c.tasks}",
                                          failed=c.tasks_failed, worker=c.worker_id, class_name=c.class_name.rsplit(".", 1)[-1])
                             for c in sample.connectors or ()),
            connectors_note=_connectors_note(sample),
            errors=tuple(getattr(e, "message", str(e)) for e in sample.errors.values()), _sample=sample, _window=self)

    def _forget(self, live_partitions: set[tuple[str, str, int]], live_groups: set[str]) -> None:
        """Drop the trends of groups and partitions that are gone (a deleted group, a
        partition no longer committed), so a long session does not grow."""
        if len(self.partition_trends) > len(live_partitions):
            self.partition_trends = {k: v for k, v in self.partition_trends.items() if k in live_partitions}
            self.streaks = {k: v for k, v in self.streaks.items() if k in live_partitions}
        if len(self.group_trends) > len(live_groups):
            self.group_trends = {k: v for k, v in self.group_trends.items() if k in live_groups}
            self.recent = {k: v for k, v in self.recent.items() if k in live_groups}

    def _topics(self, sample: ClusterSample, reading: dict[str, dict[str, int]], bucket: int) -> tuple[list[PartitionRow], list[TopicRow]]:
        previous = self.previous
        elapsed = sample.taken_at - previous.taken_at if previous is not None else 0.0
        before = previous.log if previous is not None and elapsed > 0 else {}
        partition_rows = []
        by_topic: dict[str, list[tuple[float | None, bool]]] = {}
        for p in sample.partitions:
            key = (p.topic, p.partition)
            start, end = sample.log.get(key, (None, None))
            old = before.get(key)
            rate = None
            if old is not None and old[1] is not None and end is not None and end >= old[1]:
                rate = (end - old[1]) / elapsed
            partition_rows.append(PartitionRow(
                topic=p.topic, partition=p.partition, leader=p.leader, replicas=tuple(p.replicas), isr=tuple(p.isr),
                min_isr=p.min_isr, status=_status(p), log_start=start, log_end=end, rate=rate,
                under_replicated=p.under_replicated, under_min_isr=p.under_min_isr,
                at_min_isr=p.at_min_isr and len(p.replicas) > 1, offline=p.offline))
            by_topic.setdefault(p.topic, []).append((rate, p.under_replicated))
        topic_rows = []
        for topic, parts in by_topic.items():
            rates = [r for r, _ in parts if r is not None]
            rate = sum(rates) if rates else None
            trend = self.topic_trends.get(topic)
            if trend is None:
                trend = self.topic_trends[topic] = Trend()
            trend.add(bucket, None if rate is None else round(rate))
            groups = reading.get(topic, {})
            worst = max(groups.items(), key=lambda item: item[1], default=(None, None))
            topic_rows.append(TopicRow(
                topic=topic, partitions=len(parts), rate=rate, trend=sparkline(trend.points(bucket)),
                under_replicated=sum(u for _, u in parts), groups=len(groups), worst_lag=worst[1], worst_group=worst[0]))
        if len(self.topic_trends) > len(by_topic):
            self.topic_trends = {k: v for k, v in self.topic_trends.items() if k in by_topic}
        return partition_rows, topic_rows

    def _brokers(self, sample: ClusterSample) -> tuple[BrokerRow, ...]:
        leaders: dict[int, int] = {}
        replicas: dict[int, int] = {}
        out: dict[int, int] = {}
        for p in sample.partitions:
            if p.leader is not None:
                leaders[p.leader] = leaders.get(p.leader, 0) + 1
            isr = set(p.isr)
            for r in p.replicas:
                replicas[r] = replicas.get(r, 0) + 1
                if r not in isr:
                    out[r] = out.get(r, 0) + 1
        rows = [BrokerRow(broker=b.id, host=f"{b.host}:{b.port}", rack=b.rack, controller=b.id == sample.controller_id,
                          alive=True, leaders=leaders.get(b.id, 0), replicas=replicas.get(b.id, 0), out_of_isr=out.get(b.id, 0))
                for b in sample.brokers]
        rows += [BrokerRow(broker=b, host="", rack=None, controller=False, alive=False, leaders=leaders.get(b, 0),
                           replicas=replicas.get(b, 0), out_of_isr=out.get(b, 0))
                 for b in sample.health.offline_brokers]
        return tuple(sorted(rows, key=lambda r: r.broker))

    def _overview(self, sample: ClusterSample, groups: list[GroupRow], topics: list[TopicRow]) -> tuple[tuple[str, str, bool], ...]:
        h = sample.health
        by_type: dict[str, int] = {}
        for g in groups:
            by_type[g.type] = by_type.get(g.type, 0) + 1
        rate = sum(t.rate for t in topics if t.rate is not None and not _internal(t.topic))
        stalled = sum(g.direction == "stalled" or bool(g.stuck) for g in groups)
        behind = sum(g.direction == "falling behind" for g in groups)
        return (
            ("cluster", sample.cluster_id or "?", False),
            ("controller", "?" if sample.controller_id is None else str(sample.controller_id), sample.controller_id is None),
            ("brokers up", f"{len(sample.brokers)}" + (f" ({len(h.offline_brokers)} down)" if h.offline_brokers else ""),
             bool(h.offline_brokers)),
            ("topics", str(len(topics)), False),
            ("partitions", str(h.partitions), False),
            ("offline", str(len(h.offline_partitions)), bool(h.offline_partitions)),
            ("under-replicated", str(len(h.under_replicated_partitions)), bool(h.under_replicated_partitions)),
            ("under min ISR", str(len(h.under_min_isr_partitions)), bool(h.under_min_isr_partitions)),
            ("groups", str(len(groups)) + (" (" + ", ".join(f"{n} {t}" for t, n in sorted(by_type.items())) + ")" if groups else ""),
             False),
            ("groups stalled", str(stalled), bool(stalled)),
            ("groups falling behind", str(behind), bool(behind)),
            ("produce rate", "-" if self.previous is None else f"{rate:,.1f} records/s", False),
            *self._connect_overview(sample),
        )

    @staticmethod
    def _connect_overview(sample: ClusterSample) -> tuple[tuple[str, str, bool], ...]:
        if sample.connect_error is not None:
            return (("connectors", f"unreadable: {sample.connect_error}", True),)
        if sample.connectors is None:
            return ()
        failed = sum(c.state == "FAILED" for c in sample.connectors)
        tasks = sum(c.tasks_failed for c in sample.connectors)
        return (("connectors", f"{len(sample.connectors)}" + (f" ({failed} failed)" if failed else ""), bool(failed)),
                ("connector tasks failed", str(tasks), bool(tasks)))

    def group_partitions(self, sample: ClusterSample, group: str) -> tuple[GroupPartitionRow, ...] | None:
        found = next((g for g in sample.groups if g.group == group), None)
        if found is None:
            return None
        rows = []
        for p in found.partitions:
            key = (group, p.topic, p.partition)
            trend = self.partition_trends.get(key)
            streak = self.streaks.get(key)
            seconds = 0.0 if p.lag == 0 else p.lag_seconds
            rows.append(GroupPartitionRow(
                topic=p.topic, partition=p.partition, owner=p.client_id or p.member_id, committed=p.committed,
                log_end=p.log_end, lag=p.lag, lag_seconds=seconds,
                trend=sparkline(trend.points(self.bucket_now)) if trend else "",
                stuck=bool(streak and streak[1] >= STUCK_SAMPLES) and kctl_group(group) is None,
                lag_seconds_note=sample.time_lag_notes.get(key)))
        return tuple(rows)

