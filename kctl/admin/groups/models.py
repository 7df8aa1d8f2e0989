"""The shared model of groups of every type: what a description, a listing and a lag
computation return. Field names are the JSON keys (a stable contract)."""

from __future__ import annotations

from kctl.values import Value

# Every group type's states as Kafka's ListGroups names them: classic groups rebalance
# (PreparingRebalance, CompletingRebalance), consumer and streams groups reconcile
# (Assigning, Reconciling; streams groups are NotReady until their topics exist).
STATES = ("Stable", "Empty", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling", "NotReady", "Dead", "Unknown")
TYPES = ("classic", "consumer", "share", "streams")
# The groups kctl commits offsets in for its own bookkeeping, by the prefix of their names,
# and whose they are: no consumer of the user's reads as them, so `topic clone
# --with-groups` copies none of them and `kctl top` does not count them as stalled.
KCTL_GROUPS = (("kctl-clone-", "topic clone"), ("kctl-redrive-", "record redrive"))


def kctl_group(group: str) -> str | None:
    """The kctl command whose bookkeeping `group` is, or None: a group of the user's."""
    return next((command for prefix, command in KCTL_GROUPS if group.startswith(prefix)), None)


class GroupSummary(Value):
    __slots__ = ("group", "state", "type", "members", "protocol", "coordinator")

    def __init__(self, *, group: str, state: str, type: str, members: int, protocol: str | None, coordinator: int | None):
        self.group = group
        self.state = state
        # classic | consumer | share | streams | unknown
        self.type = type
        self.members = members
        self.protocol = protocol
        self.coordinator = coordinator


class MemberInfo(Value):
    __slots__ = ("member_id", "group_instance_id", "client_id", "host", "assignment", "member_epoch", "target_assignment", "subscribed_topics", "subscribed_regex")

    def __init__(
        self, *,
        member_id: str, group_instance_id: str | None, client_id: str, host: str, assignment: tuple[str, ...], member_epoch: int | None = None,
        target_assignment: tuple[str, ...] | None = None, subscribed_topics: tuple[str, ...] = (), subscribed_regex: str | None = None,
    ):
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.host = host
        # "topic:0,1,2" entries, sorted (streams groups: "subtopology:0,1" active tasks)
        self.assignment = assignment
        # Consumer, share and streams groups (null for classic ones): the member's epoch, what
        # the group wants it to own once reconciled, and what it subscribed to.
        self.member_epoch = member_epoch
        self.target_assignment = target_assignment
        self.subscribed_topics = subscribed_topics
        self.subscribed_regex = subscribed_regex


class CommittedOffset(Value):
    __slots__ = ("topic", "partition", "offset", "metadata")

    def __init__(self, *, topic: str, partition: int, offset: int | None, metadata: str | None):
        self.topic = topic
        self.partition = partition
        # Share groups: the share-partition start offset (null until the group reads there).
        self.offset = offset
        self.metadata = metadata


class GroupDescription(Value):
    __slots__ = ("group", "state", "type", "protocol", "coordinator", "members", "offsets", "group_epoch", "assignment_epoch", "topology")

    def __init__(
        self, *,
        group: str, state: str, type: str, protocol: str | None, coordinator: int | None, members: tuple[MemberInfo, ...],
        offsets: tuple[CommittedOffset, ...], group_epoch: int | None = None, assignment_epoch: int | None = None,
        topology: tuple[Subtopology, ...] | None = None,
    ):
        self.group = group
        self.state = state
        self.type = type
        # The classic protocol's assignor, or the assignor the broker chose for the others.
        self.protocol = protocol
        self.coordinator = coordinator
        self.members = members
        self.offsets = offsets
        # Consumer, share and streams groups: the group's epoch and the epoch of its target
        # assignment (they differ while members reconcile); null for classic groups.
        self.group_epoch = group_epoch
        self.assignment_epoch = assignment_epoch
        # Streams groups: the application's subtopologies as the group coordinator knows them
        # (null for other types, and until the coordinator has initialized the topology).
        self.topology = topology


class Subtopology(Value):
    __slots__ = ("subtopology", "source_topics", "repartition_source_topics", "repartition_sink_topics", "changelog_topics")

    def __init__(
        self, *,
        subtopology: str, source_topics: tuple[str, ...], repartition_source_topics: tuple[str, ...], repartition_sink_topics: tuple[str, ...],
        changelog_topics: tuple[str, ...],
    ):
        self.subtopology = subtopology
        self.source_topics = source_topics
        # Internal topics: repartition topics it reads and writes, its state stores' changelogs.
        self.repartition_source_topics = repartition_source_topics
        self.repartition_sink_topics = repartition_sink_topics
        self.changelog_topics = changelog_topics


# Not frozen, unlike kctl's other results: `group lag --all` builds one per committed
# partition (100,000 at 10,000 groups) and a frozen dataclass's __init__ is three times
# slower (0.18 s vs 0.07 s for 100,000). Treat it as immutable all the same.
class PartitionLag(Value):
    __slots__ = ("group", "topic", "partition", "committed", "log_start", "log_end", "raw_lag", "lag", "flags", "member_id", "client_id", "lag_seconds", "lag_seconds_source", "remote_read")

    def __init__(
        self, *,
        group: str, topic: str, partition: int, committed: int | None, log_start: int | None, log_end: int | None, raw_lag: int | None,
        lag: int | None, flags: tuple[str, ...], member_id: str | None, client_id: str | None, lag_seconds: float | None = None,
        lag_seconds_source: str = "none", remote_read: bool = False,
    ):
        self.group = group
        self.topic = topic
        self.partition = partition
        self.committed = committed
        self.log_start = log_start
        self.log_end = log_end
        self.raw_lag = raw_lag
        self.lag = lag
        # NO_COMMIT, BELOW_LOG_START, AHEAD_OF_END
        self.flags = flags
        # The member consuming the partition now, if any.
        self.member_id = member_id
        self.client_id = client_id
        # How old the next record to consume is (0 when caught up, null when unknown), and
        # how that was measured: record (its timestamp), caught_up, or none.
        self.lag_seconds = lag_seconds
        self.lag_seconds_source = lag_seconds_source
        # Tiered storage: the next offset to read is below the earliest local offset, so the
        # group's next reads are served from remote storage (false on topics without it).
        self.remote_read = remote_read


class GroupLag(Value):
    __slots__ = ("group", "state", "members", "lag_sum", "lag_max", "lag_seconds_max", "partitions_without_commit", "partitions")

    def __init__(
        self, *,
        group: str, state: str, members: int, lag_sum: int, lag_max: int, lag_seconds_max: float | None, partitions_without_commit: int,
        partitions: tuple[PartitionLag, ...],
    ):
        self.group = group
        self.state = state
        self.members = members
        self.lag_sum = lag_sum
        self.lag_max = lag_max
        # The largest lag_seconds of the group's partitions, null when none is known.
        self.lag_seconds_max = lag_seconds_max
        self.partitions_without_commit = partitions_without_commit
        self.partitions = partitions


class GroupResult(Value):
    __slots__ = ("group", "status", "error")

    def __init__(self, *, group: str, status: str, error: str | None = None):
        self.group = group
        # deleted | failed
        self.status = status
        self.error = error



class OffsetDeletion(Value):
    __slots__ = ("group", "topic", "partition", "status", "error")

    def __init__(self, *, group: str, topic: str, partition: int, status: str, error: str | None = None):
        self.group = group
        self.topic = topic
        self.partition = partition
        # deleted | not-committed | failed
        self.status = status
        self.error = error


def committed_rows(offsets: dict[tuple[str, int], tuple[int, str | None]]) -> tuple[CommittedOffset, ...]:
    """Committed offsets as a description lists them, by topic and partition. (librdkafka
    commits a string's terminating NUL with it: not part of what its client meant.)"""
    return tuple(CommittedOffset(topic=t, partition=p, offset=o, metadata=md.rstrip("\x00") if md else md)
                 for (t, p), (o, md) in sorted(offsets.items()))

