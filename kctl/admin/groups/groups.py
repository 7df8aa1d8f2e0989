"""Groups of every Kafka 4.x type (classic, consumer, share, streams): list, describe,
delete, and delete committed offsets.

Groups are listed, described and their offsets fetched through kctl.admin.groups.protocol
(kctl's wire client: every type in one listing with Kafka's state names, one request per
coordinator for all the groups it owns), and each type is turned into the
shared model here by its own module (classic.py, consumer.py, share.py, streams.py).

Requests are planned per broker, never per group or partition: one OffsetFetch per
coordinator for every group, then one ListOffsets round per broker covers the union of
committed partitions (earliest and latest). kctl never joins a group.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kctl.admin.client.errors import no_such_topic
from kctl.admin.client.session import AdminSession, topic_missing
from kctl.admin.groups import protocol
from kctl.admin.groups.models import TYPES, GroupDescription, GroupResult, GroupSummary, OffsetDeletion
from kctl.errors import GroupActiveError, KctlError, NotFoundError, Partial, Resource

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Protocol, TypeVar

    class _Described(Protocol):
        """What a description of any type of group says."""

        @property
        def error_code(self) -> int: ...
        @property
        def group_state(self) -> str: ...
        @property
        def members(self) -> Sequence[object]: ...

    G = TypeVar("G", bound=_Described)

# The API that describes each newer group type, and the Apache Kafka release that has it
# on by default (a 3.9 cluster, or kctl's bundled broker, has neither share nor streams groups).
_TYPE_APIS = {"share": (77, "4.2"), "streams": (89, "4.2")}


def unsupported_types(session: AdminSession, types: Sequence[str]) -> list[tuple[str, str]]:
    """Of the group `types`, those the cluster has no API for, with the Kafka release that has them."""
    wanted = [t.lower() for t in types if t.lower() in _TYPE_APIS]
    if not wanted:
        return []
    apis = session.api_versions
    return [(t, _TYPE_APIS[t][1]) for t in dict.fromkeys(wanted) if _TYPE_APIS[t][0] not in apis]


def list_groups(
    session: AdminSession, *, states: Sequence[str] = (), types: Sequence[str] = (), regex: re.Pattern[str] | None = None
) -> list[GroupSummary]:
    """Groups of every type, filtered before anything is described (cheaper for many)."""
    wanted_states = {s.lower() for s in states}
    wanted_types = {t.lower() for t in types}
    listed = {
        g["group_id"]: g for g in protocol.list_groups(session)
        if (regex is None or regex.fullmatch(g["group_id"]))
        and (not wanted_states or (g.get("group_state") or "").lower() in wanted_states)
        and (not wanted_types or (g.get("group_type") or "").lower() in wanted_types)
    }
    details = _summaries(session, listed)
    return [details[g] for g in sorted(listed) if g in details]


def _summaries(session: AdminSession, listed: dict[str, dict]) -> dict[str, GroupSummary]:
    """Members and assignor of listed groups, each type asked the way it can answer."""
    by_type: dict[str, list[str]] = {}
    for group_id, entry in listed.items():
        by_type.setdefault(listed_type(entry), []).append(group_id)
    out: dict[str, GroupSummary] = {}

    def summarize(kind: str, described: dict[str, tuple[G, int]], assignor: Callable[[G], str | None]) -> None:
        for group_id, (raw, node) in described.items():
            if raw.error_code:
                continue
            out[group_id] = GroupSummary(
                group=group_id, state=listed[group_id].get("group_state") or raw.group_state, type=kind,
                members=len(raw.members), protocol=assignor(raw) or None, coordinator=node)

    summarize("classic", protocol.classic_group_describe(session, by_type.get("classic", [])), lambda g: g.protocol_data)
    summarize("consumer", protocol.consumer_group_describe(session, by_type.get("consumer", [])), lambda g: g.assignor_name)
    summarize("share", protocol.share_group_describe(session, by_type.get("share", [])), lambda g: g.assignor_name)
    summarize("streams", protocol.streams_group_describe(session, by_type.get("streams", [])), lambda _g: None)
    return out


def listed_type(entry: dict) -> str:
    kind = (entry.get("group_type") or "").lower()
    return kind if kind in TYPES else "classic"


CommittedOffsets = dict[tuple[str, int], tuple[int, str | None]]


def committed_offsets(session: AdminSession, ids: Sequence[str]) -> Partial[dict[str, CommittedOffsets]]:
    """Committed offsets (and their metadata) of every group, one request per coordinator;
    the error of each group whose coordinator refused."""
    out: dict[str, CommittedOffsets] = {}
    errors: dict[str, KctlError] = {}
    for group_id, (group, _node) in protocol.offset_fetch(session, ids).items():
        if group.error_code:
            errors[group_id] = described_error(group_id, group, "fetch committed offsets of group")
            continue
        out[group_id] = {
            (t.name, p.partition_index): (p.committed_offset, p.metadata or None)
            for t in group.topics for p in t.partitions if p.committed_offset >= 0 and not p.error_code
        }
    return Partial(out, errors)


def describe_groups(session: AdminSession, ids: Sequence[str]) -> Partial[list[GroupDescription]]:
    """Descriptions in the order asked; each group described as its type allows (a group
    ListGroups does not know is asked as a classic one, which Kafka answers Dead)."""
    from kctl.admin.groups import classic, consumer, share, streams

    ids = list(dict.fromkeys(ids))
    types = {g["group_id"]: listed_type(g) for g in protocol.list_groups(session, ids)}
    of_type = {kind: [g for g in ids if types.get(g, "classic") == kind] for kind in TYPES}
    committed, refused = committed_offsets(session, [g for g in ids if types.get(g, "classic") != "share"])
    share_offsets = protocol.share_group_offsets(session, of_type["share"])
    found: dict[str, GroupDescription] = {}
    errors: dict[str, KctlError] = {}
    for kind, describe in (("classic", protocol.classic_group_describe), ("consumer", protocol.consumer_group_describe),
                           ("share", protocol.share_group_describe), ("streams", protocol.streams_group_describe)):
        for group_id, (raw, node) in describe(session, of_type[kind]).items():
            offsets = committed.get(group_id, {})
            if raw.error_code:
                errors[group_id] = described_error(group_id, raw)
            elif kind == "share":
                found[group_id] = share.describe(raw, share_offsets.get(group_id, (None,))[0], node)
            elif group_id in refused:
                errors[group_id] = refused[group_id]
            elif kind == "classic" and classic.is_missing(raw, offsets):
                errors[group_id] = not_found(group_id, "describe group")
            else:
                found[group_id] = {"classic": classic, "consumer": consumer, "streams": streams}[kind].describe(raw, offsets, node)
    return Partial([found[g] for g in ids if g in found], errors)


def subscriptions(session: AdminSession, listed: Sequence[dict]) -> dict[str, dict[str, tuple[str, ...]]]:
    """The topics each member of each group with members subscribed to by name ({group:
    {member id: topics}}; `listed`: what ListGroups said of the groups). Classic groups
    of the consumer protocol, consumer and share groups; a group that cannot be described
    is left out."""
    from kctl.admin.groups import classic

    of_type: dict[str, list[str]] = {kind: [] for kind in TYPES}
    for g in listed:
        if g.get("group_state") != "Empty":
            of_type.setdefault(listed_type(g), []).append(g["group_id"])
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for group_id, (raw, _node) in protocol.classic_group_describe(session, of_type["classic"]).items():
        if not raw.error_code and raw.members:
            out[group_id] = {m.member_id: classic.subscribed(raw, m) for m in raw.members}
    for kind, describe in (("consumer", protocol.consumer_group_describe), ("share", protocol.share_group_describe)):
        for group_id, (described, _node) in describe(session, of_type[kind]).items():
            if not described.error_code and described.members:
                out[group_id] = {m.member_id: tuple(sorted(m.subscribed_topic_names or ())) for m in described.members}
    return out


def not_found(group_id: str, action: str) -> NotFoundError:
    return NotFoundError(action=f"{action} {group_id}", cause="GROUP_ID_NOT_FOUND: no such group", kafka_error="GROUP_ID_NOT_FOUND",
                         resource=Resource("group", group_id))


def described_error(group_id: str, raw, action: str = "describe group") -> KctlError:
    """The KctlError for a group's error code in an answer."""
    from kctl.admin.client.errors import for_kafka_code
    from kctl.messages.errors import error_name

    if error_name(raw.error_code) == "GROUP_ID_NOT_FOUND":
        return not_found(group_id, action)
    return for_kafka_code(raw.error_code, None, f"{action} {group_id}")


