"""Share groups (KIP-932, queues), from ShareGroupDescribe and DescribeShareGroupOffsets.

A share group has no committed offsets; each share-partition has a start offset (records
before it are done with) and Kafka's lag for it: the records after the start offset not yet
acknowledged. kctl reports the start offset where classic groups report the commit, and
resets it (AlterShareGroupOffsets, only while the group is empty: kctl.admin.groups.resets)
where classic groups' commits are reset. Kafka forgets share state per topic, not per partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kctl.admin.client.errors import no_such_topic
from kctl.admin.client.session import AdminSession, topic_missing
from kctl.admin.groups import protocol
from kctl.admin.groups.consumer import partitions_of
from kctl.admin.groups.models import CommittedOffset, GroupDescription, MemberInfo, OffsetDeletion
from kctl.errors import GroupActiveError, KctlError, UsageError
from kctl.messages.errors import ERRORS, error_name

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any


def start_offsets(raw_offsets: Any) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    """(start offset, lag) per share-partition; None where Kafka has none yet (-1)."""
    out = {}
    for topic in getattr(raw_offsets, "topics", None) or []:
        for p in topic.partitions:
            lag = getattr(p, "lag", -1)
            out[(topic.topic_name, p.partition_index)] = (p.start_offset if p.start_offset >= 0 else None,
                                                         lag if lag is not None and lag >= 0 else None)
    return out


def describe(raw: Any, raw_offsets: Any, coordinator: int | None) -> GroupDescription:
    members = tuple(sorted((
        MemberInfo(
            member_id=m.member_id, group_instance_id=None, client_id=m.client_id, host=m.client_host,
            assignment=partitions_of(m.assignment), member_epoch=m.member_epoch,
            subscribed_topics=tuple(sorted(m.subscribed_topic_names or ())),
        ) for m in raw.members), key=lambda m: (m.client_id, m.member_id)))
    offsets = tuple(
        CommittedOffset(topic=t, partition=p, offset=start, metadata=None)
        for (t, p), (start, _lag) in sorted(start_offsets(raw_offsets).items()))
    return GroupDescription(
        group=raw.group_id, state=raw.group_state, type="share", protocol=raw.assignor_name or None,
        coordinator=coordinator, members=members, offsets=offsets,
        group_epoch=raw.group_epoch, assignment_epoch=raw.assignment_epoch,
    )


def share_groups(session: AdminSession, group_ids: Iterable[str]) -> set[str]:
    """Which of `group_ids` are share groups."""
    wanted = set(group_ids)
    return {g["group_id"] for g in protocol.list_groups(session)
            if g["group_id"] in wanted and (g.get("group_type") or "").lower() == "share"}


def start_offsets_of(session: AdminSession, group_ids: Sequence[str]) -> dict[str, dict[tuple[str, int], tuple[int, str | None]]]:
    """Start offsets of share groups in the shape of committed offsets: (offset, metadata)
    per share-partition that has one."""
    raw = protocol.share_group_offsets(session, group_ids)
    out: dict[str, dict] = {g: {} for g in group_ids}
    for group_id, (offsets, _node) in raw.items():
        out[group_id] = {k: (start, None) for k, (start, _lag) in start_offsets(offsets).items() if start is not None}
    return out


def delete_offsets(session: AdminSession, group_id: str, topics: Sequence[tuple[str, tuple[int, ...] | None]]):
    """Forget a share group's state for whole topics: a row per share-partition that had a
    start offset, and the errors (an active group refuses: GROUP_ACTIVE)."""
    if any(parts for _topic, parts in topics):
        raise UsageError(action=f"delete offsets of share group {group_id}", cause="Kafka forgets a share group's state per "
                         "topic; name topics without partitions")
    names = [topic for topic, _parts in topics]
    metadata = session.metadata("delete offsets", names)
    for topic in names:
        if topic_missing(metadata, topic):
            raise no_such_topic(f"delete offsets of group {group_id}: topic {topic}", topic)
    starts = start_offsets_of(session, [group_id])[group_id]
    code, results = protocol.delete_share_group_offsets(session, group_id, names)
    rows, errors = [], {}
    for topic in names:
        failed = code or results.get(topic, 0)
        error = None
        if failed:
            name = error_name(failed)
            kind = GroupActiveError if name in ("NON_EMPTY_GROUP", "GROUP_SUBSCRIBED_TO_TOPIC") else KctlError
            error = errors[topic] = kind(action=f"delete offsets of share group {group_id} for {topic}",
                                         cause=f"{name}: {ERRORS.get(failed, (name, name))[1]}", kafka_error=name)
        for partition in sorted(metadata.topics[topic].partitions):
            status = "failed" if error else "deleted" if (topic, partition) in starts else "not-committed"
            rows.append(OffsetDeletion(group=group_id, topic=topic, partition=partition, status=status,
                                       error=error.message if error else None))
    return rows, errors
