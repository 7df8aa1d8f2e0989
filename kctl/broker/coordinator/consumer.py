"""The consumer group protocol (KIP-848) as Kafka 4.x's group coordinator runs it: the
broker assigns partitions, members only heartbeat.

A group has an epoch, bumped by every change of membership, subscriptions or subscribed
topics' partition counts, and a target assignment computed by a server-side assignor
(`uniform`, sticky and balanced, the default; or `range`) for that epoch. Each member
reconciles towards its target one heartbeat at a time (Kafka's CurrentAssignmentBuilder):
partitions it must give up are revoked first (its epoch stays until it confirms, within
its rebalance timeout); partitions another member still holds are handed over only once
released; then its epoch becomes the target's. A member whose epoch does not match is
fenced (FENCED_MEMBER_EPOCH) and rejoins with epoch 0.

Static members (group.instance.id) that leave with epoch -2 keep their partitions for a
session timeout, and get them back when they rejoin under the same instance id. An empty
classic group becomes a consumer group at its first heartbeat, and an empty consumer group
a classic one at its first JoinGroup, as Kafka 4.x converts them; groups with members of
the other protocol are refused (INCONSISTENT_GROUP_PROTOCOL).

Membership lives in memory, as Kafka's in-memory state rebuilt from `__consumer_offsets`;
after a restart members are fenced and rejoin. Committed offsets are the OffsetStore's.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from kctl.broker.protocol import errors

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from kctl.broker.coordinator.groups import GroupCoordinator

log = logging.getLogger("kctl.broker.coordinator")

STABLE, UNREVOKED, UNRELEASED = "stable", "unrevoked_partitions", "unreleased_partitions"
ASSIGNORS = ("uniform", "range")
HEARTBEAT_INTERVAL_MS = 5000  # group.consumer.heartbeat.interval.ms
SESSION_TIMEOUT_MS = 45_000  # group.consumer.session.timeout.ms
LEAVE, STATIC_LEAVE = -1, -2

Assignment = dict[str, set[int]]  # topic name -> partitions


def _pairs(assignment: Assignment) -> set[tuple[str, int]]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


def _grouped(pairs: Iterable[tuple[str, int]]) -> Assignment:
    out: Assignment = {}
    for t, p in pairs:
        out.setdefault(t, set()).add(p)
    return out


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: str = STABLE
    assigned: set[tuple[str, int]] = field(default_factory=set)
    revoking: set[tuple[str, int]] = field(default_factory=set)
    revocation_deadline: int = 0
    last_heartbeat: int = 0
    last_sent: frozenset[tuple[str, int]] | None = None
    left_static: bool = False  # left with epoch -2: its partitions wait for it
    # Whether the member's principal may DESCRIBE a topic (None: no authorizer): a regex
    # subscription resolves only to such topics, as Kafka resolves it.
    may_describe: Callable[[str], bool] | None = None


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = "uniform"
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    target: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    # The subscribed topics' partition counts the target was computed from.
    topic_partitions: dict[str, int] = field(default_factory=dict)
    owners: dict[tuple[str, int], str] = field(default_factory=dict)  # partition -> member holding it

    @property
    def state(self) -> str:
        """Kafka's ConsumerGroupState names."""
        if not self.members:
            return "Empty"
        if self.group_epoch != self.assignment_epoch:
            return "Assigning"
        if any(m.member_epoch != self.assignment_epoch or m.state != STABLE for m in self.members.values()
               if not m.left_static):
            return "Reconciling"
        return "Stable"


@dataclass
class HeartbeatResult:
    error: int
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: set[tuple[str, int]] | None = None


