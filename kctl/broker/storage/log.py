"""A partition's log: an ordered list of segments with one active (last) segment.

Owns offset assignment, batch validation against the topic's configs, idempotent producer
checks, transaction markers, the last stable offset and the aborted-transaction index,
rolling, retention, DeleteRecords and recovery. Knows nothing of sockets; time comes from an
injected clock (milliseconds).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from kctl.broker.configs import LogConfig
from kctl.broker.protocol import errors
from kctl.broker.storage.files import FilePool
from kctl.broker.storage.producer_state import ProducerStateManager
from kctl.broker.storage.segment import LogSegment, file_name
from kctl.broker.storage.txn_index import AbortedTxn, append_entry, read_index, write_index
from kctl.messages import records
from kctl.messages.records import InvalidBatch

log = logging.getLogger("kctl.broker.storage")

_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
PRODUCER_SNAPSHOT = "producer-state.json"
LEADER_EPOCH = 0  # a single node never changes leader


class Log:
    def __init__(self, directory: Path, topic: str, partition: int, config: LogConfig,
                 clock: Callable[[], int], files: FilePool | None = None):
        self.dir = directory
        self.files = files or FilePool()
        self.topic = topic
        self.partition = partition
        self.config = config
        self.clock = clock
        self.segments: list[LogSegment] = []
        self.log_start_offset = 0
        self.recovery_point = 0
        self.producers = ProducerStateManager()
        # Transactions aborted in this log, by marker offset (every segment's .txnindex).
        self.aborted: list[AbortedTxn] = []
        self._unflushed = 0
        # The offset of the producer snapshot on disk while it is this log's state there
        # (see write_producer_snapshot); None when there is none or it is out of date.
        self._snapshot_at: int | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def open(self, log_start_offset: int, recovery_point: int, clean: bool) -> int:
        """Load segments; re-validate those at or after the recovery point unless the last
        shutdown was clean. Returns the number of bytes cut from torn tails."""
        self.dir.mkdir(parents=True, exist_ok=True)
        # Temporary files, a log cleaner's output never swapped in, old segments it
        # swapped out but had not deleted yet.
        for leftover in [*self.dir.glob("*.tmp"), *self.dir.glob("*.cleaned"), *self.dir.glob("*.deleted")]:
            leftover.unlink()
        now = self.clock()
        bases = sorted(int(m.group(1)) for p in self.dir.iterdir()
                       if (m := _SEGMENT_NAME.match(p.name)))
        for base in bases:
            created = int(os.stat(self.dir / f"{base:020d}.log").st_mtime * 1000)
            self.segments.append(self._segment(base, created))
        snapshot_offset = self._load_producer_snapshot()
        truncated = 0
        for i, segment in enumerate(self.segments):
            following = self.segments[i + 1] if i + 1 < len(self.segments) else None
            # After a crash every segment holding offsets at or past the recovery point is
            # re-validated, including the one the recovery point falls in (Kafka's rule).
            needs_check = not clean and (following is None or following.base_offset > recovery_point)
            if not needs_check and segment.load():
                continue
            result = segment.recover(self.config.max_message_bytes)
            if result.truncated_bytes:
                truncated += result.truncated_bytes
                log.warning("%s-%d: truncated %d invalid bytes at the end of segment %d",
                            self.topic, self.partition, result.truncated_bytes,
                            segment.base_offset)
                for later in self.segments[i + 1:]:
                    truncated += later.size
                    later.delete()
                    self._txn_index_path(later.base_offset).unlink(missing_ok=True)
                del self.segments[i + 1:]
                break
        if not self.segments:
            self.segments.append(self._segment(max(log_start_offset, 0), now))
        self.log_start_offset = max(log_start_offset, self.segments[0].base_offset)
        end = self.log_end_offset
        if self.log_start_offset > end:  # segments vanished under a later start offset
            self.log_start_offset = end
        if snapshot_offset > end:
            self.producers = ProducerStateManager()
            snapshot_offset = self.segments[0].base_offset
            self._snapshot_at = None
        self._load_aborted(end)
        self._replay_producer_state(snapshot_offset)
        self.recovery_point = end if clean else min(recovery_point, end)
        return truncated

    def _txn_index_path(self, base_offset: int) -> Path:
        return self.dir / file_name(base_offset, ".txnindex")

    def _load_aborted(self, end: int) -> None:
        """Every segment's aborted transactions; entries past a truncated end are dropped
        (the replay after the producer snapshot finds the markers that are still there)."""
        self.aborted = []
        for segment in self.segments:
            path = self._txn_index_path(segment.base_offset)
            entries = read_index(path)
            kept = [e for e in entries if e.last_offset < end]
            if len(kept) != len(entries):
                write_index(path, kept)
            self.aborted.extend(kept)
        self.aborted.sort(key=lambda e: e.last_offset)

    def _segment(self, base_offset: int, created_ms: int) -> LogSegment:
        return LogSegment(self.dir, base_offset, self.config.index_interval_bytes, created_ms,
                          self.files)

    def _load_producer_snapshot(self) -> int:
        path = self.dir / PRODUCER_SNAPSHOT
        try:
            data = json.loads(path.read_text())
            self.producers.load_json(data["producers"])
            self._snapshot_at = int(data["offset"])
            return self._snapshot_at
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            self.producers = ProducerStateManager()
            return 0

    def _replay_producer_state(self, from_offset: int) -> None:
        batch: bytes
        header: records.BatchHeader  # what LogSegment.batches_from yields
        for segment in self.segments:
            if segment.next_offset <= from_offset:
                continue
            for batch, header in segment.batches_from(max(from_offset, segment.base_offset)):
                if header.base_offset < from_offset:
                    continue
                if header.is_control:
                    self._replay_marker(batch, header, segment.base_offset)
                else:
                    self.producers.update(header)

    def _replay_marker(self, batch: bytes, header: records.BatchHeader, segment_base: int) -> None:
        kind = records.marker_type(batch, header)
        if kind is None:
            return
        done = self.producers.complete(header, kind == records.ABORT, -1)
        if done is None or not done.aborted:
            return
        if any(e.producer_id == done.producer_id and e.last_offset == done.last_offset for e in self.aborted):
            return  # its index entry was written before the crash
        entry = AbortedTxn(done.producer_id, done.first_offset, done.last_offset, self.last_stable_offset)
        try:
            append_entry(self._txn_index_path(segment_base), entry)
        except OSError as exc:  # kept in memory; the next start rebuilds it the same way
            log.warning("%s-%d: transaction index not written: %s", self.topic, self.partition, exc.strerror or exc)
        self.aborted.append(entry)
        self.aborted.sort(key=lambda e: e.last_offset)

    def write_producer_snapshot(self) -> None:
        """Best effort: a snapshot only saves replaying batches on start, and an older one
        stays valid (the replay starts from its offset), so a full disk is not an error.
        Producer state changes only with appends, so a snapshot at the log's end is kept
        rather than written again (as Kafka's takeSnapshot): a clean shutdown of 10,000
        idle partitions spent 6 s rewriting them."""
        if self._snapshot_at == self.log_end_offset:
            return
        path = self.dir / PRODUCER_SNAPSHOT
        tmp = path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps({"offset": self.log_end_offset,
                                       "producers": self.producers.to_json()}))
            os.replace(tmp, path)
            self._snapshot_at = self.log_end_offset
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            log.warning("%s-%d: producer state snapshot not written: %s", self.topic,
                        self.partition, exc.strerror or exc)

    def flush(self, *, outside_pool: bool = False) -> None:
        for segment in self.segments:
            if segment.next_offset > self.recovery_point:
                segment.flush_outside_pool() if outside_pool else segment.flush()
        self.recovery_point = self.log_end_offset
        self._unflushed = 0

    def prepare_close(self) -> None:
        """What close() writes, outside the file pool, so that logs can do it at once in
        threads (LogManager.close); close() then finds nothing left to write."""
        self.flush(outside_pool=True)
        self.write_producer_snapshot()

    def close(self) -> None:
        try:
            self.flush()
            self.write_producer_snapshot()
        finally:
            for segment in self.segments:
                segment.close()

    def delete(self) -> None:
        for segment in self.segments:
            segment.close()

    # -- offsets ----------------------------------------------------------------------------

    @property
    def active(self) -> LogSegment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.active.next_offset

    @property
    def size(self) -> int:
        return sum(segment.size for segment in self.segments)

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed consumers stop: the first offset of the oldest open
        transaction, or the log end (a single node's high watermark)."""
        unstable = self.producers.first_unstable_offset()
        return self.log_end_offset if unstable is None else unstable

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions with records in [start, end): a read_committed fetch of
        that range must leave their records out."""
        return [e for e in self.aborted if e.last_offset >= start and e.first_offset < end]

    # -- append -----------------------------------------------------------------------------

    def append(self, records_field: bytes | memoryview | None,
               verify_transaction: Callable[[records.BatchHeader], None] | None = None) -> tuple[int, int, int]:
        """Validate and append one produced batch. `verify_transaction(header)` raises
        InvalidBatch when a transactional batch's producer has not added this partition to
        an open transaction (the coordinator's answer, KIP-890).

        Returns (base_offset, last_offset, log_append_time or -1). Raises InvalidBatch with
        the Kafka error code; a duplicate returns the offsets it got the first time."""
        data = bytes(records_field) if records_field is not None else b""
        batches = records.split_batches(data)
        if len(batches) != 1:
            raise InvalidBatch(f"a produce request must carry exactly one batch per partition, "
                               f"got {len(batches)}", errors.INVALID_RECORD)
        _, header = batches[0]
        if header.magic != 2:
            raise InvalidBatch(f"record batch magic {header.magic} is not supported",
                               errors.UNSUPPORTED_FOR_MESSAGE_FORMAT)
        if header.size > self.config.max_message_bytes:
            raise InvalidBatch(f"batch of {header.size} bytes exceeds max.message.bytes "
                               f"{self.config.max_message_bytes}", errors.MESSAGE_TOO_LARGE)
        if not records.crc_ok(data, 0, header):
            raise InvalidBatch("record batch CRC does not match", errors.CORRUPT_MESSAGE)
        if header.records_count <= 0 or header.last_offset_delta + 1 != header.records_count:
            raise InvalidBatch("record count and last offset delta disagree", errors.INVALID_RECORD)
        if header.is_control:
            raise InvalidBatch("clients may not produce control batches", errors.INVALID_RECORD)
        if header.base_offset != 0:
            raise InvalidBatch("a produced batch must have base offset 0", errors.INVALID_RECORD)
        now = self.clock()
        if not self.config.log_append_time:
            if header.max_timestamp - now > self.config.timestamp_after_max_ms or \
                    now - header.base_timestamp > self.config.timestamp_before_max_ms:
                raise InvalidBatch(f"timestamp {header.max_timestamp} is out of the accepted "
                                   f"range of broker time {now}", errors.INVALID_TIMESTAMP)
        if self.config.compact:
            self._require_keys(data, header)
        duplicate = self.producers.check(header)
        if duplicate is not None:
            return duplicate[0], duplicate[1], -1
        if header.is_transactional and verify_transaction is not None:
            verify_transaction(header)
        self._maybe_roll(header.size, now)
        base = self.log_end_offset
        batch = bytearray(data)
        records.assign_offsets(batch, base, LEADER_EPOCH)
        append_time = -1
        if self.config.log_append_time:
            records.set_log_append_time(batch, now)
            append_time = now
        header.base_offset = base
        if append_time >= 0:
            header.max_timestamp = append_time
        segment = self.active
        mark = segment.mark()
        segment.append(batch, header)  # all or nothing
        if self._unflushed + header.records_count >= self.config.flush_messages:
            try:
                self.flush()
            except OSError:
                # Not acknowledged, so not kept: the client's retry must not find it there.
                segment.roll_back(mark)
                raise
        else:
            self._unflushed += header.records_count
        self.producers.update(header)
        return base, header.last_offset, append_time

    def _require_keys(self, data: bytes, header: records.BatchHeader) -> None:
        """A compacted topic keeps the last record per key: one without a key is refused,
        as Kafka refuses it (INVALID_RECORD, naming each record)."""
        missing = [i for i, (_offset, key, _tombstone) in enumerate(records.iter_keys(data, header)) if key is None]
        if missing:
            raise InvalidBatch(f"Compacted topic cannot accept message without key in topic partition "
                               f"{self.topic}-{self.partition}.", errors.INVALID_RECORD, record_errors=missing)

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool,
                      coordinator_epoch: int) -> int:
        """Write an end-transaction marker for the producer (WriteTxnMarkers, EndTxn) and
        index the transaction when it aborts one. Returns the marker's offset."""
        self.producers.check_marker(producer_id, producer_epoch)
        now = self.clock()
        batch = records.control_batch(producer_id, producer_epoch, commit, coordinator_epoch, now)
        header = records.read_header(batch)
        self._maybe_roll(header.size, now)
        base = self.log_end_offset
        records.assign_offsets(batch, base, LEADER_EPOCH)
        header.base_offset = base
        segment = self.active
        mark = segment.mark()
        segment.append(batch, header)
        done = self.producers.complete(header, not commit, coordinator_epoch)
        if done is not None and done.aborted:
            entry = AbortedTxn(producer_id, done.first_offset, base, self.last_stable_offset)
            try:
                append_entry(self._txn_index_path(segment.base_offset), entry)
            except OSError:
                # Not written, so not answered: the marker goes too, and the transaction
                # stays open for the coordinator's retry.
                segment.roll_back(mark)
                self.producers.ongoing[producer_id] = done.first_offset
                self.producers.producers[producer_id].current_txn_first_offset = done.first_offset
                raise
            self.aborted.append(entry)
        return base

    def _maybe_roll(self, incoming: int, now: int) -> None:
        active = self.active
        if active.size == 0:
            return
        if (active.size + incoming > self.config.segment_bytes
                or now - active.created_ms >= self.config.segment_ms
                or self.log_end_offset - active.base_offset >= 2**31 - 1):
            self.roll(now)

    def roll(self, now: int | None = None) -> None:
        """Close the active segment (flushing it, as Kafka does) and start a new one."""
        if self.active.size == 0:
            return
        self.active.flush()
        self.segments.append(self._segment(self.log_end_offset,
                                           self.clock() if now is None else now))
        self.write_producer_snapshot()
        self.recovery_point = max(self.recovery_point, self.active.base_offset)

    # -- read -------------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, min_one: bool, max_offset: int | None = None) -> bytes:
        """Stored batches from `offset`, none at or past `max_offset` (read_committed stops
        at the last stable offset); caller checked log_start_offset <= offset <= LEO."""
        chunks: list[bytes] = []
        remaining = max_bytes
        for segment in self._segments_from(offset):
            if max_offset is not None and segment.base_offset >= max_offset:
                break
            limit = segment.position_of(max_offset) if max_offset is not None and max_offset < segment.next_offset else None
            data, reached_end = segment.read(max(offset, segment.base_offset), remaining,
                                             min_one and not chunks, limit)
            if data:
                chunks.append(data)
                remaining -= len(data)
            if not reached_end or remaining < records.HEADER_SIZE:
                break
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _segments_from(self, offset: int) -> Iterator[LogSegment]:
        for i, segment in enumerate(self.segments):
            following = self.segments[i + 1] if i + 1 < len(self.segments) else None
            if following is not None and following.base_offset <= offset:
                continue
            yield segment

    def find_by_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record whose timestamp is >= `timestamp`; a
        record below the log start offset answers with the record at the log start."""
        for segment in self.segments:
            found = segment.find_offset_by_timestamp(timestamp)
            if found is None:
                continue
            if found[0] >= self.log_start_offset:
                return found
            if self.log_start_offset >= self.log_end_offset:
                return None
            return self._segment_of(self.log_start_offset).find_offset_by_timestamp(
                -2**63, self.log_start_offset)
        return None

    def offset_for_timestamp(self, timestamp: int) -> int | None:
        found = self.find_by_timestamp(timestamp)
        return None if found is None else found[0]

    def _segment_of(self, offset: int) -> LogSegment:
        return next(self._segments_from(offset))

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        best = None
        for segment in self.segments:
            found = segment.offset_of_max_timestamp()
            if found is not None and (best is None or found[0] > best[0]) and found[1] >= self.log_start_offset:
                best = found
        return best

    # -- compaction -------------------------------------------------------------------------

    def replace_segment(self, base_offset: int, planned_size: int, suffix: str) -> Path | None:
        """Swap in the log cleaner's copy of a segment (`<base>.log<suffix>` and its
        indexes), unless the segment changed or went since it was planned (retention,
        DeleteRecords). Crash-safe: the old indexes go first, the log is renamed over
        atomically, the new indexes last; whatever is missing is rebuilt on start.

        Returns the old log, kept under a `.deleted` link for the caller to delete later:
        freeing a large file's blocks takes long, and must not hold up requests (Kafka
        defers it the same way). Leftover `.deleted` files are removed on start."""
        from kctl.broker.storage.segment import file_name

        index = next((i for i, s in enumerate(self.segments) if s.base_offset == base_offset), None)
        cleaned = {ext: self.dir / file_name(base_offset, ext + suffix) for ext in (".log", ".index", ".timeindex")}
        if index is None or index == len(self.segments) - 1 or self.segments[index].size != planned_size:
            for path in cleaned.values():
                path.unlink(missing_ok=True)
            return None
        old = self.segments[index]
        old.close()
        doomed = old.path.with_name(old.path.name + ".deleted")
        doomed.unlink(missing_ok=True)
        os.link(old.path, doomed)
        old.index.path.unlink(missing_ok=True)
        old.time_index.path.unlink(missing_ok=True)
        os.replace(cleaned[".log"], old.path)
        os.replace(cleaned[".index"], old.index.path)
        os.replace(cleaned[".timeindex"], old.time_index.path)
        segment = self._segment(base_offset, old.created_ms)
        if not segment.load():
            segment.recover(self.config.max_message_bytes)
        # Offsets after a segment's last kept record still belong to it (compaction leaves
        # gaps); the next segment's base is where it ends.
        segment.next_offset = max(segment.next_offset, old.next_offset)
        self.segments[index] = segment
        return doomed

    # -- deletion ---------------------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset (never past the end) and drop whole
        segments below it. Returns the new low watermark."""
        if offset > self.log_start_offset:
            self.log_start_offset = min(offset, self.log_end_offset)
            self._delete_segments(lambda s, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset)
        return self.log_start_offset

    def enforce_retention(self, now: int) -> int:
        """Delete segments by retention.ms (newest record older than it) and retention.bytes.
        The active segment is rolled first when it alone has expired, as Kafka does. Only
        logs whose cleanup.policy includes delete are cleaned this way."""
        if not self.config.delete:
            return 0
        deleted = 0
        if self.config.retention_ms >= 0:
            def expired(s: LogSegment, nxt: LogSegment | None) -> bool:
                return s.max_timestamp >= 0 and now - s.max_timestamp > self.config.retention_ms

            if len(self.segments) == 1 and self.active.size and expired(self.active, None):
                self.roll(now)
            deleted += self._delete_segments(lambda s, nxt: nxt is not None and expired(s, nxt))
        if self.config.retention_bytes >= 0:
            excess = self.size - self.config.retention_bytes
            def over(s: LogSegment, nxt: LogSegment | None) -> bool:
                nonlocal excess
                if nxt is not None and excess - s.size >= 0:
                    excess -= s.size
                    return True
                return False
            deleted += self._delete_segments(over)
        return deleted

    def _delete_segments(self, predicate: Callable[[LogSegment, LogSegment | None], bool]) -> int:
        count = 0
        while len(self.segments) > 1 and predicate(self.segments[0], self.segments[1]):
            segment = self.segments.pop(0)
            segment.delete()
            self._txn_index_path(segment.base_offset).unlink(missing_ok=True)
            self.aborted = [e for e in self.aborted if e.last_offset >= self.segments[0].base_offset]
            count += 1
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        return count


def fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
