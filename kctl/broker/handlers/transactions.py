"""Transactions: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
TxnOffsetCommit, WriteTxnMarkers, and the admin APIs DescribeProducers,
DescribeTransactions and ListTransactions."""

from __future__ import annotations

import logging

from kctl.broker.coordinator.offsets import CommittedOffset
from kctl.broker.coordinator.transactions import STATES
from kctl.broker.handlers.common import storage_error_message
from kctl.broker.handlers.groups import streams_commit_check
from kctl.broker.protocol import errors
from kctl.messages.records import InvalidBatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    from kctl.broker.broker import Broker
    from kctl.broker.server import RequestContext

    # The fields these handlers read off the decoded requests (kafka-python's or kctl's codec's structs).
    class _InitProducerIdRequest(Protocol):
        transactional_id: str | None
        transaction_timeout_ms: int
        producer_id: int
        producer_epoch: int

    class _TxnTopic(Protocol):
        name: str
        partitions: list[int]

    class _AddPartitionsTransaction(Protocol):
        transactional_id: str
        producer_id: int
        producer_epoch: int
        verify_only: bool
        topics: list[_TxnTopic]

    class _AddPartitionsToTxnRequest(Protocol):
        v3_and_below_transactional_id: str
        v3_and_below_producer_id: int
        v3_and_below_producer_epoch: int
        v3_and_below_topics: list[_TxnTopic]
        transactions: list[_AddPartitionsTransaction]

    class _AddOffsetsToTxnRequest(Protocol):
        transactional_id: str
        producer_id: int
        producer_epoch: int
        group_id: str

    class _EndTxnRequest(Protocol):
        transactional_id: str
        producer_id: int
        producer_epoch: int
        committed: bool

    class _TxnCommitPartition(Protocol):
        partition_index: int
        committed_offset: int
        committed_leader_epoch: int
        committed_metadata: str | None

    class _TxnCommitTopic(Protocol):
        name: str
        partitions: list[_TxnCommitPartition]

    class _TxnOffsetCommitRequest(Protocol):
        transactional_id: str
        group_id: str
        producer_id: int
        producer_epoch: int
        generation_id: int
        member_id: str
        group_instance_id: str | None
        topics: list[_TxnCommitTopic]

    class _TopicPartitions(Protocol):
        name: str
        partition_indexes: list[int]

    class _Marker(Protocol):
        producer_id: int
        producer_epoch: int
        transaction_result: bool
        coordinator_epoch: int
        topics: list[_TopicPartitions]

    class _WriteTxnMarkersRequest(Protocol):
        markers: list[_Marker]

    class _DescribeProducersRequest(Protocol):
        topics: list[_TopicPartitions]

    class _DescribeTransactionsRequest(Protocol):
        transactional_ids: list[str]

    class _ListTransactionsRequest(Protocol):
        state_filters: list[str] | None
        producer_id_filters: list[int] | None
        duration_filter: int
        transactional_id_pattern: str | None

log = logging.getLogger("kctl.broker.transactions")


def _fenced(version: int, first_version: int) -> int:
    """Kafka answers a stale epoch with PRODUCER_FENCED from these versions on, and with
    INVALID_PRODUCER_EPOCH to older clients, which do not know the newer code."""
    return errors.PRODUCER_FENCED if version >= first_version else errors.INVALID_PRODUCER_EPOCH


def _storage_failure(action: str, exc: Exception) -> int:
    if isinstance(exc, InvalidBatch):
        return exc.error_code
    log.error("%s", storage_error_message(action, exc))
    return errors.KAFKA_STORAGE_ERROR


async def init_producer_id(broker: Broker, context: RequestContext, request: _InitProducerIdRequest) -> dict[str, object]:
    version = context.version
    producer_id = request.producer_id if version >= 3 else -1
    producer_epoch = request.producer_epoch if version >= 3 else -1
    try:
        if request.transactional_id:
            error, pid, epoch = broker.transactions.init_producer_id(
                request.transactional_id, request.transaction_timeout_ms, producer_id, producer_epoch,
                _fenced(version, 4))
        else:
            error, (pid, epoch) = errors.NONE, broker.producer_ids.init(producer_id, producer_epoch)
    except (OSError, InvalidBatch) as exc:  # an id block or the coordinator's state not written
        error, pid, epoch = _storage_failure("initialise a producer id", exc), -1, -1
    return {"throttle_time_ms": 0, "error_code": error, "producer_id": pid, "producer_epoch": epoch}