def delete_groups(session: AdminSession, ids: Sequence[str]) -> Partial[list[GroupResult]]:
    futures = session.client.delete_consumer_groups(list(ids), request_timeout=session.timeout)
    outcomes = session.wait_all(futures, "delete group")
    results, errors = [], {}
    for group_id in ids:
        outcome = outcomes[group_id]
        if isinstance(outcome, KctlError):
            if outcome.kafka_error == "GROUP_ID_NOT_FOUND":
                outcome = not_found(group_id, "delete group")
            elif outcome.kafka_error == "NON_EMPTY_GROUP":
                outcome = GroupActiveError(
                    action=f"delete group {group_id}", cause="NON_EMPTY_GROUP: the group has active members",
                    hint="stop its consumers first; kctl group describe lists them",
                )
            errors[group_id] = outcome
            results.append(GroupResult(group=group_id, status="failed", error=outcome.message))
        else:
            results.append(GroupResult(group=group_id, status="deleted"))
    return Partial(results, errors)



def delete_offsets(
    session: AdminSession, group: str, topics: Sequence[tuple[str, tuple[int, ...] | None]]
) -> Partial[list[OffsetDeletion]]:
    """Delete a group's committed offsets for topics (or some of their partitions):
    OffsetDelete to the group's coordinator. A share group's start offsets are forgotten
    per topic (DeleteShareGroupOffsets)."""
    from kctl.admin.client.errors import for_kafka_code
    from kctl.admin.groups import share
    from kctl.messages.errors import error_name

    if share.share_groups(session, [group]):
        return share.delete_offsets(session, group, topics)

    found, refused = committed_offsets(session, [group])
    if group in refused:
        raise refused[group]
    committed = found[group]
    metadata = session.metadata("delete offsets", [topic for topic, _parts in topics])
    pairs = []
    for topic, parts in topics:
        if topic_missing(metadata, topic):
            raise no_such_topic(f"delete offsets of group {group}: topic {topic}", topic)
        meta = metadata.topics[topic]
        for p in parts or sorted(meta.partitions):
            if p not in meta.partitions:
                raise NotFoundError(action=f"delete offsets of group {group}", cause=f"{topic} has no partition {p}")
            pairs.append((topic, p))
    wanted = [(t, p) for t, p in pairs if (t, p) in committed]
    code, outcome = protocol.offset_delete(session, group, wanted, f"delete offsets of group {group}") if wanted else (0, {})
    if code:
        raise for_kafka_code(code, None, f"delete offsets of group {group}", Resource("group", group))
    rows, errors = [], {}
    for topic, partition in pairs:
        if (topic, partition) not in committed:
            rows.append(OffsetDeletion(group=group, topic=topic, partition=partition, status="not-committed"))
            continue
        failed = outcome.get((topic, partition), 0)
        if not failed:
            rows.append(OffsetDeletion(group=group, topic=topic, partition=partition, status="deleted"))
            continue
        failure = for_kafka_code(failed, None, f"delete the offset of group {group} for {topic}-{partition}")
        if error_name(failed) == "GROUP_SUBSCRIBED_TO_TOPIC":
            failure = failure.but(kind=GroupActiveError, hint="a member of the group consumes this topic; stop it first")
        errors[f"{topic}-{partition}"] = failure
        rows.append(OffsetDeletion(group=group, topic=topic, partition=partition, status="failed", error=failure.message))
    return Partial(rows, errors)
