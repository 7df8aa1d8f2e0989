"""A member of a share group (KIP-932, Kafka's queues) over kctl's wire client: it joins
with ShareGroupHeartbeat, acquires records with ShareFetch from the leaders of the
partitions the group assigns it, and acknowledges each one (accept, release or reject)
in its next ShareFetch or, on leaving, in a ShareAcknowledge that closes its share
sessions; then it leaves the group. Records it acquired and did not acknowledge are
released when it leaves, as Kafka's share consumer does: another member gets them, with
their delivery count one higher.

`record consume --share-group` runs it through consume_share().
"""

from __future__ import annotations

import base64
import os
import time
from typing import NamedTuple

from kctl.admin.client.coordinators import GROUP, find_coordinators
from kctl.admin.client.errors import COORDINATOR_RETRIABLE, for_kafka_code
from kctl.admin.client.session import AdminSession
from kctl.errors import InvalidError, KctlError
from kctl.messages import apis
from kctl.messages import records as batches
from kctl.messages.errors import error_name

TYPE_CHECKING = False  # the annotations' types, for the type checker only
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

ACCEPT, RELEASE, REJECT = 1, 2, 3
ACKS = {"accept": ACCEPT, "release": RELEASE, "reject": REJECT}
ACK_NAMES = {kind: name for name, kind in ACKS.items()}
# ShareSessionEpoch that closes a share session (Kafka's FINAL_EPOCH).
_FINAL_EPOCH = -1
# How soon a member with no partitions asks again (seconds): at first soon, then every
# quarter of a second. Kafka 4.4 computes a share group's assignment at most once per
# group.share.assignment.interval.ms (1 s by default) and hands it out on the next
# heartbeat, which its own consumers send every group.share.heartbeat.interval.ms (5 s).
_UNASSIGNED_FIRST, _UNASSIGNED_MOST = 0.05, 0.25


class ShareRecord:
    """One acquired record, shaped as confluent_kafka.Message for kctl's writers
    (kctl.messages.records.ConsumedRecord), with the times it has been delivered."""

    __slots__ = ("_topic", "_partition", "_offset", "_key", "_value", "_headers", "_timestamp", "delivery_count", "acknowledgement")

    def __init__(self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
                 headers: list[tuple[str, bytes | None]], timestamp: tuple[int, int], delivery_count: int):
        self._topic, self._partition, self._offset = topic, partition, offset
        self._key, self._value, self._headers, self._timestamp = key, value, headers, timestamp
        self.delivery_count = delivery_count
        # How it is acknowledged (accept, release, reject), once decided.
        self.acknowledgement: str | None = None

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list[tuple[str, bytes | None]]:
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        return self._timestamp

    def error(self) -> None:
        return None


