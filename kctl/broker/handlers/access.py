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
from kctl.broker.handlers.transactions import NO_TRANSACTION
from kctl.broker.protocol import errors
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
from kctl.messages.records import TRANSACTIONAL_BIT

TOPIC_DENIED = errors.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = errors.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = errors.CLUSTER_AUTHORIZATION_FAILED
TXN_DENIED = errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
_MESSAGE = "Authorization failed."
# Kafka's own message for an error code (Errors.X.message()), where Kafka answers with it.
MESSAGES = {TOPIC_DENIED: "Topic authorization failed.", GROUP_DENIED: "Group authorization failed.",
            CLUSTER_DENIED: "Cluster authorization failed.", TXN_DENIED: "Transactional Id authorization failed.",
            errors.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition."}
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

def _has_transactional_records(request) -> bool:
    for topic in request.topic_data:
        for data in topic.partition_data:
            records = data.records
            # a v2 batch's attributes (int16 at byte 21); the transactional bit is 0x10
            if records is not None and len(records) >= 23 and records[22] & TRANSACTIONAL_BIT:
                return True
    return False


async def _produce(handler, broker, context, request):
    """Kafka checks the transactional id only when a batch is transactional."""
    denied_code = None
    if _has_transactional_records(request) and not (
            request.transactional_id and _can(broker, context, WRITE, TRANSACTIONAL_ID, request.transactional_id)):
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


def _replica_id(context, request) -> int:
    state = getattr(request, "replica_state", None) if context.version >= 15 else None
    return state.replica_id if state is not None else request.replica_id


async def _fetch(handler, broker, context, request):
    by_id = context.version >= 13

    def answer(topics, code, aborted) -> list[dict]:
        out = []
        for t in topics:
            entry = {"topic_id": t.topic_id} if by_id else {"topic": t.topic}
            entry["partitions"] = [{"partition_index": p.partition, "error_code": code, "high_watermark": -1,
                                    "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": aborted,
                                    "preferred_read_replica": -1, "records": b""} for p in t.partitions]
            out.append(entry)
        return out

    if _replica_id(context, request) >= 0:
        # A follower's fetch (Kafka: CLUSTER_ACTION, else every partition refused). This
        # single node has no follower, so an allowed one is told it is not a replica.
        allowed = _cluster(broker, context, CLUSTER_ACTION)
        return {"throttle_time_ms": 0, "error_code": errors.NONE, "session_id": 0, "node_endpoints": [],
                "responses": answer(request.topics, *((errors.NOT_LEADER_OR_FOLLOWER, None) if allowed else (TOPIC_DENIED, [])))}
    keep, drop = _split(request.topics, lambda t: _can(
        broker, context, READ, TOPIC, topic_name(broker, None if by_id else t.topic, getattr(t, "topic_id", None)) or ""))
    response = await handler(broker, context, _with(request, topics=keep))
    response["responses"] += answer(drop, TOPIC_DENIED, [])
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
    """Kafka's handleTopicMetadataRequest: topics the principal may not describe are left
    out of an all-topics answer, else refused (by id: with the id and no name; by name:
    with the name and no id); a missing topic the principal may describe but not create,
    asked with auto-creation on, is refused too."""
    version = context.version
    denied = []
    if request.topics is not None and not (version == 0 and not request.topics):
        auto_create = (request.allow_auto_topic_creation if version >= 4 else True) and broker.config.auto_create_topics
        may_create_any = auto_create and _cluster(broker, context, CREATE)
        keep = []
        for t in request.topics:
            name = _name(broker, context, t)
            by_id = getattr(t, "topic_id", None) not in (None, ZERO_UUID)
            if name is None:  # an unknown topic id: the handler answers it
                keep.append(t)
            elif not _can(broker, context, DESCRIBE, TOPIC, name):
                denied.append((None if by_id else name, t.topic_id if by_id else ZERO_UUID))
            elif (not auto_create or name in broker.logs.topics or may_create_any
                  or _can(broker, context, CREATE, TOPIC, name)):
                keep.append(t)
            else:
                denied.append((name, ZERO_UUID))
        request = _with(request, topics=keep)
    response = await handler(broker, context, request)
    response["topics"] = [t for t in response["topics"]
                          if t["error_code"] != errors.NONE or _can(broker, context, DESCRIBE, TOPIC, t["name"])]
    if version >= 8 and request.include_topic_authorized_operations:
        for t in response["topics"]:
            if t["name"] is not None:
                t["topic_authorized_operations"] = broker.authorizer.authorized_operations(
                    context.principal, context.client_host, TOPIC, t["name"])
    for name, topic_id in denied:
        response["topics"].append({"error_code": TOPIC_DENIED, "name": name, "topic_id": topic_id, "is_internal": False,
                                   "partitions": [], "topic_authorized_operations": NO_OPERATIONS})
    return response


async def _describe_cluster(handler, broker, context, request):
    response = await handler(broker, context, request)
    if request.include_cluster_authorized_operations:
        response["cluster_authorized_operations"] = broker.authorizer.authorized_operations(
            context.principal, context.client_host, CLUSTER, CLUSTER_NAME)
    return response


async def _find_coordinator(handler, broker, context, request):
    key_type = getattr(request, "key_type", 0) if context.version >= 1 else 0
    resource, code = (GROUP, GROUP_DENIED) if key_type == 0 else (TRANSACTIONAL_ID, TXN_DENIED)
    if context.version >= 4:
        keep, drop = _split(request.coordinator_keys, lambda key: _can(broker, context, DESCRIBE, resource, key))
        response = await handler(broker, context, _with(request, coordinator_keys=keep))
        response["coordinators"] += [{"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code,
                                      "error_message": ""} for key in drop]
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


_GROUP_TOPICS_DENIED = "The group has described topic(s) that the client is not authorized to describe."


def _kip848_describe(empty: dict, topics_of, message: str = _GROUP_TOPICS_DENIED):
    """ConsumerGroupDescribe, ShareGroupDescribe, StreamsGroupDescribe: DESCRIBE on the
    group, then on every topic the group's answer names (`topics_of`), as Kafka: a group
    naming a topic the principal may not describe is refused whole."""
    async def guard(handler, broker, context, request):
        response = await handler(broker, context, request)
        for g in response["groups"]:
            if not _can(broker, context, DESCRIBE, GROUP, g["group_id"]):
                g.update(empty, error_code=GROUP_DENIED, error_message=None, authorized_operations=NO_OPERATIONS)
            elif g["error_code"] == errors.NONE and not all(
                    _can(broker, context, DESCRIBE, TOPIC, t) for t in topics_of(broker, g)):
                g.update(empty, error_code=TOPIC_DENIED, error_message=message, authorized_operations=NO_OPERATIONS)
            elif g["error_code"] == errors.NONE and request.include_authorized_operations:
                g["authorized_operations"] = broker.authorizer.authorized_operations(
                    context.principal, context.client_host, GROUP, g["group_id"])
        return response
    return guard


def _member_topics(broker, group: dict) -> set[str]:
    """The topics of the members' assignments (Kafka does not check subscribed names)."""
    names: set[str] = set()
    for m in group["members"]:
        for key in ("assignment", "target_assignment"):
            for t in (m.get(key) or {}).get("topic_partitions") or ():
                names.add(t.get("topic_name") or broker.logs.topic_ids.get(t.get("topic_id")) or "")
    return names


_EMPTY_KIP848 = {"group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": []}


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
    if denied:  # as Kafka answers: no member id, no message
        return {"throttle_time_ms": 0, "error_code": denied[0], "error_message": None, "member_id": None,
                "member_epoch": request.member_epoch, "heartbeat_interval_ms": 0, "assignment": None}
    return await handler(broker, context, request)


# -- topics and configs ----------------------------------------------------------------------

async def _create_topics(handler, broker, context, request):
    """CREATE on the cluster or the topic; the created topic's configs are answered only
    to a principal that may DESCRIBE_CONFIGS it (else TOPIC_AUTHORIZATION_FAILED for them)."""
    if _cluster(broker, context, CREATE):
        keep, drop = list(request.topics), []
    else:
        keep, drop = _split(request.topics, lambda t: _can(broker, context, CREATE, TOPIC, t.name))
    response = await handler(broker, context, _with(request, topics=keep))
    for t in response["topics"]:
        if not _can(broker, context, DESCRIBE_CONFIGS, TOPIC, t["name"]):
            t.update(topic_config_error_code=TOPIC_DENIED, num_partitions=-1, replication_factor=-1, configs=[])
    response["topics"] += [{"name": t.name, "error_code": TOPIC_DENIED, "error_message": _MESSAGE, "num_partitions": -1,
                            "replication_factor": -1, "configs": []} for t in drop]
    return response


async def _delete_topics(handler, broker, context, request):
    """DELETE on each topic; a topic that does not exist is said so to a principal that
    may describe it, else refused (Kafka's controller)."""
    def allowed(name) -> bool:
        if name in broker.logs.topics:
            return _can(broker, context, DELETE, TOPIC, name)
        return _can(broker, context, DESCRIBE, TOPIC, name)

    if context.version >= 6:
        keep, drop = _split(request.topics, lambda t: allowed(_name(broker, context, t) or ""))
        response = await handler(broker, context, _with(request, topics=keep))
        response["responses"] += [{"name": t.name, "topic_id": t.topic_id, "error_code": TOPIC_DENIED,
                                   "error_message": MESSAGES[TOPIC_DENIED]} for t in drop]
        return response
    keep, drop = _split(request.topic_names, allowed)
    response = await handler(broker, context, _with(request, topic_names=keep))
    response["responses"] += [{"name": n, "topic_id": None, "error_code": TOPIC_DENIED,
                               "error_message": MESSAGES[TOPIC_DENIED]} for n in drop]
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
    response["results"] += [{"name": t.name, "error_code": TOPIC_DENIED, "error_message": None} for t in drop]
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
    response["results"] += [{"error_code": _config_denied_code(r), "error_message": MESSAGES[_config_denied_code(r)],
                             "resource_type": r.resource_type,
                             "resource_name": r.resource_name, "configs": []} for r in drop]
    return response


async def _alter_configs(handler, broker, context, request):
    keep, drop = _split(request.resources, lambda r: _config_allowed(broker, context, r, ALTER_CONFIGS))
    response = await handler(broker, context, _with(request, resources=keep))
    response["responses"] += [{"error_code": _config_denied_code(r), "error_message": MESSAGES[_config_denied_code(r)],
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
    return {"throttle_time_ms": 0, "error_code": CLUSTER_DENIED, "error_message": MESSAGES[CLUSTER_DENIED], "topics": [
        {"name": t.name, "partitions": [{"partition_index": p, "replicas": [], "adding_replicas": [],
                                         "removing_replicas": []} for p in t.partition_indexes]}
        for t in request.topics or ()]}


def _denied_alter_reassignments(request):
    return {"throttle_time_ms": 0, "allow_replication_factor_change": True, "error_code": CLUSTER_DENIED,
            "error_message": MESSAGES[CLUSTER_DENIED], "responses": [
                {"name": t.name, "partitions": [{"partition_index": p.partition_index, "error_code": CLUSTER_DENIED,
                                                 "error_message": MESSAGES[CLUSTER_DENIED]} for p in t.partitions]}
                for t in request.topics]}


def _denied_markers(request):
    return {"markers": [{"producer_id": m.producer_id, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p, "error_code": CLUSTER_DENIED} for p in t.partition_indexes]}
        for t in m.topics]} for m in request.markers]}


