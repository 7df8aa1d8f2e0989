"""CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords, ElectLeaders and
DescribeLogDirs: the topic administration a single node can honour."""

from __future__ import annotations

import shutil
import uuid

from kctl.broker import configs as cfg
from kctl.broker.handlers.common import INTERNAL_TOPICS, answer_storage_error, topic_name
from kctl.broker.protocol import errors
from kctl.broker.storage.manager import TopicInfo, topic_name_problem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Protocol

    from kctl.broker.broker import Broker
    from kctl.broker.server import RequestContext

    # The fields these handlers read off the decoded requests (kafka-python's or kctl's codec's structs).
    class _Config(Protocol):
        name: str
        value: str | None

    class _Assignment(Protocol):
        broker_ids: list[int]

    class _CreatableTopic(Protocol):
        name: str
        num_partitions: int
        replication_factor: int
        assignments: list[_Assignment] | None
        configs: list[_Config] | None

    class _CreateTopicsRequest(Protocol):
        topics: list[_CreatableTopic]
        validate_only: bool

    class _DeleteTopicState(Protocol):
        name: str | None
        topic_id: uuid.UUID

    class _DeleteTopicsRequest(Protocol):
        topics: list[_DeleteTopicState]
        topic_names: list[str]

    class _CreatePartitionsTopic(Protocol):
        name: str
        count: int
        assignments: list[_Assignment] | None

    class _CreatePartitionsRequest(Protocol):
        topics: list[_CreatePartitionsTopic]
        validate_only: bool

    class _DeleteRecordsPartition(Protocol):
        partition_index: int
        offset: int

    class _DeleteRecordsTopic(Protocol):
        name: str
        partitions: list[_DeleteRecordsPartition]

    class _DeleteRecordsRequest(Protocol):
        topics: list[_DeleteRecordsTopic]

    class _TopicPartitions(Protocol):
        topic: str
        partitions: list[int]

    class _ElectLeadersRequest(Protocol):
        topic_partitions: list[_TopicPartitions] | None

    class _DescribeLogDirsRequest(Protocol):
        topics: list[_TopicPartitions] | None

    class _ReassignablePartition(Protocol):
        partition_index: int
        replicas: list[int] | None

    class _ReassignableTopic(Protocol):
        name: str
        partitions: list[_ReassignablePartition]

    class _AlterPartitionReassignmentsRequest(Protocol):
        topics: list[_ReassignableTopic]


def _replication_error(broker: Broker, factor: int) -> str | None:
    if factor in (-1, 1):
        return None
    if factor <= 0:
        return "Replication factor must be larger than 0, or -1 to use the default value."
    return (f"Unable to replicate the partition {factor} time(s): The target replication "
            f"factor of {factor} cannot be reached because only 1 broker(s) are registered.")


def _assignment_error(broker: Broker, assignments: list[list[int]]) -> str | None:
    """A single node accepts only assignments of exactly [this node]."""
    for replicas in map(list, assignments):
        if replicas == [broker.node_id]:
            continue
        unknown = sorted(set(replicas) - {broker.node_id})
        if unknown:
            return (f"The manual partition assignment includes broker(s) {unknown} that are "
                    f"not registered or replicas other than exactly one: {replicas}")
        return f"Invalid replica assignment {replicas}"
    return None


def validated_configs(entries: Iterable[_Config] | None) -> dict[str, str]:
    """Topic config overrides from a request, or cfg.InvalidConfig."""
    values: dict[str, str] = {}
    for entry in entries or []:
        definition = cfg.TOPIC_CONFIGS.get(entry.name)
        if definition is None:
            raise cfg.InvalidConfig(f"Unknown topic config name: {entry.name}")
        if entry.value is None:
            raise cfg.InvalidConfig(f"Null value not supported for topic configs: {entry.name}")
        validated = cfg.validate(definition, entry.value)
        assert validated is not None  # a value given validates to a value
        values[entry.name] = validated
    return values


def described_topic_configs(broker: Broker, info: TopicInfo) -> list[dict[str, object]]:
    values = broker.logs.resolved_configs(info)
    result: list[dict[str, object]] = []
    for name, value in sorted(values.items()):
        source = cfg.DYNAMIC_TOPIC_CONFIG if name in info.configs else cfg.DEFAULT_CONFIG
        result.append({"name": name, "value": value, "read_only": False,
                       "config_source": source, "is_sensitive": False})
    return result


