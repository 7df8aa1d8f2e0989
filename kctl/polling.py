"""Asking again until the answer is the one wanted or the time is up: the library's one
way to wait for a cluster to catch up (a new topic's metadata reaching every broker, a
quota applied, a partition's leader elected), over tenacity.

Waits on futures (kctl.admin.client.session) and consume loops are not polls of this
kind: they keep their own loops.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll(ask: Callable[[], T], done: Callable[[T], bool], *, timeout: float, interval: float,
         stop_before: bool = False, sleep: Callable[[float], None] = time.sleep) -> T:
    """Call ask() until done(its answer) or `timeout` seconds have passed since the first
    call, `interval` seconds apart; the last answer either way, for the caller to judge.
    With `stop_before`, it stops rather than wait past the timeout for another attempt
    (for an answer wanted by a deadline, not after it). What ask() raises is raised at once."""
    import tenacity

    retrying = tenacity.Retrying(
        stop=(tenacity.stop_before_delay if stop_before else tenacity.stop_after_delay)(timeout),
        wait=tenacity.wait_fixed(interval),
        retry=tenacity.retry_if_result(lambda answer: not done(answer)),
        retry_error_callback=lambda state: state.outcome.result(),
        sleep=sleep,
    )
    return retrying(ask)
