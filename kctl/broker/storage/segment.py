"""One log segment: `<base offset, 20 digits>.log` plus its .index and .timeindex.

The .log file is a plain concatenation of RecordBatches exactly as Fetch serves them, so
reads are slices of the file and Kafka's kafka-dump-log can read our segments. Descriptors
are borrowed from the broker's FilePool for each call, never kept.

An append is all or nothing: the batch is written at the segment's size and then indexed;
if anything fails after the first byte reached the file, the file and both indexes are cut
back to where they were before the error is answered, so a retried batch is stored once.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from kctl.broker.storage.files import FilePool, write_all
from kctl.broker.storage.index import OffsetIndex, TimeIndex
from kctl.messages import records

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

log = logging.getLogger("kctl.broker.storage")

_PEEK = 27  # enough header bytes for base_offset, batch_length and last_offset_delta


def file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


@dataclass(frozen=True, slots=True)
class AppendMark:
    """A segment's state before an append, to roll back to."""
    size: int
    next_offset: int
    max_timestamp: int
    bytes_since_index: int
    index_entries: int
    time_index_entries: int


@dataclass(slots=True)
class RecoveryResult:
    valid_bytes: int
    truncated_bytes: int
    headers: list[records.BatchHeader]  # of every valid batch, in order


class LogSegment:
    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int,
                 created_ms: int, files: FilePool, suffix: str = ""):
        """`suffix` names a segment being written beside the real one (the log
        cleaner's `.cleaned` files)."""
        self.base_offset = base_offset
        self.files = files
        self.path = directory / file_name(base_offset, ".log" + suffix)
        self.index = OffsetIndex(directory / file_name(base_offset, ".index" + suffix), base_offset, files)
        self.time_index = TimeIndex(directory / file_name(base_offset, ".timeindex" + suffix),
                                    base_offset, files)
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        self.size = os.fstat(self._fd()).st_size
        self.next_offset = base_offset
        self.max_timestamp = -1
        self._bytes_since_index = 0

    def _fd(self) -> int:
        return self.files.fd(self.path)

    # -- loading ----------------------------------------------------------------------------

    def load(self) -> bool:
        """Trust the existing indexes (clean shutdown); False if they must be rebuilt."""
        if not (self.index.load(self.size) and self.time_index.load()):
            return False
        position = self.index.positions[-1] if self.index.positions else 0
        last = None
        while position < self.size:
            header = self._peek(position)
            if header is None:
                return False
            last, position = header, position + records.LOG_OVERHEAD + header[1]
        if position != self.size:
            return False
        if last is not None:
            self.next_offset = last[0] + last[2] + 1
        elif self.index.offsets:
            self.next_offset = self.index.offsets[-1] + 1
        self.max_timestamp = self.time_index.last_timestamp
        return True

    def recover(self, max_message_bytes: int) -> RecoveryResult:
        """Validate every batch (size, magic, CRC, offsets), rebuild the indexes and cut
        the file at the first invalid byte, as Kafka's LogSegment.recover does."""
        self.index.truncate_to(0)
        self.time_index.truncate_to(0)
        self._bytes_since_index = 0
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        headers: list[records.BatchHeader] = []
        position = 0
        while position < self.size:
            head = os.pread(self._fd(), records.HEADER_SIZE, position)
            if len(head) < records.HEADER_SIZE:
                break
            header = records.read_header(head)
            if (header.magic != 2 or header.batch_length < records.HEADER_SIZE - records.LOG_OVERHEAD
                    or header.batch_length > max(max_message_bytes, 1 << 20) * 2
                    or position + header.size > self.size
                    or header.base_offset < self.next_offset):
                break
            batch = os.pread(self._fd(), header.size, position)
            if not records.crc_ok(batch, 0, header):
                break
            self._index_batch(header, position)
            headers.append(header)
            position += header.size
        truncated = self.size - position
        if truncated:
            os.ftruncate(self._fd(), position)
            self.size = position
        return RecoveryResult(position, truncated, headers)

    def _peek(self, position: int) -> tuple[int, int, int] | None:  # (base_offset, batch_length, last_offset_delta)
        head = os.pread(self._fd(), _PEEK, position)
        if len(head) < _PEEK:
            return None
        base_offset: int
        length: int
        base_offset, length = records._OFFSET_AND_LENGTH.unpack_from(head, 0)
        last_delta = int.from_bytes(head[23:27], "big", signed=True)
        if length <= 0 or position + records.LOG_OVERHEAD + length > self.size:
            return None
        return base_offset, length, last_delta

    # -- writing ----------------------------------------------------------------------------

    def mark(self) -> AppendMark:
        return AppendMark(self.size, self.next_offset, self.max_timestamp,
                          self._bytes_since_index, len(self.index), len(self.time_index))

    def append(self, batch: records.BatchBytes, header: records.BatchHeader) -> None:
        """Write and index one batch, or leave the segment exactly as it was and raise."""
        fd = self._fd()  # out of descriptors: nothing written yet, nothing to undo
        mark = self.mark()
        try:
            write_all(fd, batch, mark.size)
            self.size += len(batch)
            self._index_batch(header, mark.size)
        except BaseException:
            self.roll_back(mark)
            raise

    def roll_back(self, mark: AppendMark) -> None:
        """Undo appends made since `mark`: in memory first, so that even if cutting the
        files fails the next append overwrites the bytes (recovery cuts any leftover)."""
        self.size, self.next_offset, self.max_timestamp = mark.size, mark.next_offset, mark.max_timestamp
        self._bytes_since_index = mark.bytes_since_index
        try:
            os.ftruncate(self._fd(), mark.size)
            self.index.truncate_to(mark.index_entries)
            self.time_index.truncate_to(mark.time_index_entries)
        except OSError as exc:
            log.error("cannot cut %s back to %d bytes after a failed append: %s",
                      self.path, mark.size, exc.strerror or exc)

    def _index_batch(self, header: records.BatchHeader, position: int) -> None:
        if self._bytes_since_index >= self.index_interval_bytes or not self.index.offsets:
            self.index.append(header.last_offset, position)
            self.time_index.maybe_append(max(header.max_timestamp, self.max_timestamp),
                                         header.last_offset)
            self._bytes_since_index = 0
        self._bytes_since_index += header.size
        self.next_offset = header.last_offset + 1
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at or after `offset` (recovery of a later, torn segment)."""
        position = self.position_of(offset)
        if position is None:
            return
        os.ftruncate(self._fd(), position)
        self.size = position
        self.index.truncate_after(position)
        self.time_index.truncate_after(offset - 1)
        self.next_offset = offset

    def flush(self) -> None:
        os.fsync(self._fd())
        self.index.flush()
        self.time_index.flush()

    def flush_outside_pool(self) -> None:
        """flush() through descriptors of its own (fsync is per file, not per descriptor),
        for threads, which must not touch the file pool."""
        for path in (self.path, self.index.path, self.time_index.path):
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def close(self) -> None:
        self.index.close()
        self.time_index.close()
        self.files.close(self.path)

    def delete(self) -> None:
        self.close()
        for path in (self.path, self.index.path, self.time_index.path):
            path.unlink(missing_ok=True)

    # -- reading ----------------------------------------------------------------------------

    def position_of(self, offset: int) -> int | None:
        """Position of the batch holding `offset` (or the first one after it)."""
        position = self.index.lookup(offset)
        while position < self.size:
            peek = self._peek(position)
            if peek is None:
                return None
            base_offset, length, last_delta = peek
            if base_offset + last_delta >= offset:
                return position
            position += records.LOG_OVERHEAD + length
        return None

    def read(self, offset: int, max_bytes: int, min_one: bool, limit: int | None = None) -> tuple[bytes, bool]:
        """Whole batches starting with the one holding `offset`, at most max_bytes of them
        unless min_one and the first batch alone is larger (KIP-74), none at or past file
        position `limit`; and whether they run to the end of the segment."""
        position = self.position_of(offset)
        if position is None:
            return b"", True
        if limit is not None:
            if position >= limit:
                return b"", False
            max_bytes = min(max_bytes, limit - position)
            min_one = min_one and position < limit
        data = os.pread(self._fd(), min(max_bytes, self.size - position), position)
        end = 0
        while end + records.LOG_OVERHEAD <= len(data):
            length = int.from_bytes(data[end + 8:end + 12], "big")
            if end + records.LOG_OVERHEAD + length > len(data):
                break
            end += records.LOG_OVERHEAD + length
        if end == 0:
            peek = self._peek(position)
            if not min_one or peek is None:
                return b"", False
            size = records.LOG_OVERHEAD + peek[1]
            return os.pread(self._fd(), size, position), position + size >= self.size
        return (data[:end] if end < len(data) else data), position + end >= self.size

    def batches_from(self, offset: int) -> Iterator[tuple[bytes, records.BatchHeader]]:
        """Yield (batch bytes, header) from the batch holding `offset` to the end."""
        position = self.position_of(offset)
        while position is not None and position < self.size:
            # Borrowed again on every step: the caller may touch other files in between.
            head = os.pread(self._fd(), records.HEADER_SIZE, position)
            header = records.read_header(head)
            yield os.pread(self._fd(), header.size, position), header
            position += header.size

    def find_offset_by_timestamp(self, timestamp: int, min_offset: int = 0) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after `min_offset` whose timestamp
        is >= `timestamp`, if this segment has one."""
        if self.max_timestamp < timestamp:
            return None
        before = self.time_index.offset_before(timestamp)
        start = max(self.base_offset if before is None else before + 1, min_offset)
        for batch, header in self.batches_from(start):
            if header.max_timestamp < timestamp:
                continue
            if header.is_control:
                continue
            for record_offset, record_timestamp in records.record_timestamps(batch, header):
                if record_timestamp >= timestamp and record_offset >= start:
                    return record_offset, record_timestamp
        return None

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(timestamp, offset) of the newest record by timestamp in this segment."""
        if self.max_timestamp < 0:
            return None
        best = None
        for batch, header in self.batches_from(self.base_offset):
            if header.max_timestamp == self.max_timestamp:
                for record_offset, record_timestamp in records.record_timestamps(batch, header):
                    if record_timestamp == self.max_timestamp:
                        return record_timestamp, record_offset
                best = (header.max_timestamp, header.last_offset)
        return best
