"""Transactions and producers (KIP-664): list and describe transactions, describe the
producers a partition knows, find transactions that hold a partition's last stable offset
back, and abort one.

A transaction left open (its producer killed, its coordinator out of step) keeps the
partition's last stable offset (LSO) at its first offset: read_committed consumers stop
there and a compacted topic is not cleaned past it. The partition leader knows each open
transaction's start offset (DescribeProducers); aborting writes an ABORT marker there
(WriteTxnMarkers, as kafka-transactions does), after which the LSO moves on.

librdkafka has none of these APIs: they go through kctl's wire client. ListTransactions
goes to every broker, DescribeTransactions to each id's transaction coordinator (a
coordinator still loading is asked again, as Kafka's admin client does), DescribeProducers
and WriteTxnMarkers to each partition's leader.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from kctl.admin.client.coordinators import TRANSACTION, per_coordinator
from kctl.admin.client.errors import for_kafka_code, no_such_topic
from kctl.admin.client.session import AdminSession
from kctl.errors import InvalidError, KctlError, NotFoundError, Partial
from kctl.messages import apis
from kctl.messages.errors import error_name

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from kctl.messages import types as t


@dataclass(frozen=True)
class Transaction:
    transactional_id: str
    producer_id: int
    state: str
    coordinator_id: int | None = None


@dataclass(frozen=True)
class TransactionDescription:
    transactional_id: str
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    # -1 when no transaction is open
    transaction_start_time_ms: int
    duration_ms: int | None
    partitions: tuple[str, ...]


@dataclass(frozen=True)
class Producer:
    """A producer a partition leader remembers (DescribeProducers)."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    # The first offset of its open transaction, or None when none is open.
    current_transaction_start_offset: int | None


@dataclass(frozen=True)
class OpenTransaction:
    """A transaction open on a partition, and what it holds back."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    start_offset: int
    last_timestamp: int
    age_ms: int
    # The LSO (read_committed stops here) and the log end offset.
    last_stable_offset: int | None
    log_end_offset: int | None
    # What the producer's coordinator says, when a transactional id has this producer id.
    transactional_id: str | None
    coordinator_state: str | None


_NEEDS = "the transaction admin APIs (ListTransactions, DescribeTransactions, DescribeProducers: KIP-664)"


# The ListTransactions version that first has each filter: the duration (KIP-994, Kafka
# 3.8) and the transactional id pattern (KIP-1152, Kafka 4.1).
_FILTER_VERSIONS = {"duration": 1, "id-pattern": 2}


@dataclass(frozen=True)
class TransactionListing:
    transactions: list[Transaction]
    # The filters some broker could not apply (its ListTransactions predates them),
    # applied by kctl to what every broker listed.
    filtered_by_kctl: tuple[str, ...] = ()


def list_transactions(session: AdminSession, *, states: Sequence[str] = (), producer_ids: Sequence[int] = (),
                      min_duration_ms: int | None = None, pattern: str | None = None) -> TransactionListing:
    """The transactional ids the coordinators hold (ListTransactions to every broker), in
    `states`, of `producer_ids`, open at least `min_duration_ms` (an ongoing transaction
    that started that long ago) and whose whole id matches `pattern`. Each filter goes to
    the brokers; one a broker's version lacks is applied by kctl (the duration from the
    transactions' start times, DescribeTransactions) and named in `filtered_by_kctl`."""
    import re

    action = "list transactions"
    asked = {"duration": min_duration_ms is not None, "id-pattern": pattern is not None}
    by_kctl: tuple[str, ...] = ()
    nodes = None
    if any(asked.values()):  # the oldest broker decides what the brokers can filter
        brokers = session.brokers(action)
        versions = session.broker_api_versions(brokers).values()
        nodes = lambda _deadline: brokers  # noqa: E731 - the brokers just listed, not listed again
        lowest = min((v.get(_LIST_TRANSACTIONS, (0, 0))[1] for v in versions), default=0)
        by_kctl = tuple(name for name, wanted in asked.items() if wanted and lowest < _FILTER_VERSIONS[name])
    fields: t.ListTransactionsRequest = {"state_filters": list(states), "producer_id_filters": list(producer_ids)}
    if min_duration_ms is not None and "duration" not in by_kctl:
        fields["duration_filter"] = min_duration_ms
    if pattern is not None and "id-pattern" not in by_kctl:
        fields["transactional_id_pattern"] = pattern
    try:
        answers = session.ask_every_broker(action, apis.LIST_TRANSACTIONS, fields, 0, 2, "a transaction coordinator was still loading",
                                           nodes=nodes)
    except KctlError as exc:
        raise _without_api(exc, action) from exc
    rows = [Transaction(t.transactional_id, t.producer_id, t.transaction_state, node) for node, answer in answers for t in answer.transaction_states]
    if "id-pattern" in by_kctl:
        assert pattern is not None
        regex = re.compile(pattern)
        rows = [row for row in rows if regex.fullmatch(row.transactional_id)]
    if "duration" in by_kctl and rows:
        assert min_duration_ms is not None
        described, _missing = describe_transactions(session, [row.transactional_id for row in rows])
        old = {d.transactional_id for d in described
               if d.state == "Ongoing" and d.duration_ms is not None and d.duration_ms >= min_duration_ms}
        rows = [row for row in rows if row.transactional_id in old]
    return TransactionListing(sorted(rows, key=lambda t: t.transactional_id), by_kctl)


