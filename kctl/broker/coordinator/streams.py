"""Streams groups (KIP-1071) as Kafka 4.3's group coordinator runs them: members of a Kafka Streams application
heartbeat with its topology; the broker checks the source topics, decides the partition
counts of the repartition and changelog topics and creates them, cuts the topology into
tasks (subtopology, partition) and assigns them (sticky, balanced), revoking before it
assigns, as the consumer protocol does.

Not yet: standby and warm-up tasks, endpoints (interactive queries), static members, the
initial rebalance delay, copartition checks, per-task epochs in commit checks. Groups live
in memory: after a restart a member of a group the broker forgot gets UNKNOWN_MEMBER_ID
(not Kafka's fatal GROUP_ID_NOT_FOUND) and rejoins with its topology; committed offsets
are kept as every group's are.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from kctl.broker.protocol import errors

log = logging.getLogger("kctl.broker.coordinator")

HEARTBEAT_INTERVAL_MS = 5000  # group.streams.heartbeat.interval.ms
SESSION_TIMEOUT_MS = 45_000  # group.streams.session.timeout.ms
LEAVE = -1
# StreamsGroupHeartbeatResponse status codes
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS = 0, 1, 2, 3
STREAMS_INVALID_TOPOLOGY = 130

Task = tuple[str, int]  # (subtopology id, partition)


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Subtopology:
    id: str
    sources: tuple[str, ...]
    repartition_sinks: tuple[str, ...]
    changelogs: tuple[TopicInfo, ...]
    repartition_sources: tuple[TopicInfo, ...]


@dataclass(frozen=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]

    @classmethod
    def from_request(cls, t) -> Topology:
        def info(i):
            return TopicInfo(i.name, i.partitions, i.replication_factor,
                             tuple(sorted((c.key, c.value) for c in i.topic_configs or [])))

        subs = tuple(sorted((Subtopology(s.subtopology_id, tuple(sorted(s.source_topics or [])),
                                         tuple(sorted(s.repartition_sink_topics or [])),
                                         tuple(sorted((info(c) for c in s.state_changelog_topics or []), key=lambda i: i.name)),
                                         tuple(sorted((info(r) for r in s.repartition_source_topics or []), key=lambda i: i.name)))
                             for s in t.subtopologies or []), key=lambda s: s.id))
        return cls(t.epoch, subs)

    def topics(self) -> set[str]:
        names = set()
        for s in self.subtopologies:
            names |= set(s.sources) | set(s.repartition_sinks)
            names |= {i.name for i in s.changelogs} | {i.name for i in s.repartition_sources}
        return names


@dataclass
class Configured:
    """A topology checked against the cluster's topics: its tasks per subtopology, the
    internal topics to create, or why it is not ready (status code, detail)."""
    tasks: dict[str, int] = field(default_factory=dict)
    create: list[TopicInfo] = field(default_factory=list)
    status: tuple[int, str] | None = None
    invalid: str | None = None

    @property
    def ready(self) -> bool:
        return self.status is None and self.invalid is None


def configure(topology: Topology, partitions: dict[str, int]) -> Configured:
    """Kafka's InternalTopicManager.configureTopics, for one node."""
    internal = {i.name for s in topology.subtopologies for i in s.repartition_sources}
    missing = sorted({t for s in topology.subtopologies for t in s.sources} - partitions.keys())
    if missing:
        return Configured(status=(MISSING_SOURCE_TOPICS, f"Source topics {', '.join(missing)} are missing."))
    counts: dict[str, int] = {i.name: i.partitions for s in topology.subtopologies for i in s.repartition_sources
                              if i.partitions > 0}
    while True:  # repartition sinks take the partitions of what their subtopology reads
        progress = False
        for s in topology.subtopologies:
            known = [partitions[t] for t in s.sources] + [counts[i.name] for i in s.repartition_sources if i.name in counts]
            for sink in s.repartition_sinks:
                if sink not in counts and known:
                    counts[sink] = max(known)
                    progress = True
        if all(name in counts for name in internal):
            break
        if not progress:
            return Configured(invalid="The topology has loops or repartition topics no subtopology writes.")
    tasks, wanted = {}, []
    for s in topology.subtopologies:
        reads = [partitions[t] for t in s.sources] + [counts[i.name] for i in s.repartition_sources]
        tasks[s.id] = max(reads) if reads else 0
        wanted += [TopicInfo(i.name, counts[i.name], i.replication_factor, i.configs) for i in s.repartition_sources]
        wanted += [TopicInfo(i.name, tasks[s.id], i.replication_factor, i.configs) for i in s.changelogs]
    create = []
    for info in wanted:
        existing = partitions.get(info.name)
        if existing is None:
            create.append(info)
        elif existing != info.partitions:
            return Configured(status=(INCORRECTLY_PARTITIONED_TOPICS, f"Existing topic {info.name} has different number of "
                                      f"partitions: expected {info.partitions}, found {existing}."))
    if create:
        return Configured(create=create, status=(MISSING_INTERNAL_TOPICS,
                                                 "Internal topics are missing: " + ", ".join(sorted(i.name for i in create))))
    return Configured(tasks=tasks)


