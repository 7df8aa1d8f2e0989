"""`kctl record redrive`: a dead-letter topic's records sent back to the topics they came
from, each to the topic its header names (Kafka Connect's and Spring Kafka's dead-letter
headers by default), placed by key, optionally without the error headers.

A redrive never loses a dead letter and never sends one twice. A record it does not send
is held back for a later run: --where left it out, it names no topic, a topic that does
not exist (unless topics may be created), or the dead-letter topic itself (sending it
there would loop). What was sent and what is held back is kept in the redrive group's
committed offsets (kctl.records.ledger: the offset of the first record held back, and
the records after it already sent), so a later run without the filter, with
--create-topics or another --header sends the held-back records and skips the others.
On one cluster with transactions the records and the group's offsets are committed
together (exactly-once, kctl.records.transfer).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kctl.admin.client.session import AdminSession
from kctl.admin.topics.offsets import PartitionSelector
from kctl.errors import UsageError
from kctl.records.consume import ConsumeOptions, Key, Reading
from kctl.records.ledger import BUDGET, SLACK, Ledger
from kctl.records.position import COMMITTED, Position
from kctl.records.transfer import Committed, Transfer, has_transactions, pace, paced_batch

# The headers dead-letter queues name a record's original topic with: Kafka Connect's
# (errors.deadletterqueue.context.headers.enable), Spring Kafka's DeadLetterPublishingRecoverer,
# and Kafka 4.4's share groups (KIP-1191: the broker writes a record rejected or past
# group.share.delivery.count.limit to the group's errors.deadletterqueue.topic.name).
DLQ_TOPIC_HEADERS = ("__connect.errors.topic", "kafka_dlt-original-topic", "__dlq.errors.topic")
# The header of a share group's dead letter (KIP-1191) that says which record it stands for.
_DLQ_CONTEXT = "__dlq.errors.offset"
# Headers a redrive strips with --strip-error-headers: those writers' error context.
ERROR_HEADER_PREFIXES = ("__connect.errors.", "kafka_dlt-", "__dlq.errors.")

# A target topic's status: sent there (would-send: a dry run), or held back because it
# does not exist or is the dead-letter topic being redriven.
SENT, WOULD_SEND, NO_SUCH_TOPIC, SOURCE_TOPIC = "sent", "would-send", "no-such-topic", "source-topic"


@dataclass(frozen=True, kw_only=True)
class RedriveOptions:
    source: PartitionSelector
    group: str
    start: Position
    end: Position | None
    where: Callable[[Any], bool] | None = None
    max_records: int | None = None
    # Records per second, at most.
    rate: float | None = None
    # The headers naming each record's topic (the first present wins).
    route_headers: tuple[str, ...] = DLQ_TOPIC_HEADERS
    strip_error_headers: bool = False
    create_topics: bool = False
    dry_run: bool = False

    @property
    def what(self) -> str:
        return f"redrive {self.source.topic}"


@dataclass(frozen=True, kw_only=True)
class TopicRedriven:
    topic: str
    # Records naming the topic that --where kept: sent (would-send), or held back (the
    # other statuses).
    records: int
    # Records naming the topic that --where left out (held back).
    filtered: int = 0
    status: str = SENT


@dataclass(frozen=True, kw_only=True)
class PartitionRedriven:
    partition: int
    sent: int
    held_back: int
    # The offset committed: the first record still to send (the end of what was read
    # when none is held back); None in a dry run.
    committed: int | None
    # Whether reading the partition stopped early: the records held back filled the
    # offset metadata that lists them (kctl.records.ledger.BUDGET).
    ledger_full: bool = False


@dataclass(frozen=True, kw_only=True)
class RedriveReport:
    source: str
    group: str
    # Records sent (a dry run: that would be sent), and their key and value bytes.
    records: int
    bytes: int
    # Records held back for a later run: left out by --where, naming no topic (none of
    # the route headers), holding no copy of their record (a share group's dead letter
    # without errors.deadletterqueue.copy.record.enable), naming a topic that does not
    # exist or the DLQ itself.
    held_back: int
    filtered: int
    without_topic: int
    without_copy: int
    # Records an earlier run of the group sent, read again and skipped.
    already_sent: int
    seconds: float
    # exactly-once | at-least-once
    guarantee: str
    # Why the redrive ended: end, max-records, interrupted.
    stopped: str
    dry_run: bool = False
    topics: tuple[TopicRedriven, ...] = field(default_factory=tuple)
    partitions: tuple[PartitionRedriven, ...] = field(default_factory=tuple)


def transactional_id(group: str) -> str:
    """The same for every run of one group: the rerun fences and aborts what a killed run left."""
    return f"kctl-redrive-{group}"


def default_group(topic: str) -> str:
    return f"kctl-redrive-{topic}"


def redrive(session: AdminSession, options: RedriveOptions, *, stop: threading.Event | None = None,
            on_batch: Callable[[int, int | None], None] | None = None) -> RedriveReport:
    """Redrive as the module docstring says. Setting `stop` ends it after the batch being
    sent, its positions committed (stopped: interrupted)."""
    action = options.what
    _check_source(session, options)
    exactly_once = has_transactions(session) and not options.dry_run
    transfer = Transfer(session, action=action, transactional_id=transactional_id(options.group) if exactly_once else None,
                        partitioner="murmur2", dry_run=options.dry_run)
    reading = Reading(session, ConsumeOptions(selectors=[options.source], start=options.start, end=options.end,
                                              group=options.group, commit=False, isolation="read_committed", assign=True))
    router = _Router(session, options)
    parts: dict[Key, _Partition] = {}
    sent = size = already = 0
    started = time.monotonic()
    try:
        with reading:
            committed = reading.committed_of(list(reading.starts)) if options.start.kind != COMMITTED else reading.committed_at_start
            for batch in reading.batches(stop=stop, size=paced_batch(options.rate)):
                for m in batch.records:
                    key = (m.topic(), m.partition())
                    part = parts.get(key)
                    if part is None:
                        part = parts[key] = _Partition(Ledger.committed(*committed.get(key, (None, None))), reading.starts[key])
                    offset = m.offset()
                    if part.full or offset < part.end:  # stopped early, or read again (a rewind): handled once
                        continue
                    if not part.ledger.todo(offset):
                        part.skip(offset)
                        already += 1
                        continue
                    destination = router.route(m)
                    if destination is None:
                        if not part.hold(offset):
                            reading.finish(key)
                        continue
                    if transfer.producer is not None:
                        headers = m.headers()
                        if options.strip_error_headers:
                            headers = [(k, v) for k, v in headers or () if not k.startswith(ERROR_HEADER_PREFIXES)] or None
                        transfer.send(destination, m, headers)
                    part.done(offset)
                    sent += 1
                    size += len(m.key() or b"") + len(m.value() or b"")
                    if options.max_records is not None and sent >= options.max_records:
                        reading.stopped = "max-records"
                        break
                transfer.poll()
                if on_batch is not None:
                    on_batch(reading.records, reading.planned)
                pace(options.rate, sent, started)
                if reading.stopped == "max-records":
                    break
                if transfer.due():
                    transfer.commit(reading, _positions(parts), options.group)
            # Every partition's commit again, read or not: Kafka forgets the offsets of a group
            # without members offsets.retention.minutes after their last commit (7 days by
            # default), and a redrive group forgotten would send its DLQ again from the start.
            kept = {key: (offset, metadata) for key, (offset, metadata) in committed.items() if offset >= 0 and key not in parts}
            transfer.commit(reading, {**kept, **_positions(parts)}, options.group)
    except BaseException:
        transfer.abandon()
        raise
    return RedriveReport(
        source=options.source.topic, group=options.group, records=sent, bytes=size,
        held_back=sum(p.held_count for p in parts.values()), filtered=router.filtered, without_topic=router.without_topic,
        without_copy=router.without_copy,
        already_sent=already, seconds=round(time.monotonic() - started, 3), guarantee=transfer.guarantee,
        stopped=reading.stopped, dry_run=options.dry_run,
        topics=router.report(),
        partitions=tuple(PartitionRedriven(partition=p, sent=part.sent, held_back=part.held_count,
                                           committed=None if options.dry_run else part.ledger_now().commit()[0], ledger_full=part.full)
                         for (_t, p), part in sorted(parts.items())),
    )


def _check_source(session: AdminSession, options: RedriveOptions) -> None:
    """The dead-letter topic exists (one Metadata answer), and where to start can be read."""
    from kctl.admin.client.errors import missing_topic

    name = options.source.topic
    layout = session.kafka.metadata([name], options.what, topic_ids=False).topics.get(name)
    if layout is None or not layout.partitions:
        raise missing_topic(name, layout.error if layout is not None else None, options.what)
    if not options.group:
        raise UsageError(action=options.what, cause="a redrive needs a group to keep what it sent")


def _positions(parts: dict[Key, _Partition]) -> dict[Key, Committed]:
    """The offset and ledger to commit of each partition that changed since the last commit."""
    out = {}
    for key, part in parts.items():
        if part.changed:
            out[key] = part.ledger_now().commit()
            part.changed = False
    return out


class _Partition:
    """One partition of a redrive: its ledger as committed before, the offsets read since
    `start`, and the ranges of the records held back among them."""

    def __init__(self, ledger: Ledger, start: int):
        self.ledger = ledger
        self.start = start
        self.end = start
        self.held: list[tuple[int, int]] = []
        # Whether the last record read was held back: a record held back next extends its range.
        self.holding = False
        self.sent = self.held_count = 0
        self.full = False
        self.changed = False

    def ledger_now(self) -> Ledger:
        return self.ledger.after(self.start, self.end, self.held)

    def skip(self, offset: int) -> None:
        self.end, self.holding, self.changed = offset + 1, False, True

    def done(self, offset: int) -> None:
        self.skip(offset)
        self.sent += 1

    def hold(self, offset: int) -> bool:
        """Hold the record at `offset` back; False (and the partition read no further) when
        its range would not fit in the ledger's metadata."""
        if self.holding:
            self.held[-1] = (self.held[-1][0], offset + 1)
        else:
            # A record the ledger held back before is held again whatever the size (a rerun
            # with the same --where must go on past it); a new one only while the ledger,
            # once reading goes past it (its range apart from the open end), leaves room for
            # the runs that still grow (SLACK).
            candidate = self.ledger.after(self.start, offset + 2, [*self.held, (offset, offset + 1)])
            if not self.ledger.held(offset) and candidate.size() + SLACK > BUDGET:
                self.full = True
                return False
            self.held.append((offset, offset + 1))
        self.end, self.holding, self.changed = offset + 1, True, True
        self.held_count += 1
        return True