class ShareConsumer:
    """One member of share group `group` subscribed to `topics`. Use as a context
    manager: leaving it acknowledges what was acknowledged, releases the rest and leaves."""

    def __init__(self, session: AdminSession, group: str, topics: Sequence[str], *, max_records: int = 500):
        self.session = session
        self.wire = session.wire
        self.group = group
        self.topics = list(topics)
        self.max_records = max_records
        # A member id of the client's own (ShareGroupHeartbeat v1): a random UUID, as
        # Kafka's clients make it (22 characters of URL-safe base64).
        self.member_id = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        self.member_epoch = 0
        self.heartbeat_interval = 5.0
        self._next_heartbeat = 0.0
        self._last_heartbeat = 0.0
        self._unassigned_wait = _UNASSIGNED_FIRST
        # (topic id, partition) the group assigned this member.
        self.assignment: set[tuple[Any, int]] = set()
        self._names: dict[Any, str] = {}
        self._leaders: dict[tuple[Any, int], int] = {}
        # leader -> its share session's next epoch (0: none open yet).
        self._sessions: dict[int, int] = {}
        # (topic id, partition) -> acknowledgements to send: [first, last, type].
        self._acks: dict[tuple[Any, int], list[list[int]]] = {}
        # Acquired and not acknowledged yet: (topic id, partition, offset).
        self._held: set[tuple[Any, int, int]] = set()

    def __enter__(self) -> ShareConsumer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- the group --------------------------------------------------------------------------

    def heartbeat(self, *, leaving: bool = False) -> None:
        """ShareGroupHeartbeat to the group's coordinator: join (epoch 0), stay (the epoch
        it was given), or leave (-1); the assignment it answers is taken."""
        action = f"join share group {self.group}"
        deadline = self.wire.deadline()

        def ask() -> Any:
            coordinators = find_coordinators(self.session, GROUP, [self.group], deadline)
            if coordinators is None:
                return None
            fields = {"group_id": self.group, "member_id": self.member_id, "member_epoch": -1 if leaving else self.member_epoch,
                      "rack_id": None, "subscribed_topic_names": None if self.member_epoch > 0 or leaving else self.topics}
            (answer,) = self.wire.fan_out([(coordinators[self.group], apis.SHARE_GROUP_HEARTBEAT, fields, 1, 1)], deadline)
            return answer

        self._last_heartbeat = time.monotonic()
        try:
            answer = self.wire.call(action, ask)
        except KctlError as exc:
            if exc.kafka_error == "UNSUPPORTED_VERSION":
                raise InvalidError(action=action, cause="the cluster does not support share groups (Apache Kafka 4.2 or newer has them)",
                                   kafka_error="UNSUPPORTED_VERSION") from exc
            raise
        if answer is None:
            return  # no coordinator yet: the next heartbeat asks again
        if answer.error_code:
            name = error_name(answer.error_code)
            if leaving:
                return
            if name in ("UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH"):
                self.member_epoch = 0  # join again
                return
            if name in COORDINATOR_RETRIABLE:  # loading, or moved: ask again (found anew) soon
                self.wire.coordinators.pop((GROUP, self.group), None)
                return
            if name == "UNSUPPORTED_VERSION":  # Kafka 4.x with share.version 0
                raise InvalidError(action=action, cause="share groups are not enabled on the cluster (share.version is 0)",
                                   kafka_error=name, hint="kctl feature upgrade --feature share.version=1 enables them")
            if name in ("GROUP_ID_NOT_FOUND", "INCONSISTENT_GROUP_PROTOCOL"):
                raise InvalidError(action=action, cause=f"{self.group} is a group of another type, not a share group",
                                   kafka_error=name, hint="kctl group list shows each group's type")
            raise for_kafka_code(answer.error_code, answer.error_message, action)
        if leaving:
            return
        self.member_epoch = answer.member_epoch
        self.heartbeat_interval = max(answer.heartbeat_interval_ms, 100) / 1000
        self._next_heartbeat = time.monotonic() + self.heartbeat_interval
        if answer.assignment is not None:
            self.assignment = {(t.topic_id, p) for t in answer.assignment.topic_partitions for p in t.partitions}

    def _learn_layout(self) -> None:
        """Names and leaders of the assigned partitions (Metadata by topic name)."""
        metadata = self.wire.call("read the share group's topics", lambda: self.wire.metadata(self.topics, self.wire.deadline()))
        for topic in metadata.topics:
            self._names[topic.topic_id] = topic.name
            for p in topic.partitions:
                self._leaders[(topic.topic_id, p.partition_index)] = p.leader_id

    # -- records ----------------------------------------------------------------------------

    def poll(self, wait: float) -> list[ShareRecord]:
        """The records acquired in one round of ShareFetch (to every leader of the
        assignment, at once), waiting up to `wait` seconds for some; the acknowledgements
        made since the last poll go with it."""
        now = time.monotonic()
        # Unassigned, it asks again soon rather than after the interval (5 s on Kafka):
        # a share group assigns a new member's partitions on a later heartbeat.
        if (self.member_epoch == 0 or now >= self._next_heartbeat
                or (not self.assignment and now - self._last_heartbeat >= self._unassigned_wait)):
            asked_unassigned = not self.assignment and self.member_epoch > 0
            self.heartbeat()
            if not self.assignment and asked_unassigned:
                self._unassigned_wait = min(self._unassigned_wait * 2, _UNASSIGNED_MOST)
        if not self.assignment:
            time.sleep(max(0.0, min(wait, self._last_heartbeat + self._unassigned_wait - time.monotonic())))
            return []
        self._unassigned_wait = _UNASSIGNED_FIRST
        if any(tp not in self._leaders for tp in self.assignment):
            self._learn_layout()
        by_leader: dict[int, list[tuple[Any, int]]] = {}
        for tp in sorted(self.assignment, key=lambda tp: (str(tp[0]), tp[1])):
            if tp in self._leaders:
                by_leader.setdefault(self._leaders[tp], []).append(tp)
        requests = []
        for leader, partitions in by_leader.items():
            epoch = self._sessions.get(leader, 0)
            topics: dict[Any, list[dict[str, Any]]] = {}
            for topic_id, index in partitions:
                acks = [] if epoch == 0 else self._acks.pop((topic_id, index), [])
                topics.setdefault(topic_id, []).append({"partition_index": index, "acknowledgement_batches": [
                    {"first_offset": first, "last_offset": last, "acknowledge_types": [kind]} for first, last, kind in acks]})
            fields = {"group_id": self.group, "member_id": self.member_id, "share_session_epoch": epoch,
                      "max_wait_ms": int(wait * 1000), "min_bytes": 1, "max_bytes": 50 * 1024 * 1024,
                      "max_records": self.max_records, "batch_size": self.max_records,
                      "topics": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()], "forgotten_topics_data": []}
            requests.append((leader, apis.SHARE_FETCH, fields, 1, 2))
        deadline = time.monotonic() + wait + self.wire.timeout
        answers = self.wire.call("fetch from the share group", lambda: self.wire.fan_out(requests, deadline))
        got: list[ShareRecord] = []
        for (leader, *_rest), answer in zip(requests, answers):
            if answer.error_code:
                name = error_name(answer.error_code)
                if name in ("SHARE_SESSION_NOT_FOUND", "INVALID_SHARE_SESSION_EPOCH"):
                    self._sessions[leader] = 0
                    continue
                raise for_kafka_code(answer.error_code, answer.error_message, "fetch from the share group")
            self._sessions[leader] = _next_epoch(self._sessions.get(leader, 0))
            for topic in answer.responses:
                for p in topic.partitions:
                    if p.error_code:
                        raise for_kafka_code(p.error_code, p.error_message, f"fetch {self._names.get(topic.topic_id)}:{p.partition_index}")
                    got.extend(self._records(topic.topic_id, p))
        return got

    def _records(self, topic_id: Any, partition: Any) -> list[ShareRecord]:
        """The records of a ShareFetch partition answer that this member acquired."""
        acquired = [(a.first_offset, a.last_offset, a.delivery_count) for a in partition.acquired_records]
        if not acquired or not partition.records:
            return []
        name = self._names.get(topic_id, str(topic_id))
        out = []
        data = bytes(partition.records)
        for position, header in batches.split_batches(data):
            if header.attributes & 0x20:  # a control batch (transaction marker)
                continue
            batch = data[position:position + header.size]
            for record in batches.iter_records(batch, header):
                offset = header.base_offset + record.offset_delta
                count = next((c for first, last, c in acquired if first <= offset <= last), None)
                if count is None:
                    continue
                kind = 1 if header.attributes & batches.TIMESTAMP_TYPE_BIT == 0 else 2
                timestamp = header.max_timestamp if kind == 2 else header.base_timestamp + record.timestamp_delta
                out.append(ShareRecord(name, partition.partition_index, offset, record.key, record.value,
                                       _headers(record.body), (kind, timestamp), count))
                self._held.add((topic_id, partition.partition_index, offset))
        return out

    def acknowledge(self, record: ShareRecord, kind: int) -> None:
        """Acknowledge `record` (ACCEPT, RELEASE or REJECT): sent with the next poll, or on
        closing."""
        topic_id = next(t for t, name in self._names.items() if name == record.topic())
        key = (topic_id, record.partition())
        self._held.discard((topic_id, record.partition(), record.offset()))
        acks = self._acks.setdefault(key, [])
        if acks and acks[-1][2] == kind and acks[-1][1] == record.offset() - 1:
            acks[-1][1] = record.offset()
        else:
            acks.append([record.offset(), record.offset(), kind])

    def close(self) -> None:
        """Send what was acknowledged, release what was acquired and not acknowledged,
        close the share sessions (ShareAcknowledge at the final epoch) and leave."""
        for topic_id, index, offset in sorted(self._held, key=lambda h: (str(h[0]), h[1], h[2])):
            self._acks.setdefault((topic_id, index), []).append([offset, offset, RELEASE])
        self._held.clear()
        by_leader: dict[int, dict[Any, list[dict[str, Any]]]] = {}
        for (topic_id, index), acks in self._acks.items():
            leader = self._leaders.get((topic_id, index))
            if leader is None or self._sessions.get(leader, 0) == 0:
                continue
            by_leader.setdefault(leader, {}).setdefault(topic_id, []).append({"partition_index": index, "acknowledgement_batches": [
                {"first_offset": first, "last_offset": last, "acknowledge_types": [kind]} for first, last, kind in acks]})
        self._acks.clear()
        requests = [(leader, apis.SHARE_ACKNOWLEDGE, {"group_id": self.group, "member_id": self.member_id,
                                                      "share_session_epoch": _FINAL_EPOCH,
                                                      "topics": [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()]}, 1, 2)
                    for leader, by_topic in by_leader.items()]
        for leader in self._sessions:
            if self._sessions[leader] and leader not in by_leader:  # nothing to acknowledge: close the session alone
                requests.append((leader, apis.SHARE_ACKNOWLEDGE, {"group_id": self.group, "member_id": self.member_id,
                                                                  "share_session_epoch": _FINAL_EPOCH, "topics": []}, 1, 2))
        try:
            if requests:
                self.wire.call("acknowledge the share group's records", lambda: self.wire.fan_out(requests, self.wire.deadline()))
            if self.member_epoch > 0:
                self.heartbeat(leaving=True)
        except KctlError:
            pass  # the records' acquisition locks run out; the broker releases them then
        self._sessions.clear()


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


