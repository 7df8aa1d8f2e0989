"""ApiVersions, Metadata, DescribeCluster and FindCoordinator."""

from __future__ import annotations

import logging
from typing import cast

from kctl.broker.handlers.common import CLUSTER_OPERATIONS, INTERNAL_TOPICS, NO_OPERATIONS, TOPIC_OPERATIONS, ZERO_UUID, topic_for_name
from kctl.broker.protocol import apis, errors

TYPE_CHECKING = False
if TYPE_CHECKING:
    import uuid
    from typing import Protocol

    from kctl.broker.broker import Broker
    from kctl.broker.security.listeners import Listener
    from kctl.broker.server import RequestContext
    from kctl.broker.storage.manager import TopicInfo

    # The fields these handlers read off the decoded requests (kafka-python's or kctl's codec's structs).
    class _MetadataTopic(Protocol):
        name: str | None  # null from v10 on, when the topic is asked by id

    class _MetadataRequest(Protocol):
        allow_auto_topic_creation: bool
        include_topic_authorized_operations: bool
        topics: list[_MetadataTopic] | None

    class _DescribeClusterRequest(Protocol):
        include_cluster_authorized_operations: bool

    class _FindCoordinatorRequest(Protocol):
        coordinator_keys: list[str]

log = logging.getLogger("kctl.broker")


async def api_versions(broker: Broker, context: RequestContext, request: object) -> dict[str, object]:
    return {
        "error_code": errors.NONE,
        "api_keys": apis.api_version_entries(),
        "throttle_time_ms": 0,
    }


def advertised(broker: Broker, context: RequestContext) -> tuple[str, int]:
    """The address of the listener the request came in on (Kafka answers each listener
    with its own endpoints, so a SASL_SSL client is sent on to the SASL_SSL port)."""
    listener = cast("Listener", context.session.listener)  # Session.listener is said to be an object
    return broker.config.advertised_host or listener.host, broker.config.advertised_port_of(listener)


def _brokers(broker: Broker, context: RequestContext, key: str = "node_id") -> list[dict[str, object]]:
    host, port = advertised(broker, context)
    return [{key: broker.node_id, "host": host, "port": port, "rack": None}]


async def metadata(broker: Broker, context: RequestContext, request: _MetadataRequest) -> dict[str, object]:
    version = context.version
    allow_auto = request.allow_auto_topic_creation if version >= 4 else True
    include_ops = version >= 8 and request.include_topic_authorized_operations
    if request.topics is None or (version == 0 and not request.topics):
        wanted: list[tuple[str | None, uuid.UUID | None]] = [(name, None) for name in sorted(broker.logs.topics)]
        allow_auto = False
    else:
        wanted = [(t.name, getattr(t, "topic_id", None)) for t in request.topics]
    topics: list[dict[str, object]] = []
    info: TopicInfo | None  # what topic_for_name answers, with an error code
    error: int
    for name, topic_id in wanted:
        if name is None and topic_id is not None and topic_id != ZERO_UUID:
            name = broker.logs.topic_ids.get(topic_id)
            if name is None:
                topics.append({"error_code": errors.UNKNOWN_TOPIC_ID, "name": None,
                               "topic_id": topic_id, "partitions": []})
                continue
        # A null name without an id too: topic_name_problem refuses it as an empty name.
        info, error = topic_for_name(broker, cast("str", name), allow_auto)
        if info is None:
            topics.append({"error_code": error, "name": name, "topic_id": ZERO_UUID,
                           "is_internal": False, "partitions": []})
            continue
        node = [broker.node_id]
        topics.append({
            "error_code": errors.NONE, "name": info.name, "topic_id": info.topic_id,
            "is_internal": info.name in INTERNAL_TOPICS,
            "partitions": [{"error_code": errors.NONE, "partition_index": p,
                            "leader_id": broker.node_id, "leader_epoch": 0,
                            "replica_nodes": node, "isr_nodes": node, "offline_replicas": []}
                           for p in range(info.partitions)],
            "topic_authorized_operations": TOPIC_OPERATIONS if include_ops else NO_OPERATIONS,
        })
    response: dict[str, object] = {"throttle_time_ms": 0, "brokers": _brokers(broker, context),
                                   "cluster_id": broker.cluster_id, "controller_id": broker.node_id,
                                   "topics": topics}
    if version >= 13:
        response["error_code"] = errors.NONE
    return response


async def describe_cluster(broker: Broker, context: RequestContext, request: _DescribeClusterRequest) -> dict[str, object]:
    return {
        "throttle_time_ms": 0, "error_code": errors.NONE, "error_message": None,
        "endpoint_type": 1, "cluster_id": broker.cluster_id, "controller_id": broker.node_id,
        "brokers": _brokers(broker, context, "broker_id"),
        "cluster_authorized_operations": (CLUSTER_OPERATIONS if request.include_cluster_authorized_operations
                                          else NO_OPERATIONS),
    }


async def find_coordinator(broker: Broker, context: RequestContext, request: _FindCoordinatorRequest) -> dict[str, object]:
    host, port = advertised(broker, context)
    key_type = getattr(request, "key_type", 0) if context.version >= 1 else 0
    if key_type == 0:  # a group's coordinator: Kafka creates the offsets topic on this call
        try:
            broker.offsets.ensure_topic()
        except OSError as exc:
            log.error("cannot create __consumer_offsets: %s", exc.strerror or exc)
    if context.version >= 4:
        return {"throttle_time_ms": 0, "coordinators": [
            {"key": key, "node_id": broker.node_id, "host": host, "port": port,
             "error_code": errors.NONE, "error_message": ""}  # Kafka's answer: "", not null
            for key in request.coordinator_keys]}
    return {"throttle_time_ms": 0, "error_code": errors.NONE, "error_message": None,
            "node_id": broker.node_id, "host": host, "port": port}


HANDLERS = {18: api_versions, 3: metadata, 60: describe_cluster, 10: find_coordinator}
