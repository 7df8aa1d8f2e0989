"""Classic consumer group protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup), as Kafka's
GroupCoordinator runs it. Assignment is computed by the group leader on the client side, so
every assignor (eager and cooperative) works unchanged.

States: Empty -> PreparingRebalance -> CompletingRebalance -> Stable, back to
PreparingRebalance when membership or subscriptions change, Dead once deleted. Waiting
JoinGroup and SyncGroup calls are asyncio futures completed by the coordinator; expiry of
sessions and rebalance timeouts is driven by `tick()` from the broker's housekeeping loop,
with time from the injected clock.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from kctl.broker.coordinator.offsets import CommittedOffset, OffsetStore
from kctl.broker.protocol import errors

log = logging.getLogger("kctl.broker.coordinator")

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (
    "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
MIN_SESSION_TIMEOUT_MS = 6000
MAX_SESSION_TIMEOUT_MS = 1800000
MAX_METADATA_BYTES = 4096
# How long a member id handed out with MEMBER_ID_REQUIRED waits for its JoinGroup.
PENDING_MEMBER_TIMEOUT_MS = 30_000


class GroupError(Exception):
    def __init__(self, code: int, message: str = ""):
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    last_heartbeat: int = 0
    join_future: asyncio.Future | None = None
    sync_future: asyncio.Future | None = None

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""


@dataclass(slots=True)
class JoinResult:
    error: int
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    skip_assignment: bool = False
    members: list = field(default_factory=list)  # (member_id, instance_id, metadata)


@dataclass(slots=True)
class Group:
    group_id: str
    state: str = EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: dict[str, int] = field(default_factory=dict)  # member id -> issued at
    rebalance_deadline: int = 0

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        names = {name for name, _ in protocols}
        return all(names & {n for n, _ in m.protocols} for m in self.members.values()) and \
            bool(self.candidate_protocols() & names)

    def candidate_protocols(self) -> set[str]:
        sets = [{n for n, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = next(n for n, _ in member.protocols if n in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(sorted(votes), key=lambda n: votes[n])

    def subscribed_topics(self) -> set[str] | None:
        """Topics of a `consumer` group's subscriptions (None when they cannot be read)."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = parse_subscription(member.metadata_for(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return topics


def parse_subscription(data: bytes) -> set[str] | None:
    """Topics of a ConsumerProtocolSubscription: version int16, topics [string]."""
    try:
        pos = 2
        (count,) = struct.unpack_from(">i", data, pos)
        pos += 4
        topics = set()
        for _ in range(count):
            (length,) = struct.unpack_from(">h", data, pos)
            pos += 2
            topics.add(bytes(data[pos:pos + length]).decode())
            pos += length
        return topics
    except (struct.error, UnicodeDecodeError):
        return None


