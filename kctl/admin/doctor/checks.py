"""The detections of `kctl doctor`: each a function of facts already read from the
cluster, returning findings (kctl.admin.doctor.findings). None asks the cluster: they are
tested on facts made by hand as well as through the command on real clusters."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence

from kctl.admin.cluster.features import Quorum
from kctl.admin.cluster.logdirs import LogDir
from kctl.admin.cluster.partitions import PartitionHealth, PartitionSnapshot
from kctl.admin.cluster.transactions import OpenTransaction
from kctl.admin.doctor.findings import CRITICAL, HIGH, INFO, WARNING, Finding
from kctl.admin.groups.models import GroupLag
from kctl.values import Value

# A group whose next record is this share of its topic's retention.ms old is warned of
# (WARNING), and at this share (HIGH): the broker deletes the record, unread, once it is
# as old as retention.ms.
RETENTION_WARNING, RETENTION_HIGH = 0.5, 0.8
# Partitions named in one finding's evidence at most (the count is always whole).
SHOWN = 10
# A log directory's disk with less than this share free is warned of (WARNING), and
# less than this (HIGH): a full disk takes the directory offline.
DISK_WARNING, DISK_HIGH = 0.15, 0.05
# A controller voter not caught up with the leader for this long is behind.
VOTER_BEHIND_MS = 30_000


class TopicFacts(Value):
    """What the durability checks need of a topic: its replication factor and configs."""

    __slots__ = ("topic", "replication_factor", "min_isr", "unclean_leader_election", "retention_ms")

    def __init__(self, *, topic: str, replication_factor: int, min_isr: int | None, unclean_leader_election: bool,
                 retention_ms: int | None):
        self.topic = topic
        self.replication_factor = replication_factor
        self.min_isr = min_isr
        self.unclean_leader_election = unclean_leader_election
        # None: kept forever (retention.ms -1) or not known.
        self.retention_ms = retention_ms


def _command(*words: str) -> str:
    return " ".join(shlex.quote(w) for w in ("kctl", *words))


def _partition_list(topic: str, flag: str) -> str:
    return _command("partition", "list", topic, *(("-i",) if topic.startswith("__") else ()), flag)


def _names(numbers: Iterable[int]) -> str:
    shown = sorted(numbers)
    text = ",".join(str(n) for n in shown[:SHOWN])
    return text + (f",... ({len(shown)} in all)" if len(shown) > SHOWN else "")


# (PartitionHealth flag, severity, check, what each partition is, why it matters, partition list flag)
_PARTITION_CONDITIONS = (
    ("offline", CRITICAL, "offline-partitions", "without a leader",
     "no producer or consumer can use them until a replica leads again", "--offline"),
    ("elr_unrecoverable", CRITICAL, "elr-unrecoverable", "with an empty ISR and no eligible leader replica",
     "only an unclean election brings them back, losing what the old leader alone had", "--elr-unrecoverable"),
    ("under_min_isr", CRITICAL, "under-min-isr", "with fewer in-sync replicas than min.insync.replicas",
     "acks=all producers are refused: writes fail now", "--under-min-isr"),
    ("under_replicated", WARNING, "under-replicated", "with replicas out of sync",
     "a failure of the in-sync replicas left loses availability, or records", "--under-replicated"),
    ("at_min_isr", WARNING, "at-min-isr", "with exactly min.insync.replicas in sync",
     "one more replica down and acks=all writes fail", "--at-min-isr"),
)


def partitions(snapshot: PartitionSnapshot) -> list[Finding]:
    """Partitions offline, unrecoverable without an unclean election, under or at
    min.insync.replicas, or under-replicated: one finding per condition and topic."""
    by_topic: dict[tuple[str, str], list[PartitionHealth]] = {}
    for p in snapshot.partitions:
        for condition in _PARTITION_CONDITIONS:
            if getattr(p, condition[0]) and not _said_already(p, condition[0]):
                by_topic.setdefault((condition[0], p.topic), []).append(p)
    found = []
    for flag, severity, check, what, why, option in _PARTITION_CONDITIONS:
        for (kind, topic), rows in sorted(by_topic.items()):
            if kind != flag:
                continue
            found.append(Finding(
                severity=severity, check=check, resource=f"topic {topic}",
                summary=f"{len(rows)} partition(s) of {topic} {what}",
                evidence={"partitions": _names(p.partition for p in rows), "count": len(rows),
                          "isr": {str(p.partition): list(p.isr) for p in rows[:SHOWN]},
                          "replicas": {str(p.partition): list(p.replicas) for p in rows[:SHOWN]}},
                why=why, next=_partition_list(topic, option)))
    return found


def _said_already(p: PartitionHealth, condition: str) -> bool:
    """Whether a worse condition of the partition says what this one would (an offline
    partition is under-replicated too), or it says nothing (one replica is always at a
    min.insync.replicas of 1: `cluster health` does not count it either)."""
    if condition == "under_replicated":
        return p.offline or p.under_min_isr
    if condition == "at_min_isr":
        return len(p.replicas) < 2
    return False


def offline_brokers(snapshot: PartitionSnapshot) -> list[Finding]:
    """Brokers that hold replicas but are not alive: one finding per broker."""
    held: dict[int, list[str]] = {}
    for p in snapshot.partitions:
        for broker in p.offline_replicas:
            held.setdefault(broker, []).append(f"{p.topic}:{p.partition}")
    return [Finding(
        severity=HIGH, check="broker-down", resource=f"broker {broker}",
        summary=f"broker {broker} is not alive and holds {len(replicas)} replica(s)",
        evidence={"replicas": len(replicas), "partitions": ", ".join(sorted(replicas)[:SHOWN])},
        why="its partitions run with one replica fewer until it returns or they are moved",
        next=_command("broker", "list")) for broker, replicas in sorted(held.items())]


def preferred_leaders(snapshot: PartitionSnapshot) -> list[Finding]:
    """Partitions led by a replica other than their preferred (first) one, where the
    preferred one is in sync: one finding for the cluster."""
    off = [p for p in snapshot.partitions
           if p.leader is not None and p.replicas and p.leader != p.replicas[0] and p.replicas[0] in p.isr]
    if not off:
        return []
    leaders: dict[int, int] = {}
    for p in off:
        if p.leader is not None:  # filtered above; said again for the type checker
            leaders[p.leader] = leaders.get(p.leader, 0) + 1
    return [Finding(
        severity=WARNING, check="leader-not-preferred", resource="cluster",
        summary=f"{len(off)} partition(s) led by a replica other than their preferred one",
        evidence={"partitions": len(off), "by_leader": {str(b): n for b, n in sorted(leaders.items())},
                  "examples": ", ".join(f"{p.topic}:{p.partition}" for p in off[:SHOWN])},
        why="leadership piles up on some brokers: their load and the others' idle capacity",
        next=_command("replication", "elect-leaders", "--preferred", "--all"))]


def durability(topics: Sequence[TopicFacts], brokers: int) -> list[Finding]:
    """Topic settings that lose records or refuse writes when a broker fails: unclean
    leader election enabled, min.insync.replicas not below the replication factor,
    one replica on a cluster of several brokers (one finding for all such topics; on a
    single broker, one info finding)."""
    found = []
    single = []
    for t in sorted(topics, key=lambda t: t.topic):
        if t.unclean_leader_election:
            found.append(Finding(
                severity=HIGH, check="unclean-leader-election", resource=f"topic {t.topic}",
                summary=f"{t.topic} allows unclean leader election",
                evidence={"unclean.leader.election.enable": "true"},
                why="an out-of-sync replica may become leader and acknowledged records are lost",
                next=_command("config", "alter", "topic", t.topic, "--delete", "unclean.leader.election.enable")))
        if t.min_isr is not None and t.replication_factor > 1 and t.min_isr >= t.replication_factor:
            found.append(Finding(
                severity=HIGH, check="min-isr-not-below-rf", resource=f"topic {t.topic}",
                summary=f"{t.topic}: min.insync.replicas {t.min_isr} with replication factor {t.replication_factor}",
                evidence={"min.insync.replicas": t.min_isr, "replication_factor": t.replication_factor},
                why="any one replica down and acks=all producers are refused",
                next=_command("config", "alter", "topic", t.topic, "--set", f"min.insync.replicas={t.replication_factor - 1}")))
        if t.replication_factor == 1 and not t.topic.startswith("__"):
            single.append(t.topic)
    if single and brokers > 1:
        found.append(Finding(
            severity=WARNING, check="single-replica", resource="cluster",
            summary=f"{len(single)} topic(s) with one replica on a cluster of {brokers} brokers",
            evidence={"topics": len(single), "examples": ", ".join(single[:SHOWN])},
            why="a broker lost loses these topics' records; a broker restarted stops them meanwhile",
            next=_command("replication", "reassign", "generate", *(w for t in single[:SHOWN] for w in ("-t", t)),
                          "--rf", str(min(3, brokers)), "-o", "table")))
    elif single:
        found.append(Finding(
            severity=INFO, check="single-replica", resource="cluster",
            summary=f"one broker: {len(single)} topic(s) have one replica, as they must",
            evidence={"topics": len(single), "brokers": brokers},
            why="no broker can fail without its topics going with it",
            next=_command("broker", "list")))
    return found


def unread_losses(groups: Sequence[GroupLag]) -> list[Finding]:
    """Committed offsets below the log start: records deleted before the group read them
    (how many, per group and topic)."""
    lost: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for g in groups:
        for p in g.partitions:
            if "BELOW_LOG_START" in p.flags and p.committed is not None and p.log_start is not None:
                lost.setdefault((g.group, p.topic), []).append((p.partition, p.log_start - p.committed))
    return [Finding(
        severity=CRITICAL, check="records-lost-unread", resource=f"group {group} on {topic}",
        summary=f"{sum(n for _p, n in rows):,} record(s) of {topic} were deleted before group {group} read them",
        evidence={"records": sum(n for _p, n in rows), "partitions": _names(p for p, _n in rows)},
        why="retention deleted them: the group's consumers will skip them (or reset, per auto.offset.reset)",
        next=_command("group", "lag", group, "-t", topic)) for (group, topic), rows in sorted(lost.items())]


def retention_ahead(groups: Sequence[GroupLag], retention_ms: Mapping[str, int | None]) -> list[Finding]:
    """Groups whose next record is old enough that retention will delete it before they
    read it, at the time they are behind now: time left per group and topic."""
    found = []
    for g in groups:
        worst: dict[str, tuple[float, int]] = {}
        for p in g.partitions:
            retention = retention_ms.get(p.topic)
            if p.lag_seconds is None or not p.lag or retention is None or retention <= 0 or "BELOW_LOG_START" in p.flags:
                continue
            if p.lag_seconds > worst.get(p.topic, (-1.0, 0))[0]:
                worst[p.topic] = (p.lag_seconds, p.partition)
        for topic, (age, partition) in sorted(worst.items()):
            retention = retention_ms[topic]
            assert retention is not None
            share = age * 1000 / retention
            if share < RETENTION_WARNING:
                continue
            left = max(0.0, retention / 1000 - age)
            found.append(Finding(
                severity=HIGH if share >= RETENTION_HIGH else WARNING, check="lag-nears-retention",
                resource=f"group {g.group} on {topic}",
                summary=f"group {g.group} is {_duration(age)} behind on {topic}: retention deletes its next record in {_duration(left)}",
                evidence={"lag_seconds": round(age, 1), "retention_ms": retention, "seconds_left": round(left, 1),
                          "partition": partition},
                why="records older than retention.ms are deleted whether the group has read them or not",
                next=_command("group", "lag", g.group, "-t", topic, "--time-lag", "record")))
    return found


def hanging_transactions(open_: Sequence[OpenTransaction]) -> list[Finding]:
    """Transactions open past the longest a transaction may last: they hold the last
    stable offset back, and read_committed consumers stop there."""
    return [Finding(
        severity=HIGH, check="hanging-transaction", resource=f"partition {t.topic}:{t.partition}",
        summary=f"producer {t.producer_id} has held a transaction open on {t.topic}:{t.partition} for {_duration(t.age_ms / 1000)}",
        evidence={"producer_id": t.producer_id, "start_offset": t.start_offset, "age_ms": t.age_ms,
                  "last_stable_offset": t.last_stable_offset, "log_end_offset": t.log_end_offset,
                  "transactional_id": t.transactional_id},
        why="read_committed consumers stop at its first record, and compaction does not pass it",
        next=_command("transaction", "abort", f"{t.topic}:{t.partition}", "--producer-id", str(t.producer_id),
                      "--start-offset", str(t.start_offset))) for t in open_]


def _duration(seconds: float) -> str:
    """A duration as people say it: 45s, 12m, 3.5h, 2.1d."""
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86_400:.1f}d"


def log_dirs(dirs: Sequence[LogDir]) -> list[Finding]:
    """Log directories offline (a disk failed: the replicas in it are offline), disks
    nearly full, where the broker reports its usable bytes (Kafka 3.3+, KIP-827), and log
    directories cordoned (Kafka 4.3+, KIP-1066)."""
    found = _cordoned(dirs)
    for d in dirs:
        where = f"broker {d.broker} log dir {d.log_dir}"
        if d.error is not None:
            found.append(Finding(
                severity=CRITICAL, check="log-dir-offline", resource=where, summary=f"{where} is offline ({d.error})",
                evidence={"error": d.error}, why="its replicas are offline: their partitions run without them or stop",
                next=_command("broker", "log-dirs", "--broker", str(d.broker))))
        elif d.total_bytes and d.usable_bytes is not None:
            free = d.usable_bytes / d.total_bytes
            if free < DISK_WARNING:
                found.append(Finding(
                    severity=HIGH if free < DISK_HIGH else WARNING, check="disk-nearly-full", resource=where,
                    summary=f"{where}: {free:.0%} of its disk free",
                    evidence={"usable_bytes": d.usable_bytes, "total_bytes": d.total_bytes, "size_bytes": d.size_bytes},
                    why="a full disk takes the log directory, and every replica in it, offline",
                    next=_command("broker", "log-dirs", "--broker", str(d.broker))))
    return found


def _cordoned(dirs: Sequence[LogDir]) -> list[Finding]:
    """A cordoned log dir takes no new replica; a broker whose every log dir is cordoned
    takes none at all, so a topic created or reassigned onto it fails. Cordoning is how a
    disk is emptied before it is removed, so one dir is info; a whole broker cordoned,
    often forgotten after the work, is a warning."""
    by_broker: dict[int, list[LogDir]] = {}
    for d in dirs:
        by_broker.setdefault(d.broker, []).append(d)
    found = []
    for broker, mine in sorted(by_broker.items()):
        cordoned = [d.log_dir for d in mine if d.cordoned]
        if not cordoned:
            continue
        whole = len(cordoned) == len(mine)
        where = f"broker {broker}" if whole else f"broker {broker} log dir {', '.join(cordoned)}"
        found.append(Finding(
            severity=WARNING if whole else INFO, check="log-dir-cordoned", resource=where,
            summary=f"broker {broker}: every log dir cordoned" if whole else f"{where} is cordoned",
            evidence={"cordoned": cordoned, "log_dirs": len(mine)},
            why=("the broker takes no new replica: topics and reassignments placed on it fail" if whole
                 else "it takes no new replica; the broker's other log dirs do"),
            next=_command("config", "alter", "broker", str(broker), "--delete", "cordoned.log.dirs")))
    return found


def quorum(q: Quorum, now_ms: int) -> list[Finding]:
    """The controller quorum without a leader, or with a voter behind it for longer than
    VOTER_BEHIND_MS (DescribeQuorum's last caught-up time)."""
    if q.leader_id < 0:
        return [Finding(severity=CRITICAL, check="no-quorum-leader", resource="controller quorum",
                        summary="the controller quorum has no leader", evidence={"leader_id": q.leader_id, "voters": len(q.voters)},
                        why="no metadata change (topic, partition leader, ISR) can be made",
                        next=_command("cluster", "quorum", "--replication"))]
    found = []
    for v in q.voters:
        if v.node_id == q.leader_id or not v.lag:
            continue
        behind = None if v.last_caught_up_timestamp is None else now_ms - v.last_caught_up_timestamp
        if behind is None or behind >= VOTER_BEHIND_MS:
            found.append(Finding(
                severity=WARNING, check="voter-behind", resource=f"controller {v.node_id}",
                summary=f"controller {v.node_id} is {v.lag} record(s) behind the quorum leader",
                evidence={"lag": v.lag, "ms_since_caught_up": behind, "leader_id": q.leader_id},
                why="one more voter lost and the quorum cannot commit metadata",
                next=_command("cluster", "quorum", "--replication")))
    return found


def unsupported(part: str, cause: str) -> Finding:
    """A part of the examination the cluster does not support (the bundled broker has no
    controller quorum): said once, as information."""
    return Finding(severity=INFO, check="not-supported", resource="cluster", summary=f"{part} not examined: the cluster does not support it",
                   evidence={"part": part, "cause": cause}, why="the cluster does not answer the request this check needs",
                   next=_command("cluster", "info"))


def lag_without_members(groups: Sequence[GroupLag]) -> list[Finding]:
    """Groups with lag and no member to consume it (Burrow's "stopped"): kctl's own
    bookkeeping groups aside."""
    from kctl.admin.groups.models import kctl_group

    return [Finding(
        severity=WARNING, check="lag-without-members", resource=f"group {g.group}",
        summary=f"group {g.group} is {g.lag_sum:,} record(s) behind and has no members",
        evidence={"lag": g.lag_sum, "state": g.state,
                  "topics": ", ".join(sorted({p.topic for p in g.partitions if p.lag})[:SHOWN])},
        why="nothing consumes its records: the consumers stopped, or the group is no longer used (delete it)",
        next=_command("group", "lag", g.group))
        for g in sorted(groups, key=lambda g: g.group) if g.lag_sum > 0 and g.members == 0 and kctl_group(g.group) is None]


def missing_subscriptions(subscriptions: Mapping[str, Mapping[str, Sequence[str]]], topics: Iterable[str]) -> list[Finding]:
    """Groups whose members subscribe to topics that do not exist ({group: {member:
    subscribed topics}}): one finding per group."""
    known = set(topics)
    found = []
    for group, members in sorted(subscriptions.items()):
        missing = sorted({t for subscribed in members.values() for t in subscribed if t not in known})
        if missing:
            found.append(Finding(
                severity=WARNING, check="subscribed-topic-missing", resource=f"group {group}",
                summary=f"members of group {group} subscribe to {len(missing)} topic(s) that do not exist: {', '.join(missing[:SHOWN])}",
                evidence={"topics": ", ".join(missing[:SHOWN]),
                          "members": sum(1 for subscribed in members.values() if set(subscribed) - known)},
                why="they wait for records that never come: a misspelt name, or a topic deleted under them",
                next=_command("group", "describe", group)))
    return found


# Quotas that slow clients down (bytes per second, or a share of request time): what a
# client throttled by one would feel.
_THROTTLING = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")


def quotas(by_entity: Mapping[str, Mapping[str, float]]) -> list[Finding]:
    """Client quotas that throttle ({entity: {quota: value}}): one info finding naming the
    lowest of each kind, as a producer or consumer slower than expected is often one
    the broker throttles (only the throttled client sees its throttle time)."""
    lowest: dict[str, tuple[float, str]] = {}
    for entity, values in sorted(by_entity.items()):
        for quota, value in values.items():
            if quota in _THROTTLING and (quota not in lowest or value < lowest[quota][0]):
                lowest[quota] = (value, entity)
    if not lowest:
        return []
    entities = sum(1 for values in by_entity.values() if set(values) & set(_THROTTLING))
    return [Finding(
        severity=INFO, check="quotas-throttle", resource="cluster",
        summary=f"{entities} client quota entit(ies) throttle: " + ", ".join(f"{q} {v:g} ({e})" for q, (v, e) in sorted(lowest.items())),
        evidence={"entities": entities, "lowest": {q: {"value": v, "entity": e} for q, (v, e) in sorted(lowest.items())}},
        why="a client over its quota is slowed by the broker (its requests answered late), not refused",
        next=_command("quota", "list"))]
