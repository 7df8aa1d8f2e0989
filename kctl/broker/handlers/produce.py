"""Produce."""

from __future__ import annotations

import logging
from typing import cast

from kctl.broker.handlers.common import INTERNAL_TOPICS, answer_storage_error, topic_for_name, topic_name
from kctl.broker.protocol import errors
from kctl.messages.records import InvalidBatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    from kctl.broker.broker import Broker
    from kctl.broker.server import RequestContext

    # The fields this handler reads off the decoded request (kafka-python's or kctl's codec's structs).
    class _PartitionProduceData(Protocol):
        index: int
        records: bytes | memoryview | None

    class _TopicProduceData(Protocol):
        name: str  # up to v12; from v13 on, the topic_id read with getattr
        partition_data: list[_PartitionProduceData]

    class _ProduceRequest(Protocol):
        acks: int
        topic_data: list[_TopicProduceData]

log = logging.getLogger("kctl.broker.produce")


async def produce(broker: Broker, context: RequestContext, request: _ProduceRequest) -> dict[str, object] | None:
    version = context.version
    acks = request.acks
    responses: list[dict[str, object]] = []
    appended = False
    for topic in request.topic_data:
        name = topic_name(broker, topic.name if version <= 12 else None,
                          getattr(topic, "topic_id", None))
        info, topic_error = (None, errors.UNKNOWN_TOPIC_ID) if name is None else \
            topic_for_name(broker, name, False)  # Produce never creates a topic (Kafka's neither)
        partitions: list[dict[str, object]] = []
        for data in topic.partition_data:
            result: dict[str, object] = {"index": data.index, "error_code": errors.NONE, "base_offset": -1,
                                         "log_append_time_ms": -1, "log_start_offset": -1, "record_errors": [],
                                         "error_message": None}
            partitions.append(result)
            if acks not in (-1, 0, 1):
                result["error_code"] = errors.INVALID_REQUIRED_ACKS
                continue
            # info is not None only when name is not
            plog = broker.logs.logs.get((cast("str", name), data.index)) if info is not None else None
            if name in INTERNAL_TOPICS:  # the coordinators write it, clients never do
                result["error_code"] = errors.INVALID_TOPIC_EXCEPTION
                result["error_message"] = f"Cannot append to internal topic {name}"
                continue
            if plog is None:
                result["error_code"] = topic_error or errors.UNKNOWN_TOPIC_OR_PARTITION
                continue
            try:
                verify = lambda header, t=name, p=data.index: broker.transactions.verify(t, p, header)  # noqa: E731
                base, _last, append_time = plog.append(data.records, verify)
            except InvalidBatch as exc:
                result["error_code"] = exc.error_code
                result["error_message"] = str(exc)
                result["record_errors"] = [{"batch_index": i, "batch_index_error_message": None}
                                           for i in exc.record_errors]
                log.debug("rejected batch for %s-%d: %s", name, data.index, exc)
            except OSError as exc:
                # Retriable: nothing of the batch stays in the log (the append rolled back).
                answer_storage_error(result, f"append to {name}-{data.index}", exc)
            else:
                appended = True
                result.update(base_offset=base, log_append_time_ms=append_time,
                              log_start_offset=plog.log_start_offset)
        responses.append({"name": name or "", "topic_id": getattr(topic, "topic_id", None),
                          "partition_responses": partitions})
    if appended:
        broker.notify_appended()
    if acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}


HANDLERS = {0: produce}
