"""Classic groups (the JoinGroup/SyncGroup protocol), from DescribeGroups: members with
the assignment their leader gave them, encoded in the consumer protocol when the group's
protocol type is "consumer" (Connect and other protocol types keep theirs opaque)."""

from __future__ import annotations

from kctl.admin.groups.models import GroupDescription, MemberInfo, committed_rows

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any


def assigned(raw: Any, member: Any) -> list[tuple[str, int]]:
    """(topic, partition) pairs a member of a consumer-protocol group was assigned."""
    from kctl.messages import codec

    if raw.protocol_type != "consumer" or not member.member_assignment:
        return []
    try:
        decoded = codec.decode_versioned("ConsumerProtocolAssignment", member.member_assignment)
    except codec.CodecError:  # a client's malformed assignment is shown as none, not fatal
        return []
    return [(t.topic, p) for t in decoded.assigned_partitions for p in t.partitions]


def subscribed(raw: Any, member: Any) -> tuple[str, ...]:
    """The topics a member of a consumer-protocol group subscribed to (its JoinGroup
    metadata, sorted)."""
    from kctl.messages import codec

    if raw.protocol_type != "consumer" or not member.member_metadata:
        return ()
    try:
        decoded = codec.decode_versioned("ConsumerProtocolSubscription", member.member_metadata)
    except codec.CodecError:  # as assigned(): a client's malformed metadata is shown as none
        return ()
    return tuple(sorted(decoded.topics))


def member_info(raw: Any, member: Any) -> MemberInfo:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assigned(raw, member):
        by_topic.setdefault(topic, []).append(partition)
    return MemberInfo(
        member_id=member.member_id, group_instance_id=member.group_instance_id or None, client_id=member.client_id,
        host=member.client_host,
        assignment=tuple(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in sorted(by_topic.items())),
        subscribed_topics=subscribed(raw, member),
    )


def describe(raw: Any, offsets: dict, coordinator: int | None) -> GroupDescription:
    members = tuple(sorted((member_info(raw, m) for m in raw.members), key=lambda m: (m.client_id, m.member_id)))
    return GroupDescription(
        group=raw.group_id, state=raw.group_state, type="classic",
        # The assignor the leader chose (the "protocol" of a consumer-protocol group).
        protocol=raw.protocol_data or None, coordinator=coordinator, members=members,
        offsets=committed_rows(offsets),
    )


def owners(raw: Any) -> dict[tuple[str, int], Any]:
    """The member consuming each partition (DescribeGroups' member: member_id, client_id)."""
    return {tp: member for member in raw.members for tp in assigned(raw, member)}


def is_missing(raw: Any, committed: dict) -> bool:
    """A group Kafka knows nothing about: Dead, no members, nothing committed."""
    return raw.group_state == "Dead" and not raw.members and not committed
