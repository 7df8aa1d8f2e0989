"""A bounded pool of open segment and index file descriptors, shared by every log.

A partition has three files per segment (.log, .index, .timeindex); holding them all open
runs a broker with a few hundred partitions into the process's RLIMIT_NOFILE, after which
even accept() fails. Kafka keeps them open and asks operators to raise the limit; a broker
that people start on a laptop with `ulimit -n 1024` must not need that. So storage never
keeps a descriptor: every read and write borrows one from this pool by path, the least
recently used is closed when the pool is full, and a file in constant use (the active
segment being written) simply stays at the recently-used end.

Storage is single-threaded and no call yields between borrowing a descriptor and using it,
so an evicted descriptor is never one that is in use.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
from collections import OrderedDict

log = logging.getLogger("kctl.broker.storage")

_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)
# Descriptors kept free for client sockets, the offsets journal, logging and checkpoints.
_RESERVED = 128


def default_capacity() -> int:
    """Half of what the process may open beyond a reserve: the rest is for connections."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 16
    return max(16, (soft - _RESERVED) // 2)


class FilePool:
    def __init__(self, capacity: int | None = None):
        self.capacity = capacity or default_capacity()
        self._open: OrderedDict[str, int] = OrderedDict()

    @property
    def open_count(self) -> int:
        return len(self._open)

    def fd(self, path) -> int:
        """A descriptor for `path` (created if missing), opened read-write."""
        key = os.fspath(path)
        fd = self._open.get(key)
        if fd is not None:
            self._open.move_to_end(key)
            return fd
        while len(self._open) >= self.capacity:
            self._close_oldest()
        try:
            fd = os.open(key, _FLAGS, 0o644)
        except OSError as exc:
            if exc.errno not in _OUT_OF_DESCRIPTORS or not self._open:
                raise
            # Sockets took what the pool left free: give back half and try once more.
            self.shrink()
            fd = os.open(key, _FLAGS, 0o644)
        self._open[key] = fd
        return fd

    def shrink(self) -> int:
        """Close the least recently used half (when the process runs out of descriptors)."""
        count = (len(self._open) + 1) // 2
        for _ in range(count):
            self._close_oldest()
        return count

    def close(self, path) -> None:
        """Forget `path` (before it is deleted, renamed over or replaced)."""
        fd = self._open.pop(os.fspath(path), None)
        if fd is not None:
            os.close(fd)

    def close_all(self) -> None:
        while self._open:
            self._close_oldest()

    def _close_oldest(self) -> None:
        _key, fd = self._open.popitem(last=False)
        os.close(fd)


def write_all(fd: int, data, position: int) -> None:
    """pwrite every byte of `data` at `position`, or raise (ENOSPC for a short write)."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view, position = view[written:], position + written
