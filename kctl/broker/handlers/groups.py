"""Consumer group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch (single and multi-group), ListGroups, DescribeGroups, DeleteGroups, OffsetDelete."""

from __future__ import annotations

import logging

from kctl.broker.coordinator.groups import DEAD, EMPTY, MAX_METADATA_BYTES
from kctl.broker.coordinator.offsets import CommittedOffset
from kctl.broker.handlers.common import GROUP_OPERATIONS, NO_OPERATIONS, storage_error_message, topic_name
from kctl.broker.protocol import errors
from kctl.broker.security.authorizer import DESCRIBE, TOPIC

log = logging.getLogger("kctl.broker.groups")


async def join_group(broker, context, request):
    version = context.version
    if not broker.consumer_groups.to_classic(request.group_id):
        return {"throttle_time_ms": 0, "error_code": errors.INCONSISTENT_GROUP_PROTOCOL, "generation_id": -1,
                "protocol_type": None, "protocol_name": None, "leader": "", "skip_assignment": False,
                "member_id": request.member_id, "members": []}
    result = await broker.groups.join(
        request.group_id, request.member_id,
        request.group_instance_id if version >= 5 else None,
        context.header.client_id or "", "/" + context.client_host,
        request.session_timeout_ms,
        request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms,
        request.protocol_type, [(p.name, bytes(p.metadata)) for p in request.protocols],
        require_known_member_id=version >= 4)
    return {
        "throttle_time_ms": 0, "error_code": result.error, "generation_id": result.generation_id,
        "protocol_type": result.protocol_type,
        "protocol_name": result.protocol_name if version >= 7 else (result.protocol_name or ""),
        "leader": result.leader, "skip_assignment": result.skip_assignment,
        "member_id": result.member_id,
        "members": [{"member_id": m, "group_instance_id": i, "metadata": md}
                    for m, i, md in result.members],
    }


async def sync_group(broker, context, request):
    version = context.version
    assignments = {a.member_id: bytes(a.assignment) for a in request.assignments}
    code, assignment, group = await broker.groups.sync(
        request.group_id, request.generation_id, request.member_id,
        request.group_instance_id if version >= 3 else None, assignments)
    return {"throttle_time_ms": 0, "error_code": code,
            "protocol_type": group.protocol_type if group else None,
            "protocol_name": group.protocol_name if group else None,
            "assignment": assignment}


async def heartbeat(broker, context, request):
    code = broker.groups.heartbeat(request.group_id, request.generation_id, request.member_id,
                                   request.group_instance_id if context.version >= 3 else None)
    return {"throttle_time_ms": 0, "error_code": code}


async def leave_group(broker, context, request):
    if context.version >= 3:
        members = [(m.member_id, m.group_instance_id) for m in request.members]
        results = broker.groups.leave(request.group_id, members)
        return {"throttle_time_ms": 0, "error_code": errors.NONE, "members": [
            {"member_id": m, "group_instance_id": i, "error_code": code}
            for (m, i), code in zip(members, results)]}
    [code] = broker.groups.leave(request.group_id, [(request.member_id, None)])
    return {"throttle_time_ms": 0, "error_code": code}


async def offset_commit(broker, context, request):
    version = context.version
    by_id = version >= 10
    if request.group_id in broker.consumer_groups.groups:
        code = broker.consumer_groups.check_member(request.group_id, request.member_id,
                                                   request.generation_id_or_member_epoch)
    elif request.group_id in broker.streams_groups.groups:
        code = streams_commit_check(broker, request.group_id, request.member_id, request.generation_id_or_member_epoch)
    else:
        code = broker.groups.check_commit(request.group_id, request.generation_id_or_member_epoch,
                                          request.member_id,
                                          request.group_instance_id if version >= 7 else None)
    if not request.group_id:
        code = errors.INVALID_GROUP_ID
    now = broker.clock()
    accepted = {}
    topics = []
    for topic in request.topics:
        name = topic_name(broker, None if by_id else topic.name, getattr(topic, "topic_id", None))
        partitions = []
        for p in topic.partitions:
            error = code
            if not error:
                metadata = p.committed_metadata
                if name is None or (name, p.partition_index) not in broker.logs.logs:
                    error = errors.UNKNOWN_TOPIC_ID if by_id and name is None else \
                        errors.UNKNOWN_TOPIC_OR_PARTITION
                elif metadata is not None and len(metadata.encode()) > MAX_METADATA_BYTES:
                    error = errors.OFFSET_METADATA_TOO_LARGE
                else:
                    accepted[(name, p.partition_index)] = CommittedOffset(
                        p.committed_offset, getattr(p, "committed_leader_epoch", -1),
                        metadata, now)
            partitions.append({"partition_index": p.partition_index, "error_code": error})
        entry = {"partitions": partitions}
        if by_id:
            entry["topic_id"] = topic.topic_id
        else:
            entry["name"] = topic.name
        topics.append(entry)
    try:
        broker.groups.commit(request.group_id, accepted)
    except OSError as exc:
        log.error("%s", storage_error_message(f"commit offsets of group {request.group_id}", exc))
        for entry in topics:
            for partition in entry["partitions"]:
                if partition["error_code"] == errors.NONE:
                    partition["error_code"] = errors.KAFKA_STORAGE_ERROR
    return {"throttle_time_ms": 0, "topics": topics}