class ConsumerGroupCoordinator:
    """`topics()` gives the broker's topics and partition counts; `classic` is the classic
    coordinator, whose empty groups are converted."""

    def __init__(self, clock: Callable[[], int], topics: Callable[[], dict[str, int]], classic: GroupCoordinator):
        self.clock = clock
        self.topics = topics
        self.classic = classic
        self.groups: dict[str, ConsumerGroup] = {}
        self.heartbeat_interval_ms = HEARTBEAT_INTERVAL_MS
        self.session_timeout_ms = SESSION_TIMEOUT_MS

    # -- ConsumerGroupHeartbeat --------------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, instance_id: str | None,
                  rack_id: str | None, rebalance_timeout_ms: int, subscribed_topic_names: list[str] | None,
                  subscribed_topic_regex: str | None, server_assignor: str | None,
                  owned: set[tuple[str, int]] | None, client_id: str, client_host: str,
                  may_describe: Callable[[str], bool] | None = None) -> HeartbeatResult:
        problem = self._validate(group_id, member_id, member_epoch, rebalance_timeout_ms, subscribed_topic_names,
                                 subscribed_topic_regex, server_assignor)
        if problem:
            return problem
        group = self.groups.get(group_id)
        if group is None:
            classic = self.classic.groups.get(group_id)
            if classic is not None and classic.members:
                return HeartbeatResult(errors.INCONSISTENT_GROUP_PROTOCOL,
                                       f"Group {group_id} has classic consumers: kctl's bundled broker converts only empty groups.")
            if member_epoch != 0:
                return HeartbeatResult(errors.UNKNOWN_MEMBER_ID, f"Group {group_id} has no member {member_id}.")
            self.classic.groups.pop(group_id, None)  # an empty classic group becomes a consumer group
            group = self.groups[group_id] = ConsumerGroup(group_id)
        now = self.clock()
        if member_epoch in (LEAVE, STATIC_LEAVE):
            return self._leave(group, member_id, instance_id, member_epoch)
        returning = False
        member: ConsumerMember | None
        if member_epoch == 0:
            returning = instance_id is not None and instance_id in group.static_members
            # A member whenever there is no error.
            member, error = cast("tuple[ConsumerMember, HeartbeatResult | None]", self._join(
                group, member_id, instance_id, rack_id, rebalance_timeout_ms, client_id, client_host))
            if error:
                return error
        else:
            member = group.members.get(member_id)
            if member is None or member.left_static:
                return HeartbeatResult(errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            if member_epoch != member.member_epoch and not (
                    member_epoch == member.previous_member_epoch and owned is not None and owned <= member.assigned):
                return HeartbeatResult(errors.FENCED_MEMBER_EPOCH,
                                       f"The member epoch {member_epoch} does not match the expected {member.member_epoch}.")
        member.last_heartbeat = now
        member.may_describe = may_describe
        if rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        if rack_id is not None:
            member.rack_id = rack_id
        if server_assignor and not group.members.keys() - {member.member_id}:
            group.assignor = server_assignor
        changed = False
        if subscribed_topic_names is not None and sorted(subscribed_topic_names) != sorted(member.subscribed_topic_names):
            member.subscribed_topic_names = list(subscribed_topic_names)
            changed = True
        if subscribed_topic_regex is not None and (subscribed_topic_regex or None) != member.subscribed_topic_regex:
            member.subscribed_topic_regex = subscribed_topic_regex or None
            changed = True
        # A static member coming back takes its place without a new epoch (KIP-345).
        joined = member_epoch == 0 and not returning
        if changed or joined:
            self._bump(group, f"member {member.member_id} {'joined' if joined else 'changed its subscription'}")
        self._refresh_target(group, bumped=changed or joined)
        self._reconcile(group, member, owned, now)
        full = member_epoch == 0 or (owned is not None and owned != member.assigned)
        assignment = None
        if full or member.last_sent != frozenset(member.assigned):
            assignment = set(member.assigned)
            member.last_sent = frozenset(member.assigned)
        return HeartbeatResult(errors.NONE, None, member.member_id, member.member_epoch, self.heartbeat_interval_ms, assignment)

    def _validate(self, group_id: str, member_id: str, member_epoch: int, rebalance_timeout_ms: int, names: list[str] | None,
                  regex: str | None, assignor: str | None) -> HeartbeatResult | None:
        def invalid(message: str) -> HeartbeatResult:
            return HeartbeatResult(errors.INVALID_REQUEST, message)

        if not group_id:
            return invalid("GroupId can't be empty.")
        if member_epoch < STATIC_LEAVE:
            return invalid(f"MemberEpoch {member_epoch} is invalid.")
        if member_epoch == 0:
            if rebalance_timeout_ms == -1:
                return invalid("RebalanceTimeoutMs must be provided in first request.")
            if names is None and regex is None:
                return invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif not member_id:
            return invalid("MemberId can't be empty.")
        if assignor and assignor not in ASSIGNORS:
            return HeartbeatResult(errors.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {assignor} is not supported. "
                                   f"Supported assignors: {', '.join(ASSIGNORS)}.")
        if regex:
            try:
                re.compile(regex)
            except re.error as exc:
                return HeartbeatResult(errors.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex {regex} is invalid: {exc}.")
        return None

    def _join(self, group: ConsumerGroup, member_id: str, instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int,
              client_id: str, client_host: str) -> tuple[ConsumerMember, None] | tuple[None, HeartbeatResult]:
        if not member_id:  # v0 clients: the coordinator names the member
            import uuid

            member_id = str(uuid.uuid4())
        if instance_id is not None and instance_id in group.static_members:
            old = group.members[group.static_members[instance_id]]
            if not old.left_static:
                return None, HeartbeatResult(errors.UNRELEASED_INSTANCE_ID,
                                             f"Static member {instance_id} is still in use by member {old.member_id}.")
            # The static member comes back: same partitions, same epoch, a new member id.
            del group.members[old.member_id]
            for tp in old.assigned | old.revoking:
                group.owners[tp] = member_id
            if old.member_id in group.target:
                group.target[member_id] = group.target.pop(old.member_id)
            old.member_id, old.left_static, old.last_sent = member_id, False, None
            old.client_id, old.client_host = client_id, client_host
            group.members[member_id] = old
            group.static_members[instance_id] = member_id
            return old, None
        existing = group.members.get(member_id)
        if existing is not None:  # a fenced member rejoining: it starts over
            self._remove(group, existing)
        member = ConsumerMember(member_id, instance_id, rack_id, client_id, client_host, rebalance_timeout_ms)
        group.members[member_id] = member
        if instance_id is not None:
            group.static_members[instance_id] = member_id
        return member, None

    def _leave(self, group: ConsumerGroup, member_id: str, instance_id: str | None, epoch: int) -> HeartbeatResult:
        member = group.members.get(member_id)
        if member is None:
            return HeartbeatResult(errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
        if epoch == STATIC_LEAVE and member.instance_id is not None:
            member.left_static = True
            member.last_heartbeat = self.clock()
            log.info("group %s: static member %s left; its partitions wait for it", group.group_id, member.instance_id)
        else:
            self._remove(group, member)
            self._bump(group, f"member {member_id} left")
        return HeartbeatResult(errors.NONE, None, member_id, epoch, 0, None)

    def _remove(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        if member.instance_id is not None and group.static_members.get(member.instance_id) == member.member_id:
            del group.static_members[member.instance_id]
        for tp in member.assigned | member.revoking:
            if group.owners.get(tp) == member.member_id:
                del group.owners[tp]

    def _bump(self, group: ConsumerGroup, reason: str) -> None:
        group.group_epoch += 1
        log.info("group %s: epoch %d (%s)", group.group_id, group.group_epoch, reason)

    # -- assignment ----------------------------------------------------------------------------------

    def _subscribed(self, member: ConsumerMember, topics: dict[str, int]) -> set[str]:
        names = {t for t in member.subscribed_topic_names if t in topics}
        if member.subscribed_topic_regex:
            pattern = re.compile(member.subscribed_topic_regex)
            allowed = member.may_describe or (lambda _topic: True)
            names |= {t for t in topics if pattern.fullmatch(t) and not t.startswith("__") and allowed(t)}
        return names

    def _refresh_target(self, group: ConsumerGroup, bumped: bool = False) -> None:
        """Recompute the target assignment when the epoch moved, or when a subscribed topic
        appeared, went or gained partitions (which moves the epoch, once)."""
        topics = self.topics()
        subscribed = {m.member_id: self._subscribed(m, topics) for m in group.members.values()}
        counts = {t: topics[t] for names in subscribed.values() for t in names}
        if counts != group.topic_partitions:
            if not bumped:
                self._bump(group, "subscribed topics changed")
            group.topic_partitions = counts
        if group.assignment_epoch == group.group_epoch:
            return
        assign = _uniform if group.assignor == "uniform" else _range
        group.target = assign(subscribed, counts, group.target)
        group.assignment_epoch = group.group_epoch

    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember, owned: set[tuple[str, int]] | None, now: int) -> None:
        """One step of Kafka's CurrentAssignmentBuilder for this member."""
        if member.state == UNREVOKED:
            if owned is None or owned & member.revoking:
                return  # still revoking
            for tp in member.revoking:
                if group.owners.get(tp) == member.member_id:
                    del group.owners[tp]
            member.revoking = set()
            member.state = STABLE
        if member.member_epoch == group.assignment_epoch and member.state == STABLE:
            return
        target = group.target.get(member.member_id, set())
        keep = member.assigned & target
        revoke = member.assigned - target
        if revoke:
            member.assigned, member.revoking = keep, revoke
            member.state = UNREVOKED
            member.revocation_deadline = now + max(member.rebalance_timeout_ms, 0)
            return
        wanted = target - keep
        free = {tp for tp in wanted if group.owners.get(tp) in (None, member.member_id)}
        for tp in free:
            group.owners[tp] = member.member_id
        member.assigned = keep | free
        if member.member_epoch != group.assignment_epoch:
            member.previous_member_epoch, member.member_epoch = member.member_epoch, group.assignment_epoch
        member.state = UNRELEASED if wanted - free else STABLE

    # -- housekeeping ---------------------------------------------------------------------------------

    def tick(self) -> None:
        """Expire sessions (static members that left included) and fence members that did
        not revoke within their rebalance timeout."""
        now = self.clock()
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                expired = now - member.last_heartbeat > self.session_timeout_ms
                slow = member.state == UNREVOKED and now > member.revocation_deadline
                if expired or slow:
                    log.info("group %s: member %s %s", group.group_id, member.member_id,
                             "session expired" if expired else "did not revoke its partitions in time: fenced")
                    self._remove(group, member)
                    self._bump(group, f"member {member.member_id} removed")

    # -- offsets, describing, deleting ------------------------------------------------------------------

    def check_member(self, group_id: str, member_id: str, member_epoch: int) -> int:
        """The OffsetCommit / OffsetFetch check of a consumer group member: a commit from
        an older epoch is STALE_MEMBER_EPOCH. Epoch -1 (tools, consumers that assign
        partitions themselves) commits only while the group has no members, as Kafka's."""
        group = self.groups.get(group_id)
        if member_epoch < 0 and (group is None or not group.members):
            return errors.NONE
        if group is None or member_id not in group.members:
            return errors.UNKNOWN_MEMBER_ID
        member = group.members[member_id]
        if member_epoch != member.member_epoch:
            return errors.STALE_MEMBER_EPOCH
        return errors.NONE

    def to_classic(self, group_id: str) -> bool:
        """A JoinGroup for this id: an empty consumer group becomes classic (True); one
        with members refuses (False)."""
        group = self.groups.get(group_id)
        if group is None:
            return True
        if group.members:
            return False
        del self.groups[group_id]
        return True

    def subscribed_topics(self, group_id: str) -> set[str]:
        """Topics the group's members subscribe to (their offsets cannot be deleted)."""
        group = self.groups.get(group_id)
        if group is None:
            return set()
        topics = self.topics()
        return set().union(*(self._subscribed(m, topics) for m in group.members.values()))

    def delete(self, group_id: str) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return errors.GROUP_ID_NOT_FOUND
        if group.members:
            return errors.NON_EMPTY_GROUP
        del self.groups[group_id]
        return errors.NONE


# -- assignors (server side) ---------------------------------------------------------------------


def _uniform(subscribed: dict[str, set[str]], counts: dict[str, int],
             previous: dict[str, set[tuple[str, int]]]) -> dict[str, set[tuple[str, int]]]:
    """Kafka's uniform assignor in spirit: as even as subscriptions allow, and sticky (a
    partition stays with its member unless balance needs it elsewhere)."""
    members = sorted(subscribed)
    result: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    eligible = {(t, p): [m for m in members if t in subscribed[m]] for t, n in counts.items() for p in range(n)}
    partitions = sorted(eligible, key=lambda tp: (len(eligible[tp]), tp))
    if not members:
        return result
    limit = -(-len(partitions) // len(members))  # ceil: nobody keeps more than this
    unassigned = []
    for tp in partitions:
        holder = next((m for m, owned in previous.items() if tp in owned), None)
        if holder in result and holder in eligible[tp] and len(result[holder]) < limit:
            result[holder].add(tp)
        else:
            unassigned.append(tp)
    for tp in unassigned:
        if eligible[tp]:
            least = min(eligible[tp], key=lambda m: (len(result[m]), m))
            result[least].add(tp)
    # Even out: move partitions from the fullest member to the emptiest that may take them.
    moved = True
    while moved:
        moved = False
        for rich in sorted(members, key=lambda m: -len(result[m])):
            for tp in sorted(result[rich]):
                takers = [m for m in eligible[tp] if len(result[m]) + 1 < len(result[rich])]
                if takers:
                    poor = min(takers, key=lambda m: (len(result[m]), m))
                    result[rich].discard(tp)
                    result[poor].add(tp)
                    moved = True
                    break
            if moved:
                break
    return result


def _range(subscribed: dict[str, set[str]], counts: dict[str, int],
           previous: dict[str, set[tuple[str, int]]]) -> dict[str, set[tuple[str, int]]]:
    """Kafka's range assignor: per topic, contiguous ranges in member order (co-partitioned
    topics line up)."""
    result: dict[str, set[tuple[str, int]]] = {m: set() for m in subscribed}
    for topic, count in sorted(counts.items()):
        members = sorted(m for m, names in subscribed.items() if topic in names)
        if not members:
            continue
        size, extra = divmod(count, len(members))
        start = 0
        for i, member in enumerate(members):
            length = size + (1 if i < extra else 0)
            result[member] |= {(topic, p) for p in range(start, start + length)}
            start += length
    return result
