"""Sparse offset and time indexes (Kafka's .index and .timeindex files).

    .index       8-byte entries: relative offset int32 | file position int32
    .timeindex  12-byte entries: timestamp int64 | relative offset int32

An offset index entry maps the *last* offset of a batch to the batch's position; one is
added each time more than index.interval.bytes were appended since the previous one, so a
lookup lands at most that many bytes before the wanted batch. A time index entry holds the
largest timestamp seen so far and the offset it was seen at. Kafka preallocates and mmaps
these files and trims them on close; we write exact entries, which is the trimmed form, so
a file is always exactly its entries and truncating entries is truncating the file.
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path

from kctl.broker.storage.files import FilePool, write_all

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class _IndexFile:
    """The file side of an index: whole fixed-size entries, written at their place."""

    ENTRY: struct.Struct

    def __init__(self, path: Path, base_offset: int, files: FilePool):
        self.path = path
        self.base_offset = base_offset
        self.files = files

    def _read_entries(self):
        """Unpacked entries, or None when the file is missing or not whole entries."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        if len(data) % self.ENTRY.size:
            return None
        return self.ENTRY.iter_unpack(data)

    def _write(self, number: int, *fields) -> None:
        """Write entry `number` (0-based); the caller records it only once this returned."""
        write_all(self.files.fd(self.path), self.ENTRY.pack(*fields), number * self.ENTRY.size)

    def _truncate(self, count: int) -> None:
        """Keep the first `count` entries on disk: the file is exactly the packed entries."""
        os.ftruncate(self.files.fd(self.path), count * self.ENTRY.size)

    def flush(self) -> None:
        os.fsync(self.files.fd(self.path))

    def close(self) -> None:
        self.files.close(self.path)


class OffsetIndex(_IndexFile):
    ENTRY = _OFFSET_ENTRY

    def __init__(self, path: Path, base_offset: int, files: FilePool):
        super().__init__(path, base_offset, files)
        self.offsets: list[int] = []  # absolute
        self.positions: list[int] = []

    def load(self, log_size: int) -> bool:
        """Read the file; False when it is missing or fails Kafka's sanity checks."""
        entries = self._read_entries()
        if entries is None:
            return False
        offsets: list[int] = []
        positions: list[int] = []
        for relative, position in entries:
            absolute = self.base_offset + relative
            if (offsets and absolute <= offsets[-1]) or position >= log_size or position < 0:
                return False
            offsets.append(absolute)
            positions.append(position)
        self.offsets, self.positions = offsets, positions
        return True

    def __len__(self) -> int:
        return len(self.offsets)

    def append(self, offset: int, position: int) -> None:
        self._write(len(self.offsets), offset - self.base_offset, position)
        self.offsets.append(offset)
        self.positions.append(position)

    def truncate_to(self, count: int) -> None:
        """Keep the first `count` entries (reset: 0; a rolled-back append: the count before)."""
        del self.offsets[count:], self.positions[count:]
        self._truncate(count)

    def lookup(self, offset: int) -> int:
        """File position to start scanning from for `offset`."""
        i = bisect.bisect_right(self.offsets, offset) - 1
        return self.positions[i] if i >= 0 else 0

    def truncate_after(self, position: int) -> None:
        """Drop entries at or after a file position (the log was truncated there)."""
        keep = bisect.bisect_left(self.positions, position)
        if keep < len(self.positions):
            self.truncate_to(keep)


class TimeIndex(_IndexFile):
    ENTRY = _TIME_ENTRY

    def __init__(self, path: Path, base_offset: int, files: FilePool):
        super().__init__(path, base_offset, files)
        self.timestamps: list[int] = []
        self.offsets: list[int] = []

    def load(self) -> bool:
        entries = self._read_entries()
        if entries is None:
            return False
        timestamps: list[int] = []
        offsets: list[int] = []
        for timestamp, relative in entries:
            if timestamps and (timestamp < timestamps[-1] or relative < 0):
                return False
            timestamps.append(timestamp)
            offsets.append(self.base_offset + relative)
        self.timestamps, self.offsets = timestamps, offsets
        return True

    def __len__(self) -> int:
        return len(self.offsets)

    def truncate_to(self, count: int) -> None:
        del self.timestamps[count:], self.offsets[count:]
        self._truncate(count)

    @property
    def last_timestamp(self) -> int:
        return self.timestamps[-1] if self.timestamps else -1

    def maybe_append(self, timestamp: int, offset: int) -> None:
        if timestamp > self.last_timestamp:
            self._write(len(self.offsets), timestamp, offset - self.base_offset)
            self.timestamps.append(timestamp)
            self.offsets.append(offset)

    def offset_before(self, timestamp: int) -> int | None:
        """The last indexed offset whose prefix is entirely older than `timestamp`."""
        i = bisect.bisect_left(self.timestamps, timestamp) - 1
        return self.offsets[i] if i >= 0 else None

    def truncate_after(self, offset: int) -> None:
        keep = bisect.bisect_right(self.offsets, offset)
        if keep < len(self.offsets):
            self.truncate_to(keep)
