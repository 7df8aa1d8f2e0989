"""StreamsGroupHeartbeat and StreamsGroupDescribe (KIP-1071), over coordinator/streams.py. The heartbeat creates the internal (repartition and changelog)
topics the topology needs, as Kafka's broker creates them."""

from __future__ import annotations

import logging
from typing import cast

from kctl.broker import configs as cfg
from kctl.broker.coordinator.streams import TopicInfo
from kctl.broker.handlers.common import other_group_type
from kctl.broker.protocol import errors
from kctl.broker.security import authorizer as az

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Protocol

    from kctl.broker.broker import Broker
    from kctl.broker.coordinator.streams import Task
    from kctl.broker.server import RequestContext

    # The fields these handlers read off the decoded requests (kctl's codec's structs); the
    # coordinator reads the heartbeat's others.
    class _StreamsGroupHeartbeatRequest(Protocol):
        member_id: str

    class _StreamsGroupDescribeRequest(Protocol):
        group_ids: list[str]

log = logging.getLogger("kctl.broker.streams")


def _other_type(broker: Broker) -> Callable[[str], str | None]:
    return lambda group_id: other_group_type(broker, group_id, "streams")


def _tasks(pairs: Iterable[Task]) -> list[dict[str, object]]:
    by_subtopology: dict[str, list[int]] = {}
    for subtopology, partition in sorted(pairs):
        by_subtopology.setdefault(subtopology, []).append(partition)
    return [{"subtopology_id": s, "partitions": ps} for s, ps in by_subtopology.items()]


def _create(broker: Broker, info: TopicInfo) -> str | None:
    """Create an internal topic; why not, or None."""
    try:
        # A value given validates to a value (cfg.validate's None is for a None value).
        configs = cast("dict[str, str]", {k: cfg.validate(cfg.TOPIC_CONFIGS[k], v) for k, v in info.configs
                                          if k in cfg.TOPIC_CONFIGS})
        broker.logs.create_topic(info.name, info.partitions, configs)
        log.info("created internal topic %s with %d partitions", info.name, info.partitions)
        return None
    except cfg.InvalidConfig as exc:
        return f"{info.name} ({exc})"
    except OSError as exc:
        return f"{info.name} ({exc.strerror or exc})"


async def streams_group_heartbeat(broker: Broker, context: RequestContext,
                                  request: _StreamsGroupHeartbeatRequest) -> dict[str, object]:
    result = broker.streams_groups.heartbeat(request, context.header.client_id or "", "/" + context.client_host,
                                             _other_type(broker))
    statuses = list(result.statuses)
    missing = [info for info in result.create if info.name not in broker.logs.topics]
    # As Kafka: the member's principal must be allowed to CREATE them (on the cluster or
    # on each topic); the others are named in the status and not created.
    if not context.allowed(broker, az.CREATE, az.CLUSTER, az.CLUSTER_NAME):
        allowed = [info for info in missing if context.allowed(broker, az.CREATE, az.TOPIC, info.name)]
        refused = [info.name for info in missing if info not in allowed]
        missing = allowed
    else:
        refused = []
    failed = [problem for info in missing for problem in [_create(broker, info)] if problem]
    if statuses and refused:
        code, detail = statuses[-1]
        statuses[-1] = (code, f"{detail}; Unauthorized to CREATE on topics {', '.join(refused)}.")
    if failed and statuses:
        code, detail = statuses[-1]
        statuses[-1] = (code, f"{detail}; Creation failed: {', '.join(failed)}")
    answer: dict[str, object]
    answer = {"throttle_time_ms": 0, "error_code": result.error, "error_message": result.message,
              "member_id": request.member_id, "member_epoch": result.member_epoch,
              "heartbeat_interval_ms": 5000, "acceptable_recovery_lag": 0, "task_offset_interval_ms": 60000,  # Kafka's default
              "status": [{"status_code": c, "status_detail": d} for c, d in statuses],
              "active_tasks": None, "standby_tasks": None, "warmup_tasks": None,
              "endpoint_information_epoch": 0, "partitions_by_user_endpoint": None}
    if result.tasks is not None:
        answer.update(active_tasks=_tasks(result.tasks), standby_tasks=[], warmup_tasks=[])
    return answer


def _topic_info(info: TopicInfo) -> dict[str, object]:
    return {"name": info.name, "partitions": info.partitions, "replication_factor": info.replication_factor,
            "topic_configs": [{"key": k, "value": v} for k, v in info.configs]}


async def streams_group_describe(broker: Broker, context: RequestContext,
                                 request: _StreamsGroupDescribeRequest) -> dict[str, object]:
    described: list[dict[str, object]] = []
    for group_id in request.group_ids:
        group = broker.streams_groups.groups.get(group_id)
        if group is None:
            other = other_group_type(broker, group_id, "streams", empty_classic=True)
            described.append({"error_code": errors.GROUP_ID_NOT_FOUND,
                              "error_message": f"Group {group_id} is not a streams group." if other else f"Group {group_id} not found.",
                              "group_id": group_id, "group_state": "", "group_epoch": 0, "assignment_epoch": 0,
                              "topology": None, "members": [], "authorized_operations": -2**31})
            continue
        topology = group.topology
        described.append({
            "error_code": errors.NONE, "error_message": None, "group_id": group_id, "group_state": group.state,
            "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
            "topology": {"epoch": topology.epoch if topology else 0, "subtopologies": [
                {"subtopology_id": s.id, "source_topics": list(s.sources), "repartition_sink_topics": list(s.repartition_sinks),
                 "state_changelog_topics": [_topic_info(i) for i in s.changelogs],
                 "repartition_source_topics": [_topic_info(i) for i in s.repartition_sources]}
                for s in (topology.subtopologies if topology else ())]},
            "members": [{"member_id": m.member_id, "member_epoch": m.member_epoch, "instance_id": None, "rack_id": m.rack_id,
                         "client_id": m.client_id, "client_host": m.client_host, "topology_epoch": m.topology_epoch,
                         "process_id": m.process_id, "user_endpoint": None, "client_tags": [], "task_offsets": [],
                         "task_end_offsets": [],
                         "assignment": {"active_tasks": _tasks(m.assigned), "standby_tasks": [], "warmup_tasks": []},
                         "target_assignment": {"active_tasks": _tasks(group.target.get(m.member_id, set())),
                                               "standby_tasks": [], "warmup_tasks": []},
                         "is_classic": False}
                        for m in group.members.values()],
            "authorized_operations": -2**31})
    return {"throttle_time_ms": 0, "groups": described}


HANDLERS = {88: streams_group_heartbeat, 89: streams_group_describe}