async def create_topics(broker: Broker, context: RequestContext, request: _CreateTopicsRequest) -> dict[str, object]:
    results: list[dict[str, object]] = []
    for topic in request.topics:
        result: dict[str, object] = {"name": topic.name, "error_code": errors.NONE, "error_message": None,
                                     "num_partitions": -1, "replication_factor": -1, "configs": None}
        results.append(result)
        name = topic.name
        problem = topic_name_problem(name)
        partitions = topic.num_partitions
        if topic.assignments:
            partitions = len(topic.assignments)
        elif partitions == -1:
            partitions = broker.config.num_partitions
        try:
            if problem:
                raise _Failure(errors.INVALID_TOPIC_EXCEPTION, problem)
            if name in broker.logs.topics:
                raise _Failure(errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
            if topic.assignments and (topic.num_partitions != -1 or topic.replication_factor != -1):
                raise _Failure(errors.INVALID_REQUEST, "Both numPartitions or replicationFactor "
                               "and replicasAssignments were set. Both cannot be used at the same time.")
            if partitions <= 0:
                raise _Failure(errors.INVALID_PARTITIONS,
                               "Number of partitions was set to an invalid non-positive value.")
            message = _replication_error(broker, topic.replication_factor)
            if message:
                raise _Failure(errors.INVALID_REPLICATION_FACTOR, message)
            message = _assignment_error(broker, [a.broker_ids for a in topic.assignments or []])
            if message:
                raise _Failure(errors.INVALID_REPLICA_ASSIGNMENT, message)
            try:
                overrides = validated_configs(topic.configs)
            except cfg.InvalidConfig as exc:
                raise _Failure(errors.INVALID_CONFIG, str(exc)) from None
        except _Failure as failure:
            result.update(error_code=failure.code, error_message=failure.message)
            continue
        if request.validate_only:  # Kafka answers with the id the topic would get
            info = TopicInfo(name, uuid.uuid4(), partitions, overrides)
            result["topic_id"] = info.topic_id
        else:
            try:
                info = broker.logs.create_topic(name, partitions, overrides)
            except OSError as exc:  # nothing of the topic is left behind
                answer_storage_error(result, f"create topic {name}", exc)
                continue
            result["topic_id"] = info.topic_id
        result.update(num_partitions=partitions, replication_factor=1,
                      configs=described_topic_configs(broker, info))
    return {"throttle_time_ms": 0, "topics": results}


class _Failure(Exception):
    def __init__(self, code: int, message: str):
        self.code, self.message = code, message


async def delete_topics(broker: Broker, context: RequestContext, request: _DeleteTopicsRequest) -> dict[str, object]:
    version = context.version
    if version >= 6:
        wanted: list[tuple[str | None, uuid.UUID | None]] = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    results: list[dict[str, object]] = []
    for name, topic_id in wanted:
        resolved = topic_name(broker, name, topic_id)
        result: dict[str, object] = {"name": resolved if resolved is not None else name, "topic_id": topic_id,
                                     "error_code": errors.NONE, "error_message": None}
        if resolved is None or resolved not in broker.logs.topics:
            if name is None:
                result["error_code"] = errors.UNKNOWN_TOPIC_ID
            else:
                result.update(error_code=errors.UNKNOWN_TOPIC_OR_PARTITION,
                              error_message="This server does not host this topic-partition.")
        elif resolved in INTERNAL_TOPICS:
            result.update(error_code=errors.INVALID_REQUEST, error_message=f"Cannot delete internal topic {resolved}")
        else:
            info = broker.logs.topics[resolved]
            result["topic_id"] = info.topic_id
            try:
                broker.logs.delete_topic(resolved)
                broker.offsets.delete_topic(resolved)
            except OSError as exc:
                answer_storage_error(result, f"delete topic {resolved}", exc)
        results.append(result)
    return {"throttle_time_ms": 0, "responses": results}


async def create_partitions(broker: Broker, context: RequestContext, request: _CreatePartitionsRequest) -> dict[str, object]:
    results: list[dict[str, object]] = []
    for topic in request.topics:
        result: dict[str, object] = {"name": topic.name, "error_code": errors.NONE, "error_message": None}
        results.append(result)
        info = broker.logs.topics.get(topic.name)
        if info is None:
            result.update(error_code=errors.UNKNOWN_TOPIC_OR_PARTITION,
                          error_message=f"The topic '{topic.name}' does not exist.")
            continue
        if topic.count < info.partitions:
            result.update(error_code=errors.INVALID_PARTITIONS, error_message=(
                f"Topic currently has {info.partitions} partitions, which is higher than "
                f"the requested {topic.count}."))
            continue
        if topic.count == info.partitions:
            result.update(error_code=errors.INVALID_PARTITIONS,
                          error_message=f"Topic already has {info.partitions} partition(s).")
            continue
        if topic.assignments is not None:
            if len(topic.assignments) != topic.count - info.partitions:
                result.update(error_code=errors.INVALID_REPLICA_ASSIGNMENT, error_message=(
                    f"Attempted to add {topic.count - info.partitions} additional partition(s), "
                    f"but only {len(topic.assignments)} assignment(s) were specified."))
                continue
            message = _assignment_error(broker, [a.broker_ids for a in topic.assignments])
            if message:
                result.update(error_code=errors.INVALID_REPLICA_ASSIGNMENT, error_message=message)
                continue
        if not request.validate_only:
            try:
                broker.logs.add_partitions(topic.name, topic.count)
            except OSError as exc:
                answer_storage_error(result, f"add partitions to {topic.name}", exc)
    return {"throttle_time_ms": 0, "results": results}


async def delete_records(broker: Broker, context: RequestContext, request: _DeleteRecordsRequest) -> dict[str, object]:
    topics: list[dict[str, object]] = []
    for topic in request.topics:
        partitions: list[dict[str, object]] = []
        for p in topic.partitions:
            result: dict[str, object] = {"partition_index": p.partition_index, "low_watermark": -1,
                                         "error_code": errors.NONE}
            plog = broker.logs.logs.get((topic.name, p.partition_index))
            if plog is None:
                result["error_code"] = errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offset = plog.log_end_offset if p.offset == -1 else p.offset
                if offset < 0 or offset > plog.log_end_offset:
                    result["error_code"] = errors.OFFSET_OUT_OF_RANGE
                else:
                    result["low_watermark"] = plog.delete_records_before(offset)
            partitions.append(result)
        topics.append({"name": topic.name, "partitions": partitions})
    broker.logs.checkpoint()
    return {"throttle_time_ms": 0, "topics": topics}


async def elect_leaders(broker: Broker, context: RequestContext, request: _ElectLeadersRequest) -> dict[str, object]:
    results: list[dict[str, object]] = []
    for topic in request.topic_partitions or []:
        partitions: list[dict[str, object]] = []
        for partition in topic.partitions:
            known = (topic.topic, partition) in broker.logs.logs
            partitions.append({
                "partition_id": partition,
                "error_code": errors.ELECTION_NOT_NEEDED if known else errors.UNKNOWN_TOPIC_OR_PARTITION,
                "error_message": ("Leader election not needed for topic partition."
                                  if known else "The partition does not exist."),
            })
        results.append({"topic": topic.topic, "partition_result": partitions})
    return {"throttle_time_ms": 0, "error_code": errors.NONE, "replica_election_results": results}


async def describe_log_dirs(broker: Broker, context: RequestContext, request: _DescribeLogDirsRequest) -> dict[str, object]:
    logs = broker.logs
    if request.topics is None:
        wanted = sorted(logs.logs)
    else:
        wanted = [(t.topic, p) for t in request.topics for p in t.partitions
                  if (t.topic, p) in logs.logs]
    by_topic: dict[str, list[dict[str, object]]] = {}
    for name, partition in wanted:
        by_topic.setdefault(name, []).append({
            "partition_index": partition, "partition_size": logs.logs[(name, partition)].size,
            "offset_lag": 0, "is_future_key": False})
    usage = shutil.disk_usage(logs.dir)
    return {"throttle_time_ms": 0, "error_code": errors.NONE, "results": [{
        "error_code": errors.NONE, "log_dir": str(logs.dir.resolve()),
        "topics": [{"name": n, "partitions": ps} for n, ps in by_topic.items()],
        "total_bytes": usage.total, "usable_bytes": usage.free, "is_cordoned": False}]}


async def list_partition_reassignments(broker: Broker, context: RequestContext, request: object) -> dict[str, object]:
    # One node: a reassignment can never be in progress.
    return {"throttle_time_ms": 0, "error_code": errors.NONE, "error_message": None,
            "topics": []}


async def alter_partition_reassignments(broker: Broker, context: RequestContext,
                                        request: _AlterPartitionReassignmentsRequest) -> dict[str, object]:
    responses: list[dict[str, object]] = []
    for topic in request.topics:
        partitions: list[dict[str, object]] = []
        for p in topic.partitions:
            code, message = errors.NONE, None
            if (topic.name, p.partition_index) not in broker.logs.logs:
                code, message = errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
            elif p.replicas is None:
                code, message = errors.NO_REASSIGNMENT_IN_PROGRESS, None  # Kafka gives no message
            elif list(p.replicas) != [broker.node_id]:
                code = errors.INVALID_REPLICA_ASSIGNMENT
                message = (f"The replica assignment {list(p.replicas)} names brokers other than "
                           f"the only one, {broker.node_id}.")
            partitions.append({"partition_index": p.partition_index, "error_code": code,
                               "error_message": message})
        responses.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "allow_replication_factor_change": True,
            "error_code": errors.NONE, "error_message": None, "responses": responses}


HANDLERS = {45: alter_partition_reassignments, 46: list_partition_reassignments, 19: create_topics, 20: delete_topics, 37: create_partitions, 21: delete_records,
            43: elect_leaders, 35: describe_log_dirs}
