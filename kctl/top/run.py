"""Starting `kctl top`: the window, the sampler thread over it, the application."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kctl.sampling import Sampler


def build(session: Any, *, target: str, interval: float, window: float, isolation: str = "read_uncommitted",
          registry: Callable[[], Any] | None = None) -> tuple[Any, Sampler]:
    """The application and its sampler (not started): what run() runs, and what the tests
    drive headless."""
    from kctl.top.app import TopApp
    from kctl.top.model import Window, take
    from kctl.top.peek import reader

    trends = Window(window)

    def sample():
        started = time.monotonic()
        return trends.add(take(session, isolation=isolation), time.monotonic() - started)

    sampler = Sampler(sample, interval=interval, name="kctl-top-sampler")
    return TopApp(sampler, target=target, interval=interval, window=window, peek=reader(session, registry)), sampler


def run(session: Any, **options: Any) -> int:
    """Run the application until the user leaves it; its exit status."""
    app, sampler = build(session, **options)
    sampler.start()
    try:
        code = app.run()
    finally:
        # A sample in flight ends at the session's timeout; the thread is a daemon, so
        # leaving never waits for it.
        sampler.stop(timeout=0)
    return code or 0