@dataclass
class StreamsMember:
    member_id: str
    process_id: str
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    rack_id: str | None = None
    topology_epoch: int = -1
    member_epoch: int = 0
    previous_epoch: int = 0
    assigned: set[Task] = field(default_factory=set)
    pending: set[Task] = field(default_factory=set)  # being revoked
    last_heartbeat: int = 0
    last_sent: frozenset | None = None


@dataclass
class StreamsGroup:
    group_id: str
    group_epoch: int = 1
    assignment_epoch: int = 1
    topology: Topology | None = None
    configured: Configured | None = None
    fingerprint: tuple = ()
    members: dict[str, StreamsMember] = field(default_factory=dict)
    target: dict[str, set[Task]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.configured is None or not self.configured.ready:
            return "NotReady"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        if any(m.member_epoch != self.assignment_epoch or m.pending for m in self.members.values()):
            return "Reconciling"
        return "Stable"


@dataclass
class HeartbeatResult:
    error: int
    message: str | None = None
    member_epoch: int = 0
    statuses: list[tuple[int, str]] = field(default_factory=list)
    tasks: set[Task] | None = None
    create: list[TopicInfo] = field(default_factory=list)


def sticky_assignment(members: dict[str, StreamsMember], tasks: dict[str, int],
                      previous: dict[str, set[Task]]) -> dict[str, set[Task]]:
    """Active tasks only (no standbys): each member keeps what it had while under the
    quota ceil(tasks / members), the rest go to the least loaded."""
    everything = sorted(((s, p) for s, n in tasks.items() for p in range(n)), key=lambda t: (t[1], t[0]))
    quota = math.ceil(len(everything) / len(members)) if members else 0
    target: dict[str, set[Task]] = {m: set() for m in members}
    placed = set()
    for task in everything:
        for member_id in sorted(members):
            if task in previous.get(member_id, set()) and len(target[member_id]) < quota:
                target[member_id].add(task)
                placed.add(task)
                break
    for task in sorted(set(everything) - placed):
        member_id = min(target, key=lambda m: (len(target[m]), m))
        target[member_id].add(task)
    return target


class StreamsGroupCoordinator:
    def __init__(self, clock: Callable[[], int], topics: Callable[[], dict[str, int]]):
        self.clock = clock
        self.topics = topics
        self.groups: dict[str, StreamsGroup] = {}

    def heartbeat(self, request, client_id: str, client_host: str, other_type) -> HeartbeatResult:
        def invalid(message):
            return HeartbeatResult(errors.INVALID_REQUEST, message)

        epoch, group_id, member_id = request.member_epoch, request.group_id, request.member_id
        owned = None
        if request.active_tasks is not None:
            owned = {(t.subtopology_id, p) for t in request.active_tasks for p in t.partitions}
        if not group_id or not member_id:
            return invalid("GroupId and MemberId can't be empty.")
        if request.instance_id is not None:
            return invalid("Static membership is not yet supported.")
        if epoch < LEAVE:
            return invalid(f"MemberEpoch {epoch} is invalid.")
        if epoch == 0 and (request.topology is None or request.rebalance_timeout_ms == -1):
            return invalid("Topology and RebalanceTimeoutMs must be set in the first request.")
        if epoch != 0 and request.topology is not None:
            return invalid("Topology can only be provided when (re-)joining.")
        for sub in (request.topology.subtopologies or ()) if request.topology is not None else ():
            for changelog in sub.state_changelog_topics or ():
                if changelog.partitions != 0:  # Kafka sizes a changelog as its source
                    return HeartbeatResult(STREAMS_INVALID_TOPOLOGY, f"Changelog topic {changelog.name} must have an "
                                           f"undefined partition count, but it is set to {changelog.partitions}.")
        if other_type(group_id):
            return HeartbeatResult(errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")
        group = self.groups.get(group_id)
        if epoch == LEAVE:
            if group is None or member_id not in group.members:
                return HeartbeatResult(errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            self._remove(group, member_id, "left")
            return HeartbeatResult(errors.NONE, None, LEAVE)
        if group is None:
            if epoch != 0:  # a group this broker forgot (a restart): the member rejoins with its topology
                return HeartbeatResult(errors.UNKNOWN_MEMBER_ID, f"Streams group {group_id} is not known; rejoin.")
            group = self.groups[group_id] = StreamsGroup(group_id)
        member = group.members.get(member_id)
        bump = False
        if member is None:
            if epoch != 0:
                return HeartbeatResult(errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            member = group.members[member_id] = StreamsMember(member_id, request.process_id or "", client_id, client_host,
                                                              request.rebalance_timeout_ms, request.rack_id)
            bump = True
        elif epoch != 0 and epoch != member.member_epoch and not (
                epoch == member.previous_epoch and owned is not None and owned <= member.assigned | member.pending):
            return HeartbeatResult(errors.FENCED_MEMBER_EPOCH, f"The member epoch {epoch} does not match {member.member_epoch}.")
        member.last_heartbeat = self.clock()
        if request.topology is not None:
            topology = Topology.from_request(request.topology)
            member.topology_epoch = topology.epoch
            if group.topology is None:
                group.topology = topology
                bump = True
            elif topology != group.topology and topology.epoch == group.topology.epoch:
                return invalid("Topology updates are not supported yet.")
        partitions = self.topics()
        fingerprint = tuple(sorted((t, partitions.get(t)) for t in group.topology.topics()))
        if fingerprint != group.fingerprint or group.configured is None:
            group.fingerprint = fingerprint
            group.configured = configure(group.topology, partitions)
            bump = True
        if group.configured.invalid:
            return HeartbeatResult(STREAMS_INVALID_TOPOLOGY, group.configured.invalid)
        if bump:
            group.group_epoch += 1
        if group.assignment_epoch < group.group_epoch:
            tasks = group.configured.tasks if group.configured.ready else {}
            group.target = sticky_assignment(group.members, tasks, group.target)
            group.assignment_epoch = group.group_epoch
        self._reconcile(group, member, owned)
        statuses = [] if group.configured.status is None else [group.configured.status]
        result = HeartbeatResult(errors.NONE, None, member.member_epoch, statuses, None, list(group.configured.create))
        if epoch == 0 or member.last_sent != frozenset(member.assigned):
            result.tasks = set(member.assigned)
            member.last_sent = frozenset(member.assigned)
        return result

    def _reconcile(self, group: StreamsGroup, member: StreamsMember, owned: set[Task] | None) -> None:
        target = group.target.get(member.member_id, set())
        if member.pending and owned is not None and not owned & member.pending:
            member.pending = set()  # revoked: the client no longer owns them
        revoke = member.assigned - target
        if revoke:
            member.pending |= revoke
            member.assigned &= target
            return  # the epoch moves once the revocation is confirmed
        if member.pending:
            return
        held = set()
        for other in group.members.values():
            if other is not member:
                held |= other.assigned | other.pending
        member.assigned |= (target - member.assigned) - held
        if member.member_epoch != group.assignment_epoch:
            member.previous_epoch, member.member_epoch = member.member_epoch, group.assignment_epoch

    def _remove(self, group: StreamsGroup, member_id: str, why: str) -> None:
        group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        group.group_epoch += 1
        log.info("streams group %s: member %s %s", group.group_id, member_id, why)

    def tick(self) -> None:
        now = self.clock()
        for group in self.groups.values():
            for member in list(group.members.values()):
                if now - member.last_heartbeat > SESSION_TIMEOUT_MS:
                    self._remove(group, member.member_id, "was removed: no heartbeat for 45000 ms")

    def delete(self, group_id: str) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return errors.GROUP_ID_NOT_FOUND
        if group.members:
            return errors.NON_EMPTY_GROUP
        del self.groups[group_id]
        return errors.NONE
