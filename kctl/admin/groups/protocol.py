"""The group APIs of Kafka 4.x that confluent-kafka does not expose, sent through kctl's
kafka-python bridge: ListGroups v5 (every group type with Kafka's state names; librdkafka
lists only classic and consumer groups), ConsumerGroupDescribe (KIP-848 epochs and target
assignments), ShareGroupDescribe and Describe/Alter/DeleteShareGroupOffsets (KIP-932),
StreamsGroupDescribe (KIP-1071).

The message classes are kafka-python's schema-driven ones, built from Kafka's own message
definitions (kctl/admin/groups/schemas); requests go to each group's coordinator, one per
coordinator, as kafka-python's own group calls do (its private `_find_coordinator_ids` and
`_manager`, stable within the pinned kafka-python 3.0.x).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kafka.protocol.api_message import ApiMessage

from kctl.admin.groups import schemas
from kctl.admin.session import AdminSession


class ConsumerGroupDescribeRequest(ApiMessage, load_json=schemas): pass  # noqa: E701
class ConsumerGroupDescribeResponse(ApiMessage, load_json=schemas): pass  # noqa: E701
class ShareGroupDescribeRequest(ApiMessage, load_json=schemas): pass  # noqa: E701
class ShareGroupDescribeResponse(ApiMessage, load_json=schemas): pass  # noqa: E701
class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=schemas): pass  # noqa: E701
class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=schemas): pass  # noqa: E701
class AlterShareGroupOffsetsRequest(ApiMessage, load_json=schemas): pass  # noqa: E701
class AlterShareGroupOffsetsResponse(ApiMessage, load_json=schemas): pass  # noqa: E701
class DeleteShareGroupOffsetsRequest(ApiMessage, load_json=schemas): pass  # noqa: E701
class DeleteShareGroupOffsetsResponse(ApiMessage, load_json=schemas): pass  # noqa: E701
class StreamsGroupDescribeRequest(ApiMessage, load_json=schemas): pass  # noqa: E701
class StreamsGroupDescribeResponse(ApiMessage, load_json=schemas): pass  # noqa: E701

_OFFSETS_GROUP = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup


def list_groups(session: AdminSession) -> list[dict]:
    """Every group of the cluster: group_id, group_type (classic, consumer, share, streams)
    and group_state as Kafka names them; one ListGroups per broker."""
    return session.run_kafka_python(lambda client: client.list_groups(), "list groups")


def per_coordinator(session: AdminSession, group_ids: Sequence[str], request: Callable[[list[str]], Any], action: str) -> list:
    """Send request(ids) to each coordinator for the ids it owns; (node id, response) pairs."""
    if not group_ids:
        return []

    def run(client):
        async def send():
            coordinators = await client._find_coordinator_ids(list(group_ids))
            owned: dict[int, list[str]] = {}
            for group_id, node in coordinators.items():
                owned.setdefault(node, []).append(group_id)
            return [(node, await client._manager.send(request(ids), node_id=node)) for node, ids in owned.items()]

        return client._manager.run(send)

    return session.run_kafka_python(run, action)


def consumer_group_describe(session: AdminSession, group_ids: Sequence[str]) -> dict[str, Any]:
    """(ConsumerGroupDescribe's DescribedGroup, coordinator id) per group id; a failure is
    the struct's error_code."""
    responses = per_coordinator(
        session, group_ids, lambda ids: ConsumerGroupDescribeRequest(group_ids=ids, include_authorized_operations=False),
        "describe consumer groups")
    return {g.group_id: (g, node) for node, r in responses for g in r.groups}


def share_group_describe(session: AdminSession, group_ids: Sequence[str]) -> dict[str, Any]:
    responses = per_coordinator(
        session, group_ids, lambda ids: ShareGroupDescribeRequest(group_ids=ids, include_authorized_operations=False),
        "describe share groups")
    return {g.group_id: (g, node) for node, r in responses for g in r.groups}


def streams_group_describe(session: AdminSession, group_ids: Sequence[str]) -> dict[str, Any]:
    responses = per_coordinator(
        session, group_ids, lambda ids: StreamsGroupDescribeRequest(group_ids=ids, include_authorized_operations=False),
        "describe streams groups")
    return {g.group_id: (g, node) for node, r in responses for g in r.groups}


def share_group_offsets(session: AdminSession, group_ids: Sequence[str]) -> dict[str, Any]:
    """DescribeShareGroupOffsets of every topic a share group has state for: per group the
    response group (topics -> partitions with start_offset and, from v1, lag) and its
    coordinator."""
    responses = per_coordinator(
        session, group_ids,
        lambda ids: DescribeShareGroupOffsetsRequest(groups=[_OFFSETS_GROUP(group_id=g, topics=None) for g in ids]),
        "describe share group offsets")
    return {g.group_id: (g, node) for node, r in responses for g in r.groups}


_ALTER_TOPIC = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic
_ALTER_PARTITION = _ALTER_TOPIC.AlterShareGroupOffsetsRequestPartition
_DELETE_TOPIC = DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic


def alter_share_group_offsets(session: AdminSession, group_id: str, offsets: dict[tuple[str, int], int]) -> tuple[int, dict[tuple[str, int], int]]:
    """Set share-partition start offsets (the group must be empty): the top-level error
    code and each partition's."""
    by_topic: dict[str, list] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append(_ALTER_PARTITION(partition_index=partition, start_offset=offset))
    request = AlterShareGroupOffsetsRequest(group_id=group_id, topics=[_ALTER_TOPIC(topic_name=t, partitions=ps) for t, ps in by_topic.items()])
    [(_node, response)] = per_coordinator(session, [group_id], lambda _ids: request, f"reset offsets of share group {group_id}")
    return response.error_code, {(t.topic_name, p.partition_index): p.error_code for t in response.responses for p in t.partitions}


def delete_share_group_offsets(session: AdminSession, group_id: str, topics: Sequence[str]) -> tuple[int, dict[str, int]]:
    """Forget a share group's state for whole topics: the top-level and per-topic error codes."""
    request = DeleteShareGroupOffsetsRequest(group_id=group_id, topics=[_DELETE_TOPIC(topic_name=t) for t in topics])
    [(_node, response)] = per_coordinator(session, [group_id], lambda _ids: request, f"delete offsets of share group {group_id}")
    return response.error_code, {t.topic_name: t.error_code for t in response.responses}
