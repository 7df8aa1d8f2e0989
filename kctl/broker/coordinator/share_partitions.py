"""Share partitions (KIP-932): which records of a partition a share group has handed out,
to whom, how often, and which are done — Kafka's SharePartition, per (group, partition).

Records between the share-partition start offset (SPSO) and the next offset to read are
in flight, each in one state: AVAILABLE (to be delivered, again), ACQUIRED (by one member,
under a lock of share.record.lock.duration.ms), ACKNOWLEDGED or ARCHIVED (done). A fetch
acquires AVAILABLE records first, then new ones from the log in whole record batches; an
acknowledgement accepts (ACKNOWLEDGED), releases (AVAILABLE again) or rejects (ARCHIVED)
what the member holds, all of a partition's or none; a lock that expires, a session that
closes or a connection that drops makes the member's records AVAILABLE again; a record
delivered share.delivery.count.limit times is ARCHIVED instead. The SPSO moves over the
done records at the front.

The state (SPSO and every in-flight record's state and delivery count; an ACQUIRED one as
AVAILABLE) is written to the journal before an acknowledgement is answered, as Kafka writes
it to __share_group_state first: after a crash nothing acknowledged is delivered again and
nothing delivered unacknowledged is lost.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
_BATCH = struct.Struct(">qi")  # baseOffset, batchLength
_ATTRIBUTES, _LAST_OFFSET_DELTA, _PRODUCER_ID, _HEADER = 21, 23, 43, 61
_TRANSACTIONAL, _CONTROL = 0x10, 0x20


class InvalidRecordState(Exception):
    """An acknowledgement of records this member does not hold (INVALID_RECORD_STATE)."""


def batch_spans(data: bytes) -> list[tuple[int, int, int, int, int]]:
    """(first offset, last offset, end position, attributes, producer id) of each whole
    batch in log bytes."""
    spans, pos = [], 0
    view = memoryview(data)
    while pos + _HEADER <= len(view):
        base, length = _BATCH.unpack_from(view, pos)
        end = pos + 12 + length
        if end > len(view):
            break
        (delta,) = struct.unpack_from(">i", view, pos + _LAST_OFFSET_DELTA)
        (attributes,) = struct.unpack_from(">h", view, pos + _ATTRIBUTES)
        (producer_id,) = struct.unpack_from(">q", view, pos + _PRODUCER_ID)
        spans.append((base, base + delta, end, attributes, producer_id))
        pos = end
    return spans


def _skipped_batches(spans, aborted) -> set[int]:
    """First offsets of the batches no consumer is given: control batches (transaction
    markers), and with read_committed (`aborted` = the aborted transactions' (producer id,
    first offset)) the batches of aborted transactions — as Kafka archives them."""
    skipped, open_aborts = set(), set()
    pending = sorted(aborted or [], key=lambda a: a[1])
    for first, _last, _end, attributes, producer_id in spans:
        while pending and pending[0][1] <= first:
            open_aborts.add(pending.pop(0)[0])
        if attributes & _CONTROL:
            skipped.add(first)
            open_aborts.discard(producer_id)  # the marker ends that producer's transaction
        elif aborted is not None and attributes & _TRANSACTIONAL and producer_id in open_aborts:
            skipped.add(first)
    return skipped


@dataclass
class InFlight:
    state: int
    delivery_count: int
    owner: str | None = None
    deadline: int = 0


@dataclass
class SharePartition:
    group_id: str
    topic: str
    partition: int
    start_offset: int = -1  # SPSO; -1 until share.auto.offset.reset resolved it
    next_offset: int = -1  # the next offset to read from the log (SPEO + 1)
    records: dict[int, InFlight] = field(default_factory=dict)
    state_epoch: int = 0

    @property
    def initialized(self) -> bool:
        return self.start_offset >= 0

    def initialize(self, offset: int) -> None:
        self.start_offset = self.next_offset = offset
        self.records.clear()

    # -- acquiring ------------------------------------------------------------------------------

    def in_flight_count(self) -> int:
        return sum(1 for r in self.records.values() if r.state in (AVAILABLE, ACQUIRED))

    def next_fetch_offset(self) -> int:
        available = [o for o, r in self.records.items() if r.state == AVAILABLE]
        return min(available) if available else self.next_offset

    def acquire(self, member: str, data: bytes, max_records: int, max_locks: int, deadline: int,
                delivery_limit: int, aborted=None) -> list[tuple[int, int, int]]:
        """Acquire for `member` what `data` (log batches read from next_fetch_offset())
        holds that may be delivered: AVAILABLE records, then new ones, whole batches of new
        ones, up to about `max_records` and `max_locks` in flight. Control batches, and with
        read_committed (`aborted` given) aborted transactions' batches, are archived, never
        delivered. Returns the acquired ranges as (first, last, delivery count)."""
        acquired: list[int] = []
        counts: dict[int, int] = {}
        locks = self.in_flight_count()
        spans = batch_spans(data)
        skipped = _skipped_batches(spans, aborted)
        for first, last, _end, _attributes, _producer in spans:
            if len(acquired) >= max_records:
                break
            if first in skipped:
                for offset in range(max(first, self.next_offset), last + 1):
                    self.records[offset] = InFlight(ARCHIVED, 0)
                self.next_offset = max(self.next_offset, last + 1)
                self._advance()
                continue
            new = []
            for offset in range(max(first, self.start_offset), last + 1):
                record = self.records.get(offset)
                if record is not None:
                    if record.state == AVAILABLE and len(acquired) + len(new) < max_records:
                        record.state, record.owner, record.deadline = ACQUIRED, member, deadline
                        record.delivery_count += 1
                        acquired.append(offset)
                        counts[offset] = record.delivery_count
                elif offset >= self.next_offset:
                    new.append(offset)
            if new:
                if locks + len(new) > max_locks and acquired:
                    break
                for offset in new:  # whole batches of new records: max_records is soft (as Kafka)
                    self.records[offset] = InFlight(ACQUIRED, 1, member, deadline)
                    acquired.append(offset)
                    counts[offset] = 1
                locks += len(new)
                self.next_offset = max(self.next_offset, last + 1)
        return _ranges(sorted(acquired), counts)

    # -- acknowledging, releasing ---------------------------------------------------------------

    def acknowledge(self, member: str, batches: list[tuple[int, int, list[int]]], delivery_limit: int,
                    deadline: int) -> bool:
        """Apply a member's acknowledgement batches (first, last, types), all or none
        (InvalidRecordState names the first problem). Returns whether the persisted state
        changed (renewals only move deadlines)."""
        changes: list[tuple[int, int]] = []
        for first, last, types in batches:
            for offset in range(first, last + 1):
                kind = types[0] if len(types) == 1 else types[offset - first]
                if offset < self.start_offset:
                    continue  # already done: Kafka skips it silently
                record = self.records.get(offset)
                if record is None:
                    raise InvalidRecordState(f"Batch record not found for offset {offset}.")
                if record.state != ACQUIRED:
                    raise InvalidRecordState(f"The record at offset {offset} is not in the acquired state.")
                if record.owner != member:
                    raise InvalidRecordState(f"Member is not the owner of the record at offset {offset}.")
                changes.append((offset, kind))
        changed = False
        for offset, kind in changes:
            record = self.records[offset]
            if kind == RENEW:
                record.deadline = deadline
                continue
            changed = True
            if kind == ACCEPT:
                record.state = ACKNOWLEDGED
            elif kind == RELEASE:
                record.state = ARCHIVED if record.delivery_count >= delivery_limit else AVAILABLE
            else:  # REJECT, or GAP: no record there
                record.state = ARCHIVED
            record.owner, record.deadline = None, 0
        self._advance()
        return changed

    def release(self, member: str | None, now: int | None, delivery_limit: int) -> bool:
        """Make ACQUIRED records AVAILABLE again (ARCHIVED at the delivery limit): those of
        `member` (a closed session), or those whose lock expired by `now`."""
        changed = False
        for record in self.records.values():
            if record.state != ACQUIRED:
                continue
            if (member is not None and record.owner == member) or (now is not None and record.deadline <= now):
                record.state = ARCHIVED if record.delivery_count >= delivery_limit else AVAILABLE
                record.owner, record.deadline = None, 0
                changed = True
        if changed:
            self._advance()
        return changed

    def next_deadline(self) -> int | None:
        deadlines = [r.deadline for r in self.records.values() if r.state == ACQUIRED]
        return min(deadlines) if deadlines else None

    def skip_to(self, log_start: int) -> None:
        """The log start moved past the SPSO (retention, DeleteRecords): what is gone is done."""
        if log_start > self.start_offset:
            for offset in [o for o in self.records if o < log_start]:
                del self.records[offset]
            self.start_offset = log_start
            self.next_offset = max(self.next_offset, log_start)

    def _advance(self) -> None:
        while self.start_offset < self.next_offset:
            record = self.records.get(self.start_offset)
            if record is None or record.state not in (ACKNOWLEDGED, ARCHIVED):
                break
            del self.records[self.start_offset]
            self.start_offset += 1

    def delivery_complete_count(self) -> int:
        return sum(1 for r in self.records.values() if r.state in (ACKNOWLEDGED, ARCHIVED))

    # -- persistence ----------------------------------------------------------------------------

    def snapshot(self) -> dict:
        """What survives a restart: SPSO, the next offset and the in-flight states as runs
        (an ACQUIRED record is stored AVAILABLE: its lock does not outlive the broker)."""
        runs: list[list[int]] = []
        for offset in sorted(self.records):
            record = self.records[offset]
            state = AVAILABLE if record.state == ACQUIRED else record.state
            if runs and runs[-1][1] == offset - 1 and runs[-1][2] == state and runs[-1][3] == record.delivery_count:
                runs[-1][1] = offset
            else:
                runs.append([offset, offset, state, record.delivery_count])
        return {"g": self.group_id, "t": self.topic, "p": self.partition, "spso": self.start_offset,
                "next": self.next_offset, "epoch": self.state_epoch, "runs": runs}

    @classmethod
    def from_snapshot(cls, data: dict) -> SharePartition:
        sp = cls(data["g"], data["t"], int(data["p"]), int(data["spso"]), int(data["next"]),
                 state_epoch=int(data.get("epoch", 0)))
        for first, last, state, count in data["runs"]:
            for offset in range(int(first), int(last) + 1):
                sp.records[offset] = InFlight(int(state), int(count))
        return sp


def _ranges(offsets: list[int], counts: dict[int, int]) -> list[tuple[int, int, int]]:
    ranges: list[list[int]] = []
    for offset in offsets:
        if ranges and ranges[-1][1] == offset - 1 and ranges[-1][2] == counts[offset]:
            ranges[-1][1] = offset
        else:
            ranges.append([offset, offset, counts[offset]])
    return [tuple(r) for r in ranges]
