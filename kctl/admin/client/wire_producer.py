"""kctl's own idempotent producer, for a small input read in full: the wire client's
Produce, with the idempotent producer's guarantee and without librdkafka's wait for a
producer id. kctl.records.produce gets it from the session's client
(AdminSession.kafka.small_input_producer) when it is the wire client.

Why: librdkafka's idempotent producer asks for its producer id on a 500 ms timer when no
broker connection is up yet, which is always the case for a new producer
(src/rdkafka_idempotence.c, `rd_kafka_idemp_pid_fsm`: "No broker available" ->
`rd_kafka_idemp_pid_timer_restart(rk, rd_false, ...)`), so `echo x | kctl record produce`
took 0.5 s more than its work. Here the producer id is asked for at once.

The guarantee is Kafka's idempotent producer's, kept the way Kafka keeps it: one producer
id and epoch (InitProducerId), one batch per partition with base sequence 0, acks=all, and
a batch that may not have been written (a retriable error, a connection that dropped, a
broker that restarted) is sent again unchanged — same producer id, epoch and sequence — so
the leader appends it once and answers a copy it already has with its offset
(DUPLICATE_SEQUENCE_NUMBER counts as written). It is used only when the whole input is
in memory (reader.read_ahead) and small (produce.READ_AHEAD_BYTES: a partition's one batch
stays well under any broker's max.message.bytes), with the default settings (acks=all with
idempotence, no compression, no librdkafka-only property); everything else goes through
librdkafka as before.

Failed records are reported as kctl's DeliveryFailure (Kafka's error names), as
kctl.records.produce reports librdkafka's.

Partitions are chosen as librdkafka's would be with the same `partitioner`
(kctl.partitioner: murmur2 as Java's producers, or librdkafka's consistent CRC-32);
records a partitioner spreads at random (no key) go to one partition for the whole input,
as librdkafka's sticky partitioning does, so a key lands where librdkafka would put it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from kctl.admin.client.kafka import DeliveryFailure
from kctl.admin.client.wire import WireClient
from kctl.errors import KctlError
from kctl.messages import apis, codec
from kctl.messages import records as batches
from kctl.messages.errors import ERRORS, error_name
from kctl.partitioner import partition_of

# Answers after which the same batch is sent again (Kafka's retriable Produce errors).
_RETRIABLE = frozenset({
    "NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION", "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "UNKNOWN_TOPIC_OR_PARTITION", "KAFKA_STORAGE_ERROR", "FENCED_LEADER_EPOCH",
    "UNKNOWN_LEADER_EPOCH", "CORRUPT_MESSAGE", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR",
    "CONCURRENT_TRANSACTIONS",
    # Not an answer: the connection dropped or no leader was known; whether a batch was
    # written is unknown, which is what sending it again unchanged is for.
    "_TRANSPORT",
})
_BACKOFF = 0.1


class _Outcome:
    """Why a batch was not written: Kafka's error name (or _TRANSPORT, _MSG_TIMED_OUT,
    _AUTHENTICATION for what happened on kctl's side) and its text."""

    __slots__ = ("error", "message")

    def __init__(self, error: str, message: str):
        self.error, self.message = error, message

    @classmethod
    def of_code(cls, code: int, message: str | None = None) -> _Outcome:
        name = error_name(code)
        return cls(name, message or ERRORS.get(code, (name, name))[1])

    @property
    def retriable(self) -> bool:
        return self.error in _RETRIABLE