# -- transactions ------------------------------------------------------------------------------

async def _init_producer_id(handler, broker, context, request):
    if request.transactional_id:
        allowed, code = _can(broker, context, WRITE, TRANSACTIONAL_ID, request.transactional_id), TXN_DENIED
    else:
        allowed = _cluster(broker, context, IDEMPOTENT_WRITE) or broker.authorizer.authorize_by_resource_type(
            context.principal, context.client_host, WRITE, TOPIC)
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
        {"partition_index": i, "error_code": TOPIC_DENIED, "error_message": MESSAGES[TOPIC_DENIED], "active_producers": []}
        for i in t.partition_indexes]} for t in drop]
    return response


async def _describe_transactions(handler, broker, context, request):
    """DESCRIBE on each transactional id; its topics the principal may not describe are left out."""
    keep, drop = _split(request.transactional_ids, lambda i: _can(broker, context, DESCRIBE, TRANSACTIONAL_ID, i))
    response = await handler(broker, context, _with(request, transactional_ids=keep))
    for state in response["transaction_states"]:
        state["topics"] = [t for t in state["topics"] if _can(broker, context, DESCRIBE, TOPIC, t["topic"])]
    response["transaction_states"] += [{**NO_TRANSACTION, "error_code": TXN_DENIED, "transactional_id": i} for i in drop]
    return response


