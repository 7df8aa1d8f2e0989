"""Transactions and producers (KIP-664): list and describe transactions, describe the
producers a partition knows, find transactions that hold a partition's last stable offset
back, and abort one.

A transaction left open (its producer killed, its coordinator out of step) keeps the
partition's last stable offset (LSO) at its first offset: read_committed consumers stop
there and a compacted topic is not cleaned past it. The partition leader knows each open
transaction's start offset (DescribeProducers); aborting writes an ABORT marker there
(WriteTxnMarkers, as kafka-transactions does), after which the LSO moves on.

librdkafka has none of these APIs. ListTransactions goes through the session's client
(kctl.admin.client.kafka, which asks a coordinator that is still loading again, as
Kafka's admin client does); the others through kafka-python's admin client.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from kctl.admin.client.session import AdminSession
from kctl.errors import KctlError, NotFoundError, Partial


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


def _run(session: AdminSession, fn, action: str):
    return session.run_kafka_python(
        fn, action, needs="the transaction admin APIs (ListTransactions, DescribeTransactions, DescribeProducers: KIP-664)"
    )


def list_transactions(session: AdminSession) -> list[Transaction]:
    """Every transactional id the coordinators hold (ListTransactions to every broker)."""
    rows = [Transaction(t.transactional_id, t.producer_id, t.state, t.coordinator_id)
            for t in session.kafka.list_transactions("list transactions")]
    return sorted(rows, key=lambda t: t.transactional_id)


def describe_transactions(session: AdminSession, transactional_ids: Sequence[str]) -> Partial[list[TransactionDescription]]:
    found, errors = [], {}
    now = int(time.time() * 1000)
    for transactional_id in dict.fromkeys(transactional_ids):
        # One at a time: kafka-python raises for the whole batch on one unknown id.
        try:
            described = _run(session, lambda c, t=transactional_id: c.describe_transactions([t]), f"describe transaction {transactional_id}")
        except KctlError as exc:
            if exc.kafka_error == "TRANSACTIONAL_ID_NOT_FOUND":
                exc = NotFoundError(f"unable to describe transaction {transactional_id}: no such transactional id")
            errors[transactional_id] = exc
            continue
        d = described[transactional_id]
        start = d.transaction_start_time_ms
        found.append(
            TransactionDescription(
                transactional_id, d.coordinator_id, d.state.value, d.producer_id, d.producer_epoch,
                d.transaction_timeout_ms, start, now - start if start >= 0 else None,
                tuple(sorted(f"{tp.topic}:{tp.partition}" for tp in d.topic_partitions)),
            )
        )
    return Partial(found, errors)


def list_producers(session: AdminSession, pairs: Sequence[tuple[str, int]]) -> list[Producer]:
    """The active producers of each partition, as its leader knows them."""
    from kafka.structs import TopicPartition

    if not pairs:
        return []
    states = _run(session, lambda c: c.describe_producers([TopicPartition(t, p) for t, p in pairs]), "describe producers")
    rows = []
    for (topic, partition), state in sorted(((tp.topic, tp.partition), s) for tp, s in states.items()):
        for p in state.active_producers:
            start = p.current_transaction_start_offset
            rows.append(
                Producer(topic, partition, p.producer_id, p.producer_epoch, p.last_sequence, p.last_timestamp,
                         p.coordinator_epoch, start if start >= 0 else None)
            )
    return rows


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
        listed = list_transactions(session)
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
        raise NotFoundError(f"unable to abort a transaction on {where}: no open transaction matches (open: {having})")
    if len(matches) > 1:
        raise NotFoundError(
            f"unable to abort a transaction on {where}: {len(matches)} are open; choose one with --producer-id or --start-offset"
        )
    return matches[0]


def abort(session: AdminSession, producer: Producer) -> None:
    """Write an ABORT marker for the producer's open transaction on its partition."""
    from kafka.admin import AbortTransactionSpec
    from kafka.structs import TopicPartition

    spec = AbortTransactionSpec(
        TopicPartition(producer.topic, producer.partition), producer.producer_id, producer.producer_epoch, producer.coordinator_epoch
    )
    _run(session, lambda c: c.abort_transaction(spec), f"abort the transaction of producer {producer.producer_id} on {producer.topic}:{producer.partition}")


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
