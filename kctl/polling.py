"""Asking again until the answer is the one wanted or the time is up: the library's one
way to wait for a cluster to catch up (a new topic's metadata reaching every broker, a
quota applied, a partition's leader elected).

Written out rather than taken from tenacity, which did this before: importing tenacity
cost 7.6 ms of the 25 ms issue 37 allows the group reads beyond their floor (measured
with -X importtime), for a loop of six lines with tenacity's stop_after_delay and
stop_before_delay semantics.

Waits on futures (kctl.admin.client.session) and consume loops are not polls of this
kind: they keep their own loops.
"""

from __future__ import annotations

import time
from collections.abc import Callable

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")


def poll(ask: Callable[[], T], done: Callable[[T], object], *, timeout: float, interval: float,
         stop_before: bool = False, sleep: Callable[[float], None] = time.sleep) -> T:
    """Call ask() until done(its answer) is true or `timeout` seconds have passed since the first
    call, `interval` seconds apart; the last answer either way, for the caller to judge.
    With `stop_before`, it stops rather than wait past the timeout for another attempt
    (for an answer wanted by a deadline, not after it). What ask() raises is raised at once."""
    started = time.monotonic()
    while True:
        answer = ask()
        if done(answer):
            return answer
        if time.monotonic() - started + (interval if stop_before else 0) >= timeout:
            return answer
        sleep(interval)