class GroupCoordinator:
    def __init__(self, store: OffsetStore, clock: Callable[[], int],
                 initial_rebalance_delay_ms: int = 0):
        self.store = store
        self.clock = clock
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.groups: dict[str, Group] = {}
        # Group ids another coordinator holds (the KIP-848 consumer groups): their committed
        # offsets do not make them classic groups.
        self.foreign: Callable[[str], bool] = lambda group_id: False

    def group(self, group_id: str) -> Group | None:
        group = self.groups.get(group_id)
        if group is None and self.store.committed(group_id) and not self.foreign(group_id):
            group = self.groups[group_id] = Group(group_id)
        return group

    def all_group_ids(self) -> list[str]:
        ids = set(self.groups) | {g for g, o in self.store.groups.items() if o}
        return sorted(g for g in ids if self.group(g) is not None)

    # -- JoinGroup --------------------------------------------------------------------------

    async def join(self, group_id: str, member_id: str, group_instance_id: str | None,
                   client_id: str, client_host: str, session_timeout_ms: int,
                   rebalance_timeout_ms: int, protocol_type: str,
                   protocols: list[tuple[str, bytes]], require_known_member_id: bool) -> JoinResult:
        if not group_id:
            return JoinResult(errors.INVALID_GROUP_ID, member_id=member_id)
        if not MIN_SESSION_TIMEOUT_MS <= session_timeout_ms <= MAX_SESSION_TIMEOUT_MS:
            return JoinResult(errors.INVALID_SESSION_TIMEOUT, member_id=member_id)
        group = self.groups.get(group_id) or self.groups.setdefault(group_id, Group(group_id))
        if group.state == DEAD:
            group = self.groups[group_id] = Group(group_id)
        if not group.supports(protocol_type, protocols):
            return JoinResult(errors.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
        now = self.clock()

        if not member_id:
            new_id = f"{group_instance_id or client_id}-{uuid.uuid4()}"
            if group_instance_id is not None and group_instance_id in group.static_members:
                return self._replace_static_member(group, group_instance_id, new_id, protocols,
                                                   session_timeout_ms, rebalance_timeout_ms)
            if require_known_member_id and group_instance_id is None:
                group.pending_members[new_id] = now
                return JoinResult(errors.MEMBER_ID_REQUIRED, member_id=new_id)
            member_id = new_id
        elif member_id not in group.members and member_id not in group.pending_members:
            return JoinResult(errors.UNKNOWN_MEMBER_ID, member_id=member_id)
        elif group_instance_id is not None and \
                group.static_members.get(group_instance_id, member_id) != member_id:
            return JoinResult(errors.FENCED_INSTANCE_ID, member_id=member_id)

        group.pending_members.pop(member_id, None)
        member = group.members.get(member_id)
        if member is None:
            member = Member(member_id, group_instance_id, client_id, client_host,
                            session_timeout_ms, rebalance_timeout_ms, protocol_type, protocols)
            group.members[member_id] = member
            if group_instance_id is not None:
                group.static_members[group_instance_id] = member_id
            if group.protocol_type is None:
                group.protocol_type = protocol_type
            changed = True
        else:
            changed = member.protocols != protocols
            member.protocols = protocols
            member.session_timeout_ms = session_timeout_ms
            member.rebalance_timeout_ms = rebalance_timeout_ms
        member.last_heartbeat = now

        if group.state in (STABLE, COMPLETING) and not changed and member_id != group.leader_id:
            # A follower re-sending the same subscription: answer with the current generation.
            return self._join_result(group, member)
        if member.join_future is not None and not member.join_future.done():
            member.join_future.set_result(JoinResult(errors.UNKNOWN_MEMBER_ID, member_id=member_id))
        member.join_future = asyncio.get_running_loop().create_future()
        future = member.join_future
        if group.state != PREPARING:
            self._prepare_rebalance(group, f"member {member_id} joined")
        self._maybe_complete_join(group)
        return await future

    def _replace_static_member(self, group: Group, instance_id: str, new_id: str, protocols,
                               session_timeout_ms: int, rebalance_timeout_ms: int) -> JoinResult:
        old_id = group.static_members[instance_id]
        old = group.members.pop(old_id)
        for future in (old.join_future, old.sync_future):
            if future is not None and not future.done():
                future.set_result(JoinResult(errors.FENCED_INSTANCE_ID, member_id=old_id))
        old.member_id = new_id
        old.join_future = old.sync_future = None
        old.session_timeout_ms = session_timeout_ms
        old.rebalance_timeout_ms = rebalance_timeout_ms
        old.last_heartbeat = self.clock()
        group.members[new_id] = old
        group.static_members[instance_id] = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        if group.state == STABLE and old.protocols == protocols:
            # KIP-345: a static member coming back unchanged keeps its assignment, no rebalance.
            result = self._join_result(group, old)
            result.skip_assignment = True
            return result
        old.protocols = protocols
        self._prepare_rebalance(group, f"static member {instance_id} rejoined")
        return JoinResult(errors.REBALANCE_IN_PROGRESS, member_id=new_id)

    def _join_result(self, group: Group, member: Member) -> JoinResult:
        members = []
        if member.member_id == group.leader_id:
            members = [(m.member_id, m.group_instance_id, m.metadata_for(group.protocol_name))
                       for m in group.members.values()]
        return JoinResult(errors.NONE, group.generation_id, group.protocol_type,
                          group.protocol_name, group.leader_id or "", member.member_id,
                          members=members)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        for member in group.members.values():
            if member.sync_future is not None and not member.sync_future.done():
                member.sync_future.set_result((errors.REBALANCE_IN_PROGRESS, b""))
            member.sync_future = None
        delay = self.initial_rebalance_delay_ms if group.state == EMPTY else 0
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        group.rebalance_deadline = self.clock() + max(timeout, delay)
        group.state = PREPARING
        log.info("group %s: preparing rebalance (%s)", group.group_id, reason)

    def _maybe_complete_join(self, group: Group, deadline_passed: bool = False) -> None:
        if group.state != PREPARING:
            return
        waiting = [m for m in group.members.values()
                   if m.join_future is not None and not m.join_future.done()]
        if len(waiting) < len(group.members) and not deadline_passed:
            return
        for member in list(group.members.values()):
            if member not in waiting:
                self._remove_member(group, member)
        group.generation_id += 1
        if not group.members:
            group.state = EMPTY
            group.protocol_name = None
            group.leader_id = None
            self._record(group)
            if not self.store.committed(group.group_id):
                group.protocol_type = None
            return
        group.protocol_name = group.select_protocol()
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.state = COMPLETING
        now = self.clock()
        for member in group.members.values():
            member.last_heartbeat = now
            future, member.join_future = member.join_future, None
            future.set_result(self._join_result(group, member))
        log.info("group %s: generation %d with %d members", group.group_id,
                 group.generation_id, len(group.members))

    def _record(self, group: Group) -> None:
        """The group's generation, in __consumer_offsets as Kafka records it."""
        from kctl.broker.coordinator.offsets_topic import GroupMember

        members = [GroupMember(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                               m.session_timeout_ms, m.metadata_for(group.protocol_name or ""), m.assignment)
                   for m in group.members.values()]
        self.store.write_group(group.group_id, group.protocol_type or "", group.generation_id, group.protocol_name,
                               group.leader_id, members)

    def _remove_member(self, group: Group, member: Member) -> None:
        group.members.pop(member.member_id, None)
        if member.group_instance_id is not None:
            group.static_members.pop(member.group_instance_id, None)
        for future in (member.join_future, member.sync_future):
            if future is not None and not future.done():
                future.set_result(JoinResult(errors.UNKNOWN_MEMBER_ID) if future is member.join_future
                                  else (errors.UNKNOWN_MEMBER_ID, b""))
        if group.leader_id == member.member_id:
            group.leader_id = None

    # -- SyncGroup / Heartbeat / LeaveGroup --------------------------------------------------

    async def sync(self, group_id: str, generation_id: int, member_id: str,
                   group_instance_id: str | None,
                   assignments: dict[str, bytes]) -> tuple[int, bytes, Group | None]:
        group = self.groups.get(group_id)
        error = self._check_member(group, member_id, group_instance_id, generation_id)
        if error:
            return error, b"", group
        if group.state == PREPARING:
            return errors.REBALANCE_IN_PROGRESS, b"", group
        member = group.members[member_id]
        member.last_heartbeat = self.clock()
        if group.state == STABLE:
            return errors.NONE, member.assignment, group
        if member_id == group.leader_id:
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            group.state = STABLE
            self._record(group)
            for m in group.members.values():
                if m.sync_future is not None and not m.sync_future.done():
                    m.sync_future.set_result((errors.NONE, m.assignment))
                m.sync_future = None
            return errors.NONE, member.assignment, group
        member.sync_future = asyncio.get_running_loop().create_future()
        code, assignment = await member.sync_future
        return code, assignment, group

    def heartbeat(self, group_id: str, generation_id: int, member_id: str,
                  group_instance_id: str | None) -> int:
        group = self.groups.get(group_id)
        error = self._check_member(group, member_id, group_instance_id, generation_id)
        if error:
            return error
        group.members[member_id].last_heartbeat = self.clock()
        return errors.REBALANCE_IN_PROGRESS if group.state == PREPARING else errors.NONE

    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[int]:
        group = self.groups.get(group_id)
        results = []
        for member_id, instance_id in members:
            if group is None:
                results.append(errors.UNKNOWN_MEMBER_ID)
                continue
            if instance_id is not None:
                known = group.static_members.get(instance_id)
                if known is None:
                    results.append(errors.UNKNOWN_MEMBER_ID)
                    continue
                if member_id and member_id != known:
                    results.append(errors.FENCED_INSTANCE_ID)
                    continue
                member_id = known
            member = group.members.get(member_id)
            if member is None:
                results.append(errors.UNKNOWN_MEMBER_ID if member_id not in group.pending_members
                               else errors.NONE)
                group.pending_members.pop(member_id, None)
                continue
            self._remove_member(group, member)
            results.append(errors.NONE)
            self._membership_changed(group, f"member {member_id} left")
        return results

    def _membership_changed(self, group: Group, reason: str) -> None:
        if group.state in (STABLE, COMPLETING):
            self._prepare_rebalance(group, reason)
        if group.state == PREPARING:
            self._maybe_complete_join(group)

    def _check_member(self, group: Group | None, member_id: str, instance_id: str | None,
                      generation_id: int) -> int:
        if group is None or group.state == DEAD or member_id not in group.members:
            if group is not None and instance_id is not None and instance_id in group.static_members:
                return errors.FENCED_INSTANCE_ID
            return errors.UNKNOWN_MEMBER_ID
        if instance_id is not None and group.static_members.get(instance_id) != member_id:
            return errors.FENCED_INSTANCE_ID
        if generation_id != group.generation_id:
            return errors.ILLEGAL_GENERATION
        return errors.NONE

    def tick(self) -> None:
        """Expire sessions, pending member ids and rebalance timeouts."""
        now = self.clock()
        for group in list(self.groups.values()):
            for member_id, issued in list(group.pending_members.items()):
                if now - issued > PENDING_MEMBER_TIMEOUT_MS:
                    del group.pending_members[member_id]
            if group.state == PREPARING and now >= group.rebalance_deadline:
                self._maybe_complete_join(group, deadline_passed=True)
                continue
            for member in list(group.members.values()):
                waiting = member.join_future is not None and not member.join_future.done()
                if not waiting and now - member.last_heartbeat > member.session_timeout_ms:
                    log.info("group %s: member %s session expired", group.group_id, member.member_id)
                    self._remove_member(group, member)
                    self._membership_changed(group, f"member {member.member_id} expired")

    # -- offsets ----------------------------------------------------------------------------

    def check_commit(self, group_id: str, generation_id: int, member_id: str,
                     group_instance_id: str | None) -> int:
        group = self.groups.get(group_id)
        if generation_id < 0 and (group is None or group.state in (EMPTY, DEAD)):
            # A "simple" commit (admin tools, manual assignment): only while nobody consumes,
            # whatever member id the client sends (librdkafka's KIP-848 consumer sends one).
            return errors.NONE
        if generation_id < 0 and not member_id:
            return errors.UNKNOWN_MEMBER_ID
        error = self._check_member(group, member_id, group_instance_id, generation_id)
        if error:
            return error
        if group.state == COMPLETING:
            return errors.REBALANCE_IN_PROGRESS
        group.members[member_id].last_heartbeat = self.clock()
        return errors.NONE

    def commit(self, group_id: str, offsets: dict[tuple[str, int], CommittedOffset]) -> None:
        self.store.commit(group_id, offsets)
        if group_id not in self.groups:
            self.groups[group_id] = Group(group_id)

    def delete_group(self, group_id: str) -> int:
        group = self.group(group_id)
        if group is None or group.state == DEAD:
            return errors.GROUP_ID_NOT_FOUND
        if group.state != EMPTY:
            return errors.NON_EMPTY_GROUP
        self.store.delete_group(group_id)  # first: a failed write changes nothing
        group.state = DEAD
        self.groups.pop(group_id, None)
        return errors.NONE

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> tuple[int, dict]:
        group = self.group(group_id)
        if group is None:
            return errors.GROUP_ID_NOT_FOUND, {}
        subscribed = set()
        if group.state != EMPTY:
            subscribed = group.subscribed_topics()
            if subscribed is None:
                return errors.NON_EMPTY_GROUP, {}
        results = {}
        deletable = []
        for tp in partitions:
            if tp[0] in subscribed:
                results[tp] = errors.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                results[tp] = errors.NONE
                deletable.append(tp)
        self.store.delete_offsets(group_id, deletable)
        return errors.NONE, results
