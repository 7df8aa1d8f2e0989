"""kctl's group reads and the group APIs of Kafka 4.x that confluent-kafka does not expose,
sent through kctl's wire client (kctl.admin.client.wire): ListGroups v5 (every group type
with Kafka's state names; librdkafka lists only classic and consumer groups), DescribeGroups
and OffsetFetch v8 batched per coordinator (librdkafka sends one request per group, the cost
that dominated `group list` and `group lag --all` on many groups), ConsumerGroupDescribe
(KIP-848 epochs and target assignments), ShareGroupDescribe and Describe/Alter/Delete-
ShareGroupOffsets (KIP-932), StreamsGroupDescribe (KIP-1071); and the group writes of offset resets:
OffsetCommit as an admin commits (no member) and OffsetDelete, so a reset (and its undo)
talks to the coordinators through one client.

Requests go to each group's coordinator, one per coordinator for all the groups it owns,
every coordinator's request sent before any answer is read. Answers are kctl.messages.codec
Structs: fields in snake case (`error_code`, `group_state`, `members`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from kctl.admin.client.coordinators import GROUP, per_coordinator
from kctl.admin.client.errors import COORDINATOR_RETRIABLE
from kctl.admin.client.session import AdminSession
from kctl.messages import apis
from kctl.messages.errors import error_name

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import TypeVar

    from kctl.admin.client.coordinators import P, Request
    from kctl.messages import types as t

    R = TypeVar("R")
    # Each group's part of an answer, and the id of the coordinator that gave it.
    DescribedGroups = dict[str, tuple[t.DescribeGroupsResponseDescribedGroup, int]]


def list_groups(session: AdminSession, ids: Sequence[str] | None = None) -> list[dict]:
    """Every group of the cluster (or only those of `ids` that exist): group_id,
    group_type (classic, consumer, share, streams) and group_state as Kafka names them;
    one ListGroups per broker, or, for `ids`, per coordinator of theirs (a group is listed
    by its coordinator: no Metadata request for the brokers, a round trip less). A broker
    still loading its groups (after a restart or a leader change) is asked again until
    the timeout."""
    from kctl.admin.client.coordinators import GROUP, find_coordinators

    groups: dict[str, dict] = {}
    every: t.ListGroupsRequest = {"states_filter": [], "types_filter": []}
    wanted = None if ids is None else set(ids)

    def coordinators(deadline: float) -> list[int] | None:
        found = find_coordinators(session, GROUP, sorted(wanted or ()), deadline)
        return None if found is None else sorted(set(found.values()))

    for _node, answer in session.ask_every_broker("list groups", apis.LIST_GROUPS, every, 0, 5,
                                                  "a group coordinator was still loading its groups",
                                                  nodes=None if wanted is None else coordinators):
        for g in answer.groups:
            if wanted is None or g.group_id in wanted:
                groups[g.group_id] = {"group_id": g.group_id, "protocol_type": g.protocol_type,
                                      "group_state": g.group_state or None, "group_type": g.group_type or None}
    return list(groups.values())


def per_group(
    session: AdminSession, group_ids: Sequence[str], request: Callable[[list[str]], Request[R]],
    parts: Callable[[R], Iterable[tuple[str, P]]], action: str,
) -> dict[str, tuple[P, int]]:
    """Send request(ids) to each group coordinator for the groups it owns; each group's
    part of the answer and its coordinator's id (coordinators.per_coordinator)."""
    return per_coordinator(session, GROUP, group_ids, request, parts, action)




def classic_group_describe(session: AdminSession, group_ids: Sequence[str]) -> DescribedGroups:
    """(DescribeGroups' DescribedGroup, coordinator id) per group id: state, protocol type
    and assignor, members with their encoded subscriptions and assignments."""
    return per_group(session, group_ids, lambda ids: (apis.DESCRIBE_GROUPS, {"groups": ids}, 0, 6),
                     lambda r: ((g.group_id, g) for g in r.groups), "describe groups")


def consumer_group_describe(session: AdminSession, group_ids: Sequence[str]) -> dict[str, tuple[t.ConsumerGroupDescribeResponseDescribedGroup, int]]:
    """(ConsumerGroupDescribe's DescribedGroup, coordinator id) per group id; a failure is
    the struct's error_code."""
    return per_group(session, group_ids, lambda ids: (apis.CONSUMER_GROUP_DESCRIBE, {"group_ids": ids}, None, None),
                     lambda r: ((g.group_id, g) for g in r.groups), "describe consumer groups")


def share_group_describe(session: AdminSession, group_ids: Sequence[str]) -> dict[str, tuple[t.ShareGroupDescribeResponseDescribedGroup, int]]:
    return per_group(session, group_ids, lambda ids: (apis.SHARE_GROUP_DESCRIBE, {"group_ids": ids}, None, None),
                     lambda r: ((g.group_id, g) for g in r.groups), "describe share groups")


def streams_group_describe(session: AdminSession, group_ids: Sequence[str]) -> dict[str, tuple[t.StreamsGroupDescribeResponseDescribedGroup, int]]:
    return per_group(session, group_ids, lambda ids: (apis.STREAMS_GROUP_DESCRIBE, {"group_ids": ids}, None, None),
                     lambda r: ((g.group_id, g) for g in r.groups), "describe streams groups")


