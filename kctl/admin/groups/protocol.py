"""kctl's group reads and the group APIs of Kafka 4.x that confluent-kafka does not expose,
sent through kctl's kafka-python bridge: ListGroups v5 (every group type with Kafka's state
names; librdkafka lists only classic and consumer groups), DescribeGroups and OffsetFetch v8
batched per coordinator (librdkafka sends one request per group, the cost that dominated
`group list` and `group lag --all` on many groups), ConsumerGroupDescribe (KIP-848 epochs
and target assignments), ShareGroupDescribe and Describe/Alter/DeleteShareGroupOffsets
(KIP-932), StreamsGroupDescribe (KIP-1071).

The message classes are kafka-python's schema-driven ones, built from Kafka's own message
definitions (kctl/messages); requests go to each group's coordinator, one per
coordinator, as kafka-python's own group calls do (through kctl.admin.client.kafka_python,
which holds every use of kafka-python's private API).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kafka.protocol.api_message import ApiMessage

from kctl import messages as schemas
from kctl.admin.client.session import AdminSession
from kctl.polling import poll
from kctl.errors import TimeoutError_


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
    and group_state as Kafka names them; one ListGroups per broker. A broker still loading
    its groups (after a restart or a leader change) is asked again until the timeout."""
    from kafka.errors import BrokerResponseError

    def ask(client) -> list[dict] | None:
        try:
            return client.list_groups()
        except BrokerResponseError as exc:
            if exc.message in _RETRIABLE:
                return None
            raise

    listed = poll(lambda: session.run_kafka_python(ask, "list groups"), lambda answer: answer is not None,
                  timeout=session.timeout, interval=_RETRY_BACKOFF, stop_before=True)
    if listed is None:
        raise TimeoutError_("unable to list groups: a group coordinator was still loading its groups at the timeout",
                            hint="raise --timeout if the cluster is starting or electing")
    return listed


# Answers that mean "ask again shortly": the coordinator is loading the group, not elected
# yet, or has moved. Kafka's own admin client retries them until its timeout; so does kctl.
_RETRIABLE = frozenset({"COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"})
_RETRY_BACKOFF = 0.1


def per_group(
    session: AdminSession, group_ids: Sequence[str], request: Callable[[list[str]], Any],
    parts: Callable[[Any], Iterable[tuple[str, Any]]], action: str,
) -> dict[str, tuple[Any, int]]:
    """Send request(ids) to each coordinator for the groups it owns (one request per
    coordinator, all groups in it); each group's part of the answer (parts(response) yields
    (group id, part with an error_code)) and its coordinator's id. Groups whose coordinator
    is loading, not available or has moved are asked again until the session's timeout."""
    from kafka.errors import BrokerResponseError, for_code as kafka_error

    from kctl.admin.client.kafka_python import find_group_coordinators, forget_group_coordinator, run_async, send_async

    found: dict[str, tuple[Any, int]] = {}
    pending = list(dict.fromkeys(group_ids))

    def run(client):
        async def send():
            try:
                coordinators = await find_group_coordinators(client, pending)
            except BrokerResponseError as exc:
                if exc.message in _RETRIABLE:
                    return None
                raise
            owned: dict[int, list[str]] = {}
            for group_id, node in coordinators.items():
                owned.setdefault(node, []).append(group_id)
            return [(node, await send_async(client, request(ids), node)) for node, ids in owned.items()]

        answers = run_async(client, send)
        if answers is None:  # no coordinator found yet for some of the groups
            return {g: None for g in pending}, {}
        retry: dict[str, Any] = {}
        done: dict[str, tuple[Any, int]] = {}
        for node, response in answers:
            for group_id, part in parts(response):
                if part.error_code and kafka_error(part.error_code).message in _RETRIABLE:
                    # The cached coordinator may be the one that moved: look it up again.
                    forget_group_coordinator(client, group_id)
                    retry[group_id] = (part, node)
                else:
                    done[group_id] = (part, node)
        return retry, done

    def ask() -> dict[str, Any]:
        nonlocal pending
        retry, done = session.run_kafka_python(run, action)
        found.update(done)
        pending = list(retry)
        return retry

    if not pending:
        return found
    retry = poll(ask, lambda retry: not retry, timeout=session.timeout, interval=_RETRY_BACKOFF, stop_before=True)
    if None in retry.values():
        raise TimeoutError_(f"unable to {action}: no group coordinator available within the timeout",
                            hint="raise --timeout if the cluster is starting or electing")
    found.update(retry)  # the retriable answers are the result; callers report them
    return found


