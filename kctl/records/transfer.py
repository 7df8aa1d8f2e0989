"""Writing records read from one topic to topics, and committing the positions they were
read at with them: the one writer of `record copy`, `record redrive` and `topic clone`.

How the positions are committed decides what a failure costs:

- exactly-once (a transactional id: one cluster that has transactions, a group): the
  records and the group's offsets are written in one transaction
  (send_offsets_to_transaction), a transaction about every COMMIT_SECONDS. A killed run
  leaves an open transaction that the rerun aborts: its transactional id is the same for
  every run of one copy, and init_transactions runs (in the constructor) before the
  group's offsets are read, which the killed run's pending offsets would otherwise hold
  back until they time out.
- at-least-once (another cluster, or no transactions): the producer is flushed before the
  offsets of what it wrote are committed, so a failure can write some records twice,
  never lose one.

Every wait on the cluster (a delivery, a flush, a transaction's steps) lasts --timeout at
most (the writer session's timeout).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from kctl.admin.client.session import AdminSession, build_client
from kctl.errors import KctlError, PartialFailure
from kctl.records.consume import Key, Reading

# How long a transaction (or, at least once, an uncommitted stretch) may grow.
COMMIT_SECONDS = 0.5
_END_TXN = 26  # EndTxn's API key: a cluster without it has no transactions

# What is committed per partition: the offset, and the metadata kept with it (None: none).
Committed = tuple[int, "str | None"]


def has_transactions(session: AdminSession) -> bool:
    return _END_TXN in session.api_versions


class Transfer:
    """A producer on `writer` and the commits of the positions behind what it wrote. A dry
    run builds no producer: it sends and commits nothing."""

    def __init__(self, writer: AdminSession, *, action: str, transactional_id: str | None, partitioner: str,
                 dry_run: bool = False, on_delivery: Callable[[Any, Any], None] | None = None):
        from confluent_kafka import Producer

        from kctl.partitioner import PARTITIONERS

        self.writer = writer
        self.action = action
        self.exactly_once = transactional_id is not None and not dry_run
        self.on_delivery = on_delivery
        self.failure: KctlError | None = None
        self.in_transaction = False
        self.since = time.monotonic()
        self.producer: Any = None
        if dry_run:
            return
        config: dict[str, Any] = {"linger.ms": 5, "partitioner": PARTITIONERS[partitioner],
                                  "message.timeout.ms": int(writer.timeout * 1000)}
        config.update(writer.client_config())
        config.update({"acks": "all", "enable.idempotence": "true", "on_delivery": self._delivered})
        if self.exactly_once:
            config["transactional.id"] = transactional_id
            # librdkafka refuses a message timeout above the transaction timeout (60 s by
            # default); a transaction lasts COMMIT_SECONDS, so this is only ever a bound.
            config["transaction.timeout.ms"] = max(60_000, config["message.timeout.ms"])
        self.producer = build_client(Producer, config, "producer")
        if self.exactly_once:
            # Before the group's offsets are read (see the module docstring).
            self._call(lambda: self.producer.init_transactions(writer.timeout))

    @property
    def guarantee(self) -> str:
        return "exactly-once" if self.exactly_once else "at-least-once"

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None and self.failure is None:
            from kctl.admin.client.errors import translate

            self.failure = translate(error, self.action)
        if self.on_delivery is not None:
            self.on_delivery(error, message)

    def _call(self, call: Callable[[], Any]) -> Any:
        from confluent_kafka import KafkaException

        from kctl.admin.client.errors import error_of, translate

        try:
            return call()
        except KafkaException as exc:
            error = error_of(exc)
            if error is None:
                raise
            raise translate(error, self.action) from None

    def send(self, topic: str, message: Any, headers: list | None, partition: int = -1) -> None:
        """Write `message`'s key, value and timestamp with `headers` to `topic` (`partition`,
        or -1: where the partitioner puts its key)."""
        producer = self.producer
        if self.exactly_once and not self.in_transaction:
            self._call(producer.begin_transaction)
            self.in_transaction = True
        kind, timestamp = message.timestamp()
        while True:
            try:
                producer.produce(topic, value=message.value(), key=message.key(), partition=partition,
                                 timestamp=timestamp if kind else 0, headers=headers)
                return
            except BufferError:
                producer.poll(0.05)

    def poll(self) -> None:
        if self.producer is not None:
            self.producer.poll(0)

    def due(self) -> bool:
        """Whether the positions gathered are to be committed now (every COMMIT_SECONDS)."""
        return time.monotonic() - self.since >= COMMIT_SECONDS

    def commit(self, reading: Reading, positions: Mapping[Key, Committed], group: str | None) -> None:
        """Make what was written durable with `positions` (of `group`, when there is one)
        committed after it: in the transaction, or once every record is acknowledged."""
        from confluent_kafka import TopicPartition

        self.since = time.monotonic()
        producer = self.producer
        if producer is None:  # a dry run
            return
        offsets = [TopicPartition(t, p, o, metadata=m) if m else TopicPartition(t, p, o) for (t, p), (o, m) in positions.items()]
        if self.exactly_once:
            if not self.in_transaction and offsets:
                self._call(producer.begin_transaction)
                self.in_transaction = True
            if not self.in_transaction:
                return
            if offsets:
                metadata = reading.consumer.consumer_group_metadata()
                self._call(lambda: producer.send_offsets_to_transaction(offsets, metadata, self.writer.timeout))
            self._call(lambda: producer.commit_transaction(self.writer.timeout))
            self.in_transaction = False
            return
        remaining = producer.flush(self.writer.timeout)
        if self.failure is not None or remaining:
            failure = self.failure or KctlError(action=self.action, cause=f"{remaining} record(s) not acknowledged")
            hint = "what was acknowledged before is committed; a rerun with the same {group} goes on from there" if group else None
            raise failure.but(kind=PartialFailure, hint=hint)
        if offsets and group:
            self._call(lambda: reading.consumer.commit(offsets=offsets, asynchronous=False))

    def abandon(self) -> None:
        """A failure: an open transaction is aborted (nothing of it is read committed)."""
        if self.exactly_once and self.in_transaction:
            try:
                self.producer.abort_transaction(self.writer.timeout)
            except Exception:  # noqa: BLE001 - the failure being raised says what went wrong
                pass
            self.in_transaction = False


def paced_batch(rate: float | None) -> int | None:
    """The batch a copy paced at `rate` records per second reads at a time: half a
    second's worth, so it sleeps between batches no longer than a transaction lasts (a
    whole batch of 1,000 at --rate 10 would keep one open for 100 s, past its timeout)."""
    return max(1, int(rate * COMMIT_SECONDS)) if rate else None


def pace(rate: float | None, records: int, started: float) -> None:
    """Sleep as long as `records` written since `started` are ahead of `rate` per second."""
    if rate:
        ahead = records / rate - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)
