"""Authorization of every request, in one place: for each API the operations Kafka's
KafkaApis checks (topic, group, cluster, transactional id) and the errors it answers.

With the authorizer off nothing here runs. With it on, the server calls `guarded()`, which
runs the API's guard: a guard refuses the whole request in the API's own response shape
(GROUP_AUTHORIZATION_FAILED for a group the principal may not read, ...) or runs the
handler on the part of the request the principal may touch and adds an error entry for
each resource it may not (TOPIC_AUTHORIZATION_FAILED per partition), so no handler holds
an authorization check and none acts on a resource it was not allowed. Listings are
filtered afterwards: topics, groups and transactional ids the principal may not DESCRIBE
are left out, as Kafka leaves them out; and a topic that does not exist is told apart from
a forbidden one only to a principal that may describe it.
"""

from __future__ import annotations

import copy

from kctl.broker.handlers.common import NO_OPERATIONS, ZERO_UUID, topic_name
from kctl.broker.protocol import errors
from kctl.broker.security import authorizer as az
from kctl.broker.security.authorizer import (
    ALTER,
    ALTER_CONFIGS,
    CLUSTER,
    CLUSTER_ACTION,
    CLUSTER_NAME,
    CREATE,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    GROUP,
    IDEMPOTENT_WRITE,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
)

TOPIC_DENIED = errors.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = errors.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = errors.CLUSTER_AUTHORIZATION_FAILED
TXN_DENIED = errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
_MESSAGE = "Authorization failed."
# DescribeConfigs / AlterConfigs resource types
_CONFIG_TOPIC, _CONFIG_BROKER, _CONFIG_BROKER_LOGGER, _CONFIG_GROUP = 2, 4, 8, 32


async def guarded(handler, api_key: int, broker, context, request):
    guard = GUARDS.get(api_key)
    if guard is None:
        return await handler(broker, context, request)
    return await guard(handler, broker, context, request)


def _can(broker, context, operation, resource_type, name) -> bool:
    return context.allowed(broker, operation, resource_type, name)


def _cluster(broker, context, operation) -> bool:
    return _can(broker, context, operation, CLUSTER, CLUSTER_NAME)


def _with(request, **fields):
    """A copy of the request with some fields replaced (the handler sees only those)."""
    changed = copy.copy(request)
    for name, value in fields.items():
        setattr(changed, name, value)
    return changed


def _split(items, allowed):
    keep, drop = [], []
    for item in items:
        (keep if allowed(item) else drop).append(item)
    return keep, drop


def _name(broker, context, topic, field="name"):
    return topic_name(broker, getattr(topic, field, None), getattr(topic, "topic_id", None))


# -- produce, fetch, offsets --------------------------------------------------------------

async def _produce(handler, broker, context, request):
    denied_code = None
    if request.transactional_id and not _can(broker, context, WRITE, TRANSACTIONAL_ID, request.transactional_id):
        denied_code, keep, drop = TXN_DENIED, [], list(request.topic_data)
    else:
        keep, drop = _split(request.topic_data, lambda t: _can(broker, context, WRITE, TOPIC, _name(broker, context, t) or ""))
    response = await handler(broker, context, _with(request, topic_data=keep))
    if response is None:  # acks=0
        return None
    for t in drop:
        response["responses"].append({"name": t.name or "", "topic_id": getattr(t, "topic_id", None), "partition_responses": [
            {"index": p.index, "error_code": denied_code or TOPIC_DENIED, "base_offset": -1, "log_append_time_ms": -1,
             "log_start_offset": -1, "record_errors": [], "error_message": None} for p in t.partition_data]})
    return response


async def _fetch(handler, broker, context, request):
    by_id = context.version >= 13
    keep, drop = _split(request.topics, lambda t: _can(
        broker, context, READ, TOPIC, topic_name(broker, None if by_id else t.topic, getattr(t, "topic_id", None)) or ""))
    response = await handler(broker, context, _with(request, topics=keep))
    for t in drop:
        entry = {"topic_id": t.topic_id} if by_id else {"topic": t.topic}
        entry["partitions"] = [{"partition_index": p.partition, "error_code": TOPIC_DENIED, "high_watermark": -1,
                                "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                                "preferred_read_replica": -1, "records": b""} for p in t.partitions]
        response["responses"].append(entry)
    return response


async def _list_offsets(handler, broker, context, request):
    keep, drop = _split(request.topics, lambda t: _can(broker, context, DESCRIBE, TOPIC, t.name))
    response = await handler(broker, context, _with(request, topics=keep))
    for t in drop:
        response["topics"].append({"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": TOPIC_DENIED, "timestamp": -1, "offset": -1,
             "leader_epoch": -1} for p in t.partitions]})
    return response