def offset_fetch(session: AdminSession, group_ids: Sequence[str]) -> dict[str, tuple[t.OffsetFetchResponseGroup, int]]:
    """(OffsetFetch's response group, coordinator id) per group id: every committed offset
    of every group a coordinator owns in one request (KIP-709, OffsetFetch v8+; librdkafka
    asks one group per request)."""
    # v10 names topics by id only; v8-v9 by name, which is what every caller wants.
    return per_group(session, group_ids,
                     lambda ids: (apis.OFFSET_FETCH, {"groups": [{"group_id": g, "topics": None} for g in ids]}, 8, 9),
                     lambda r: ((g.group_id, g) for g in r.groups), "fetch committed offsets")


def share_group_offsets(session: AdminSession, group_ids: Sequence[str]) -> dict[str, tuple[t.DescribeShareGroupOffsetsResponseGroup, int]]:
    """DescribeShareGroupOffsets of every topic a share group has state for: per group the
    response group (topics -> partitions with start_offset and, from v1, lag) and its
    coordinator."""
    return per_group(session, group_ids,
                     lambda ids: (apis.DESCRIBE_SHARE_GROUP_OFFSETS, {"groups": [{"group_id": g, "topics": None} for g in ids]}, None, None),
                     lambda r: ((g.group_id, g) for g in r.groups), "describe share group offsets")


def alter_share_group_offsets(session: AdminSession, group_id: str, offsets: dict[tuple[str, int], int]) -> tuple[int, dict[tuple[str, int], int]]:
    """Set share-partition start offsets (the group must be empty): the top-level error
    code and each partition's."""
    by_topic: dict[str, list] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append({"partition_index": partition, "start_offset": offset})
    fields: t.AlterShareGroupOffsetsRequest = {"group_id": group_id, "topics": [{"topic_name": name, "partitions": ps} for name, ps in by_topic.items()]}
    response, _node = per_group(session, [group_id], lambda _ids: (apis.ALTER_SHARE_GROUP_OFFSETS, fields, None, None), lambda r: [(group_id, r)],
                                f"reset offsets of share group {group_id}")[group_id]
    return response.error_code, {(t.topic_name, p.partition_index): p.error_code for t in response.responses for p in t.partitions}


def delete_share_group_offsets(session: AdminSession, group_id: str, topics: Sequence[str]) -> tuple[int, dict[str, int]]:
    """Forget a share group's state for whole topics: the top-level and per-topic error codes."""
    fields: t.DeleteShareGroupOffsetsRequest = {"group_id": group_id, "topics": [{"topic_name": name} for name in topics]}
    response, _node = per_group(session, [group_id], lambda _ids: (apis.DELETE_SHARE_GROUP_OFFSETS, fields, None, None), lambda r: [(group_id, r)],
                                f"delete offsets of share group {group_id}")[group_id]
    return response.error_code, {t.topic_name: t.error_code for t in response.responses}


class _Answer:
    """An answer whose errors are per partition, as per_group reads a group's part: the
    error that says to ask the coordinator again (any partition's), else none."""

    def __init__(self, response: t.OffsetCommitResponse):
        self.response = response
        codes = [p.error_code for t in response.topics for p in t.partitions]
        self.error_code = next((c for c in codes if error_name(c) in COORDINATOR_RETRIABLE), 0)


def offset_commit(session: AdminSession, group_id: str, offsets: dict[tuple[str, int], int], action: str) -> dict[tuple[str, int], int]:
    """Commit `offsets` as an admin does (no member, generation -1: Kafka's
    AlterConsumerGroupOffsets, which the coordinator refuses while the group has members):
    each partition's error code, 0 where committed."""
    by_topic: dict[str, list] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset, "committed_leader_epoch": -1,
                                               "committed_metadata": None})
    fields: t.OffsetCommitRequest = {"group_id": group_id, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
                                     "retention_time_ms": -1, "topics": [{"name": name, "partitions": ps} for name, ps in by_topic.items()]}
    # v10 names topics by id only; v2-v9 by name.
    answer, _node = per_group(session, [group_id], lambda _ids: (apis.OFFSET_COMMIT, fields, 2, 9), lambda r: [(group_id, _Answer(r))],
                              action)[group_id]
    return {(t.name, p.partition_index): p.error_code for t in answer.response.topics for p in t.partitions}


def offset_delete(session: AdminSession, group_id: str, partitions: Sequence[tuple[str, int]], action: str) -> tuple[int, dict[tuple[str, int], int]]:
    """Forget a group's committed offsets of `partitions` (OffsetDelete): the group's
    error code and each partition's (GROUP_SUBSCRIBED_TO_TOPIC while a member reads it)."""
    by_topic: dict[str, list] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append({"partition_index": partition})
    fields: t.OffsetDeleteRequest = {"group_id": group_id, "topics": [{"name": name, "partitions": ps} for name, ps in by_topic.items()]}
    response, _node = per_group(session, [group_id], lambda _ids: (apis.OFFSET_DELETE, fields, 0, 0), lambda r: [(group_id, r)], action)[group_id]
    return response.error_code, {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
