"""Share groups (KIP-932) as Kafka 4.3's group coordinator and share-partition manager run
them: members heartbeat (ShareGroupHeartbeat), the broker assigns partitions with Kafka's
`simple` assignor, and members fetch through share sessions (ShareFetch), acquiring records
that they acknowledge (ShareAcknowledge) — coordinator/share_partitions.py holds one
partition's records.

Membership: epoch 0 joins (the client picks its member id), -1 leaves; any change bumps the
group epoch and the target assignment, which a member takes at once (share groups revoke
nothing: a partition may be shared). A member silent for share.session.timeout.ms is
removed. Partitions are given out balanced, each to one member while there are enough of
them, and shared by several when members outnumber partitions.

Share sessions are keyed by (group, member) and bound to the connection: epoch 0 opens one,
each ShareFetch and ShareAcknowledge advances its epoch, -1 closes it; closing it, or the
connection dropping, releases the member's acquired records.

Durable (share-groups.jsonl, a journal written before answering): the groups that exist
with their epochs, their dynamic configs (share.auto.offset.reset, ...) and every share
partition's state. Members and sessions live in memory: after a restart members rejoin.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from kctl.broker.coordinator.share_partitions import InvalidRecordState, SharePartition
from kctl.broker.protocol import errors
from kctl.broker.storage.journal import Journal

log = logging.getLogger("kctl.broker.coordinator")

JOURNAL = "share-groups.jsonl"
LEAVE = -1
# The group configs that apply to share groups, with Kafka 4.3's broker defaults and the
# ranges it allows (GroupConfig / ShareGroupConfig).
CONFIGS = {
    "share.auto.offset.reset": ("latest", None),
    "share.isolation.level": ("read_uncommitted", None),
    "share.record.lock.duration.ms": ("30000", (15000, 60000)),
    "share.delivery.count.limit": ("5", (2, 10)),
    "share.partition.max.record.locks": ("2000", (100, 4000)),
    "share.session.timeout.ms": ("45000", (45000, 60000)),
    "share.heartbeat.interval.ms": ("5000", (5000, 15000)),
}
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


class ConfigError(ValueError):
    """A group config Kafka would refuse (INVALID_CONFIG); the message is Kafka's."""


def validate_config(name: str, value: str) -> str:
    if name not in CONFIGS:
        raise ConfigError(f"Unknown group config name: {name}")
    limits = CONFIGS[name][1]
    if name == "share.auto.offset.reset":
        if value not in ("earliest", "latest") and not value.startswith("by_duration:"):
            raise ConfigError(f"Invalid value {value} for configuration {name}: must be earliest, latest or by_duration:<ISO8601 duration>")
        if value.startswith("by_duration:"):
            _duration_ms(value)
    elif name == "share.isolation.level":
        if value not in ISOLATION_LEVELS:
            raise ConfigError(f"Invalid value {value} for configuration {name}: String must be one of: read_committed, read_uncommitted")
    else:
        try:
            number = int(value)
        except ValueError:
            raise ConfigError(f"Invalid value {value} for configuration {name}: Not a number of type INT") from None
        if not limits[0] <= number <= limits[1]:
            raise ConfigError(f"{name} must be in the range {limits[0]} to {limits[1]} inclusive.")
    return value


def _duration_ms(value: str) -> int:
    """by_duration:PnDTnHnMnS (ISO 8601, days and time as Java's Duration.parse takes them)."""
    import re

    match = re.fullmatch(r"by_duration:P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", value)
    if not match or not any(match.groups()):
        raise ConfigError(f"Invalid value {value} for configuration share.auto.offset.reset: by_duration needs an ISO 8601 duration")
    days, hours, minutes, seconds = (float(g or 0) for g in match.groups())
    return int(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)


@dataclass
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None = None
    subscribed: list[str] = field(default_factory=list)
    member_epoch: int = 0
    assigned: set[tuple[str, int]] = field(default_factory=set)
    last_heartbeat: int = 0
    last_sent: frozenset | None = None


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)
    topic_partitions: dict[str, int] = field(default_factory=dict)  # what the target was computed from

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def config(self, name: str) -> str:
        return self.configs.get(name, CONFIGS[name][0])

    def config_int(self, name: str) -> int:
        return int(self.config(name))


@dataclass
class HeartbeatResult:
    error: int
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: set[tuple[str, int]] | None = None


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int  # the epoch the next request must carry
    partitions: set[tuple[str, int]] = field(default_factory=set)
    connection: object = None


