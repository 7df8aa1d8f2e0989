"""Retrying assertions about cluster state that propagates asynchronously.

In a multi-broker cluster each broker applies the metadata log on its own, and a client
asks whichever broker it likes: right after a change, one answer may still be old.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(check: Callable[[], T], timeout: float = 15.0, interval: float = 0.2) -> T:
    """Call `check` until it stops raising AssertionError; its last error if time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(interval)
