"""Consuming records between two positions, in one or many partitions.

Without a group kctl assigns the partitions itself and commits nothing. With a group it
joins it (subscribe), so it shares partitions with the group's other members and starts
from the group's committed offsets; `--from` then overrides where each assigned
partition starts. Offsets are stored only for records the sink has taken (written or
filtered out), and committed by librdkafka's auto-commit and on close: what was printed
is never skipped on the next run, and nothing unprinted is marked consumed.

Unless following, each partition stops at its end as of the moment consuming starts (or
at --to); librdkafka's partition-EOF event ends partitions whose last offsets are
transaction markers or compacted away.

A Reading is one consume, open, yielding its records in batches: `record consume` writes
each out (consume()), `record copy` and `redrive` write them to topics and commit the
positions themselves (kctl.records.copy).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from kctl.admin.client.errors import translate
from kctl.admin.client.session import AdminSession, build_client
from kctl.admin.topics.offsets import PartitionSelector, list_offsets, offsets_for_time, resolve_partitions
from kctl.errors import ConfigError, KctlError, TimeoutError_, UsageError
from kctl.records.position import COMMITTED, EARLIEST, LATEST, Position

if TYPE_CHECKING:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

_BATCH = 1000
_POLL_SECONDS = 0.2
# A new group waits group.initial.rebalance.delay.ms (3 s by default) before assigning.
_JOIN_SECONDS = 30.0


@dataclass(frozen=True, kw_only=True)
class ConsumeOptions:
    selectors: Sequence[PartitionSelector]
    start: Position
    # Where each partition stops (exclusive); None: never (with follow).
    end: Position | None
    # Wait for new records at the end instead of stopping there; an --to offset or time
    # in the future is then waited for too.
    follow: bool = False
    max_records: int | None = None
    group: str | None = None
    commit: bool = True
    isolation: str = "read_uncommitted"
    # With a group: read the partitions by assignment, the group only keeping offsets (no
    # member to wait out after a crash; `record copy`, whose transactions fence a second run).
    assign: bool = False


@dataclass(frozen=True, kw_only=True)
class ConsumeReport:
    records: int
    # Records read but not passed to the sink by the filter.
    filtered: int
    partitions: int
    seconds: float
    # Why consuming stopped: end, max-records, interrupted, closed-pipe.
    stopped: str
    # With --group: the last failed offset commit ("NAME: description"), else None.
    commit_error: str | None = None
    # With --group: the offsets the group committed (Kafka's acknowledgements, the final
    # commit on close included) per partition.
    committed: dict[tuple[str, int], int] = field(default_factory=dict)


Key = tuple[str, int]


def _bounds(session: AdminSession, options: ConsumeOptions, pairs: Sequence[Key], committed: dict[Key, int]) -> tuple[dict[Key, int], dict[Key, int]]:
    """(start, end) offsets per partition, from the options and the partitions' offsets.
    Following, ends are only the --to offsets (not capped at the current end); a --to
    time is then checked per record (see _loop)."""
    start, end, follow = options.start, options.end, options.follow
    at_ms = start.at_ms if start.kind == "time" else None
    rows = {(r.topic, r.partition): r for r in list_offsets(session, pairs, at_ms=at_ms, isolation=options.isolation)}
    starts: dict[Key, int] = {}
    for key in pairs:
        row = rows[key]
        if start.kind == EARLIEST:
            offset = row.earliest
        elif start.kind == LATEST:
            offset = row.latest
        elif start.kind == "offset":
            offset = min(max(start.offset or 0, row.earliest), row.latest)
        elif start.kind == "tail":
            offset = max(row.earliest, row.latest - (start.tail or 0))
        elif start.kind == "time":  # the offset at the time, the log end when none is that recent
            offset = row.offset_at if row.offset_at is not None else row.latest
        else:  # committed; a partition the group never committed starts at the earliest
            known = committed.get(key, -1)
            offset = row.earliest if known < 0 else min(max(known, row.earliest), row.latest)
        starts[key] = offset
    ends: dict[Key, int] = {}
    if end is None or (follow and end.kind != "offset"):
        return starts, ends
    at_end = offsets_for_time(session, pairs, end.at_ms or 0, isolation=options.isolation) if end.kind == "time" else {}
    for key in pairs:
        latest = rows[key].latest
        if end.kind == LATEST:
            ends[key] = latest
        elif end.kind == "offset":
            ends[key] = (end.offset or 0) if follow else min(end.offset or 0, latest)
        else:  # no record at or after the time: everything up to the end is before it
            ends[key] = latest if at_end[key] < 0 else at_end[key]
    return starts, ends


def consumer_config(session: AdminSession, options: ConsumeOptions) -> dict[str, Any]:
    config: dict[str, Any] = {
        # Records deleted (retention, DeleteRecords) after the start was chosen: go on
        # from what is left, as Kafka's consumers do.
        "auto.offset.reset": "earliest",
        "enable.partition.eof": "true",
        # librdkafka postpones fetching for a whole second (its default) whenever the
        # prefetch queue is full; a consumer that writes to a slow pipe hits that often.
        "fetch.queue.backoff.ms": 10,
        # Offsets are stored by hand once the sink has the records (see the module doc).
        "enable.auto.offset.store": "false",
    }
    config.update(session.client_config())
    config.update(
        {
            "group.id": options.group or "kctl-consume",
            "enable.auto.commit": "true" if options.group and options.commit else "false",
            "isolation.level": options.isolation,
        }
    )
    return config


class Batch(NamedTuple):
    """What one poll of a Reading gave: the records `keep` kept (confluent_kafka.Message
    objects, in offset order per partition), the next offset of each partition the batch
    read (records filtered out included: where a rerun goes on), and how many `keep`
    left out."""

    records: list
    positions: dict[Key, int]
    filtered: int


class Reading:
    """One consume, open: the consumer, where each partition started and stops, and the
    batches read in order (batches()). A context manager: the consumer is closed (a
    group's final commit) on leaving it.

    `record consume` writes each batch out; `record copy`, `redrive` and `topic clone`
    (kctl.records.copy) write it to a topic and commit positions themselves."""

    def __init__(self, session: AdminSession, options: ConsumeOptions, keep: Callable[[Any], bool] | None = None):
        self.session = session
        self.options = options
        self.keep = keep
        self.consumer: Any = None  # set once built: its config needs on_commit below
        # The first offset read of each partition, and where each stops (exclusive).
        self.starts: dict[Key, int] = {}
        self.ends: dict[Key, int] = {}
        # The group's committed offsets as read at the start (start == committed), with
        # their metadata: {partition: (offset, metadata)}.
        self.committed_at_start: dict[Key, tuple[int, str | None]] = {}
        self.live: set[Key] = set()
        self.assigned = False
        # Since when the group has given this member no assignment (start, or a revoke).
        self.unassigned_since = time.monotonic()
        self.partitions_seen: set[Key] = set()
        # Records between the start and end offsets of the partitions read; None when a
        # partition has no end (--follow): the total of the progress display.
        self.planned: int | None = 0
        # Records read so far: kept (passed on) and filtered out by `keep`.
        self.records = self.filtered = 0
        # Why reading stopped: end, max-records, interrupted (the caller's event, or
        # Ctrl-C), closed-pipe; set by batches() and its caller.
        self.stopped = "end"
        self.commit_error: str | None = None
        self.committed: dict[Key, int] = {}
        # The KIP-848 protocol and the cooperative classic assignor hand out and take back
        # partitions incrementally; eager assignors hand out the whole assignment each time.
        self.incremental = False
        # Set before close(): the rebalance callbacks it runs must leave the handle alone.
        self.closing = False
        self.started = time.monotonic()

    def __enter__(self) -> Reading:
        self.open()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Build the consumer and subscribe it, or assign it the partitions."""
        from confluent_kafka import Consumer

        options, session = self.options, self.session
        if options.start.kind == COMMITTED and not options.group:
            raise UsageError(action="consume", cause="{start} committed needs {group}")
        pairs = resolve_partitions(session, options.selectors, action="consume")
        explicit = any(s.ranges for s in options.selectors)
        config = consumer_config(session, options)
        consumer_protocol = str(config.get("group.protocol", "classic")).lower() == "consumer"
        self.incremental = consumer_protocol or "cooperative" in str(config.get("partition.assignment.strategy", ""))
        config["on_commit"] = self.on_commit
        if options.group and consumer_protocol and _lacks_consumer_protocol(session):
            # librdkafka only logs that the heartbeat is unsupported and waits; say it now.
            raise _no_consumer_protocol(", ".join(dict.fromkeys(t for t, _ in pairs)))
        consumer = self.consumer = build_client(Consumer, config, "consumer")
        self.started = time.monotonic()
        try:
            if options.group and not explicit and not options.assign:
                topics = list(dict.fromkeys(t for t, _ in pairs))
                consumer.subscribe(topics, on_assign=self.on_assign, on_revoke=self.on_revoke)
            else:
                # librdkafka looks up the leaders of assigned partitions on its next 1 s metadata
                # timer unless the topic is already in its cache: ask now (~1 ms), so reading
                # starts at once rather than up to a second later.
                for name in dict.fromkeys(t for t, _ in pairs):
                    consumer.list_topics(name, timeout=session.timeout)
                consumer.assign(self.start_partitions(pairs))
                self.assigned = True
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.consumer is not None and not self.closing:
            self.closing = True
            _close(self.consumer)

    def on_commit(self, error: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """librdkafka's commit callback, served while consuming and in close() (the final
        commit): a failed auto-commit would otherwise only be logged."""
        from kctl.admin.client.errors import describe

        if error is not None and error.name() != "_NO_OFFSET":
            self.commit_error = describe(error)
            return
        failed = [tp for tp in partitions or () if tp.error is not None]
        if failed:
            self.commit_error = describe(failed[0].error)
        for tp in partitions or ():
            if tp.error is None and tp.offset >= 0:
                self.committed[(tp.topic, tp.partition)] = tp.offset

    def start_partitions(self, pairs: Sequence[Key]) -> list[TopicPartition]:
        """TopicPartitions to assign, positioned at their start; empty ranges are skipped."""
        from confluent_kafka import TopicPartition

        committed: dict[Key, int] = {}
        if self.options.start.kind == COMMITTED:
            found = self.committed_of(pairs)
            self.committed_at_start.update(found)
            committed = {key: offset for key, (offset, _metadata) in found.items()}
        starts, ends = _bounds(self.session, self.options, pairs, committed)
        self.starts.update(starts)
        self.ends.update(ends)
        chosen: list[TopicPartition] = []
        for key in pairs:
            if key in ends and starts[key] >= ends[key]:
                continue
            self.live.add(key)
            chosen.append(TopicPartition(key[0], key[1], starts[key]))
            if key in ends and self.planned is not None:
                self.planned += ends[key] - starts[key]
            else:
                self.planned = None
        self.partitions_seen.update(pairs)
        return chosen

    def committed_of(self, pairs: Sequence[Key]) -> dict[Key, tuple[int, str | None]]:
        """The group's committed offset (-1: none) and its metadata, per partition."""
        from confluent_kafka import TopicPartition

        asked = [TopicPartition(t, p) for t, p in pairs]
        return {(tp.topic, tp.partition): (tp.offset, tp.metadata)
                for tp in self.consumer.committed(asked, timeout=self.session.timeout)}

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        chosen = self.start_partitions([(tp.topic, tp.partition) for tp in partitions])
        if self.incremental:  # `partitions` are only the ones added
            consumer.incremental_assign(chosen)
        else:
            consumer.assign(chosen)
        self.assigned = True

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self.closing:
            # close() revokes everything while the handle is being destroyed, when asking it
            # anything fails (_DESTROY); with nothing unassigned here, confluent-kafka
            # unassigns by itself, as it does after any rebalance callback that did not.
            return
        # A rebalance: wait for the next assignment rather than ending with nothing live.
        for tp in partitions:
            self.live.discard((tp.topic, tp.partition))
        if self.incremental:  # only the ones taken away; start_partitions skipped empty ones
            mine = {(tp.topic, tp.partition) for tp in consumer.assignment()}
            consumer.incremental_unassign([tp for tp in partitions if (tp.topic, tp.partition) in mine])
            if consumer.assignment():
                return
        else:
            consumer.unassign()
        self.assigned = False
        self.unassigned_since = time.monotonic()

    def finish(self, key: Key) -> None:
        """Read no more of partition `key` (its end reached, or its reader has had enough)."""
        from confluent_kafka import TopicPartition

        if key in self.live:
            self.live.discard(key)
            self.consumer.pause([TopicPartition(key[0], key[1])])

    @property
    def done(self) -> bool:
        return self.assigned and not self.live and (not self.options.follow or self.options.end is not None)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    def store(self, positions: Mapping[Key, int]) -> None:
        """Mark positions as consumed: the group's auto-commit and close() commit them."""
        from confluent_kafka import TopicPartition

        self.consumer.store_offsets(offsets=[TopicPartition(t, p, o) for (t, p), o in positions.items()])

    def batches(self, gone: Callable[[], bool] = lambda: False, stop: threading.Event | None = None,
                size: int | None = None) -> Iterator[Batch]:
        """The batches read, of `size` records at most (else up to _BATCH), until every
        partition reached its end (`stopped` says why reading ended otherwise:
        --max-records, `stop` set, `gone()` true while no records arrive: the reader of a
        pipe went away). A batch is yielded whenever it read something, so a caller sees
        positions move past records filtered out."""
        options, consumer = self.options, self.consumer
        limit = options.max_records
        follow = options.follow
        # Following up to a time: a partition ends at its first record at or after it.
        end_ms = options.end.at_ms if follow and options.end is not None and options.end.kind == "time" else None
        join_seconds = max(_JOIN_SECONDS, self.session.timeout)
        while not self.done:
            if stop is not None and stop.is_set():
                self.stopped = "interrupted"
                return
            if not self.assigned and time.monotonic() - self.unassigned_since > join_seconds:
                raise TimeoutError_(action="consume", cause=f"group {options.group} assigned no partitions within {join_seconds:.0f}s")
            want = min(size or _BATCH, _BATCH if limit is None else limit - self.records)
            # consume(n, timeout) waits for all n records or the whole timeout, so take
            # what is queued, and block only for the first record when nothing is.
            messages = consumer.consume(want, 0)
            if not messages:
                first = consumer.poll(_POLL_SECONDS)
                if first is None:
                    if gone():
                        self.stopped = "closed-pipe"
                        return
                    continue
                messages = [first] + consumer.consume(want - 1, 0) if want > 1 else [first]
            out, positions, dropped = _take(self, messages, self.keep, end_ms, None if limit is None else limit - self.records)
            self.records += len(out)
            self.filtered += dropped
            if out or positions:
                yield Batch(out, positions, dropped)
            if limit is not None and self.records >= limit:
                self.stopped = "max-records"
                return


def consume(
    session: AdminSession,
    options: ConsumeOptions,
    sink: Callable[[list[Any]], None],
    keep: Callable[[Any], bool] | None = None,
    gone: Callable[[], bool] = lambda: False,
    on_batch: Callable[[int, int | None], None] | None = None,
    interrupted: threading.Event | None = None,
) -> ConsumeReport:
    """Read records and hand them to `sink` in batches (confluent_kafka.Message objects,
    in offset order per partition). `keep` filters before the sink and --max-records.
    `gone` is asked while no records arrive: True (the reader of a pipe went away)
    stops consuming as a closed pipe does when written to. `on_batch(read, planned)`
    follows each batch: records read so far (kept or not) and the offsets between the
    start and end of the partitions (None without an end), for a progress display.
    Ctrl-C (a KeyboardInterrupt, even while a write to a slow reader blocked) ends
    reading as "interrupted"; `interrupted` is the event the caller's signal handler
    sets first (see below)."""
    store = options.group is not None and options.commit
    with Reading(session, options, keep) as reading:
        try:
            for batch in reading.batches(gone):
                if batch.records:
                    sink(batch.records)
                if on_batch is not None:
                    on_batch(reading.records + reading.filtered, reading.planned)
                if store and batch.positions:
                    reading.store(batch.positions)
        except KeyboardInterrupt:
            # The consumer is closed (committing what the sink took) and the caller
            # reports how far it got.
            reading.stopped = "interrupted"
        except SystemError:
            # confluent-kafka 2.16's poll() sometimes loses the KeyboardInterrupt a Ctrl-C raised
            # while an OAuth token callback (a token command) runs on librdkafka's background
            # thread, and fails with "returned NULL without setting an exception" (seen in 2
            # of 4 runs of tests/cli/test_token_program.py): after a signal, that is Ctrl-C.
            if interrupted is None or not interrupted.is_set():
                raise
            reading.stopped = "interrupted"
        except BrokenPipeError:
            reading.stopped = "closed-pipe"
    return ConsumeReport(
        records=reading.records, filtered=reading.filtered, partitions=len(reading.partitions_seen), seconds=reading.seconds,
        stopped=reading.stopped, commit_error=reading.commit_error, committed=dict(reading.committed),
    )


def _close(consumer: Any) -> None:
    try:
        consumer.close()
    except KeyboardInterrupt:
        raise
    # Closing must not mask the outcome (a closed pipe, an interrupt). The bare except also
    # takes what confluent-kafka raises when a callback fails inside close(): its
    # KafkaError, which is not an exception class, so `except Exception` lets it through.
    except:  # noqa: E722
        pass


def _take(run: Reading, messages: list, keep: Callable[[Any], bool] | None, end_ms: int | None,
          room: int | None) -> tuple[list, dict[Key, int], int]:
    """(records for the sink, next offset per partition to store, records filtered out)
    from one batch. Most batches lie wholly inside every partition's range, which a few
    C-level passes establish; only a batch that crosses an end, a limit, an error or a
    finished partition is walked record by record."""
    from confluent_kafka import Message

    # map() over Message's own methods: no Python frame per record, measured at about
    # half the time of the equivalent list comprehensions on 200,000 records. (any(), not
    # a comparison with None: KafkaError's == raises on None; it has no __bool__, so an
    # error is always true.)
    if end_ms is None and not any(map(Message.error, messages)):
        keys = zip(map(Message.topic, messages), map(Message.partition, messages))
        # Offsets ascend within a partition, so the last one seen is the highest. (A
        # record without an error has its topic, partition and offset: never None here.)
        last: dict[Key, int] = dict(zip(keys, map(Message.offset, messages)))  # type: ignore[arg-type]
        ends, live = run.ends, run.live
        # A batch that may cross --max-records is walked record by record: there `keep` is
        # asked of each record once, up to the limit (its failures are counted once).
        if (room is None or len(messages) <= room) and all(k in live and (k not in ends or o < ends[k]) for k, o in last.items()):
            out = messages if keep is None else [m for m in messages if keep(m)]
            for key, offset in last.items():
                if key in ends and offset + 1 >= ends[key]:
                    run.finish(key)
            return out, {k: o + 1 for k, o in last.items()}, len(messages) - len(out)
    return _take_slowly(run, messages, keep, end_ms, room)


def _take_slowly(run: Reading, messages: list, keep: Callable[[Any], bool] | None, end_ms: int | None,
                 room: int | None) -> tuple[list, dict[Key, int], int]:
    from confluent_kafka import KafkaError

    out: list = []
    positions: dict[Key, int] = {}
    dropped = 0
    ends, live, follow = run.ends, run.live, run.options.follow
    for message in messages:
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                # Only an end at or past the snapshot counts: an EOF below it would end
                # a partition whose records are still to come.
                key = (message.topic(), message.partition())
                if not follow and message.offset() >= ends.get(key, 0):
                    run.finish(key)
                continue
            if error.fatal() or not error.retriable():
                raise _consume_error(error, message.topic())
            continue
        key = (message.topic(), message.partition())
        if key not in live:
            continue
        offset = message.offset()
        end = ends.get(key)
        if end is not None and offset >= end or end_ms is not None and message.timestamp()[1] >= end_ms:
            run.finish(key)
            continue
        positions[key] = offset + 1
        if keep is not None and not keep(message):
            dropped += 1
        else:
            out.append(message)
        if end is not None and offset + 1 >= end:
            run.finish(key)
        if room is not None and len(out) >= room:
            break
    return out, positions, dropped


def _consume_error(error: KafkaError, topic: str | None) -> KctlError:
    """The KctlError for an error that ends consuming. A cluster without the consumer group
    protocol (KIP-848) refuses its heartbeat; librdkafka says only "API version not
    supported", so kctl names the setting to change."""
    text = error.str() or ""
    if "ConsumerGroupHeartbeat" in text and ("not supported" in text or "UNSUPPORTED" in text.upper()):
        return _no_consumer_protocol(topic)
    return translate(error, f"consume {topic or ''}".rstrip())


# The consumer group protocol's API (KIP-848). librdkafka needs its version 1, which Apache
# Kafka has from 4.0 (3.9 has only the early-access version 0).
CONSUMER_GROUP_HEARTBEAT = 68


def _lacks_consumer_protocol(session: AdminSession) -> bool:
    try:
        return session.api_versions.get(CONSUMER_GROUP_HEARTBEAT, (0, -1))[1] < 1
    except KctlError:
        return False  # kctl's wire client could not ask (a setup only librdkafka speaks): librdkafka will tell


def _no_consumer_protocol(topic: str | None) -> ConfigError:
    return ConfigError(action=f"consume {topic or ''}".rstrip(), cause="the cluster does not support the consumer group protocol "
                       "(KIP-848, Apache Kafka 4.0 or newer)",
                       hint="use {properties} group.protocol=classic (Apache Kafka 4.x brokers and kctl's bundled broker support both)")