def streams_commit_check(broker, group_id: str, member_id: str, epoch: int) -> int:
    """A streams group's commit (KIP-1071, simplified: per-task epochs not checked yet)."""
    group = broker.streams_groups.groups[group_id]
    if epoch < 0 and not group.members:
        return errors.NONE  # an admin reset
    member = group.members.get(member_id)
    if member is None:
        return errors.UNKNOWN_MEMBER_ID
    return errors.STALE_MEMBER_EPOCH if epoch > member.member_epoch else errors.NONE


def _fetch_group(broker, group_id, topics, by_id: bool, require_stable: bool = False):
    committed = broker.offsets.committed(group_id)
    # KIP-447: a read_committed consumer must not start from offsets an open transaction
    # is about to commit; it retries until the transaction ends.
    unstable = broker.transactions.pending_offsets(group_id) if require_stable else set()
    if topics is None:
        wanted: dict[str, list[int]] = {}
        for (name, partition) in sorted(committed):
            wanted.setdefault(name, []).append(partition)
        requested = [(name, None, parts) for name, parts in wanted.items()]
    else:
        requested = [(topic_name(broker, None if by_id else t.name, getattr(t, "topic_id", None)),
                      getattr(t, "topic_id", None), list(t.partition_indexes)) for t in topics]
    result = []
    for name, topic_id, partitions in requested:
        entries = []
        for partition in partitions:
            offset = committed.get((name, partition))
            entries.append({"partition_index": partition,
                            "committed_offset": offset.offset if offset else -1,
                            "committed_leader_epoch": offset.leader_epoch if offset else -1,
                            "metadata": (offset.metadata if offset else "") or "",
                            "error_code": errors.UNSTABLE_OFFSET_COMMIT if (name, partition) in unstable else errors.NONE})
        entry = {"partitions": entries}
        if by_id:
            info = broker.logs.topics.get(name) if name else None
            entry["topic_id"] = topic_id or (info.topic_id if info else None)
        else:
            entry["name"] = name
        result.append(entry)
    return result


async def offset_fetch(broker, context, request):
    version = context.version
    if version >= 8:
        groups = []
        for g in request.groups:
            code = errors.NONE
            if version >= 9 and g.group_id in broker.consumer_groups.groups and (g.member_id or g.member_epoch >= 0):
                code = broker.consumer_groups.check_member(g.group_id, g.member_id or "", g.member_epoch)
            groups.append({"group_id": g.group_id, "error_code": code,
                           "topics": [] if code else _fetch_group(broker, g.group_id, g.topics, version >= 10,
                                                                  request.require_stable)})
        return {"throttle_time_ms": 0, "groups": groups}
    stable = request.require_stable if version >= 7 else False
    return {"throttle_time_ms": 0, "error_code": errors.NONE,
            "topics": _fetch_group(broker, request.group_id, request.topics, False, stable)}


