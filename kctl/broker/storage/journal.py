"""An append-only journal of JSON lines that survives restarts (the transaction
coordinator's state is kept in one).

A line is written, or nothing is: a write the disk refuses (full) is cut back off, so the
next line starts clean and the caller answers the error. The page cache outlives the broker
process, so a line written before a response is answered survives kill -9. A torn last line
(the broker killed mid-write) is skipped when the journal is read back, and the journal is
rewritten compactly (write temp, fsync, rename) on every start.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from kctl.broker.storage.files import write_all

log = logging.getLogger("kctl.broker.storage")


class Journal:
    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None
        self._size = 0
        self._lines = 0  # written since the last compaction

    def open(self, apply: Callable[[dict], None], current: Callable[[], Iterable[dict]]) -> int:
        """Replay every line through `apply`, rewrite the journal as the lines `current()`
        gives, and open it for appending. Returns the number of unreadable lines skipped."""
        skipped = 0
        try:
            with open(self.path, "rb") as handle:
                for line in handle:
                    try:
                        apply(json.loads(line))
                    except (ValueError, KeyError, TypeError):
                        skipped += 1
        except FileNotFoundError:
            pass
        if skipped:
            log.warning("skipped %d unreadable lines in %s", skipped, self.path)
        try:
            self._compact(current())
        except OSError as exc:  # a full disk: the journal as it is stays valid
            log.warning("%s not compacted: %s", self.path, exc.strerror or exc)
        self._reopen()
        return skipped

    def _reopen(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._size = os.fstat(self._fd).st_size
        self._lines = 0

    def compact_if_grown(self, current: Callable[[], Iterable[dict]], live: int) -> None:
        """Rewrite the journal as `current()` once it holds over 10,000 lines and four
        times the live entries (best effort: a full disk keeps the longer journal)."""
        if self._lines < max(10_000, 4 * live):
            return
        try:
            self._compact(current())
        except OSError as exc:
            log.warning("%s not compacted: %s", self.path, exc.strerror or exc)
            return
        self._reopen()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _compact(self, entries: Iterable[dict]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(tmp, "w") as handle:
                for entry in entries:
                    handle.write(json.dumps(entry, separators=(",", ":")) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def write(self, entry: dict) -> None:
        """Append one line, or nothing: raises OSError with the journal unchanged."""
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        assert self._fd is not None, "the journal is open"
        try:
            write_all(self._fd, line, self._size)
        except OSError:
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:  # the next line is written at the same place anyway
                pass
            raise
        self._size += len(line)
        self._lines += 1