async def _list_transactions(handler, broker, context, request):
    response = await handler(broker, context, request)
    response["transaction_states"] = [s for s in response["transaction_states"]
                                      if _can(broker, context, DESCRIBE, TRANSACTIONAL_ID, s["transactional_id"])]
    return response


# -- share groups -------------------------------------------------------------------------------

def _share_records_guard(fetch: bool):
    """ShareFetch / ShareAcknowledge: READ on the group, READ on each topic named."""
    async def guard(handler, broker, context, request):
        base = {"throttle_time_ms": 0, "error_message": None, "acquisition_lock_timeout_ms": 30000,
                "responses": [], "node_endpoints": []}
        if not request.group_id or not _can(broker, context, READ, GROUP, request.group_id):
            return {**base, "error_code": GROUP_DENIED}
        keep, drop = _split(request.topics, lambda t: _can(
            broker, context, READ, TOPIC, broker.logs.topic_ids.get(t.topic_id) or ""))
        response = await handler(broker, context, _with(request, topics=keep))
        if response["error_code"]:  # the session refused: Kafka answers no partition
            return response
        for t in drop:
            rows = []
            for p in t.partitions:
                row = {"partition_index": p.partition_index, "error_code": TOPIC_DENIED, "error_message": None,
                       "current_leader": {"leader_id": broker.node_id, "leader_epoch": 0}}
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
    # A topic the principal may not describe: left out of "all topics", refused (without
    # its id) when named, as OffsetFetch.
    for g, asked in zip(response["groups"], keep):
        if asked.topics is None:
            g["topics"] = [t for t in g["topics"] if _can(broker, context, DESCRIBE, TOPIC, t["topic_name"])]
        for t in g["topics"]:
            if not _can(broker, context, DESCRIBE, TOPIC, t["topic_name"]):
                t["topic_id"] = ZERO_UUID
                for p in t["partitions"]:
                    p.update(start_offset=-1, leader_epoch=0, lag=-1, error_code=TOPIC_DENIED,
                             error_message=MESSAGES[TOPIC_DENIED])
    response["groups"] += [{"group_id": g.group_id, "topics": [], "error_code": GROUP_DENIED, "error_message": None}
                           for g in drop]
    return response


