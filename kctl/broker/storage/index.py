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


class OffsetIndex:
    def __init__(self, path: Path, base_offset: int):
        self.path = path
        self.base_offset = base_offset
        self.offsets: list[int] = []  # absolute
        self.positions: list[int] = []
        self._file = None

    def load(self, log_size: int) -> bool:
        """Read the file; False when it is missing or fails Kafka's sanity checks."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return False
        if len(data) % _OFFSET_ENTRY.size:
            return False
        offsets, positions = [], []
        for relative, position in _OFFSET_ENTRY.iter_unpack(data):
            absolute = self.base_offset + relative
            if (offsets and absolute <= offsets[-1]) or position >= log_size or position < 0:
                return False
            offsets.append(absolute)
            positions.append(position)
        self.offsets, self.positions = offsets, positions
        return True

    def reset(self) -> None:
        self.offsets, self.positions = [], []
        self.close()
        self.path.write_bytes(b"")

    def append(self, offset: int, position: int) -> None:
        self.offsets.append(offset)
        self.positions.append(position)
        self._writer().write(_OFFSET_ENTRY.pack(offset - self.base_offset, position))

    def lookup(self, offset: int) -> int:
        """File position to start scanning from for `offset`."""
        i = bisect.bisect_right(self.offsets, offset) - 1
        return self.positions[i] if i >= 0 else 0

    def truncate_after(self, position: int) -> None:
        """Drop entries at or after a file position (the log was truncated there)."""
        keep = bisect.bisect_left(self.positions, position)
        if keep < len(self.positions):
            del self.offsets[keep:], self.positions[keep:]
            self.rewrite()

    def rewrite(self) -> None:
        self.close()
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_bytes(b"".join(_OFFSET_ENTRY.pack(o - self.base_offset, p)
                                 for o, p in zip(self.offsets, self.positions)))
        os.replace(tmp, self.path)

    def _writer(self):
        if self._file is None:
            self._file = open(self.path, "ab", buffering=0)
        return self._file

    def flush(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class TimeIndex:
    def __init__(self, path: Path, base_offset: int):
        self.path = path
        self.base_offset = base_offset
        self.timestamps: list[int] = []
        self.offsets: list[int] = []
        self._file = None

    def load(self) -> bool:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return False
        if len(data) % _TIME_ENTRY.size:
            return False
        timestamps, offsets = [], []
        for timestamp, relative in _TIME_ENTRY.iter_unpack(data):
            if timestamps and (timestamp < timestamps[-1] or relative < 0):
                return False
            timestamps.append(timestamp)
            offsets.append(self.base_offset + relative)
        self.timestamps, self.offsets = timestamps, offsets
        return True

    def reset(self) -> None:
        self.timestamps, self.offsets = [], []
        self.close()
        self.path.write_bytes(b"")

    @property
    def last_timestamp(self) -> int:
        return self.timestamps[-1] if self.timestamps else -1

    def maybe_append(self, timestamp: int, offset: int) -> None:
        if timestamp > self.last_timestamp:
            self.timestamps.append(timestamp)
            self.offsets.append(offset)
            if self._file is None:
                self._file = open(self.path, "ab", buffering=0)
            self._file.write(_TIME_ENTRY.pack(timestamp, offset - self.base_offset))

    def offset_before(self, timestamp: int) -> int | None:
        """The last indexed offset whose prefix is entirely older than `timestamp`."""
        i = bisect.bisect_left(self.timestamps, timestamp) - 1
        return self.offsets[i] if i >= 0 else None

    def truncate_after(self, offset: int) -> None:
        keep = bisect.bisect_right(self.offsets, offset)
        if keep < len(self.offsets):
            del self.timestamps[keep:], self.offsets[keep:]
            self.close()
            self.path.write_bytes(b"".join(_TIME_ENTRY.pack(t, o - self.base_offset)
                                           for t, o in zip(self.timestamps, self.offsets)))

    def flush(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
