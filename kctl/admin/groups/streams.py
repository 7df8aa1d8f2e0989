"""Streams groups (KIP-1071), from StreamsGroupDescribe: members own tasks (a subtopology
and its partitions) rather than topic partitions; committed offsets are ordinary ones."""

from __future__ import annotations

from kctl.admin.groups.models import GroupDescription, MemberInfo, Subtopology, committed_rows

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any

    from kctl.messages import types as t


def tasks_of(assignment: t.StreamsGroupDescribeResponseAssignment | None) -> tuple[str, ...]:
    """"subtopology:0,1" entries of the active tasks, sorted."""
    tasks: list[t.StreamsGroupDescribeResponseTaskIds] = getattr(assignment, "active_tasks", None) or []
    return tuple(sorted(f"{t.subtopology_id}:{','.join(map(str, sorted(t.partitions)))}" for t in tasks))


def describe(raw: t.StreamsGroupDescribeResponseDescribedGroup, offsets: dict[tuple[str, int], tuple[int, str | None]],
             coordinator: int | None) -> GroupDescription:
    members = tuple(sorted((
        MemberInfo(
            member_id=m.member_id, group_instance_id=m.instance_id or None, client_id=m.client_id,
            host=m.client_host, assignment=tasks_of(m.assignment), member_epoch=m.member_epoch,
            target_assignment=tasks_of(m.target_assignment),
        ) for m in raw.members), key=lambda m: (m.client_id, m.member_id)))
    return GroupDescription(
        group=raw.group_id, state=raw.group_state, type="streams", protocol=None, coordinator=coordinator,
        members=members,
        offsets=committed_rows(offsets),
        group_epoch=raw.group_epoch, assignment_epoch=raw.assignment_epoch, topology=topology(raw),
    )


def topology(raw: t.StreamsGroupDescribeResponseDescribedGroup) -> tuple[Subtopology, ...] | None:
    subtopologies: list[t.StreamsGroupDescribeResponseSubtopology] | None = getattr(getattr(raw, "topology", None), "subtopologies", None)
    if subtopologies is None:
        return None
    return tuple(sorted((
        Subtopology(
            subtopology=st.subtopology_id, source_topics=tuple(sorted(st.source_topics)),
            repartition_source_topics=tuple(sorted(t.name for t in st.repartition_source_topics or ())),
            repartition_sink_topics=tuple(sorted(st.repartition_sink_topics or ())),
            changelog_topics=tuple(sorted(t.name for t in st.state_changelog_topics or ())),
        ) for st in subtopologies), key=lambda st: (len(st.subtopology), st.subtopology)))


# raw is a t.StreamsGroupDescribeResponseDescribedGroup; Any because kctl.admin.groups.lag calls
# classic's, consumer's and this owners() from one loop, with the union of the three groups' types.
def owners(raw: Any) -> dict[tuple[str, int], MemberInfo]:
    """The member owning each source-topic partition: an active task of a subtopology owns
    that partition of every source topic of the subtopology (repartition topics included)."""
    sources: dict[str, list[str]] = {st.subtopology_id: [*st.source_topics, *(t.name for t in st.repartition_source_topics or ())]
                                     for st in (getattr(getattr(raw, "topology", None), "subtopologies", None) or [])}
    out: dict[tuple[str, int], MemberInfo] = {}
    m: t.StreamsGroupDescribeResponseMember
    task: t.StreamsGroupDescribeResponseTaskIds
    for m in raw.members:
        member = MemberInfo(member_id=m.member_id, group_instance_id=m.instance_id or None, client_id=m.client_id,
                            host=m.client_host, assignment=tasks_of(m.assignment), member_epoch=m.member_epoch)
        for task in getattr(m.assignment, "active_tasks", None) or []:
            for topic in sources.get(task.subtopology_id, ()):
                for partition in task.partitions:
                    out[(topic, partition)] = member
    return out