_SHARE_OFFSETS_DENIED = {"throttle_time_ms": 0, "error_code": GROUP_DENIED, "error_message": MESSAGES[GROUP_DENIED],
                         "responses": []}


def _share_offsets_guard(operation):
    async def guard(handler, broker, context, request):
        if not _can(broker, context, operation, GROUP, request.group_id):
            return dict(_SHARE_OFFSETS_DENIED)
        return await handler(broker, context, request)
    return guard


async def _alter_share_group_offsets(handler, broker, context, request):
    """READ on the group, then READ on each topic whose start offsets move."""
    if not _can(broker, context, READ, GROUP, request.group_id):
        return dict(_SHARE_OFFSETS_DENIED)
    keep, drop = _split(request.topics, lambda t: _can(broker, context, READ, TOPIC, t.topic_name))
    response = await handler(broker, context, _with(request, topics=keep))
    if response["error_code"] == errors.NONE:
        response["responses"] += [
            {"topic_name": t.topic_name, "topic_id": broker.logs.topics[t.topic_name].topic_id
             if t.topic_name in broker.logs.topics else ZERO_UUID, "partitions": [
                {"partition_index": p.partition_index, "error_code": TOPIC_DENIED, "error_message": MESSAGES[TOPIC_DENIED]}
                for p in t.partitions]} for t in drop]
    return response


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
    if denied:  # as Kafka answers: an empty member id, no message
        return {"throttle_time_ms": 0, "error_code": denied[0], "error_message": None, "member_id": "",
                "member_epoch": request.member_epoch, "heartbeat_interval_ms": 0, "acceptable_recovery_lag": 0,
                "task_offset_interval_ms": 0, "status": [], "active_tasks": None, "standby_tasks": None,
                "warmup_tasks": None, "endpoint_information_epoch": 0, "partitions_by_user_endpoint": None}
    return await handler(broker, context, request)


