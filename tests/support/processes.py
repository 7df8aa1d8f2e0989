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
        """CPU ticks the group's processes used, and whether every thread of them sleeps."""
        ticks, asleep = 0, True
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) != self.pgid:  # field 5 of proc(5): the process group
                    continue
                ticks += int(fields[11]) + int(fields[12])  # utime, stime
                for task in stat.parent.glob("task/*/stat"):
                    # Asleep, idle, or ended (a zombie not yet reaped: the caller's poll() says so).
                    asleep = asleep and task.read_text().rsplit(")", 1)[1].split()[0] in ("S", "I", "Z", "X")
            except (OSError, IndexError, ValueError):  # a process that ended meanwhile
                continue
        return ticks, asleep

    def describe(self) -> str:
        """The group's processes and their threads' states, for a failure's message."""
        out = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) == self.pgid:
                    states = "".join(t.read_text().rsplit(")", 1)[1].split()[0] for t in stat.parent.glob("task/*/stat"))
                    out.append(f"{stat.parent.name} {(stat.parent / 'comm').read_text().strip()} {states} "
                               f"{int(fields[11]) + int(fields[12])} ticks")
            except (OSError, IndexError, ValueError):
                continue
        return "; ".join(out) or "no process"

