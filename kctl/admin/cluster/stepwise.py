"""Running a reassignment gently (`kctl cluster balance --execute`): at most N partitions
moving at once, and one new replica per partition at a time, each step a reassignment of
its own (Kafka's reassignment tool, and Cruise Control by default, move every replica of
every partition at once: the copy traffic of the whole plan lands on the cluster together).

A step replaces one replica with one new one, in the same rack where the plan allows, so
that every intermediate replica set is as rack-safe as the plan; the last step also puts
the replicas in the plan's order (its preferred leader). Steps that add no replica (a new
order only) finish at once.

Killed midway, nothing is lost: the steps in flight go on in Kafka, and the command run
again plans from where the cluster is.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from kctl.admin.client.session import AdminSession
from kctl.admin.cluster.replication import (
    MoveRow,
    PartitionMove,
    alter_reassignments,
    list_reassignments,
    move_row,
    set_throttles,
    verify,
)

Key = tuple[str, int]


def steps(move: PartitionMove, racks: Mapping[int, str | None]) -> list[tuple[int, ...]]:
    """The replica lists `move` goes through, one new replica each, ending at its target."""
    current = list(move.current)
    removing = list(move.removing)
    out = []
    for added in move.adding:
        if not removing:  # more replicas than before: add the rest in one last step
            break
        same = [b for b in removing if racks.get(b) is not None and racks.get(b) == racks.get(added)]
        leaving = (same or removing)[0]
        removing.remove(leaving)
        current[current.index(leaving)] = added
        out.append(tuple(current))
    if not out or out[-1] != move.target:
        if out and set(out[-1]) == set(move.target):
            out[-1] = move.target  # the same replicas: take the plan's order in that step
        else:
            out.append(move.target)
    return out


def run(session: AdminSession, moves: Sequence[PartitionMove], racks: Mapping[int, str | None], *, max_partitions: int,
        throttle: int | None = None, interval: float = 1.0, wait_timeout: float | None = None,
        stop: threading.Event | None = None, on_progress: Callable[[int, int], None] | None = None) -> list[MoveRow]:
    """Run `moves` a step at a time, at most `max_partitions` partitions at once; where
    each stands at the end (done, in-progress, failed, or pending when never started
    before `wait_timeout` or `stop`). Throttles, when given, are set for the whole plan
    first and removed once every partition is done."""
    changing = [m for m in moves if m.target != m.current]
    if throttle is not None and changing:
        set_throttles(session, changing, throttle)
    queue = deque(changing)
    active: dict[Key, deque[tuple[int, ...]]] = {}
    failed: dict[Key, MoveRow] = {}
    submit: dict[Key, list[int] | None] = {}
    finished = 0
    started = time.monotonic()
    by_key = {(m.topic, m.partition): m for m in changing}
    while True:
        while len(active) < max_partitions and queue:
            move = queue.popleft()
            remaining = deque(steps(move, racks))
            key = (move.topic, move.partition)
            submit[key] = list(remaining.popleft())
            active[key] = remaining
        if submit:
            refused = alter_reassignments(session, submit, "balance partitions")
            for key, error in refused.items():
                active.pop(key, None)
                failed[key] = move_row(by_key[key], "failed", error.message)
            submit = {}
        if not active:
            break
        if (wait_timeout is not None and time.monotonic() - started > wait_timeout) or (stop is not None and stop.is_set()):
            break
        if stop is not None:
            stop.wait(interval)
        else:
            time.sleep(interval)  # the point: a reassignment takes the time its copy takes
        moving = {(r.topic, r.partition) for r in list_reassignments(session)}
        for key in sorted(active):
            if key in moving:
                continue
            remaining = active[key]
            if remaining:
                submit[key] = list(remaining.popleft())
            else:
                del active[key]
                finished += 1
        if on_progress is not None:
            on_progress(finished, len(changing))
    waiting = {(m.topic, m.partition) for m in queue}
    ended = [m for m in changing if (m.topic, m.partition) not in failed and (m.topic, m.partition) not in active
             and (m.topic, m.partition) not in waiting]
    rows = {(r.topic, r.partition): r for r in verify(session, ended, clear=not queue and not active)} if ended else {}
    rows.update(failed)
    rows.update({key: move_row(by_key[key], "in-progress") for key in active})
    out = []
    for m in moves:
        key = (m.topic, m.partition)
        if m.target == m.current:
            out.append(move_row(m, "unchanged"))
        elif key in rows:
            out.append(rows[key])
        else:
            out.append(move_row(m, "pending"))
    return out
