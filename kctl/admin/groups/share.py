"""Share groups (KIP-932, queues), from ShareGroupDescribe and DescribeShareGroupOffsets.

A share group has no committed offsets; each share-partition has a start offset (records
before it are done with) and Kafka's lag for it: the records after the start offset not yet
acknowledged. kctl reports the start offset where classic groups report the commit.
"""

from __future__ import annotations

from typing import Any

from kctl.admin.groups import CommittedOffset, GroupDescription, MemberInfo
from kctl.admin.groups.consumer import partitions_of


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