async def list_groups(broker, context, request):
    version = context.version
    states = {s.lower() for s in request.states_filter} if version >= 4 and request.states_filter else None
    types = {t.lower() for t in request.types_filter} if version >= 5 and request.types_filter else None
    listed = []
    for group_id in broker.groups.all_group_ids():
        group = broker.groups.group(group_id)
        if states is not None and group.state.lower() not in states:
            continue
        if types is not None and "classic" not in types:
            continue
        listed.append({"group_id": group_id, "protocol_type": group.protocol_type or "",
                       "group_state": group.state, "group_type": "classic"})
    for group_id, group in sorted(broker.consumer_groups.groups.items()):
        if states is not None and group.state.lower() not in states:
            continue
        if types is not None and "consumer" not in types:
            continue
        listed.append({"group_id": group_id, "protocol_type": "consumer", "group_state": group.state,
                       "group_type": "consumer"})
    for group_id, group in sorted(broker.share_groups.groups.items()):
        if states is not None and group.state.lower() not in states:
            continue
        if types is not None and "share" not in types:
            continue
        listed.append({"group_id": group_id, "protocol_type": "share", "group_state": group.state,
                       "group_type": "share"})
    for group_id, group in sorted(broker.streams_groups.groups.items()):
        if states is not None and group.state.lower().replace("notready", "not_ready") not in states:
            continue
        if types is not None and "streams" not in types:
            continue
        listed.append({"group_id": group_id, "protocol_type": "streams", "group_state": group.state,
                       "group_type": "streams"})
    return {"throttle_time_ms": 0, "error_code": errors.NONE, "groups": listed}


async def describe_groups(broker, context, request):
    version = context.version
    described = []
    for group_id in request.groups:
        group = broker.groups.group(group_id)
        ops = GROUP_OPERATIONS if version >= 3 and request.include_authorized_operations \
            else NO_OPERATIONS
        modern = any(group_id in c.groups for c in (broker.consumer_groups, broker.share_groups, broker.streams_groups))
        if modern or group is None:
            # Kafka describes a group it has no classic group for as Dead (v6+: with an error).
            why = "is not a classic group" if modern else "not found"
            described.append({
                "error_code": errors.GROUP_ID_NOT_FOUND if version >= 6 else errors.NONE,
                "error_message": f"Group {group_id} {why}." if version >= 6 else None,
                "group_id": group_id, "group_state": DEAD, "protocol_type": "",
                "protocol_data": "", "members": [], "authorized_operations": ops})
            continue
        described.append({
            "error_code": errors.NONE, "error_message": None, "group_id": group_id,
            "group_state": group.state, "protocol_type": group.protocol_type or "",
            "protocol_data": group.protocol_name or "" if group.state != EMPTY else "",
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "client_id": m.client_id, "client_host": m.client_host,
                         "member_metadata": m.metadata_for(group.protocol_name) if group.protocol_name else b"",
                         "member_assignment": m.assignment}
                        for m in group.members.values()],
            "authorized_operations": ops})
    return {"throttle_time_ms": 0, "groups": described}


async def delete_groups(broker, context, request):
    results = []
    for group_id in request.groups_names:
        try:
            if group_id in broker.consumer_groups.groups:
                code = broker.consumer_groups.delete(group_id)
                if code == errors.NONE:
                    broker.offsets.delete_group(group_id)
            elif group_id in broker.share_groups.groups:
                code = broker.share_groups.delete_group(group_id)
            elif group_id in broker.streams_groups.groups:
                code = broker.streams_groups.delete(group_id)
                if code == errors.NONE:  # its offsets, and the classic record commits left
                    if broker.groups.delete_group(group_id) == errors.GROUP_ID_NOT_FOUND:
                        broker.offsets.delete_group(group_id)
            else:
                code = broker.groups.delete_group(group_id)
        except OSError as exc:
            log.error("%s", storage_error_message(f"delete group {group_id}", exc))
            code = errors.KAFKA_STORAGE_ERROR
        results.append({"group_id": group_id, "error_code": code})
    return {"throttle_time_ms": 0, "results": results}


