"""Share groups (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
ShareAcknowledge and Describe/Alter/DeleteShareGroupOffsets, over the share coordinator
(coordinator/share.py) and its share partitions (coordinator/share_partitions.py).

A ShareFetch runs as Kafka's does: the share session is opened (epoch 0), advanced or
closed (-1); piggy-backed acknowledgements are applied first, so released records can be
acquired again at once; then records are acquired from the session's partitions, waiting
up to MaxWaitMs for some. Every partition that carried acknowledgements is in the answer,
with its AcknowledgeErrorCode. Records is never null (v1+).
"""

from __future__ import annotations

import time

from kctl.broker.coordinator.share import HeartbeatResult
from kctl.broker.coordinator.share_partitions import GAP, RENEW
from kctl.broker.handlers.common import ZERO_UUID, other_group_type
from kctl.broker.protocol import errors

_MAX_WAIT_S = 30.0


def _other_type(broker):
    # An empty classic group (committed offsets only) counts: Kafka 4.4 refuses a share
    # member its id ("Group G is not a share group."), as it would not a consumer group's.
    return lambda group_id: other_group_type(broker, group_id, "share", empty_classic=True)


def _topic_id(broker, name: str):
    info = broker.logs.topics.get(name)
    return info.topic_id if info is not None else ZERO_UUID


def _assignment(broker, pairs, with_names: bool = False) -> dict:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(pairs):
        by_topic.setdefault(topic, []).append(partition)
    rows = []
    for topic, partitions in by_topic.items():
        if topic in broker.logs.topics:
            row = {"topic_id": broker.logs.topics[topic].topic_id, "partitions": partitions}
            if with_names:
                row["topic_name"] = topic
            rows.append(row)
    return {"topic_partitions": rows}


async def share_group_heartbeat(broker, context, request):
    result: HeartbeatResult = broker.share_groups.heartbeat(
        request.group_id, request.member_id, request.member_epoch, request.rack_id, request.subscribed_topic_names,
        context.header.client_id or "", "/" + context.client_host, _other_type(broker))
    return {"throttle_time_ms": 0, "error_code": result.error, "error_message": result.message,
            "member_id": result.member_id, "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": result.heartbeat_interval_ms,
            "assignment": None if result.assignment is None else _assignment(broker, result.assignment)}


async def share_group_describe(broker, context, request):
    described = []
    for group_id in request.group_ids:
        group = broker.share_groups.groups.get(group_id)
        if group is None:
            other = other_group_type(broker, group_id, "share", empty_classic=True)
            described.append({"error_code": errors.GROUP_ID_NOT_FOUND,
                              "error_message": f"Group {group_id} is not a share group." if other else f"Group {group_id} not found.",
                              "group_id": group_id, "group_state": "", "group_epoch": 0, "assignment_epoch": 0,
                              "assignor_name": "", "members": [], "authorized_operations": -2**31})
            continue
        described.append({
            "error_code": errors.NONE, "error_message": None, "group_id": group_id, "group_state": group.state,
            "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch, "assignor_name": "simple",
            "members": [{"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                         "client_id": m.client_id, "client_host": m.client_host,
                         "subscribed_topic_names": m.subscribed, "assignment": _assignment(broker, m.assigned, True)}
                        for m in group.members.values()],
            "authorized_operations": -2**31})
    return {"throttle_time_ms": 0, "groups": described}


# -- ShareFetch / ShareAcknowledge --------------------------------------------------------------

def _ack_batches(partition) -> tuple[list, str | None]:
    """(first, last, types) of a partition's acknowledgement batches, or a problem (Kafka's
    validateAcknowledgementBatches)."""
    batches, previous_last = [], None
    for b in partition.acknowledgement_batches or []:
        types = list(b.acknowledge_types or [])
        if b.first_offset > b.last_offset:
            return [], "First offset is greater than the last offset."
        if previous_last is not None and b.first_offset <= previous_last:
            return [], "Acknowledgement batches are not in ascending, non-overlapping order."
        if not types or (len(types) > 1 and len(types) != b.last_offset - b.first_offset + 1):
            return [], "Acknowledge types do not match the batch."
        if any(t < GAP or t > RENEW for t in types):
            return [], "Invalid acknowledge type."
        batches.append((b.first_offset, b.last_offset, types))
        previous_last = b.last_offset
    return batches, None


