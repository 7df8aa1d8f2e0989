"""Streams groups (KIP-1071), from StreamsGroupDescribe: members own tasks (a subtopology
and its partitions) rather than topic partitions; committed offsets are ordinary ones."""

from __future__ import annotations

from kctl.admin.groups.models import GroupDescription, MemberInfo, Subtopology, committed_rows

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from kctl.admin.client.session import AdminSession
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


def internal_topics(session: AdminSession, group_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The internal topics of each of the streams groups `group_ids`, as
    kafka-streams-groups --delete-all-internal-topics finds them: the repartition and
    changelog topics its topology names (StreamsGroupDescribe), and the topics that exist
    under Kafka Streams' names for them ("<application id>-...-repartition" and
    "...-changelog": a group whose members left may hold no topology). A group that is
    not a streams group is an InvalidError (topics named after another group's id are
    not its to delete); one that does not exist has none."""
    from kctl.admin.client.errors import for_kafka_code
    from kctl.admin.groups.protocol import list_groups, streams_group_describe
    from kctl.errors import InvalidError

    action = "find the streams groups' internal topics"
    types = {g["group_id"]: g["group_type"] for g in list_groups(session, group_ids)}
    for group_id, kind in types.items():
        if kind != "streams":
            raise InvalidError(action=f"delete the internal topics of group {group_id}", cause=f"it is a {kind or 'classic'} group, not a streams group",
                               hint="only a streams group has internal topics; kctl group list --type streams lists them")
    streams = [g for g in group_ids if g in types]  # one that does not exist is not deleted either: said there
    described = streams_group_describe(session, streams) if streams else {}
    existing = session.kafka.metadata(None, action, topic_ids=False).topics if streams else {}
    found: dict[str, tuple[str, ...]] = {}
    for group_id in streams:
        raw, _coordinator = described[group_id]
        if raw.error_code:
            raise for_kafka_code(raw.error_code, raw.error_message, action)
        named = {topic for st in topology(raw) or () for topic in (*st.repartition_source_topics, *st.repartition_sink_topics, *st.changelog_topics)}
        inferred = {name for name in existing if name.startswith(f"{group_id}-") and name.endswith(("-repartition", "-changelog"))}
        found[group_id] = tuple(sorted(name for name in named | inferred if name in existing))
    return found