async def offset_delete(broker, context, request):
    partitions = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    try:
        if request.group_id in broker.consumer_groups.groups:
            subscribed = broker.consumer_groups.subscribed_topics(request.group_id)
            results = {tp: errors.GROUP_SUBSCRIBED_TO_TOPIC if tp[0] in subscribed else errors.NONE for tp in partitions}
            broker.offsets.delete_offsets(request.group_id, [tp for tp, c in results.items() if c == errors.NONE])
            code = errors.NONE
        else:
            code, results = broker.groups.delete_offsets(request.group_id, partitions)
    except OSError as exc:
        log.error("%s", storage_error_message(f"delete offsets of group {request.group_id}", exc))
        code, results = errors.KAFKA_STORAGE_ERROR, {}
    topics = []
    if not code:
        for t in request.topics:
            topics.append({"name": t.name, "partitions": [
                {"partition_index": p.partition_index,
                 "error_code": results.get((t.name, p.partition_index), errors.NONE)}
                for p in t.partitions]})
    return {"error_code": code, "throttle_time_ms": 0, "topics": topics}


def _assignment(broker, pairs) -> dict:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(pairs):
        by_topic.setdefault(topic, []).append(partition)
    return {"topic_partitions": [{"topic_id": broker.logs.topics[t].topic_id, "partitions": ps}
                                 for t, ps in by_topic.items() if t in broker.logs.topics]}


def _owned(broker, topic_partitions) -> set[tuple[str, int]] | None:
    if topic_partitions is None:
        return None
    return {(broker.logs.topic_ids[t.topic_id], p) for t in topic_partitions if t.topic_id in broker.logs.topic_ids
            for p in t.partitions}


def _may_describe(broker, context):
    """The member's DESCRIBE on topics, for its regex (None without an authorizer)."""
    if not broker.authorizer.enabled:
        return None
    principal, host, authorize = context.principal, context.client_host, broker.authorizer.authorize
    return lambda topic: authorize(principal, host, DESCRIBE, TOPIC, topic)


async def consumer_group_heartbeat(broker, context, request):
    """The consumer group protocol (KIP-848); the coordinator is kctl.broker.coordinator.consumer."""
    result = broker.consumer_groups.heartbeat(
        request.group_id, request.member_id, request.member_epoch, request.instance_id, request.rack_id,
        request.rebalance_timeout_ms, request.subscribed_topic_names,
        request.subscribed_topic_regex if context.version >= 1 else None, request.server_assignor,
        _owned(broker, request.topic_partitions), context.header.client_id or "", "/" + context.client_host,
        may_describe=_may_describe(broker, context))
    return {"throttle_time_ms": 0, "error_code": result.error, "error_message": result.message,
            "member_id": result.member_id, "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": result.heartbeat_interval_ms,
            "assignment": None if result.assignment is None else _assignment(broker, result.assignment)}


def _described_assignment(broker, pairs) -> dict:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(pairs):
        by_topic.setdefault(topic, []).append(partition)
    return {"topic_partitions": [{"topic_id": broker.logs.topics[t].topic_id, "topic_name": t, "partitions": ps}
                                 for t, ps in by_topic.items() if t in broker.logs.topics]}


async def consumer_group_describe(broker, context, request):
    described = []
    for group_id in request.group_ids:
        group = broker.consumer_groups.groups.get(group_id)
        ops = GROUP_OPERATIONS if request.include_authorized_operations else NO_OPERATIONS
        if group is None:
            classic = broker.groups.group(group_id)
            message = f"Group {group_id} is not a consumer group." if classic is not None else f"Group {group_id} not found."
            described.append({"error_code": errors.GROUP_ID_NOT_FOUND, "error_message": message, "group_id": group_id,
                              "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "",
                              "members": [], "authorized_operations": NO_OPERATIONS})
            continue
        described.append({
            "error_code": errors.NONE, "error_message": None, "group_id": group_id, "group_state": group.state,
            "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch, "assignor_name": group.assignor,
            "members": [{"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                         "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
                         "subscribed_topic_names": m.subscribed_topic_names,
                         "subscribed_topic_regex": m.subscribed_topic_regex or "",  # Kafka: "" for none
                         "assignment": _described_assignment(broker, m.assigned),
                         "target_assignment": _described_assignment(broker, group.target.get(m.member_id, set())),
                         "member_type": 1}
                        for m in group.members.values()],
            "authorized_operations": ops})
    return {"throttle_time_ms": 0, "groups": described}


HANDLERS = {11: join_group, 12: heartbeat, 13: leave_group, 14: sync_group, 8: offset_commit,
            9: offset_fetch, 15: describe_groups, 16: list_groups, 42: delete_groups,
            47: offset_delete, 68: consumer_group_heartbeat, 69: consumer_group_describe}