_LIST_TRANSACTIONS = 66


def describe_transactions(session: AdminSession, transactional_ids: Sequence[str]) -> Partial[list[TransactionDescription]]:
    found: list[TransactionDescription] = []
    errors: dict[str, KctlError] = {}
    now = int(time.time() * 1000)
    ids = list(dict.fromkeys(transactional_ids))
    try:
        described = per_coordinator(session, TRANSACTION, ids, lambda ids: (apis.DESCRIBE_TRANSACTIONS, {"transactional_ids": ids}, 0, 0),
                                    lambda r: ((t.transactional_id, t) for t in r.transaction_states), "describe transactions")
    except KctlError as exc:
        raise _without_api(exc, "describe transactions") from exc
    for transactional_id in ids:
        d, coordinator = described[transactional_id]
        action = f"describe transaction {transactional_id}"
        if d.error_code:
            if error_name(d.error_code) == "TRANSACTIONAL_ID_NOT_FOUND":
                errors[transactional_id] = NotFoundError(action=action, cause="no such transactional id", kafka_error="TRANSACTIONAL_ID_NOT_FOUND")
            else:
                errors[transactional_id] = for_kafka_code(d.error_code, None, action)
            continue
        start = d.transaction_start_time_ms
        found.append(
            TransactionDescription(
                transactional_id, coordinator, d.transaction_state, d.producer_id, d.producer_epoch,
                d.transaction_timeout_ms, start, now - start if start >= 0 else None,
                tuple(sorted(f"{t.topic}:{p}" for t in d.topics for p in t.partitions)),
            )
        )
    return Partial(found, errors)


def _without_api(error: KctlError, action: str) -> KctlError:
    """A cluster without the API (UNSUPPORTED_VERSION): said as what it lacks."""
    if error.kafka_error == "UNSUPPORTED_VERSION":
        return InvalidError(action=action, cause=f"the cluster does not support {_NEEDS}", kafka_error="UNSUPPORTED_VERSION")
    return error


def _leaders(session: AdminSession, pairs: Sequence[tuple[str, int]], action: str) -> dict[int, list[tuple[str, int]]]:
    """The partitions by the broker that leads them."""
    metadata = session.metadata(action, sorted({t for t, _ in pairs}))
    by_leader: dict[int, list[tuple[str, int]]] = {}
    for topic, partition in dict.fromkeys(pairs):
        if metadata.lacks(topic):
            raise no_such_topic(action, topic)
        layout = metadata.topics[topic].partitions.get(partition)
        if layout is None:
            raise NotFoundError(action=action, cause=f"UNKNOWN_TOPIC_OR_PARTITION: topic {topic} has no partition {partition}",
                                kafka_error="UNKNOWN_TOPIC_OR_PARTITION")
        if layout.leader is None:
            raise KctlError(action=action, cause=f"LEADER_NOT_AVAILABLE: partition {topic}:{partition} has no leader",
                            kafka_error="LEADER_NOT_AVAILABLE")
        by_leader.setdefault(layout.leader, []).append((topic, partition))
    return by_leader


def _by_topic(pairs: Sequence[tuple[str, int]]) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = {}
    for topic, partition in pairs:
        topics.setdefault(topic, []).append(partition)
    return topics