async def _offset_for_leader_epoch(handler, broker, context, request):
    keep, drop = _split(request.topics, lambda t: _can(broker, context, DESCRIBE, TOPIC, t.topic))
    response = await handler(broker, context, _with(request, topics=keep))
    for t in drop:
        response["topics"].append({"topic": t.topic, "partitions": [
            {"error_code": TOPIC_DENIED, "partition": p.partition, "leader_epoch": -1, "end_offset": -1}
            for p in t.partitions]})
    return response


async def _metadata(handler, broker, context, request):
    version = context.version
    denied = []
    if request.topics is not None and not (version == 0 and not request.topics):
        may_create_any = _cluster(broker, context, CREATE)
        keep = []
        for t in request.topics:
            name = _name(broker, context, t)
            if name is None:  # an unknown topic id: the handler answers it
                keep.append(t)
            elif not _can(broker, context, DESCRIBE, TOPIC, name):
                denied.append((t, name, TOPIC_DENIED))
            elif name in broker.logs.topics or may_create_any or _can(broker, context, CREATE, TOPIC, name):
                keep.append(t)
            else:  # may see it, may not create it: Kafka says it does not exist
                denied.append((t, name, errors.UNKNOWN_TOPIC_OR_PARTITION))
        request = _with(request, topics=keep)
    response = await handler(broker, context, request)
    response["topics"] = [t for t in response["topics"]
                          if t["error_code"] != errors.NONE or _can(broker, context, DESCRIBE, TOPIC, t["name"])]
    for t, name, code in denied:
        response["topics"].append({"error_code": code, "name": name, "topic_id": getattr(t, "topic_id", None) or ZERO_UUID,
                                   "is_internal": False, "partitions": [], "authorized_operations": NO_OPERATIONS})
    if version >= 8 and request.include_topic_authorized_operations:
        for t in response["topics"]:
            if t["error_code"] == errors.NONE:
                t["authorized_operations"] = broker.authorizer.authorized_operations(
                    context.principal, context.client_host, TOPIC, t["name"])
    return response


async def _describe_cluster(handler, broker, context, request):
    response = await handler(broker, context, request)
    if request.include_cluster_authorized_operations:
        response["authorized_operations"] = broker.authorizer.authorized_operations(
            context.principal, context.client_host, CLUSTER, CLUSTER_NAME)
    return response


async def _find_coordinator(handler, broker, context, request):
    key_type = getattr(request, "key_type", 0) if context.version >= 1 else 0
    resource, code = (GROUP, GROUP_DENIED) if key_type == 0 else (TRANSACTIONAL_ID, TXN_DENIED)
    if context.version >= 4:
        keep, drop = _split(request.coordinator_keys, lambda key: _can(broker, context, DESCRIBE, resource, key))
        response = await handler(broker, context, _with(request, coordinator_keys=keep))
        response["coordinators"] += [{"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code,
                                      "error_message": _MESSAGE} for key in drop]
        return response
    if not _can(broker, context, DESCRIBE, resource, request.key):
        return {"throttle_time_ms": 0, "error_code": code, "error_message": _MESSAGE, "node_id": -1, "host": "", "port": -1}
    return await handler(broker, context, request)


# -- groups --------------------------------------------------------------------------------

def _group_guard(operation, denied_response):
    async def guard(handler, broker, context, request):
        if not _can(broker, context, operation, GROUP, request.group_id):
            return denied_response(context, request)
        return await handler(broker, context, request)
    return guard


def _denied_join(context, request):
    return {"throttle_time_ms": 0, "error_code": GROUP_DENIED, "generation_id": -1, "protocol_type": None,
            "protocol_name": None if context.version >= 7 else "", "leader": "", "skip_assignment": False,
            "member_id": request.member_id, "members": []}


def _denied_sync(context, request):
    return {"throttle_time_ms": 0, "error_code": GROUP_DENIED, "protocol_type": None, "protocol_name": None,
            "assignment": b""}