class WireProducer:
    """The part of confluent_kafka.Producer that kctl.records.produce uses: produce()
    queues, flush() sends everything and reports each record that failed to
    `on_failure`, as a DeliveryFailure."""

    # What produce() raises for a record it refuses locally (none: the broker judges).
    local_errors: tuple[type[BaseException], ...] = ()

    def __init__(self, wire: WireClient, topic: str, partitions: int, on_failure: Callable[[DeliveryFailure], None],
                 timeout: float, partitioner: str = "murmur2", leaders: dict[int, int] | None = None):
        self._wire = wire
        # The partitions' leaders from the caller's Metadata: the first Produce requests
        # go to them without asking again (one round trip less); a retry asks.
        self._leaders = leaders
        self._topic = topic
        self._partitions = partitions
        self._on_failure = on_failure
        self._timeout = timeout
        self._partitioner = partitioner
        # Records without a key go to one partition, as librdkafka's sticky partitioner
        # sends them (os.urandom: importing random costs a one-line produce ~1 ms).
        self._sticky = int.from_bytes(os.urandom(4), "big") % partitions
        self._queued: dict[int, list[tuple]] = {}
        self._count = 0

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int = -1,
                timestamp: int = 0, headers: list | None = None) -> None:
        if partition is None or partition < 0:
            chosen = partition_of(key, self._partitions, self._partitioner)
            partition = self._sticky if chosen is None else chosen
        self._queued.setdefault(partition, []).append((key, value, timestamp or 0, headers))
        self._count += 1

    def poll(self, _timeout: float = 0) -> int:
        return 0

    def __len__(self) -> int:
        return self._count

    def flush(self, _timeout: float | None = None) -> int:
        """Send every queued record and wait for its fate (within the message timeout);
        0, as every record is then either written or reported failed."""
        if self._queued:
            self._deliver()
        self._queued.clear()
        self._count = 0
        return 0

    # -- sending ------------------------------------------------------------------------------

    def _deliver(self) -> None:
        deadline = time.monotonic() + self._timeout
        # Any broker hands out a producer id: a leader of the records' partitions does, so
        # that its connection, which Produce needs next, is opened for it, and ApiVersions
        # goes out beside it (a round trip less where the bootstrap server is not the leader).
        leader = next((self._leaders[p] for p in self._queued if p in self._leaders), None) if self._leaders else None
        try:
            producer_id, epoch = self._producer_id(leader, deadline)
        except _Failed as failed:  # nothing was sent
            for partition in list(self._queued):
                self._fail(partition, failed.error)
            return
        now = int(time.time() * 1000)
        pending = {p: self._batch(rows, producer_id, epoch, now) for p, rows in self._queued.items()}
        last_error: dict[int, _Outcome] = {}
        while pending:
            try:
                answers = self._send(pending, deadline)
            except (OSError, codec.CodecError) as exc:  # the connection dropped: whether it was written is unknown
                self._wire.close()
                answers = {p: _Outcome("_TRANSPORT", f"connection lost: {exc}") for p in pending}
            except KctlError as exc:  # refused at connection (authentication): nothing was sent
                answers = {p: _Outcome(exc.kafka_error or "_AUTHENTICATION", exc.message) for p in pending}
            for partition, outcome in answers.items():
                if outcome is None:
                    del pending[partition]
                elif outcome.retriable:
                    last_error[partition] = outcome  # sent again below, unchanged
                else:
                    del pending[partition]
                    self._fail(partition, outcome)
            if pending:
                if time.monotonic() + _BACKOFF >= deadline:
                    for partition in pending:
                        cause = last_error.get(partition)
                        last = f" (last: {cause.error}: {cause.message})" if cause else ""
                        self._fail(partition, _Outcome("_MSG_TIMED_OUT", f"Message timed out{last}"))
                    return
                time.sleep(_BACKOFF)

    def _producer_id(self, node: int | None, deadline: float) -> tuple[int, int]:
        """A producer id and epoch (InitProducerId, of broker `node`, None: the bootstrap
        server), asked again of any broker while the answer is retriable or the connection
        drops, until the deadline."""
        wire = self._wire
        fields = {"transactional_id": None, "transaction_timeout_ms": -1, "producer_id": -1, "producer_epoch": -1}
        while True:
            try:
                (answer,) = wire.fan_out([(node, apis.INIT_PRODUCER_ID, fields, 0, 4)], deadline)
                cause = None if not answer.error_code else _Outcome.of_code(answer.error_code)
            except (OSError, codec.CodecError) as exc:
                wire.close()
                answer, cause = None, _Outcome("_TRANSPORT", f"connection lost: {exc}")
            except KctlError as exc:
                raise _Failed(_Outcome(exc.kafka_error or "_AUTHENTICATION", exc.message)) from exc
            if cause is None and answer is not None:
                return answer.producer_id, answer.producer_epoch
            assert cause is not None
            if not cause.retriable or time.monotonic() + _BACKOFF >= deadline:
                raise _Failed(cause)
            node = None
            time.sleep(_BACKOFF)

    def _batch(self, rows: list[tuple], producer_id: int, epoch: int, now: int) -> bytes:
        """One RecordBatch v2 of the partition's records: base sequence 0, CreateTime."""
        timestamps = [t or now for _k, _v, t, _h in rows]
        base = min(timestamps)
        block = b"".join(batches.encode_record(i, ts - base, key, value, _headers_block(headers))
                         for i, ((key, value, _t, headers), ts) in enumerate(zip(rows, timestamps)))
        header = batches.BatchHeader(base_offset=0, batch_length=0, partition_leader_epoch=-1, magic=2, crc=0, attributes=0,
                                     last_offset_delta=len(rows) - 1, base_timestamp=base, max_timestamp=max(timestamps),
                                     producer_id=producer_id, producer_epoch=epoch, base_sequence=0, records_count=len(rows))
        return bytes(batches.build_batch(header, block, len(rows)))

    def _send(self, pending: dict[int, bytes], deadline: float) -> dict[int, _Outcome | None]:
        """One Produce request per leader for the pending partitions, all in flight at once:
        each partition's outcome (None: written)."""
        wire = self._wire
        leaders, self._leaders = self._leaders, None
        if leaders is None:
            metadata = wire.metadata([self._topic], deadline, topic_ids=False)
            topic = next((t for t in metadata.topics if t.name == self._topic), None)
            leaders = {p.partition_index: p.leader_id for p in (topic.partitions if topic else ()) if p.leader_id >= 0}
        by_leader: dict[int, list[int]] = {}
        outcomes: dict[int, _Outcome | None] = {}
        for partition in pending:
            if partition in leaders:
                by_leader.setdefault(leaders[partition], []).append(partition)
            else:
                outcomes[partition] = _Outcome.of_code(5)  # LEADER_NOT_AVAILABLE: sent again
        requests = []
        for leader, partitions in by_leader.items():
            fields = {"transactional_id": None, "acks": -1, "timeout_ms": int(max(0.1, deadline - time.monotonic()) * 1000),
                      "topic_data": [{"name": self._topic, "partition_data": [{"index": p, "records": pending[p]} for p in partitions]}]}
            requests.append((leader, apis.PRODUCE, fields, 3, 12))  # v13 names topics by id only
        for answer in wire.fan_out(requests, deadline):
            for response in answer.responses:
                for p in response.partition_responses:
                    name = error_name(p.error_code)
                    if not p.error_code or name == "DUPLICATE_SEQUENCE_NUMBER":
                        outcomes[p.index] = None
                    else:
                        outcomes[p.index] = _Outcome.of_code(p.error_code, p.error_message)
        return outcomes

    def _fail(self, partition: int, outcome: _Outcome) -> None:
        for _key, value, _t, _h in self._queued.get(partition, ()):
            self._on_failure(DeliveryFailure(outcome.error, outcome.message, partition, len(value or b"")))


class _Failed(Exception):
    def __init__(self, error: _Outcome):
        super().__init__(error.message)
        self.error = error


def _headers_block(headers: list | None) -> bytes:
    """A record's header count and headers, encoded as in a RecordBatch v2."""
    headers = headers or []
    parts = [batches.zigzag(len(headers))]
    for name, value in headers:
        key = name.encode() if isinstance(name, str) else bytes(name)
        parts.append(batches.zigzag(len(key)) + key)
        parts.append(batches.zigzag(-1) if value is None else batches.zigzag(len(value)) + bytes(value))
    return b"".join(parts)
