"""A sampler thread: `take()` every interval on its own thread, the last good result kept
with its age, a failure told once and its recovery told once.

`group lag --serve` and `kctl top` both run on it, so neither a scrape nor a screen ever
waits on the cluster: they read `latest`, which the thread replaces whole (one reference
assignment, atomic under the GIL) when a sample succeeds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from kctl.errors import KctlError

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class Sampled(Generic[T]):
    value: T
    taken_at: float  # clock() when it finished (epoch seconds)
    duration: float  # seconds it took


class Sampler(Generic[T]):
    """Calls `take()` every `interval` seconds (from the start of one call to the start of
    the next, or at once when a call took longer) until stopped. With `pace`, it waits at
    least `pace` times what the last call took: a sample that outlasts the interval (a
    large cluster) then costs at most 1 / (1 + pace) of a core instead of all of it."""

    def __init__(self, take: Callable[[], T], *, interval: float, pace: float = 0.0, clock: Callable[[], float] = time.time,
                 notify: Callable[[str], None] = lambda message: None, subject: str = "sampling",
                 keeping: str = "keeping the last good sample until it recovers", name: str = "kctl-sampler"):
        self.take = take
        self.pace = pace
        # The time between the last two samples' starts: the interval, or longer when paced.
        self.period = interval
        self.subject, self.keeping = subject, keeping
        self.interval = interval
        self.clock = clock
        # Told when sampling starts failing and when it recovers (not at every failure).
        self.notify = notify
        self.latest: Sampled[T] | None = None
        self.samples_total = 0
        self.failures_total = 0
        self.last_error: str | None = None
        # None until the first sample: neither a failure nor a recovery to tell.
        self.last_attempt_ok: bool | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Ask the thread to stop and wait for it up to `timeout` (a sample in flight ends
        at the session's timeout; the thread is a daemon, so the process never waits)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.sample_once()
            took = time.monotonic() - started
            wait = max(self.interval - took, self.pace * took, 0.0)
            self.period = took + wait
            self._stop.wait(wait)

    def sample_once(self) -> None:
        started = time.monotonic()
        try:
            value = self.take()
        except Exception as exc:  # noqa: BLE001 - whatever failed, the thread samples again
            message = exc.message if isinstance(exc, KctlError) else f"{type(exc).__name__}: {exc}"
            log.debug("sample failed", exc_info=not isinstance(exc, KctlError))
            self.failures_total += 1
            if self.last_attempt_ok is not False:
                self.notify(f"{self.subject} failed, {self.keeping}: {message}")
            self.last_attempt_ok = False
            self.last_error = message
            return
        self.latest = Sampled(value, self.clock(), time.monotonic() - started)
        self.samples_total += 1
        if self.last_attempt_ok is False:
            self.notify(f"{self.subject} recovered after {self.failures_total} failed sample(s)")
        self.last_attempt_ok = True
        self.last_error = None

    def age(self) -> float | None:
        """Seconds since the last good sample finished, None before the first."""
        latest = self.latest
        return None if latest is None else self.clock() - latest.taken_at