def _denied_plain(context, request):
    response = {"throttle_time_ms": 0, "error_code": GROUP_DENIED}
    if context.api.key == 13 and context.version >= 3:  # LeaveGroup
        response["members"] = []
    return response


async def _offset_commit(handler, broker, context, request):
    by_id = context.version >= 10
    if not _can(broker, context, READ, GROUP, request.group_id):
        return {"throttle_time_ms": 0, "topics": [
            {**({"topic_id": t.topic_id} if by_id else {"name": t.name}),
             "partitions": [{"partition_index": p.partition_index, "error_code": GROUP_DENIED} for p in t.partitions]}
            for t in request.topics]}
    keep, drop = _split(request.topics, lambda t: _can(
        broker, context, READ, TOPIC, topic_name(broker, None if by_id else t.name, getattr(t, "topic_id", None)) or ""))
    response = await handler(broker, context, _with(request, topics=keep))
    for t in drop:
        response["topics"].append({**({"topic_id": t.topic_id} if by_id else {"name": t.name}), "partitions": [
            {"partition_index": p.partition_index, "error_code": TOPIC_DENIED} for p in t.partitions]})
    return response


async def _offset_fetch(handler, broker, context, request):
    version = context.version
    by_id = version >= 10

    def name_of(t):
        if isinstance(t, dict):
            return t.get("name") if not by_id else broker.logs.topic_ids.get(t.get("topic_id"))
        return topic_name(broker, None if by_id else t.name, getattr(t, "topic_id", None))

    def answer_group(asked_topics, topics_out):
        """All topics asked for: leave out those the principal may not describe; named
        ones: answer them TOPIC_AUTHORIZATION_FAILED."""
        if asked_topics is None:
            topics_out[:] = [t for t in topics_out if _can(broker, context, DESCRIBE, TOPIC, name_of(t) or "")]
            return
        for t in topics_out:
            if not _can(broker, context, DESCRIBE, TOPIC, name_of(t) or ""):
                for p in t["partitions"]:
                    p.update(committed_offset=-1, committed_leader_epoch=-1, metadata="", error_code=TOPIC_DENIED)

    if version >= 8:
        keep, drop = _split(request.groups, lambda g: _can(broker, context, DESCRIBE, GROUP, g.group_id))
        response = await handler(broker, context, _with(request, groups=keep))
        asked = {g.group_id: g.topics for g in keep}
        for g in response["groups"]:
            answer_group(asked.get(g["group_id"]), g["topics"])
        response["groups"] += [{"group_id": g.group_id, "error_code": GROUP_DENIED, "topics": []} for g in drop]
        return response
    if not _can(broker, context, DESCRIBE, GROUP, request.group_id):
        return {"throttle_time_ms": 0, "error_code": GROUP_DENIED, "topics": []}
    response = await handler(broker, context, request)
    answer_group(request.topics, response["topics"])
    return response


async def _list_groups(handler, broker, context, request):
    response = await handler(broker, context, request)
    if not _cluster(broker, context, DESCRIBE):
        response["groups"] = [g for g in response["groups"] if _can(broker, context, DESCRIBE, GROUP, g["group_id"])]
    return response


async def _describe_groups(handler, broker, context, request):
    response = await handler(broker, context, request)
    include_ops = context.version >= 3 and request.include_authorized_operations
    _describe_groups_answer(broker, context, response["groups"], include_ops, {
        "group_state": "", "protocol_type": "", "protocol_data": "", "members": []})
    return response


def _describe_groups_answer(broker, context, groups: list[dict], include_ops: bool, empty: dict) -> None:
    for g in groups:
        if not _can(broker, context, DESCRIBE, GROUP, g["group_id"]):
            g.update(empty, error_code=GROUP_DENIED, error_message=_MESSAGE, authorized_operations=NO_OPERATIONS)
        elif include_ops:
            g["authorized_operations"] = broker.authorizer.authorized_operations(
                context.principal, context.client_host, GROUP, g["group_id"])


