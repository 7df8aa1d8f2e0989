"""Fetch (with long-poll), ListOffsets and OffsetForLeaderEpoch."""

from __future__ import annotations

import time
from typing import cast

from kctl.broker.handlers.common import leader_epoch_error, topic_name
from kctl.broker.protocol import errors

TYPE_CHECKING = False
if TYPE_CHECKING:
    import uuid
    from typing import Protocol

    from kctl.broker.broker import Broker
    from kctl.broker.server import RequestContext

    # The fields these handlers read off the decoded requests (kafka-python's or kctl's codec's structs).
    class _FetchPartition(Protocol):
        partition: int
        fetch_offset: int
        partition_max_bytes: int

    class _FetchTopic(Protocol):
        topic: str
        topic_id: uuid.UUID
        partitions: list[_FetchPartition]

    class _FetchRequest(Protocol):
        max_wait_ms: int
        max_bytes: int
        min_bytes: int
        isolation_level: int
        topics: list[_FetchTopic]

    class _ListOffsetsPartition(Protocol):
        partition_index: int
        timestamp: int

    class _ListOffsetsTopic(Protocol):
        name: str
        partitions: list[_ListOffsetsPartition]

    class _ListOffsetsRequest(Protocol):
        isolation_level: int
        topics: list[_ListOffsetsTopic]

    class _EpochPartition(Protocol):
        partition: int
        current_leader_epoch: int
        leader_epoch: int

    class _EpochTopic(Protocol):
        topic: str
        partitions: list[_EpochPartition]

    class _OffsetForLeaderEpochRequest(Protocol):
        topics: list[_EpochTopic]

EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -2, -1, -3, -4, -5


READ_COMMITTED = 1