def _described(response) -> Iterable[tuple[str, Any]]:
    return ((g.group_id, g) for g in response.groups)


def classic_group_describe(session: AdminSession, group_ids: Sequence[str]) -> dict[str, Any]:
    """(DescribeGroups' DescribedGroup, coordinator id) per group id: state, protocol type
    and assignor, members with their encoded subscriptions and assignments."""
    from kafka.protocol.admin import DescribeGroupsRequest

    return per_group(session, group_ids, lambda ids: DescribeGroupsRequest(groups=ids, include_authorized_operations=False),
                     _described, "describe groups")


def consumer_group_describe(session: AdminSession, group_ids: Sequence[str]) -> dict[str, Any]:
    """(ConsumerGroupDescribe's DescribedGroup, coordinator id) per group id; a failure is
    the struct's error_code."""
    return per_group(session, group_ids, lambda ids: ConsumerGroupDescribeRequest(group_ids=ids, include_authorized_operations=False),
                     _described, "describe consumer groups")


def share_group_describe(session: AdminSession, group_ids: Sequence[str]) -> dict[str, Any]:
    return per_group(session, group_ids, lambda ids: ShareGroupDescribeRequest(group_ids=ids, include_authorized_operations=False),
                     _described, "describe share groups")


def streams_group_describe(session: AdminSession, group_ids: Sequence[str]) -> dict[str, Any]:
    return per_group(session, group_ids, lambda ids: StreamsGroupDescribeRequest(group_ids=ids, include_authorized_operations=False),
                     _described, "describe streams groups")


def offset_fetch(session: AdminSession, group_ids: Sequence[str]) -> dict[str, Any]:
    """(OffsetFetch's response group, coordinator id) per group id: every committed offset
    of every group a coordinator owns in one request (KIP-709, OffsetFetch v8+; librdkafka
    asks one group per request)."""
    from kafka.protocol.consumer import OffsetFetchRequest

    group = OffsetFetchRequest.OffsetFetchRequestGroup
    # v10 names topics by id only; v8-v9 by name, which is what every caller wants.
    return per_group(session, group_ids,
                     lambda ids: OffsetFetchRequest(groups=[group(group_id=g, topics=None) for g in ids], require_stable=False,
                                                    min_version=8, max_version=9),
                     _described, "fetch committed offsets")


def share_group_offsets(session: AdminSession, group_ids: Sequence[str]) -> dict[str, Any]:
    """DescribeShareGroupOffsets of every topic a share group has state for: per group the
    response group (topics -> partitions with start_offset and, from v1, lag) and its
    coordinator."""
    return per_group(session, group_ids,
                     lambda ids: DescribeShareGroupOffsetsRequest(groups=[_OFFSETS_GROUP(group_id=g, topics=None) for g in ids]),
                     _described, "describe share group offsets")


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
    response, _node = per_group(session, [group_id], lambda _ids: request, lambda r: [(group_id, r)],
                                f"reset offsets of share group {group_id}")[group_id]
    return response.error_code, {(t.topic_name, p.partition_index): p.error_code for t in response.responses for p in t.partitions}


def delete_share_group_offsets(session: AdminSession, group_id: str, topics: Sequence[str]) -> tuple[int, dict[str, int]]:
    """Forget a share group's state for whole topics: the top-level and per-topic error codes."""
    request = DeleteShareGroupOffsetsRequest(group_id=group_id, topics=[_DELETE_TOPIC(topic_name=t) for t in topics])
    response, _node = per_group(session, [group_id], lambda _ids: request, lambda r: [(group_id, r)],
                                f"delete offsets of share group {group_id}")[group_id]
    return response.error_code, {t.topic_name: t.error_code for t in response.responses}