async def _consumer_group_describe(handler, broker, context, request):
    response = await handler(broker, context, request)
    _describe_groups_answer(broker, context, response["groups"], request.include_authorized_operations, {
        "group_state": "", "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "", "members": []})
    return response


async def _delete_groups(handler, broker, context, request):
    keep, drop = _split(request.groups_names, lambda g: _can(broker, context, DELETE, GROUP, g))
    response = await handler(broker, context, _with(request, groups_names=keep))
    response["results"] += [{"group_id": g, "error_code": GROUP_DENIED} for g in drop]
    return response


async def _offset_delete(handler, broker, context, request):
    if not _can(broker, context, DELETE, GROUP, request.group_id):
        return {"error_code": GROUP_DENIED, "throttle_time_ms": 0, "topics": []}
    keep, drop = _split(request.topics, lambda t: _can(broker, context, READ, TOPIC, t.name))
    response = await handler(broker, context, _with(request, topics=keep))
    if not response["error_code"]:
        response["topics"] += [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": TOPIC_DENIED} for p in t.partitions]} for t in drop]
    return response


async def _group_heartbeat(handler, broker, context, request):
    """ConsumerGroupHeartbeat and ShareGroupHeartbeat: READ on the group, DESCRIBE on every
    subscribed topic name."""
    denied = None
    if not _can(broker, context, READ, GROUP, request.group_id):
        denied = (GROUP_DENIED, _MESSAGE)
    else:
        hidden = sorted(n for n in request.subscribed_topic_names or () if not _can(broker, context, DESCRIBE, TOPIC, n))
        if hidden:
            denied = (TOPIC_DENIED, "The following topics are not authorized: " + ", ".join(hidden))
    if denied:
        return {"throttle_time_ms": 0, "error_code": denied[0], "error_message": denied[1], "member_id": request.member_id,
                "member_epoch": request.member_epoch, "heartbeat_interval_ms": 0, "assignment": None}
    return await handler(broker, context, request)


# -- topics and configs ----------------------------------------------------------------------

async def _create_topics(handler, broker, context, request):
    if _cluster(broker, context, CREATE):
        return await handler(broker, context, request)
    keep, drop = _split(request.topics, lambda t: _can(broker, context, CREATE, TOPIC, t.name))
    response = await handler(broker, context, _with(request, topics=keep))
    response["topics"] += [{"name": t.name, "error_code": TOPIC_DENIED, "error_message": _MESSAGE, "num_partitions": -1,
                            "replication_factor": -1, "configs": None} for t in drop]
    return response


async def _delete_topics(handler, broker, context, request):
    if context.version >= 6:
        keep, drop = _split(request.topics, lambda t: _can(broker, context, DELETE, TOPIC, _name(broker, context, t) or ""))
        response = await handler(broker, context, _with(request, topics=keep))
        response["responses"] += [{"name": t.name, "topic_id": t.topic_id, "error_code": TOPIC_DENIED,
                                   "error_message": _MESSAGE} for t in drop]
        return response
    keep, drop = _split(request.topic_names, lambda n: _can(broker, context, DELETE, TOPIC, n))
    response = await handler(broker, context, _with(request, topic_names=keep))
    response["responses"] += [{"name": n, "topic_id": None, "error_code": TOPIC_DENIED, "error_message": _MESSAGE}
                              for n in drop]
    return response


async def _delete_records(handler, broker, context, request):
    keep, drop = _split(request.topics, lambda t: _can(broker, context, DELETE, TOPIC, t.name))
    response = await handler(broker, context, _with(request, topics=keep))
    response["topics"] += [{"name": t.name, "partitions": [
        {"partition_index": p.partition_index, "low_watermark": -1, "error_code": TOPIC_DENIED} for p in t.partitions]}
        for t in drop]
    return response


async def _create_partitions(handler, broker, context, request):
    keep, drop = _split(request.topics, lambda t: _can(broker, context, ALTER, TOPIC, t.name))
    response = await handler(broker, context, _with(request, topics=keep))
    response["results"] += [{"name": t.name, "error_code": TOPIC_DENIED, "error_message": _MESSAGE} for t in drop]
    return response


def _config_allowed(broker, context, resource, operation) -> bool:
    if resource.resource_type == _CONFIG_TOPIC:
        return _can(broker, context, operation, TOPIC, resource.resource_name)
    if resource.resource_type == _CONFIG_GROUP:
        return _can(broker, context, operation, GROUP, resource.resource_name)
    if resource.resource_type in (_CONFIG_BROKER, _CONFIG_BROKER_LOGGER):
        return _cluster(broker, context, operation)
    return True  # the handler refuses unknown types


def _config_denied_code(resource) -> int:
    return {_CONFIG_TOPIC: TOPIC_DENIED, _CONFIG_GROUP: GROUP_DENIED}.get(resource.resource_type, CLUSTER_DENIED)


async def _describe_configs(handler, broker, context, request):
    keep, drop = _split(request.resources, lambda r: _config_allowed(broker, context, r, DESCRIBE_CONFIGS))
    response = await handler(broker, context, _with(request, resources=keep))
    response["results"] += [{"error_code": _config_denied_code(r), "error_message": _MESSAGE, "resource_type": r.resource_type,
                             "resource_name": r.resource_name, "configs": []} for r in drop]
    return response


async def _alter_configs(handler, broker, context, request):
    keep, drop = _split(request.resources, lambda r: _config_allowed(broker, context, r, ALTER_CONFIGS))
    response = await handler(broker, context, _with(request, resources=keep))
    response["responses"] += [{"error_code": _config_denied_code(r), "error_message": _MESSAGE,
                               "resource_type": r.resource_type, "resource_name": r.resource_name} for r in drop]
    return response


def _cluster_guard(operation, denied_response):
    async def guard(handler, broker, context, request):
        if not _cluster(broker, context, operation):
            return denied_response(request)
        return await handler(broker, context, request)
    return guard


def _denied_elect(request):
    return {"throttle_time_ms": 0, "error_code": CLUSTER_DENIED, "replica_election_results": [
        {"topic": t.topic, "partition_result": [{"partition_id": p, "error_code": CLUSTER_DENIED, "error_message": _MESSAGE}
                                                for p in t.partitions]} for t in request.topic_partitions or []]}


def _denied_log_dirs(request):
    return {"throttle_time_ms": 0, "error_code": CLUSTER_DENIED, "results": []}


def _denied_list_reassignments(request):
    return {"throttle_time_ms": 0, "error_code": CLUSTER_DENIED, "error_message": _MESSAGE, "topics": []}


def _denied_alter_reassignments(request):
    return {"throttle_time_ms": 0, "allow_replication_factor_change": True, "error_code": CLUSTER_DENIED,
            "error_message": _MESSAGE, "responses": []}


def _denied_markers(request):
    return {"markers": [{"producer_id": m.producer_id, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p, "error_code": CLUSTER_DENIED} for p in t.partition_indexes]}
        for t in m.topics]} for m in request.markers]}