class _Router:
    """Where each record goes: the topic its first route header names, unless it is held
    back (counted by why, and per topic)."""

    def __init__(self, session: AdminSession, options: RedriveOptions):
        self.session = session
        self.options = options
        # topic -> [records kept by --where, records left out, status]
        self.topics: dict[str, list[Any]] = {}
        self.filtered = self.without_topic = self.without_copy = 0

    def route(self, message: Any) -> str | None:
        """The topic to send `message` to, or None: it is held back."""
        found = dict(message.headers() or ())
        name = next((found[h] for h in self.options.route_headers if found.get(h)), None)
        topic = None if name is None else name.decode("utf-8", "replace")
        where = self.options.where
        if where is not None and not where(message):
            self.filtered += 1
            if topic is not None:
                self.topics.setdefault(topic, [0, 0, None])[1] += 1
            return None
        if topic is None:
            self.without_topic += 1
            return None
        if _DLQ_CONTEXT in found and message.key() is None and message.value() is None:
            # Kafka's share-group dead letter without the record's copy: only the headers
            # naming where it was (its topic, partition and offset); sending it would write
            # an empty record.
            self.without_copy += 1
            return None
        entry = self.topics.setdefault(topic, [0, 0, None])
        if entry[2] is None:
            entry[2] = self._status(topic, create=self.options.create_topics)
        entry[0] += 1
        return topic if entry[2] in (SENT, WOULD_SEND) else None

    def _status(self, topic: str, *, create: bool) -> str:
        """Whether records naming `topic` are sent (or would be), or why not; a topic that
        does not exist is created first when `create` (not in a dry run)."""
        options = self.options
        if topic == options.source.topic:
            return SOURCE_TOPIC
        layout = self.session.kafka.metadata([topic], options.what, topic_ids=False).topics.get(topic)
        if layout is None or not layout.partitions:
            if not create or options.dry_run:
                return NO_SUCH_TOPIC
            from kctl.admin.topics.topics import NewTopicSpec, create_topics

            _created, errors = create_topics(self.session, [NewTopicSpec(name=topic, partitions=None, replication_factor=None, config={},
                                                                          replica_assignment=None)], if_not_exists=True)
            if errors:
                raise next(iter(errors.values()))
        return WOULD_SEND if options.dry_run else SENT

    def report(self) -> tuple[TopicRedriven, ...]:
        """Per topic named: its records and their status (a topic only filtered records
        named: as a record kept would have gone, nothing created)."""
        return tuple(TopicRedriven(topic=t, records=kept, filtered=left_out, status=status or self._status(t, create=False))
                     for t, (kept, left_out, status) in sorted(self.topics.items()))

