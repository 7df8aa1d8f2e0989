"""The data directory's lock: one broker per directory, and the truth about who runs it.

    <data-dir>/.lock    flock()ed exclusively for the broker process's whole life (Kafka
                        locks each log directory with a `.lock` file the same way); it holds
                        the holder's pid as text, for `kctl local status` and `stop`

Two brokers writing one directory lose acknowledged records, so the lock is taken before
anything in the directory is read. A pid file alone cannot tell a live broker from a pid
the kernel reused after a kill -9; a lock can, because the kernel drops it when the holder
dies, however it dies.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

LOCK_FILE = ".lock"
# Probes (`kctl local status`) hold a shared lock for microseconds; a starting broker
# retries this long before deciding that another broker holds the directory.
_ACQUIRE_WAIT_S = 0.5


class DataDirectoryLocked(Exception):
    def __init__(self, directory: Path, pid: int | None):
        holder = f"pid {pid}" if pid else "another process"
        super().__init__(f"data directory {directory} is in use by another broker ({holder})")
        self.pid = pid


class DataDirectoryLock:
    def __init__(self, directory: Path):
        self.path = directory / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + _ACQUIRE_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise DataDirectoryLocked(self.path.parent, holder(self.path.parent)) from None
                time.sleep(0.01)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:  # a full disk may refuse the pid; the lock itself is what counts
            pass
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None


def holder(directory: Path) -> int | None:
    """None when no process holds the directory's lock; else the holder's pid as it wrote
    it (0 when it could not be read, e.g. the holder has not written it yet)."""
    try:
        fd = os.open(directory / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass
        else:
            return None  # we got it, so nobody holds it (closing the fd releases it)
        for _ in range(20):  # the holder writes its pid right after locking
            try:
                return int(os.pread(fd, 32, 0).decode().strip())
            except ValueError:
                time.sleep(0.01)
        return 0
    finally:
        os.close(fd)