def _add_partitions(broker: Broker, transactional_id: str, producer_id: int, producer_epoch: int, topics: list[_TxnTopic],
                    fenced: int, verify_only: bool = False) -> list[dict[str, object]]:
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    try:
        results = broker.transactions.add_partitions(transactional_id, producer_id, producer_epoch, wanted,
                                                     fenced, verify_only)
    except OSError as exc:
        code = _storage_failure(f"add partitions to transaction {transactional_id}", exc)
        results = {tp: code for tp in wanted}
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, partition), code in results.items():
        by_topic.setdefault(topic, []).append({"partition_index": partition, "partition_error_code": code})
    return [{"name": name, "results_by_partition": rows} for name, rows in by_topic.items()]


async def add_partitions_to_txn(broker: Broker, context: RequestContext, request: _AddPartitionsToTxnRequest) -> dict[str, object]:
    version = context.version
    if version <= 3:
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _add_partitions(
            broker, request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch, request.v3_and_below_topics, _fenced(version, 2))}
    # v4+: batched, and verify-only checks (sent between brokers in Kafka).
    return {"throttle_time_ms": 0, "error_code": errors.NONE, "results_by_transaction": [
        {"transactional_id": t.transactional_id, "topic_results": _add_partitions(
            broker, t.transactional_id, t.producer_id, t.producer_epoch, t.topics, errors.PRODUCER_FENCED, t.verify_only)}
        for t in request.transactions]}


async def add_offsets_to_txn(broker: Broker, context: RequestContext, request: _AddOffsetsToTxnRequest) -> dict[str, object]:
    try:
        error = broker.transactions.add_offsets(request.transactional_id, request.producer_id, request.producer_epoch,
                                                request.group_id, _fenced(context.version, 2))
    except OSError as exc:
        error = _storage_failure(f"add offsets to transaction {request.transactional_id}", exc)
    return {"throttle_time_ms": 0, "error_code": error}


async def end_txn(broker: Broker, context: RequestContext, request: _EndTxnRequest) -> dict[str, object]:
    try:
        error = broker.transactions.end_txn(request.transactional_id, request.producer_id, request.producer_epoch,
                                            request.committed, _fenced(context.version, 2))
    except (OSError, InvalidBatch) as exc:
        # Left prepared: the client's retry (or the next start) completes it.
        error = _storage_failure(f"end transaction {request.transactional_id}", exc)
    return {"throttle_time_ms": 0, "error_code": error, "producer_id": -1, "producer_epoch": -1}