def _session(broker, context, request, fetch: bool):
    """(session, error code, message) for a request's ShareSessionEpoch."""
    coordinator = broker.share_groups
    key = (request.group_id, request.member_id)
    epoch = request.share_session_epoch
    if epoch == 0:
        if not fetch:
            return None, errors.INVALID_SHARE_SESSION_EPOCH, None  # (Kafka's answer has no message)
        return "new", errors.NONE, None
    session = coordinator.sessions.get(key)
    if session is None:
        return None, errors.SHARE_SESSION_NOT_FOUND, "The share session was not found."
    if epoch == -1:
        return session, errors.NONE, None
    if epoch != session.epoch:
        return None, errors.INVALID_SHARE_SESSION_EPOCH, f"Expected share session epoch {session.epoch}, got {epoch}."
    session.epoch = 1 if session.epoch >= 2**31 - 1 else session.epoch + 1
    return session, errors.NONE, None


def _partition_answer(index: int, fetch: bool) -> dict:
    answer = {"partition_index": index, "error_code": errors.NONE, "error_message": None,
              "current_leader": {"leader_id": 1, "leader_epoch": 0}}
    if fetch:
        answer.update(acknowledge_error_code=errors.NONE, acknowledge_error_message=None, records=b"",
                      acquired_records=[])
    return answer


def _apply_acks(broker, group, member_id, topics, answers, fetch: bool) -> None:
    """Acknowledgements in the request's topics, each partition all or nothing."""
    coordinator = broker.share_groups
    code_field = "acknowledge_error_code" if fetch else "error_code"
    message_field = "acknowledge_error_message" if fetch else "error_message"
    for topic in topics:
        name = broker.logs.topic_ids.get(topic.topic_id)
        for partition in topic.partitions:
            if fetch and not partition.acknowledgement_batches:
                continue
            answer = answers.setdefault((topic.topic_id, partition.partition_index),
                                        _partition_answer(partition.partition_index, fetch))
            batches, problem = _ack_batches(partition)
            sp = None if name is None or group is None else coordinator.partitions.get((group.group_id, name, partition.partition_index))
            if problem:
                answer.update({code_field: errors.INVALID_REQUEST, message_field: problem})
            elif name is None:
                answer.update({code_field: errors.UNKNOWN_TOPIC_ID, message_field: None})
            elif sp is None:
                answer.update({code_field: errors.UNKNOWN_TOPIC_OR_PARTITION, message_field: None})
            else:
                code = coordinator.acknowledge(group, sp, member_id, batches)
                answer.update({code_field: code, message_field: None if code == errors.NONE else "The acknowledgement was refused."})


def _acquire(broker, group, member_id, partitions, request, answers) -> int:
    """Acquire records of the session's partitions; the number of records acquired."""
    coordinator = broker.share_groups
    remaining = request.max_records if request.max_records > 0 else 500
    budget = request.max_bytes if request.max_bytes > 0 else 0
    if budget <= 0:
        return 0
    lock_ms = group.config_int("share.record.lock.duration.ms")
    limit = group.config_int("share.delivery.count.limit")
    locks = group.config_int("share.partition.max.record.locks")
    committed = group.config("share.isolation.level") == "read_committed"
    total = 0
    for topic, index in sorted(partitions):
        if remaining <= 0 or budget <= 0:
            break
        info = broker.logs.topics.get(topic)
        if info is None:
            continue
        sp = coordinator.share_partition(group, topic, index)
        answer = answers.setdefault((info.topic_id, index), _partition_answer(index, True))
        if sp is None:
            answer["error_code"] = errors.UNKNOWN_TOPIC_OR_PARTITION
            continue
        plog = broker.logs.logs[(topic, index)]
        end = plog.last_stable_offset if committed else plog.log_end_offset
        ranges, data = [], b""
        while not ranges:  # again while only markers or aborted records were read (archived)
            start = sp.next_fetch_offset()
            if start >= end or sp.in_flight_count() >= locks and start >= sp.next_offset:
                break
            data = plog.read(start, budget, True, end)
            aborted = [(a.producer_id, a.first_offset) for a in plog.aborted_between(start, end)] if committed else None
            ranges = sp.acquire(member_id, data, remaining, locks, coordinator.clock() + lock_ms, limit, aborted)
            if sp.next_fetch_offset() == start:
                break
        if not ranges:
            continue
        acquired = sum(last - first + 1 for first, last, _count in ranges)
        answer["records"] = data
        answer["acquired_records"] = [{"first_offset": first, "last_offset": last, "delivery_count": count} for first, last, count in ranges]
        remaining -= acquired
        budget -= len(data)
        total += acquired
    return total


