"""When a command has settled into its work: the event tests wait for before they press
Ctrl-C on a `--follow`, `--watch` or `--serve` that may print nothing at all."""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path


class Settled:
    """Called again and again (tests/support/eventually.within), true once the processes
    of process group `pgid` have all been asleep, and have used at most `most_ticks` clock
    ticks of CPU between them, for `window` seconds: started up (imports, connections)
    and waiting for what comes. A process starved of CPU on a loaded machine is runnable,
    not asleep, so it does not pass for settled."""

    def __init__(self, pgid: int, *, window: float = 0.5, most_ticks: int = 3):
        self.pgid, self.window, self.most_ticks = pgid, window, most_ticks
        self.samples: deque[tuple[float, int]] = deque()

    def __call__(self) -> bool:
        now = time.monotonic()
        ticks, asleep = self._read()
        if not asleep:
            self.samples.clear()
            return False
        self.samples.append((now, ticks))
        while len(self.samples) > 1 and now - self.samples[1][0] >= self.window:
            self.samples.popleft()
        since, before = self.samples[0]
        return now - since >= self.window and ticks - before <= self.most_ticks

    def _read(self) -> tuple[int, bool]:
        """CPU ticks the group's processes used, and whether every thread of them sleeps
        (or has ended: a zombie not yet reaped, which the caller's poll() tells)."""
        found = self._processes()
        return sum(ticks for _pid, _name, _states, ticks in found), all(
            state in "SIZX" for _pid, _name, states, _ticks in found for state in states)

    def describe(self) -> str:
        """The group's processes and their threads' states, for a failure's message."""
        return "; ".join(f"{pid} {name} {states} {ticks} ticks" for pid, name, states, ticks in self._processes()) or "no process"

    def _processes(self) -> list[tuple[str, str, str, int]]:
        """(pid, command, each thread's state letter, CPU ticks) of the group's processes."""
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) != self.pgid:  # field 5 of proc(5): the process group
                    continue
                states = "".join(task.read_text().rsplit(")", 1)[1].split()[0] for task in stat.parent.glob("task/*/stat"))
                name = (stat.parent / "comm").read_text().strip()
                found.append((stat.parent.name, name, states, int(fields[11]) + int(fields[12])))  # utime, stime
            except (OSError, IndexError, ValueError):  # a process that ended meanwhile
                continue
        return found
