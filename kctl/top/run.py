"""Starting `kctl top`: the window, the sampler thread over it, the application."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kctl.errors import KctlError
from kctl.sampling import Sampler


def build(session: Any, *, target: str, interval: float, window: float, isolation: str = "read_uncommitted",
          registry: Callable[[], Any] | None = None, debug: bool = False, connect: Any = None) -> tuple[Any, Sampler]:
    """The application and its sampler (not started): what run() runs, and what the tests
    drive headless. `connect`: a Kafka Connect client, for the connectors view."""
    from kctl.admin.groups.lag_time import TimeLagEstimator
    from kctl.top.app import TopApp
    from kctl.top.model import Window, take
    from kctl.top.peek import reader

    trends = Window(window)
    time_lag = TimeLagEstimator()

    def sample():
        return trends.add(take(session, isolation=isolation, connect=connect, time_lag=time_lag))

    # Paced: on a cluster where a sample outlasts --interval, sampling takes at most half
    # a core and the screen says how often it really samples.
    sampler = Sampler(sample, interval=interval, pace=1.0, name="kctl-top-sampler")
    return TopApp(sampler, target=target, interval=interval, window=window, peek=reader(session, registry), debug=debug), sampler


def run(session: Any, **options: Any) -> int:
    """Run the application until the user leaves it; its exit status."""
    app, sampler = build(session, **options)
    return run_app(app, sampler)


def run_app(app: Any, sampler: Sampler, *, headless: bool = False) -> int:
    """Run a built application with its sampler: its exit status, or the KctlError of the
    unexpected error that ended it (its traceback only with --debug)."""
    sampler.start()
    try:
        code = app.run(headless=headless)
    finally:
        # A sample in flight ends at the session's timeout; the thread is a daemon, so
        # leaving never waits for it.
        sampler.stop(timeout=0)
    if app.crash is not None and not app.show_tracebacks:
        raise KctlError(cause=f"kctl top stopped on an unexpected error: {type(app.crash).__name__}: {app.crash}",
                        hint="{debug} shows where")
    return code or 0