def list_producers(session: AdminSession, pairs: Sequence[tuple[str, int]]) -> list[Producer]:
    """The active producers of each partition, as its leader knows them (DescribeProducers
    to every leader at once)."""
    if not pairs:
        return []
    action = "describe producers"
    by_leader = _leaders(session, pairs, action)
    requests = [(leader, apis.DESCRIBE_PRODUCERS, {"topics": [{"name": t, "partition_indexes": ps} for t, ps in _by_topic(owned).items()]}, 0, 0)
                for leader, owned in by_leader.items()]
    answers = session.ask_all(action, requests, needs=_NEEDS)
    rows = []
    for answer in answers:
        for t in answer.topics:
            for part in t.partitions:
                if part.error_code:
                    raise for_kafka_code(part.error_code, part.error_message, f"{action} of {t.name}:{part.partition_index}")
                for p in part.active_producers:
                    start = p.current_txn_start_offset
                    rows.append(Producer(t.name, part.partition_index, p.producer_id, p.producer_epoch, p.last_sequence,
                                         p.last_timestamp, p.coordinator_epoch, start if start >= 0 else None))
    return sorted(rows, key=lambda p: (p.topic, p.partition))


def open_transactions(session: AdminSession, pairs: Sequence[tuple[str, int]], max_age_ms: int) -> list[OpenTransaction]:
    """Transactions open on the partitions for longer than max_age_ms (by the producer's
    last write), with the partitions' LSO and log end, and the coordinator's view."""
    from kctl.admin.topics.offsets import list_offsets

    now = int(time.time() * 1000)
    # (producer, the start offset of its open transaction)
    stale = [(p, start) for p in list_producers(session, pairs)
             if (start := p.current_transaction_start_offset) is not None and now - p.last_timestamp >= max_age_ms]
    if not stale:
        return []
    blocked = sorted({(p.topic, p.partition) for p, _start in stale})
    committed = {(r.topic, r.partition): r.latest for r in list_offsets(session, blocked, isolation="read_committed")}
    ends = {(r.topic, r.partition): r.latest for r in list_offsets(session, blocked)}
    known = _coordinator_view(session, {p.producer_id for p, _start in stale})
    return [
        OpenTransaction(
            p.topic, p.partition, p.producer_id, p.producer_epoch, p.coordinator_epoch,
            start, p.last_timestamp, now - p.last_timestamp,
            committed.get((p.topic, p.partition)), ends.get((p.topic, p.partition)),
            *known.get(p.producer_id, (None, None)),
        )
        for p, start in stale
    ]


def held_back(session: AdminSession, pairs: Sequence[tuple[str, int]]) -> list[tuple[str, int, int, int]]:
    """(topic, partition, last stable offset, log end offset) of partitions whose LSO is
    behind their end: an open transaction holds read_committed consumers there."""
    from kctl.admin.topics.offsets import list_offsets

    stable = {(r.topic, r.partition): r.latest for r in list_offsets(session, pairs, isolation="read_committed")}
    return [(r.topic, r.partition, stable[(r.topic, r.partition)], r.latest)
            for r in list_offsets(session, pairs) if stable[(r.topic, r.partition)] < r.latest]


def _coordinator_view(session: AdminSession, producer_ids: set[int]) -> dict[int, tuple[str, str]]:
    """producer id -> (transactional id, state) for the ids a coordinator holds."""
    try:
        listed = list_transactions(session).transactions
    except KctlError:
        # Without DESCRIBE on transactional ids the listing is refused; the partitions'
        # own view is still the answer.
        return {}
    return {t.producer_id: (t.transactional_id, t.state) for t in listed if t.producer_id in producer_ids}


def find_open(session: AdminSession, topic: str, partition: int, *, producer_id: int | None, start_offset: int | None) -> Producer:
    """The one producer with an open transaction on the partition that matches."""
    open_ = [p for p in list_producers(session, [(topic, partition)]) if p.current_transaction_start_offset is not None]
    matches = [p for p in open_
               if (producer_id is None or p.producer_id == producer_id)
               and (start_offset is None or p.current_transaction_start_offset == start_offset)]
    where = f"{topic}:{partition}"
    if not matches:
        having = ", ".join(f"producer {p.producer_id} from offset {p.current_transaction_start_offset}" for p in open_) or "none"
        raise NotFoundError(action=f"abort a transaction on {where}", cause=f"no open transaction matches (open: {having})")
    if len(matches) > 1:
        raise NotFoundError(
            action=f"abort a transaction on {where}", cause=f"{len(matches)} are open; choose one with {{producer_id}} or {{start_offset}}"
        )
    return matches[0]