# -- transactions ------------------------------------------------------------------------------

def _may_write_some_topic(broker, context) -> bool:
    """Kafka's authorizeByResourceType(TOPIC, WRITE): an idempotent producer needs WRITE on
    some topic (or IDEMPOTENT_WRITE on the cluster)."""
    authorizer = broker.authorizer
    if context.principal in authorizer.super_users:
        return True
    acls = [a for a in broker.security.acls if a.resource_type == TOPIC
            and a.principal in (context.principal, "User:*") and a.host in (context.client_host, az.WILDCARD)
            and a.operation in (WRITE, az.ALL)]
    if not acls:
        return authorizer.allow_if_no_acl and not any(a.resource_type == TOPIC for a in broker.security.acls)
    if any(a.permission_type == az.DENY and a.pattern_type == az.LITERAL and a.resource_name == az.WILDCARD for a in acls):
        return False
    return any(a.permission_type == az.ALLOW for a in acls)


async def _init_producer_id(handler, broker, context, request):
    if request.transactional_id:
        allowed, code = _can(broker, context, WRITE, TRANSACTIONAL_ID, request.transactional_id), TXN_DENIED
    else:
        allowed = _cluster(broker, context, IDEMPOTENT_WRITE) or _may_write_some_topic(broker, context)
        code = CLUSTER_DENIED
    if not allowed:
        return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}
    return await handler(broker, context, request)


def _txn_guard(denied_response):
    async def guard(handler, broker, context, request):
        if not _can(broker, context, WRITE, TRANSACTIONAL_ID, request.transactional_id):
            return denied_response(request, TXN_DENIED)
        return await handler(broker, context, request)
    return guard