def simple_assignment(members: dict[str, list[str]], partitions: dict[str, int],
                      current: dict[str, set[tuple[str, int]]]) -> dict[str, set[tuple[str, int]]]:
    """Kafka's `simple` share assignor, sticky where it can be: each subscribed partition
    goes to ceil(members / partitions) members at most, members' counts differ by one."""
    target: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    by_topic: dict[str, list[str]] = {}
    for member, topics in sorted(members.items()):
        for topic in topics:
            if topic in partitions:
                by_topic.setdefault(topic, []).append(member)
    for topic, subscribers in sorted(by_topic.items()):
        tps = [(topic, p) for p in range(partitions[topic])]
        sharing = max(1, math.ceil(len(subscribers) / len(tps))) if tps else 1
        holders: dict[tuple[str, int], list[str]] = {tp: [] for tp in tps}
        # Keep what members already had, within the sharing bound and a fair share each.
        fair = math.ceil(len(tps) * sharing / len(subscribers))
        for member in subscribers:
            for tp in sorted(current.get(member, set())):
                if tp in holders and len(holders[tp]) < sharing and len(target[member]) < fair:
                    holders[tp].append(member)
                    target[member].add(tp)
        for tp in tps:
            while len(holders[tp]) < sharing:
                candidates = [m for m in subscribers if m not in holders[tp]]
                if not candidates:
                    break
                member = min(candidates, key=lambda m: (len(target[m]), m))
                holders[tp].append(member)
                target[member].add(tp)
        # Members still without a partition share the least shared ones.
        for member in subscribers:
            if not any(tp[0] == topic for tp in target[member]) and tps:
                tp = min(tps, key=lambda t: (len(holders[t]), t))
                holders[tp].append(member)
                target[member].add(tp)
    return target