def abort(session: AdminSession, producer: Producer) -> None:
    """Write an ABORT marker for the producer's open transaction on its partition
    (WriteTxnMarkers to the partition's leader, as Kafka's Admin.abortTransaction does; the
    leader checks the producer id and epoch first). Sent again after a dropped connection,
    it finds the transaction already aborted: no harm."""
    where = (producer.topic, producer.partition)
    action = f"abort the transaction of producer {producer.producer_id} on {producer.topic}:{producer.partition}"
    leader = next(iter(_leaders(session, [where], action)))
    marker: t.WriteTxnMarkersRequestWritableTxnMarker = {"producer_id": producer.producer_id, "producer_epoch": producer.producer_epoch, "transaction_result": False,
              "topics": [{"name": producer.topic, "partition_indexes": [producer.partition]}],
              "coordinator_epoch": producer.coordinator_epoch}
    answer = session.ask(action, apis.WRITE_TXN_MARKERS, {"markers": [marker]}, 1, 1, node=leader, needs=_NEEDS)
    for result in answer.markers:
        for t in result.topics:
            for part in t.partitions:
                if part.error_code:
                    raise for_kafka_code(part.error_code, None, action)


def max_transaction_timeout_ms(session: AdminSession) -> int:
    """The brokers' transaction.max.timeout.ms: no transaction may stay open longer."""
    from kctl.admin.topics.configs import describe_configs

    broker = min(session.metadata("describe the cluster").brokers)
    found, errors = describe_configs(session, "broker", [str(broker)], keys=["transaction.max.timeout.ms"])
    for resource in found:
        for config in resource.configs:
            if config.value is not None:
                return int(config.value)
    if errors:
        raise next(iter(errors.values()))
    return 900_000  # Kafka's default


@dataclass(frozen=True)
class Termination:
    transactional_id: str
    status: str  # terminated | failed
    # The producer id and epoch the coordinator handed out in the old producer's place.
    producer_id: int | None = None
    producer_epoch: int | None = None
    error: str | None = None


# The timeout given to the producer that takes the id over (Kafka's producer's default):
# it never opens a transaction, so it only has to be valid.
_TAKEOVER_TIMEOUT_MS = 60_000


def force_terminate(session: AdminSession, transactional_ids: Sequence[str]) -> Partial[list[Termination]]:
    """End each id's transaction as a new producer of the id does, as Kafka's
    Admin.forceTerminateTransaction (KIP-939) and fenceProducers (KIP-664) do: an
    InitProducerId for the id to its coordinator, which fences the producer that holds it
    (its next write fails) and aborts its ongoing transaction. Asked again while the
    coordinator is still ending an earlier transaction (CONCURRENT_TRANSACTIONS), until
    the timeout. Needs WRITE on the transactional id; an id the coordinators do not know
    is a NotFoundError."""
    results: list[Termination] = []
    ids = list(dict.fromkeys(transactional_ids))
    # An id its coordinator does not know is refused, not taken over (which would make it).
    _known, unknown = describe_transactions(session, ids)
    errors = {i: error.but(action=f"terminate the transaction of {i}") for i, error in unknown.items()}
    for transactional_id in ids:
        if transactional_id in errors:
            results.append(Termination(transactional_id, "failed", error=errors[transactional_id].message))
            continue
        action = f"terminate the transaction of {transactional_id}"
        answer = _take_over(session, transactional_id, action)
        if answer.error_code:
            error = for_kafka_code(answer.error_code, None, action)
            errors[transactional_id] = error
            results.append(Termination(transactional_id, "failed", error=error.message))
        else:
            results.append(Termination(transactional_id, "terminated", answer.producer_id, answer.producer_epoch))
    return Partial(results, errors)


def _take_over(session: AdminSession, transactional_id: str, action: str) -> t.InitProducerIdResponse:
    """InitProducerId for `transactional_id` from its coordinator, asked again while the
    coordinator is still ending an earlier transaction, until the timeout."""
    from kctl.admin.client.errors import RETRY_BACKOFF

    fields: t.InitProducerIdRequest = {"transactional_id": transactional_id, "transaction_timeout_ms": _TAKEOVER_TIMEOUT_MS,
                                       "producer_id": -1, "producer_epoch": -1}
    deadline = time.monotonic() + session.timeout
    while True:
        answer, _coordinator = per_coordinator(session, TRANSACTION, [transactional_id], lambda ids: (apis.INIT_PRODUCER_ID, fields, 0, 5),
                                               lambda r: [(transactional_id, r)], action)[transactional_id]
        if error_name(answer.error_code) != "CONCURRENT_TRANSACTIONS" or time.monotonic() + RETRY_BACKOFF >= deadline:
            return answer
        time.sleep(RETRY_BACKOFF)