async def share_fetch(broker, context, request):
    coordinator = broker.share_groups
    group = coordinator.groups.get(request.group_id) if request.group_id else None
    lock_ms = group.config_int("share.record.lock.duration.ms") if group else 30000
    answer = {"throttle_time_ms": 0, "error_code": errors.NONE, "error_message": None,
              "acquisition_lock_timeout_ms": lock_ms, "responses": [], "node_endpoints": []}
    if not request.group_id or not request.member_id:
        return {**answer, "error_code": errors.INVALID_REQUEST, "error_message": "GroupId and MemberId are required."}
    session, code, message = _session(broker, context, request, fetch=True)
    if code:
        return {**answer, "error_code": code, "error_message": message}
    answers: dict[tuple, dict] = {}
    requested = {(broker.logs.topic_ids.get(t.topic_id), p.partition_index): t.topic_id
                 for t in request.topics for p in t.partitions}
    forgotten = {(broker.logs.topic_ids.get(t.topic_id), p) for t in request.forgotten_topics_data or [] for p in t.partitions}
    if session == "new":
        if any(p.acknowledgement_batches for t in request.topics for p in t.partitions):
            return {**answer, "error_code": errors.INVALID_REQUEST,
                    "error_message": "Acknowledgements are not allowed when opening a share session."}
        session = coordinator.open_session(request.group_id, request.member_id,
                                           {tp for tp in requested if tp[0] is not None}, context.session)
        full = True
    else:
        full = False
        session.partitions |= {tp for tp in requested if tp[0] is not None}
        session.partitions -= forgotten
    for (name, index), topic_id in requested.items():
        if name is None:
            answers[(topic_id, index)] = {**_partition_answer(index, True), "error_code": errors.UNKNOWN_TOPIC_ID}
    if group is not None:
        _apply_acks(broker, group, request.member_id, request.topics, answers, fetch=True)
    if request.share_session_epoch == -1:
        coordinator.close_session(session)
    elif group is not None and not getattr(request, "is_renew_ack", False):
        deadline = time.monotonic() + min(max(request.max_wait_ms, 0) / 1000, _MAX_WAIT_S)
        while True:
            if _acquire(broker, group, request.member_id, session.partitions, request, answers) or \
                    time.monotonic() >= deadline or request.max_wait_ms <= 0:
                break
            await broker.wait_for_append(deadline - time.monotonic())
            if coordinator.sessions.get((request.group_id, request.member_id)) is not session:
                break  # closed meanwhile (the connection dropped)
    if full:  # a new session answers every partition it holds
        for name, index in session.partitions:
            info = broker.logs.topics.get(name)
            if info is not None:
                answers.setdefault((info.topic_id, index), _partition_answer(index, True))
    by_topic: dict = {}
    for (topic_id, _index), partition in sorted(answers.items(), key=lambda item: (str(item[0][0]), item[0][1])):
        by_topic.setdefault(topic_id, []).append(partition)
    answer["responses"] = [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()]
    return answer


async def share_acknowledge(broker, context, request):
    coordinator = broker.share_groups
    group = coordinator.groups.get(request.group_id) if request.group_id else None
    answer = {"throttle_time_ms": 0, "error_code": errors.NONE, "error_message": None,
              "acquisition_lock_timeout_ms": group.config_int("share.record.lock.duration.ms") if group else 30000,
              "responses": [], "node_endpoints": []}
    if not request.group_id or not request.member_id:
        return {**answer, "error_code": errors.INVALID_REQUEST, "error_message": "GroupId and MemberId are required."}
    session, code, message = _session(broker, context, request, fetch=False)
    if code:
        return {**answer, "error_code": code, "error_message": message}
    answers: dict[tuple, dict] = {}
    _apply_acks(broker, group, request.member_id, request.topics, answers, fetch=False)
    if request.share_session_epoch == -1:
        coordinator.close_session(session)
    by_topic: dict = {}
    for (topic_id, _index), partition in answers.items():
        by_topic.setdefault(topic_id, []).append(partition)
    answer["responses"] = [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()]
    return answer


# -- offsets ------------------------------------------------------------------------------------