def _headers(body: bytes) -> list[tuple[str, bytes | None]]:
    """A record's headers, from its bytes (attributes on): after the value come a
    varint count and each header's key and value."""
    pos = 1  # attributes
    for _ in range(2):  # timestamp delta, offset delta
        _value, pos = batches._varint(body, pos)
    for _ in range(2):  # key, value
        length, pos = batches._varint(body, pos)
        pos += max(length, 0)
    count, pos = batches._varint(body, pos)
    headers = []
    for _ in range(count):
        length, pos = batches._varint(body, pos)
        name = body[pos:pos + length].decode("utf-8", "replace")
        pos += length
        length, pos = batches._varint(body, pos)
        headers.append((name, None if length < 0 else body[pos:pos + length]))
        pos += max(length, 0)
    return headers


class ShareReport(NamedTuple):
    records: int
    acknowledged: dict[str, int]  # accept / release / reject -> records
    stopped: str  # end (nothing more to acquire), max-records, interrupted, closed-pipe, unassigned


# Without --follow: consuming ends once fetches have found nothing for this long.
_IDLE_SECONDS = 3.0


def consume_share(session: AdminSession, group: str, topics: Sequence[str], sink: Callable[[list[ShareRecord]], None],
                  decide: Callable[[ShareRecord], int], *, max_records: int | None = None, follow: bool = False,
                  gone: Callable[[], bool] = lambda: False) -> ShareReport:
    """Consume as a member of share group `group`: each acquired record is handed to
    `sink` with its acknowledgement decided (decide(record): ACCEPT, RELEASE or REJECT),
    and acknowledged once written. Stops after `max_records`, or (without `follow`)
    once nothing more is acquired for a few seconds, or when no partition was assigned
    within the session's timeout; Ctrl-C (KeyboardInterrupt) stops too. Leaving the
    group releases what was acquired and not written."""
    counts = {name: 0 for name in ACKS}
    written = 0
    stopped = "end"
    joined = time.monotonic()
    idle_since: float | None = None
    with ShareConsumer(session, group, topics) as consumer:
        try:
            while True:
                records = consumer.poll(0.5)
                take = records if max_records is None else records[:max_records - written]
                if take:
                    for record in take:
                        record.acknowledgement = ACK_NAMES[decide(record)]
                    sink(take)
                    for record in take:
                        consumer.acknowledge(record, ACKS[record.acknowledgement or "accept"])
                        counts[record.acknowledgement or "accept"] += 1
                    written += len(take)
                if max_records is not None and written >= max_records:
                    stopped = "max-records"
                    break
                now = time.monotonic()
                if records:
                    idle_since = None
                elif not consumer.assignment:
                    # At least three heartbeat intervals: Kafka assigns on a later heartbeat.
                    if not follow and now - joined >= max(session.timeout, 3 * consumer.heartbeat_interval):
                        stopped = "unassigned"
                        break
                elif not follow:
                    idle_since = idle_since or now
                    if now - idle_since >= _IDLE_SECONDS:
                        break
                if not records and gone():
                    stopped = "closed-pipe"
                    break
        except KeyboardInterrupt:
            stopped = "interrupted"
        except BrokenPipeError:
            stopped = "closed-pipe"
    return ShareReport(written, counts, stopped)
