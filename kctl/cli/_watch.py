"""The verdict commands (`cluster health`, `mirror status`, `doctor`): their exit status
by verdict, as Nagios reads it, and their --watch loop: check, show, and check again every
--interval until Ctrl-C, a healthy verdict with --exit-when-healthy, or --max-wait; the
exit status is the last check's."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kctl.cli._app import App, until_stopped
from kctl.errors import KctlError, UnreachableError
from kctl.output.spec import DocumentSpec

# A verdict's exit status (kctl.errors.EXIT_CODE_MEANINGS: "health and status commands").
VERDICT_EXIT = {"OK": 0, "WARNING": 1, "CRITICAL": 2, "UNKNOWN": 3}


def failed(app: App, exc: KctlError) -> int:
    """A check that could not be made, said in one line and judged: CRITICAL when no
    broker was reached, UNKNOWN otherwise (a refusal, a timeout)."""
    app.error_line(exc.message)
    return VERDICT_EXIT["CRITICAL"] if isinstance(exc, UnreachableError) else VERDICT_EXIT["UNKNOWN"]


def show(app: App, verdict: Any, spec: DocumentSpec, *, watch: bool) -> None:
    """One verdict; on a terminal under --watch, redrawn in place like watch(1)."""
    if watch and app.stdout_is_tty and app.out.format == "table":
        app.out.raw("\x1b[H\x1b[2J")
        app.note(time.strftime("%H:%M:%S"))
    app.out.document(verdict, spec)


def watch_loop(app: App, once: Callable[[], int], *, watch: bool, interval: float, exit_when_healthy: bool,
               max_wait: float | None) -> int:
    """Run once() (it shows a verdict and returns its exit status) and, with `watch`, again
    every `interval` seconds; the last status."""
    status = once()
    started = time.monotonic()
    with until_stopped():
        while watch and not (exit_when_healthy and status == 0):
            if max_wait is not None and time.monotonic() - started + interval > max_wait:
                break
            time.sleep(interval)
            if not app.out.is_structured and not app.stdout_is_tty:
                app.out.raw("\n")
            status = once()
    return status