async def _add_partitions_to_txn(handler, broker, context, request):
    if context.version >= 4:  # batched verification, sent between brokers
        if not _cluster(broker, context, CLUSTER_ACTION):
            return {"throttle_time_ms": 0, "error_code": CLUSTER_DENIED, "results_by_transaction": []}
        return await handler(broker, context, request)
    topics = request.v3_and_below_topics

    def rows(code_of):
        return [{"name": t.name, "results_by_partition": [{"partition_index": p, "partition_error_code": code_of(t)}
                                                           for p in t.partitions]} for t in topics]

    if not _can(broker, context, WRITE, TRANSACTIONAL_ID, request.v3_and_below_transactional_id):
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": rows(lambda t: TXN_DENIED)}
    denied = {t.name for t in topics if not _can(broker, context, WRITE, TOPIC, t.name)}
    if denied:  # Kafka adds none of them: the others are OPERATION_NOT_ATTEMPTED
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": rows(
            lambda t: TOPIC_DENIED if t.name in denied else errors.OPERATION_NOT_ATTEMPTED)}
    return await handler(broker, context, request)


async def _add_offsets_to_txn(handler, broker, context, request):
    if not _can(broker, context, WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return {"throttle_time_ms": 0, "error_code": TXN_DENIED}
    if not _can(broker, context, READ, GROUP, request.group_id):
        return {"throttle_time_ms": 0, "error_code": GROUP_DENIED}
    return await handler(broker, context, request)


async def _txn_offset_commit(handler, broker, context, request):
    def every(code_of):
        return {"throttle_time_ms": 0, "topics": [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": code_of(t)} for p in t.partitions]} for t in request.topics]}

    if not _can(broker, context, WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return every(lambda t: TXN_DENIED)
    if not _can(broker, context, READ, GROUP, request.group_id):
        return every(lambda t: GROUP_DENIED)
    keep, drop = _split(request.topics, lambda t: _can(broker, context, READ, TOPIC, t.name))
    response = await handler(broker, context, _with(request, topics=keep))
    response["topics"] += [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index, "error_code": TOPIC_DENIED}
                                        for p in t.partitions]} for t in drop]
    return response


async def _describe_producers(handler, broker, context, request):
    keep, drop = _split(request.topics, lambda t: _can(broker, context, READ, TOPIC, t.name))
    response = await handler(broker, context, _with(request, topics=keep))
    response["topics"] += [{"name": t.name, "partitions": [
        {"partition_index": i, "error_code": TOPIC_DENIED, "error_message": _MESSAGE, "active_producers": []}
        for i in t.partition_indexes]} for t in drop]
    return response


async def _describe_transactions(handler, broker, context, request):
    keep, drop = _split(request.transactional_ids, lambda i: _can(broker, context, DESCRIBE, TRANSACTIONAL_ID, i))
    response = await handler(broker, context, _with(request, transactional_ids=keep))
    response["transaction_states"] += [
        {"error_code": TXN_DENIED, "transactional_id": i, "transaction_state": "", "transaction_timeout_ms": 0,
         "transaction_start_time_ms": -1, "producer_id": -1, "producer_epoch": -1, "topics": []} for i in drop]
    return response


async def _list_transactions(handler, broker, context, request):
    response = await handler(broker, context, request)
    response["transaction_states"] = [s for s in response["transaction_states"]
                                      if _can(broker, context, DESCRIBE, TRANSACTIONAL_ID, s["transactional_id"])]
    return response


# -- share groups -------------------------------------------------------------------------------

async def _share_group_describe(handler, broker, context, request):
    response = await handler(broker, context, request)
    _describe_groups_answer(broker, context, response["groups"], request.include_authorized_operations, {
        "group_state": "", "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "", "members": []})
    return response


def _share_records_guard(fetch: bool):
    """ShareFetch / ShareAcknowledge: READ on the group, READ on each topic named."""
    async def guard(handler, broker, context, request):
        base = {"throttle_time_ms": 0, "error_message": _MESSAGE, "acquisition_lock_timeout_ms": 30000,
                "responses": [], "node_endpoints": []}
        if not request.group_id or not _can(broker, context, READ, GROUP, request.group_id):
            return {**base, "error_code": GROUP_DENIED}
        keep, drop = _split(request.topics, lambda t: _can(
            broker, context, READ, TOPIC, broker.logs.topic_ids.get(t.topic_id) or ""))
        response = await handler(broker, context, _with(request, topics=keep))
        for t in drop:
            rows = []
            for p in t.partitions:
                row = {"partition_index": p.partition_index, "error_code": TOPIC_DENIED, "error_message": _MESSAGE,
                       "current_leader": {"leader_id": -1, "leader_epoch": -1}}
                if fetch:
                    row.update(acknowledge_error_code=TOPIC_DENIED if p.acknowledgement_batches else errors.NONE,
                               acknowledge_error_message=None, records=b"", acquired_records=[])
                rows.append(row)
            response["responses"].append({"topic_id": t.topic_id, "partitions": rows})
        return response
    return guard


async def _describe_share_group_offsets(handler, broker, context, request):
    keep, drop = _split(request.groups, lambda g: _can(broker, context, DESCRIBE, GROUP, g.group_id))
    response = await handler(broker, context, _with(request, groups=keep))
    for g in response["groups"]:
        g["topics"] = [t for t in g["topics"] if _can(broker, context, DESCRIBE, TOPIC, t["topic_name"])]
    response["groups"] += [{"group_id": g.group_id, "topics": [], "error_code": GROUP_DENIED, "error_message": _MESSAGE}
                           for g in drop]
    return response


def _share_offsets_guard(operation):
    async def guard(handler, broker, context, request):
        if not _can(broker, context, operation, GROUP, request.group_id):
            return {"throttle_time_ms": 0, "error_code": GROUP_DENIED, "error_message": _MESSAGE, "responses": []}
        return await handler(broker, context, request)
    return guard


# -- streams groups -----------------------------------------------------------------------------

async def _streams_group_heartbeat(handler, broker, context, request):
    denied = None
    if not _can(broker, context, READ, GROUP, request.group_id):
        denied = (GROUP_DENIED, _MESSAGE)
    elif request.topology is not None:
        from kctl.broker.coordinator.streams import Topology

        hidden = sorted(t for t in Topology.from_request(request.topology).topics()
                        if not _can(broker, context, DESCRIBE, TOPIC, t))
        if hidden:
            denied = (TOPIC_DENIED, "The following topics are not authorized: " + ", ".join(hidden))
    if denied:
        return {"throttle_time_ms": 0, "error_code": denied[0], "error_message": denied[1], "member_id": request.member_id,
                "member_epoch": request.member_epoch, "heartbeat_interval_ms": 0, "acceptable_recovery_lag": 0,
                "task_offset_interval_ms": 0, "status": [], "active_tasks": None, "standby_tasks": None,
                "warmup_tasks": None, "endpoint_information_epoch": 0, "partitions_by_user_endpoint": None}
    return await handler(broker, context, request)


async def _streams_group_describe(handler, broker, context, request):
    response = await handler(broker, context, request)
    _describe_groups_answer(broker, context, response["groups"], request.include_authorized_operations, {
        "group_state": "", "group_epoch": -1, "assignment_epoch": -1, "topology": None, "members": []})
    return response


GUARDS = {
    0: _produce, 1: _fetch, 2: _list_offsets, 3: _metadata, 23: _offset_for_leader_epoch, 60: _describe_cluster,
    10: _find_coordinator,
    8: _offset_commit, 9: _offset_fetch,
    11: _group_guard(READ, _denied_join), 14: _group_guard(READ, _denied_sync),
    12: _group_guard(READ, _denied_plain), 13: _group_guard(READ, _denied_plain),
    15: _describe_groups, 16: _list_groups, 42: _delete_groups, 47: _offset_delete,
    68: _group_heartbeat, 69: _consumer_group_describe,
    19: _create_topics, 20: _delete_topics, 21: _delete_records, 37: _create_partitions,
    32: _describe_configs, 33: _alter_configs, 44: _alter_configs,
    43: _cluster_guard(ALTER, _denied_elect), 35: _cluster_guard(DESCRIBE, _denied_log_dirs),
    45: _cluster_guard(ALTER, _denied_alter_reassignments), 46: _cluster_guard(DESCRIBE, _denied_list_reassignments),
    27: _cluster_guard(CLUSTER_ACTION, _denied_markers),
    22: _init_producer_id, 24: _add_partitions_to_txn, 25: _add_offsets_to_txn,
    26: _txn_guard(lambda request, code: {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}),
    28: _txn_offset_commit, 61: _describe_producers, 65: _describe_transactions, 66: _list_transactions,
    76: _group_heartbeat, 77: _share_group_describe, 78: _share_records_guard(True), 79: _share_records_guard(False),
    90: _describe_share_group_offsets, 91: _share_offsets_guard(READ), 92: _share_offsets_guard(DELETE),
    88: _streams_group_heartbeat, 89: _streams_group_describe,
}