async def txn_offset_commit(broker: Broker, context: RequestContext, request: _TxnOffsetCommitRequest) -> dict[str, object]:
    version = context.version
    now: int = broker.clock()
    offsets: dict[tuple[str, int], CommittedOffset]
    unknown: set[tuple[str, int]]
    offsets, unknown = {}, set()
    for topic in request.topics:
        for p in topic.partitions:
            if (topic.name, p.partition_index) not in broker.logs.logs:
                unknown.add((topic.name, p.partition_index))
                continue
            epoch = p.committed_leader_epoch if version >= 2 else -1
            offsets[(topic.name, p.partition_index)] = CommittedOffset(p.committed_offset, epoch, p.committed_metadata, now)
    error = errors.NONE
    if version >= 3 and (request.member_id or request.generation_id >= 0):
        # KIP-447: the commit of a consumer-transform-produce member is fenced like its
        # consumer's own commits would be.
        if request.group_id in broker.consumer_groups.groups:
            error = broker.consumer_groups.check_member(request.group_id, request.member_id, request.generation_id)
        elif request.group_id in broker.streams_groups.groups:
            error = streams_commit_check(broker, request.group_id, request.member_id, request.generation_id)
        else:
            error = broker.groups.check_commit(request.group_id, request.generation_id, request.member_id,
                                               request.group_instance_id)
    if not error:
        try:
            error = broker.transactions.txn_offset_commit(request.transactional_id, request.group_id, request.producer_id,
                                                          request.producer_epoch, offsets, _fenced(version, 2))
        except OSError as exc:
            error = _storage_failure(f"commit offsets of transaction {request.transactional_id}", exc)
    return {"throttle_time_ms": 0, "topics": [
        {"name": topic.name, "partitions": [
            {"partition_index": p.partition_index,
             "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION if (topic.name, p.partition_index) in unknown else error}
            for p in topic.partitions]}
        for topic in request.topics]}


async def write_txn_markers(broker: Broker, context: RequestContext, request: _WriteTxnMarkersRequest) -> dict[str, object]:
    markers: list[dict[str, object]] = []
    for marker in request.markers:
        wanted = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
        results = broker.transactions.write_markers(marker.producer_id, marker.producer_epoch, marker.transaction_result,
                                                    marker.coordinator_epoch, wanted)
        by_topic: dict[str, list[dict[str, int]]] = {}
        for (topic, partition), code in results.items():
            by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": code})
        markers.append({"producer_id": marker.producer_id,
                        "topics": [{"name": name, "partitions": rows} for name, rows in by_topic.items()]})
    return {"markers": markers}


async def describe_producers(broker: Broker, context: RequestContext, request: _DescribeProducersRequest) -> dict[str, object]:
    topics: list[dict[str, object]] = []
    for topic in request.topics:
        partitions: list[dict[str, object]] = []
        for index in topic.partition_indexes:
            plog = broker.logs.logs.get((topic.name, index))
            if plog is None:
                partitions.append({"partition_index": index, "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION,
                                   "error_message": None, "active_producers": []})
                continue
            partitions.append({"partition_index": index, "error_code": errors.NONE, "error_message": None,
                               "active_producers": [
                {"producer_id": pid, "producer_epoch": entry.epoch,
                 "last_sequence": entry.batches[-1][1] if entry.batches else -1,
                 "last_timestamp": entry.last_timestamp, "coordinator_epoch": entry.coordinator_epoch,
                 "current_txn_start_offset": entry.current_txn_first_offset}
                for pid, entry in sorted(plog.producers.producers.items())]})
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


# A transaction not described (not found, or not allowed): Kafka's defaults, zeros.
NO_TRANSACTION: dict[str, object] = {"transaction_state": "", "transaction_timeout_ms": 0, "transaction_start_time_ms": 0,
                                     "producer_id": 0, "producer_epoch": 0, "topics": []}


async def describe_transactions(broker: Broker, context: RequestContext,
                                request: _DescribeTransactionsRequest) -> dict[str, object]:
    states: list[dict[str, object]] = []
    for transactional_id in request.transactional_ids:
        meta = broker.transactions.transactions.get(transactional_id)
        if meta is None:
            states.append({"error_code": errors.TRANSACTIONAL_ID_NOT_FOUND, "transactional_id": transactional_id,
                           **NO_TRANSACTION})
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(meta.partitions):
            by_topic.setdefault(topic, []).append(partition)
        states.append({"error_code": errors.NONE, "transactional_id": transactional_id,
                       "transaction_state": meta.state, "transaction_timeout_ms": meta.timeout_ms,
                       "transaction_start_time_ms": meta.start_ms, "producer_id": meta.producer_id,
                       "producer_epoch": meta.producer_epoch,
                       "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]})
    return {"throttle_time_ms": 0, "transaction_states": states}


async def list_transactions(broker: Broker, context: RequestContext, request: _ListTransactionsRequest) -> dict[str, object]:
    version = context.version
    wanted = list(request.state_filters or [])
    unknown = [s for s in wanted if s not in STATES]
    duration = request.duration_filter if version >= 1 else -1
    pattern = request.transactional_id_pattern if version >= 2 else None
    if pattern:
        import re
        try:
            re.compile(pattern)
        except re.error:
            return {"throttle_time_ms": 0, "error_code": errors.INVALID_REQUEST, "unknown_state_filters": [],
                    "transaction_states": []}
    found = broker.transactions.list([s for s in wanted if s in STATES], list(request.producer_id_filters or []),
                                     duration, pattern)
    if wanted and not [s for s in wanted if s in STATES]:
        found = []  # only unknown states asked for: nothing matches
    return {"throttle_time_ms": 0, "error_code": errors.NONE, "unknown_state_filters": unknown,
            "transaction_states": [{"transactional_id": m.transactional_id, "producer_id": m.producer_id,
                                    "transaction_state": m.state} for m in found]}


HANDLERS = {22: init_producer_id, 24: add_partitions_to_txn, 25: add_offsets_to_txn, 26: end_txn,
            27: write_txn_markers, 28: txn_offset_commit, 61: describe_producers, 65: describe_transactions,
            66: list_transactions}