async def describe_share_group_offsets(broker, context, request):
    coordinator = broker.share_groups
    groups = []
    for g in request.groups:
        group = coordinator.groups.get(g.group_id)
        if g.topics is None:
            wanted = sorted({(t, p) for (gid, t, p) in coordinator.partitions if gid == g.group_id})
            asked: dict[str, list[int]] = {}
            for t, p in wanted:
                asked.setdefault(t, []).append(p)
        else:
            asked = {t.topic_name: list(t.partitions) for t in g.topics}
        topics = []
        for name, partitions in asked.items():
            info = broker.logs.topics.get(name)
            rows = []
            for index in partitions:
                sp = coordinator.partitions.get((g.group_id, name, index)) if group is not None else None
                plog = broker.logs.logs.get((name, index))
                start = sp.start_offset if sp is not None and sp.initialized else -1
                lag = -1
                if start >= 0 and plog is not None:
                    lag = max(0, plog.log_end_offset - start - sp.delivery_complete_count())
                rows.append({"partition_index": index, "start_offset": start, "leader_epoch": 0 if start >= 0 else -1,
                             "lag": lag, "error_code": errors.NONE, "error_message": None})
            topics.append({"topic_name": name, "topic_id": info.topic_id if info else ZERO_UUID, "partitions": rows})
        groups.append({"group_id": g.group_id, "topics": topics, "error_code": errors.NONE, "error_message": None})
    return {"throttle_time_ms": 0, "groups": groups}


async def alter_share_group_offsets(broker, context, request):
    coordinator = broker.share_groups
    answer = {"throttle_time_ms": 0, "error_code": errors.NONE, "error_message": None, "responses": []}
    if _other_type(broker)(request.group_id):
        return {**answer, "error_code": errors.GROUP_ID_NOT_FOUND, "error_message": f"Group {request.group_id} is not a share group."}
    group = coordinator.groups.get(request.group_id)
    if group is not None and group.members:
        return {**answer, "error_code": errors.NON_EMPTY_GROUP,
                "error_message": f"The share group {request.group_id} has active members; it must be empty."}
    if group is None:
        try:
            group = coordinator.ensure_group(request.group_id)
        except OSError as exc:
            return {**answer, "error_code": errors.KAFKA_STORAGE_ERROR, "error_message": str(exc.strerror or exc)}
    for topic in request.topics:
        info = broker.logs.topics.get(topic.topic_name)
        rows = []
        for p in topic.partitions:
            row = {"partition_index": p.partition_index, "error_code": errors.NONE, "error_message": None}
            if info is None or not 0 <= p.partition_index < info.partitions:
                row.update(error_code=errors.UNKNOWN_TOPIC_OR_PARTITION, error_message="The partition does not exist.")
            else:
                try:
                    coordinator.reset_partition(group, topic.topic_name, p.partition_index, p.start_offset)
                except OSError as exc:
                    row.update(error_code=errors.KAFKA_STORAGE_ERROR, error_message=str(exc.strerror or exc))
            rows.append(row)
        answer["responses"].append({"topic_name": topic.topic_name, "topic_id": info.topic_id if info else ZERO_UUID,
                                    "partitions": rows})
    return answer


async def delete_share_group_offsets(broker, context, request):
    coordinator = broker.share_groups
    answer = {"throttle_time_ms": 0, "error_code": errors.NONE, "error_message": None, "responses": []}
    group = coordinator.groups.get(request.group_id)
    if group is None:
        return {**answer, "error_code": errors.GROUP_ID_NOT_FOUND, "error_message": f"Share group {request.group_id} not found."}
    if group.members:
        return {**answer, "error_code": errors.NON_EMPTY_GROUP,
                "error_message": f"The share group {request.group_id} has active members; it must be empty."}
    for topic in request.topics:
        info = broker.logs.topics.get(topic.topic_name)
        keys = [k for k in coordinator.partitions if k[0] == request.group_id and k[1] == topic.topic_name]
        row = {"topic_name": topic.topic_name, "topic_id": info.topic_id if info else ZERO_UUID,
               "error_code": errors.NONE, "error_message": None}
        if info is None or not keys:
            row.update(error_code=errors.UNKNOWN_TOPIC_OR_PARTITION,
                       error_message="There is no offset information to delete." if info else "The topic does not exist.")
        else:
            try:
                for _g, name, index in keys:
                    coordinator.reset_partition(group, name, index, None)
            except OSError as exc:
                row.update(error_code=errors.KAFKA_STORAGE_ERROR, error_message=str(exc.strerror or exc))
        answer["responses"].append(row)
    return answer


HANDLERS = {76: share_group_heartbeat, 77: share_group_describe, 78: share_fetch, 79: share_acknowledge,
            90: describe_share_group_offsets, 91: alter_share_group_offsets, 92: delete_share_group_offsets}
