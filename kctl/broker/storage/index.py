"""Sparse offset and time indexes (Kafka's .index and .timeindex files).

    .index       8-byte entries: relative offset int32 | file position int32
    .timeindex  12-byte entries: timestamp int64 | relative offset int32

An offset index entry maps the *last* offset of a batch to the batch's position; one is
added each time more than index.interval.bytes were appended since the previous one, so a
lookup lands at most that many bytes before the wanted batch. A time index entry holds the
largest timestamp seen so far and the offset it was seen at. Kafka preallocates and mmaps
these files and trims them on close; we append exact entries, which is the trimmed form.
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class _IndexFile:
    """The file side of an index: whole fixed-size entries, appended or rewritten."""

    ENTRY: struct.Struct

    def __init__(self, path: Path, base_offset: int):
        self.path = path
        self.base_offset = base_offset
        self._file = None

    def _read_entries(self):
        """Unpacked entries, or None when the file is missing or not whole entries."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        if len(data) % self.ENTRY.size:
            return None
        return self.ENTRY.iter_unpack(data)

    def _append(self, *fields) -> None:
        if self._file is None:
            self._file = open(self.path, "ab", buffering=0)
        self._file.write(self.ENTRY.pack(*fields))

    def _rewrite(self, entries) -> None:
        self.close()
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_bytes(b"".join(self.ENTRY.pack(*e) for e in entries))
        os.replace(tmp, self.path)

    def flush(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class OffsetIndex(_IndexFile):
    ENTRY = _OFFSET_ENTRY

    def __init__(self, path: Path, base_offset: int):
        super().__init__(path, base_offset)
        self.offsets: list[int] = []  # absolute
        self.positions: list[int] = []

    def load(self, log_size: int) -> bool:
        """Read the file; False when it is missing or fails Kafka's sanity checks."""
        entries = self._read_entries()
        if entries is None:
            return False
        offsets, positions = [], []
        for relative, position in entries:
            absolute = self.base_offset + relative
            if (offsets and absolute <= offsets[-1]) or position >= log_size or position < 0:
                return False
            offsets.append(absolute)
            positions.append(position)
        self.offsets, self.positions = offsets, positions
        return True

    def reset(self) -> None:
        self.offsets, self.positions = [], []
        self._rewrite([])

    def append(self, offset: int, position: int) -> None:
        self.offsets.append(offset)
        self.positions.append(position)
        self._append(offset - self.base_offset, position)

    def lookup(self, offset: int) -> int:
        """File position to start scanning from for `offset`."""
        i = bisect.bisect_right(self.offsets, offset) - 1
        return self.positions[i] if i >= 0 else 0

    def truncate_after(self, position: int) -> None:
        """Drop entries at or after a file position (the log was truncated there)."""
        keep = bisect.bisect_left(self.positions, position)
        if keep < len(self.positions):
            del self.offsets[keep:], self.positions[keep:]
            self._rewrite((o - self.base_offset, p) for o, p in zip(self.offsets, self.positions))


class TimeIndex(_IndexFile):
    ENTRY = _TIME_ENTRY

    def __init__(self, path: Path, base_offset: int):
        super().__init__(path, base_offset)
        self.timestamps: list[int] = []
        self.offsets: list[int] = []

    def load(self) -> bool:
        entries = self._read_entries()
        if entries is None:
            return False
        timestamps, offsets = [], []
        for timestamp, relative in entries:
            if timestamps and (timestamp < timestamps[-1] or relative < 0):
                return False
            timestamps.append(timestamp)
            offsets.append(self.base_offset + relative)
        self.timestamps, self.offsets = timestamps, offsets
        return True

    def reset(self) -> None:
        self.timestamps, self.offsets = [], []
        self._rewrite([])

    @property
    def last_timestamp(self) -> int:
        return self.timestamps[-1] if self.timestamps else -1

    def maybe_append(self, timestamp: int, offset: int) -> None:
        if timestamp > self.last_timestamp:
            self.timestamps.append(timestamp)
            self.offsets.append(offset)
            self._append(timestamp, offset - self.base_offset)

    def offset_before(self, timestamp: int) -> int | None:
        """The last indexed offset whose prefix is entirely older than `timestamp`."""
        i = bisect.bisect_left(self.timestamps, timestamp) - 1
        return self.offsets[i] if i >= 0 else None

    def truncate_after(self, offset: int) -> None:
        keep = bisect.bisect_right(self.offsets, offset)
        if keep < len(self.offsets):
            del self.timestamps[keep:], self.offsets[keep:]
            self._rewrite((t, o - self.base_offset) for t, o in zip(self.timestamps, self.offsets))