def _fetch_partition(broker: Broker, name: str | None, p: _FetchPartition, budget: int, first: bool,
                     isolation: int) -> dict[str, object]:
    plog = broker.logs.logs.get((name, p.partition)) if name is not None else None
    result: dict[str, object] = {"partition_index": p.partition, "error_code": errors.NONE, "high_watermark": -1,
                                 "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                                 "preferred_read_replica": -1, "records": b""}
    if plog is None:
        result["error_code"] = errors.UNKNOWN_TOPIC_OR_PARTITION if name is not None \
            else errors.UNKNOWN_TOPIC_ID
        return result
    end = plog.log_end_offset
    stable = plog.last_stable_offset
    result.update(high_watermark=end, last_stable_offset=stable,
                  log_start_offset=plog.log_start_offset)
    error = leader_epoch_error(getattr(p, "current_leader_epoch", -1))
    if error:
        result["error_code"] = error
        return result
    offset = p.fetch_offset
    if offset < plog.log_start_offset or offset > end:
        result["error_code"] = errors.OFFSET_OUT_OF_RANGE
        return result
    if isolation == READ_COMMITTED:
        # Up to the last stable offset, with the aborted transactions in that range so the
        # consumer can drop their records.
        result["aborted_transactions"] = [{"producer_id": a.producer_id, "first_offset": a.first_offset}
                                          for a in plog.aborted_between(offset, stable)]
        if offset < stable and budget > 0:
            result["records"] = plog.read(offset, min(p.partition_max_bytes, budget), first, stable)
    elif offset < end and budget > 0:
        result["records"] = plog.read(offset, min(p.partition_max_bytes, budget), first)
    return result


async def fetch(broker: Broker, context: RequestContext, request: _FetchRequest) -> dict[str, object]:
    version = context.version
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    by_id = version >= 13
    names = [topic_name(broker, None if by_id else t.topic, getattr(t, "topic_id", None))
             for t in request.topics]
    while True:
        budget = min(request.max_bytes, broker.config.fetch_max_bytes)
        total = 0
        has_error = False
        responses: list[dict[str, object]] = []
        for topic, name in zip(request.topics, names):
            partitions: list[dict[str, object]] = []
            for p in topic.partitions:
                result = _fetch_partition(broker, name, p, budget - total, total == 0, request.isolation_level)
                total += len(cast("bytes", result["records"]))
                has_error |= result["error_code"] != errors.NONE
                partitions.append(result)
            entry: dict[str, object] = {"partitions": partitions}
            if by_id:
                entry["topic_id"] = topic.topic_id
            else:
                entry["topic"] = topic.topic
            responses.append(entry)
        remaining = deadline - time.monotonic()
        if total >= request.min_bytes or has_error or remaining <= 0 or not request.topics:
            break
        await broker.wait_for_append(remaining)
    return {"throttle_time_ms": 0, "error_code": errors.NONE, "session_id": 0,
            "responses": responses}


def _list_offset(broker: Broker, name: str, p: _ListOffsetsPartition, version: int, isolation: int) -> dict[str, object]:
    result: dict[str, object] = {"partition_index": p.partition_index, "error_code": errors.NONE,
                                 "timestamp": -1, "offset": -1, "leader_epoch": -1}
    plog = broker.logs.logs.get((name, p.partition_index))
    if plog is None:
        result["error_code"] = errors.UNKNOWN_TOPIC_OR_PARTITION
        return result
    error = leader_epoch_error(getattr(p, "current_leader_epoch", -1))
    if error:
        result["error_code"] = error
        return result
    timestamp = p.timestamp
    # read_committed clients see the log only up to its last stable offset.
    end = plog.last_stable_offset if isolation == READ_COMMITTED else plog.log_end_offset
    if timestamp == LATEST:
        result.update(offset=end, leader_epoch=0)
    elif timestamp in (EARLIEST, EARLIEST_LOCAL):
        result.update(offset=plog.log_start_offset, leader_epoch=0)
    elif timestamp == MAX_TIMESTAMP:
        found = plog.max_timestamp_offset()
        if found is not None and found[1] < end:
            result.update(timestamp=found[0], offset=found[1], leader_epoch=0)
    elif timestamp == LATEST_TIERED:
        pass  # no tiered storage: offset -1, as Kafka answers
    elif timestamp < 0:
        result["error_code"] = errors.INVALID_REQUEST if version >= 1 else errors.NONE
    else:
        found = plog.find_by_timestamp(timestamp)
        if found is not None and found[0] < end:
            result.update(offset=found[0], timestamp=found[1], leader_epoch=0)
    return result


async def list_offsets(broker: Broker, context: RequestContext, request: _ListOffsetsRequest) -> dict[str, object]:
    isolation = request.isolation_level if context.version >= 2 else 0
    topics: list[dict[str, object]] = []
    for topic in request.topics:
        topics.append({"name": topic.name, "partitions": [
            _list_offset(broker, topic.name, p, context.version, isolation) for p in topic.partitions]})
    return {"throttle_time_ms": 0, "topics": topics}


async def offset_for_leader_epoch(broker: Broker, context: RequestContext,
                                  request: _OffsetForLeaderEpochRequest) -> dict[str, object]:
    topics: list[dict[str, object]] = []
    for topic in request.topics:
        partitions: list[dict[str, object]] = []
        for p in topic.partitions:
            result: dict[str, object] = {"error_code": errors.NONE, "partition": p.partition, "leader_epoch": -1,
                                         "end_offset": -1}
            plog = broker.logs.logs.get((topic.topic, p.partition))
            if plog is None:
                result["error_code"] = errors.UNKNOWN_TOPIC_OR_PARTITION
            elif leader_epoch_error(p.current_leader_epoch):
                result["error_code"] = leader_epoch_error(p.current_leader_epoch)
            elif p.leader_epoch <= 0:
                # Every record was written in epoch 0: its end is the log end.
                result.update(leader_epoch=0, end_offset=plog.log_end_offset)
            partitions.append(result)
        topics.append({"topic": topic.topic, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


HANDLERS = {1: fetch, 2: list_offsets, 23: offset_for_leader_epoch}