def _topology_topics(broker, group: dict) -> set[str]:
    names: set[str] = set()
    for sub in (group.get("topology") or {}).get("subtopologies") or ():
        names.update(sub.get("source_topics") or ())
        names.update(sub.get("repartition_sink_topics") or ())
        for key in ("state_changelog_topics", "repartition_source_topics"):
            names.update(t["name"] for t in sub.get(key) or ())
    return names


GUARDS = {
    0: _produce, 1: _fetch, 2: _list_offsets, 3: _metadata, 23: _offset_for_leader_epoch, 60: _describe_cluster,
    10: _find_coordinator,
    8: _offset_commit, 9: _offset_fetch,
    11: _group_guard(READ, _denied_join), 14: _group_guard(READ, _denied_sync),
    12: _group_guard(READ, _denied_plain), 13: _group_guard(READ, _denied_plain),
    15: _describe_groups, 16: _list_groups, 42: _delete_groups, 47: _offset_delete,
    68: _group_heartbeat, 69: _kip848_describe(_EMPTY_KIP848, _member_topics),
    19: _create_topics, 20: _delete_topics, 21: _delete_records, 37: _create_partitions,
    32: _describe_configs, 33: _alter_configs, 44: _alter_configs,
    43: _cluster_guard(ALTER, _denied_elect), 35: _cluster_guard(DESCRIBE, _denied_log_dirs),
    45: _cluster_guard(ALTER, _denied_alter_reassignments), 46: _cluster_guard(DESCRIBE, _denied_list_reassignments),
    27: _cluster_guard(CLUSTER_ACTION, _denied_markers),
    22: _init_producer_id, 24: _add_partitions_to_txn, 25: _add_offsets_to_txn,
    26: _txn_guard(lambda request, code: {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}),
    28: _txn_offset_commit, 61: _describe_producers, 65: _describe_transactions, 66: _list_transactions,
    76: _group_heartbeat, 77: _kip848_describe(_EMPTY_KIP848, _member_topics), 78: _share_records_guard(True), 79: _share_records_guard(False),
    90: _describe_share_group_offsets, 91: _alter_share_group_offsets, 92: _share_offsets_guard(DELETE),
    88: _streams_group_heartbeat, 89: _kip848_describe(
        {"group_state": "", "group_epoch": 0, "assignment_epoch": 0, "topology": None, "members": []}, _topology_topics,
        "The described group uses topics that the client is not authorized to describe."),
}
