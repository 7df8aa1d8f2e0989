"""MM2's replication between a pair, judged from both clusters, in the Nagios convention of
`cluster health`:

  CRITICAL  no heartbeat from the pair's flow on the target newer than --max-heartbeat-age
            (MM2 is down, or not replicating into the target)
  WARNING   a replicated partition behind by more than --max-lag records or
            --max-lag-seconds; a group behind its newest checkpoint whose checkpoint is
            older than --max-checkpoint-age (MM2 re-emits a checkpoint only when it
            changes, so a quiet group's old checkpoint is current); a group on the source
            with offsets on replicated topics and no checkpoint at all; a group named
            with --group without checkpoints, or not checkpointed at every offset it
            committed on a replicated topic
  OK        none of the above
  UNKNOWN   the state could not be read (exit 3)

Replication lag of a partition, from the newest offset sync (u upstream, d downstream):
the source has replicated up to u + (target end - d), MM2 copying records one for one
after a sync; lag = source end - that. Without a sync, the count of records on each side
is compared. The time lag is how old the newest record on the target is, when lag > 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kctl.admin.groups.groups import committed_offsets
from kctl.admin.groups.lag import log_offsets, record_timestamps
from kctl.admin.mirror.pair import MirrorPair, newest_checkpoints, newest_heartbeats, newest_offset_syncs
from kctl.admin.mirror.policy import HEARTBEATS
from kctl.admin.mirror.translate import now_ms, source_groups

OK, WARNING, CRITICAL, UNKNOWN = "OK", "WARNING", "CRITICAL", "UNKNOWN"
# MM2's default groups.exclude: groups it never checkpoints.
EXCLUDED_GROUPS = re.compile(r"console-consumer-.*|connect-.*|__.*")


@dataclass(frozen=True, kw_only=True)
class Thresholds:
    max_heartbeat_age: float = 60.0
    max_lag: int | None = None
    max_lag_seconds: float = 300.0
    max_checkpoint_age: float = 300.0
    # Groups MM2 is told not to checkpoint (its groups.exclude), beside its defaults.
    exclude_groups: re.Pattern[str] | None = None
    # Groups that must be checkpointed at every offset they committed on the source (a
    # planned failover waits for it).
    groups: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PartitionReplication:
    topic: str
    remote_topic: str
    partition: int
    source_end: int | None
    target_end: int | None
    lag: int | None
    lag_seconds: float | None
    sync_upstream: int | None
    sync_downstream: int | None


@dataclass(frozen=True, kw_only=True)
class GroupCheckpoints:
    group: str
    # current | behind | stale | none
    state: str
    partitions: int
    # Partitions whose committed offset on the source is past the newest checkpoint.
    behind: int
    newest_checkpoint: int | None
    checkpoint_age_seconds: float | None


@dataclass(frozen=True, kw_only=True)
class MirrorStatus:
    status: str
    reasons: tuple[str, ...]
    source_alias: str
    target_alias: str | None
    policy: str
    checkpoints_topic: str
    # Age of the newest heartbeat the pair's flow wrote to the target's `heartbeats`.
    heartbeat_age_seconds: float | None
    # Age of the newest heartbeat replicated from the source (`<alias>.heartbeats`): the
    # data path end to end, when the source has heartbeats of its own.
    replicated_heartbeat_age_seconds: float | None
    topics: int
    lag: int
    partitions: tuple[PartitionReplication, ...]
    groups: tuple[GroupCheckpoints, ...]
    skipped_records: int

    @property
    def healthy(self) -> bool:
        return self.status == OK


def replicated_topics(pair: MirrorPair, syncs: dict) -> dict[str, str]:
    """{source topic: its name on the target} for every topic MM2 replicates in this pair."""
    policy = pair.policy
    found: dict[str, str] = {}
    for topic in pair.target_topics:
        if policy.kind == "default" and policy.topic_source(topic) == pair.source_alias and not policy.is_internal(policy.upstream_topic(topic) or topic):
            upstream = policy.upstream_topic(topic)
            if upstream is not None and (pair.source_topics is None or upstream in pair.source_topics):
                found[upstream] = topic
    for topic, _partition in syncs:
        remote = pair.remote_topic(topic)
        if remote in pair.target_topics and not policy.is_internal(topic):
            found[topic] = remote
    return found


def status(pair: MirrorPair, thresholds: Thresholds = Thresholds()) -> MirrorStatus:
    assert pair.source is not None, "status reads both clusters"
    now = now_ms()
    syncs = newest_offset_syncs(pair)
    topics = replicated_topics(pair, syncs)
    partitions = _partitions(pair, topics, syncs, now)
    checkpoints, skipped = newest_checkpoints(pair)
    groups = _groups(pair, topics, checkpoints, now, thresholds)
    heartbeat_age = replicated_age = None
    if HEARTBEATS in pair.target_topics:
        beats = newest_heartbeats(pair.target, HEARTBEATS)
        newest = max((h.timestamp for (s, _t), h in beats.items() if s == pair.source_alias), default=None)
        # The clock read after the heartbeats: one written while they were read is not from the future.
        heartbeat_age = None if newest is None else max(0.0, (now_ms() - newest) / 1000)
    remote_beats = pair.policy.format_remote_topic(pair.source_alias, HEARTBEATS)
    if remote_beats in pair.target_topics:
        beats = newest_heartbeats(pair.target, remote_beats)
        newest = max((h.timestamp for h in beats.values()), default=None)
        replicated_age = None if newest is None else max(0.0, (now_ms() - newest) / 1000)

    reasons: list[tuple[str, str]] = []
    if heartbeat_age is None:
        reasons.append((CRITICAL, f"no heartbeat from {pair.source_alias} on the target: MM2's heartbeat connector is not writing to it"))
    elif heartbeat_age > thresholds.max_heartbeat_age:
        reasons.append((CRITICAL, f"the newest heartbeat from {pair.source_alias} is {heartbeat_age:.0f} s old "
                                  f"(over {thresholds.max_heartbeat_age:g} s): MM2 may be down"))
    lagging = [p for p in partitions if p.lag and ((thresholds.max_lag is not None and p.lag > thresholds.max_lag)
                                                   or (p.lag_seconds or 0) > thresholds.max_lag_seconds)]
    if lagging:
        worst = max(lagging, key=lambda p: p.lag or 0)
        reasons.append((WARNING, f"{len(lagging)} partition(s) behind the source, most {worst.topic}-{worst.partition} "
                                 f"({worst.lag} records, {worst.lag_seconds or 0:.0f} s)"))
    stale = [g.group for g in groups if g.state == "stale"]
    if stale:
        reasons.append((WARNING, f"{len(stale)} group(s) with stale checkpoints: {', '.join(stale[:5])}"))
    missing = [g.group for g in groups if g.state == "none" and g.group not in thresholds.groups]
    if missing:
        reasons.append((WARNING, f"{len(missing)} group(s) with offsets on replicated topics and no checkpoint: {', '.join(missing[:5])}"))
    waiting = [g.group for g in groups if g.group in thresholds.groups and g.state != "current"]
    if waiting:
        reasons.append((WARNING, f"{len(waiting)} group(s) not yet checkpointed at their committed offsets: {', '.join(waiting[:5])}"))
    order = (OK, WARNING, CRITICAL)
    verdict = max((level for level, _ in reasons), key=order.index, default=OK)
    return MirrorStatus(
        status=verdict, reasons=tuple(text for _l, text in sorted(reasons, key=lambda r: -order.index(r[0]))),
        source_alias=pair.source_alias, target_alias=pair.target_alias, policy=pair.policy.kind,
        checkpoints_topic=pair.checkpoints_topic, heartbeat_age_seconds=heartbeat_age,
        replicated_heartbeat_age_seconds=replicated_age, topics=len(topics), lag=sum(p.lag or 0 for p in partitions),
        partitions=tuple(partitions), groups=tuple(groups), skipped_records=skipped,
    )


def _partitions(pair: MirrorPair, topics: dict[str, str], syncs: dict, now: int) -> list[PartitionReplication]:
    assert pair.source is not None
    source_meta = pair.source.metadata("describe the source's topics", list(topics)).topics
    pairs = sorted((t, p) for t in topics if t in source_meta for p in source_meta[t].partitions)
    source_log = log_offsets(pair.source, pairs, "read_uncommitted")
    remote_pairs = [(topics[t], p) for t, p in pairs]
    target_log = log_offsets(pair.target, remote_pairs, "read_uncommitted")
    rows = []
    for (topic, p), (remote, _) in zip(pairs, remote_pairs):
        s_start, s_end = source_log[(topic, p)]
        t_start, t_end = target_log.get((remote, p), (None, None))
        sync = syncs.get((topic, p))
        lag = None
        if s_end is not None and t_end is not None:
            if sync is not None:
                replicated = sync.record.upstream_offset + (t_end - sync.record.downstream_offset)
                lag = max(0, s_end - replicated)
            elif s_start is not None and t_start is not None:
                lag = max(0, (s_end - s_start) - (t_end - t_start))
        rows.append(PartitionReplication(
            topic=topic, remote_topic=remote, partition=p, source_end=s_end, target_end=t_end, lag=lag, lag_seconds=None,
            sync_upstream=sync.record.upstream_offset if sync else None, sync_downstream=sync.record.downstream_offset if sync else None))
    behind = [(r.remote_topic, r.partition, r.target_end - 1) for r in rows if r.lag and r.target_end]
    stamps = record_timestamps(pair.target, behind, timeout=pair.target.timeout) if behind else {}
    out = []
    for r in rows:
        seconds = 0.0 if r.lag == 0 else None
        if r.lag and r.target_end:
            at = stamps.get((r.remote_topic, r.partition, r.target_end - 1))
            seconds = None if at is None else max(0.0, (now - at) / 1000)
        out.append(PartitionReplication(**{**r.__dict__, "lag_seconds": seconds}))
    return out


def _groups(pair: MirrorPair, topics: dict[str, str], checkpoints: dict, now: int, thresholds: Thresholds) -> list[GroupCheckpoints]:
    assert pair.source is not None
    excluded = thresholds.exclude_groups
    names = [g for g in source_groups(pair.source)
             if not EXCLUDED_GROUPS.fullmatch(g) and not (excluded is not None and excluded.fullmatch(g))]
    committed, _unread = committed_offsets(pair.source, names)
    by_group: dict[str, dict] = {}
    for (group, topic, partition), stamped in checkpoints.items():
        by_group.setdefault(group, {})[(topic, partition)] = stamped
    out = []
    required = set(thresholds.groups)
    if required - set(names):
        committed.update(committed_offsets(pair.source, sorted(required - set(names))).results)
    for group in sorted(set(names) | required | {g for g in by_group if not (excluded is not None and excluded.fullmatch(g))}):
        offsets = committed.get(group, {})
        relevant = {(topics[t], p): o for (t, p), (o, _md) in offsets.items() if t in topics}
        mine = by_group.get(group, {})
        if not mine:
            if relevant or group in required:
                out.append(GroupCheckpoints(group=group, state="none", partitions=0, behind=0, newest_checkpoint=None,
                                            checkpoint_age_seconds=None))
            continue
        behind = sum(1 for key, o in relevant.items() if key in mine and o > mine[key].record.upstream_offset)
        if group in required:  # a replicated partition not checkpointed yet is behind too
            behind += sum(1 for key in relevant if key not in mine)
        newest = max(s.timestamp for s in mine.values())
        age = max(0.0, (now - newest) / 1000)
        state = "current" if not behind else ("stale" if age > thresholds.max_checkpoint_age else "behind")
        out.append(GroupCheckpoints(group=group, state=state, partitions=len(mine), behind=behind, newest_checkpoint=newest,
                                    checkpoint_age_seconds=age))
    return out