class ShareGroupCoordinator:
    """`topics()` gives topic name -> partition count; `log_for(topic, partition)` the
    partition's Log; `notify()` wakes waiting fetches."""

    def __init__(self, data_dir: Path, clock: Callable[[], int], topics: Callable[[], dict[str, int]],
                 log_for, notify: Callable[[], None]):
        self.clock = clock
        self.topics = topics
        self.log_for = log_for
        self.notify = notify
        self.groups: dict[str, ShareGroup] = {}
        # Dynamic group configs by group id: kept whether or not a share group of that id
        # exists (Kafka takes configs for groups not created yet); a group reads its own.
        self.configs: dict[str, dict[str, str]] = {}
        self.partitions: dict[tuple[str, str, int], SharePartition] = {}
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self.journal = Journal(data_dir / JOURNAL)

    # -- durability -----------------------------------------------------------------------------

    def open(self) -> int:
        return self.journal.open(self._apply, self._current)

    def close(self) -> None:
        self.journal.close()

    def _apply(self, entry: dict) -> None:
        if "config" in entry:
            self.configs[entry["config"]] = dict(entry["values"])
            if entry["config"] in self.groups:
                self.groups[entry["config"]].configs = self.configs[entry["config"]]
        elif "group" in entry:
            if entry.get("deleted"):
                self.groups.pop(entry["group"], None)
                for key in [k for k in self.partitions if k[0] == entry["group"]]:
                    del self.partitions[key]
                return
            group = self.groups.setdefault(entry["group"], self._new_group(entry["group"]))
            group.group_epoch = group.assignment_epoch = int(entry.get("epoch", 0))
        elif entry.get("deleted"):
            self.partitions.pop((entry["g"], entry["t"], int(entry["p"])), None)
        else:
            sp = SharePartition.from_snapshot(entry)
            self.partitions[(sp.group_id, sp.topic, sp.partition)] = sp

    def _current(self):
        for group_id, values in self.configs.items():
            yield {"config": group_id, "values": values}
        for group in self.groups.values():
            yield self._group_entry(group)
        for sp in self.partitions.values():
            yield sp.snapshot()

    @staticmethod
    def _group_entry(group: ShareGroup) -> dict:
        return {"group": group.group_id, "epoch": group.group_epoch}

    def _new_group(self, group_id: str) -> ShareGroup:
        return ShareGroup(group_id, configs=self.configs.setdefault(group_id, {}))

    def _write(self, entry: dict) -> None:
        self.journal.write(entry)
        self.journal.compact_if_grown(self._current, len(self.configs) + len(self.groups) + len(self.partitions))

    def _save_group(self, group: ShareGroup) -> None:
        self._write(self._group_entry(group))

    def save_partition(self, sp: SharePartition) -> None:
        self._write(sp.snapshot())

    # -- ShareGroupHeartbeat --------------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed: list[str] | None, client_id: str, client_host: str, other_group_type) -> HeartbeatResult:
        """`other_group_type(group_id)` names the type of a classic or consumer group of
        that id, else None."""
        def invalid(message):
            return HeartbeatResult(errors.INVALID_REQUEST, message)

        if not group_id:
            return invalid("GroupId can't be empty.")
        if not member_id or len(member_id) > 36:
            return invalid("Invalid member id in the request.")
        if rack_id == "":
            return invalid("RackId can't be empty.")
        if member_epoch < LEAVE:
            return invalid("MemberEpoch is invalid.")
        if member_epoch == 0 and not subscribed:
            return invalid("SubscribedTopicNames must be set in first request.")
        if other_group_type(group_id):
            return HeartbeatResult(errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        group = self.groups.get(group_id)
        if member_epoch == LEAVE:
            if group is None:
                return HeartbeatResult(errors.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
            if member_id not in group.members:
                return HeartbeatResult(errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            self._remove(group, member_id, "left")
            return HeartbeatResult(errors.NONE, None, member_id, LEAVE)
        if group is None:
            if member_epoch != 0:
                return HeartbeatResult(errors.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
            group = self.groups[group_id] = self._new_group(group_id)
        member = group.members.get(member_id)
        now = self.clock()
        if member is None:
            if member_epoch != 0:
                return HeartbeatResult(errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            if len(group.members) >= 200:  # group.share.max.size
                return HeartbeatResult(errors.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum capacity of 200 members.")
            member = group.members[member_id] = ShareMember(member_id, client_id, client_host, rack_id)
            changed = True
        else:
            if member_epoch not in (0, member.member_epoch):
                return HeartbeatResult(errors.FENCED_MEMBER_EPOCH,
                                       f"The share group member has a greater epoch ({member_epoch}) than the one known by the group coordinator ({member.member_epoch})."
                                       if member_epoch > member.member_epoch else
                                       f"The share group member has a smaller epoch ({member_epoch}) than the one known by the group coordinator ({member.member_epoch}).")
            changed = False
        member.last_heartbeat = now
        if rack_id is not None:
            member.rack_id = rack_id
        if subscribed is not None and sorted(subscribed) != sorted(member.subscribed):
            member.subscribed = list(subscribed)
            changed = True
        partitions = {t: n for t, n in self.topics().items() if any(t in m.subscribed for m in group.members.values())}
        if changed or partitions != group.topic_partitions:
            self._rebalance(group, partitions)
        member.member_epoch = group.assignment_epoch
        assignment = None
        if member_epoch == 0 or subscribed is not None or member.last_sent != frozenset(member.assigned):
            assignment = set(member.assigned)
            member.last_sent = frozenset(member.assigned)
        return HeartbeatResult(errors.NONE, None, member_id, member.member_epoch,
                               group.config_int("share.heartbeat.interval.ms"), assignment)

    def _rebalance(self, group: ShareGroup, partitions: dict[str, int] | None = None) -> None:
        if partitions is None:
            partitions = {t: n for t, n in self.topics().items() if any(t in m.subscribed for m in group.members.values())}
        group.topic_partitions = partitions
        group.group_epoch += 1
        target = simple_assignment({m.member_id: m.subscribed for m in group.members.values()}, partitions,
                                   {m.member_id: m.assigned for m in group.members.values()})
        for member_id, assigned in target.items():
            group.members[member_id].assigned = assigned
        group.assignment_epoch = group.group_epoch
        try:
            self._save_group(group)
        except OSError as exc:  # membership is in memory; the epoch is re-saved with the next change
            log.error("share group %s epoch not saved: %s", group.group_id, exc.strerror or exc)

    def _remove(self, group: ShareGroup, member_id: str, why: str) -> None:
        group.members.pop(member_id, None)
        for key in [k for k, s in self.sessions.items() if k == (group.group_id, member_id)]:
            self.close_session(self.sessions[key])
        log.info("share group %s: member %s %s", group.group_id, member_id, why)
        self._rebalance(group)

    def tick(self) -> None:
        """Session timeouts of members, and expired acquisition locks."""
        now = self.clock()
        for group in list(self.groups.values()):
            timeout = group.config_int("share.session.timeout.ms")
            for member in list(group.members.values()):
                if now - member.last_heartbeat > timeout:
                    self._remove(group, member.member_id, f"was removed: no heartbeat for {timeout} ms")
        released = False
        for sp in self.partitions.values():
            deadline = sp.next_deadline()
            if deadline is not None and deadline <= now:
                group = self.groups.get(sp.group_id)
                limit = group.config_int("share.delivery.count.limit") if group else 5
                if sp.release(None, now, limit):
                    released = True
                    self._persist_quietly(sp)
        if released:
            self.notify()

    def _persist_quietly(self, sp: SharePartition) -> None:
        try:
            self.save_partition(sp)
        except OSError as exc:  # released records are redelivered either way
            log.error("share partition %s-%d of %s not saved: %s", sp.topic, sp.partition, sp.group_id, exc.strerror or exc)

    # -- share sessions ---------------------------------------------------------------------------

    def open_session(self, group_id: str, member_id: str, partitions, connection) -> ShareSession:
        old = self.sessions.get((group_id, member_id))
        if old is not None:
            self.close_session(old)
        session = self.sessions[(group_id, member_id)] = ShareSession(group_id, member_id, 1, set(partitions), connection)
        return session

    def close_session(self, session: ShareSession) -> None:
        """The session ends: the member's acquired records are released."""
        if self.sessions.get((session.group_id, session.member_id)) is session:
            del self.sessions[(session.group_id, session.member_id)]
        group = self.groups.get(session.group_id)
        limit = group.config_int("share.delivery.count.limit") if group else 5
        released = False
        for (g, _topic, _partition), sp in self.partitions.items():
            if g == session.group_id and sp.release(session.member_id, None, limit):
                released = True
                self._persist_quietly(sp)
        if released:
            self.notify()

    def connection_closed(self, connection) -> None:
        for session in [s for s in self.sessions.values() if s.connection is connection]:
            self.close_session(session)

    # -- share partitions -------------------------------------------------------------------------

    def share_partition(self, group: ShareGroup, topic: str, partition: int) -> SharePartition | None:
        """The group's share partition, initialized from share.auto.offset.reset on first use."""
        key = (group.group_id, topic, partition)
        sp = self.partitions.get(key)
        plog = self.log_for(topic, partition)
        if plog is None:
            return None
        if sp is None:
            sp = self.partitions[key] = SharePartition(group.group_id, topic, partition, state_epoch=group.group_epoch)
        if not sp.initialized:
            sp.initialize(self._reset_offset(group, plog))
            self._persist_quietly(sp)
        sp.skip_to(plog.log_start_offset)
        return sp

    def _reset_offset(self, group: ShareGroup, plog) -> int:
        policy = group.config("share.auto.offset.reset")
        if policy == "earliest":
            return plog.log_start_offset
        if policy.startswith("by_duration:"):
            found = plog.find_by_timestamp(self.clock() - _duration_ms(policy))
            return found[0] if found is not None else plog.log_end_offset
        return plog.log_end_offset

    def acknowledge(self, group: ShareGroup, sp: SharePartition, member_id: str, batches) -> int:
        """Apply acknowledgements, durably; an error code for the partition."""
        saved = ({o: replace(r) for o, r in sp.records.items()}, sp.start_offset)
        try:
            changed = sp.acknowledge(member_id, batches, group.config_int("share.delivery.count.limit"),
                                     self.clock() + group.config_int("share.record.lock.duration.ms"))
        except InvalidRecordState as exc:
            log.debug("share acknowledgement refused: %s", exc)
            return errors.INVALID_RECORD_STATE
        if changed:
            try:
                self.save_partition(sp)
            except OSError as exc:  # not durable, so not done: the records stay acquired
                sp.records, sp.start_offset = saved
                log.error("share acknowledgement of %s-%d not saved: %s", sp.topic, sp.partition, exc.strerror or exc)
                return errors.KAFKA_STORAGE_ERROR
            self.notify()
        return errors.NONE

    # -- admin ------------------------------------------------------------------------------------

    def delete_group(self, group_id: str) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return errors.GROUP_ID_NOT_FOUND
        if group.members:
            return errors.NON_EMPTY_GROUP
        self._write({"group": group_id, "deleted": True})
        self._apply({"group": group_id, "deleted": True})
        return errors.NONE

    def ensure_group(self, group_id: str) -> ShareGroup:
        """The group, created (durably) if it does not exist (AlterShareGroupOffsets does)."""
        group = self.groups.get(group_id)
        if group is None:
            group = self._new_group(group_id)
            self._save_group(group)
            self.groups[group_id] = group
        return group

    def set_configs(self, group_id: str, configs: dict[str, str | None]) -> None:
        """Set (None: remove) a group id's dynamic configs, durably."""
        values = self.configs.setdefault(group_id, {})
        new = {k: v for k, v in {**values, **configs}.items() if v is not None}
        self._write({"config": group_id, "values": new})
        values.clear()
        values.update(new)

    def reset_partition(self, group: ShareGroup, topic: str, partition: int, offset: int | None) -> None:
        """AlterShareGroupOffsets (offset) or DeleteShareGroupOffsets (None), durably."""
        key = (group.group_id, topic, partition)
        if offset is None:
            self._write({"g": group.group_id, "t": topic, "p": partition, "deleted": True})
            self.partitions.pop(key, None)
            return
        sp = SharePartition(group.group_id, topic, partition, offset, offset, state_epoch=group.group_epoch + 1)
        self._write(sp.snapshot())
        self.partitions[key] = sp


def new_member_id() -> str:
    return str(uuid.uuid4())
