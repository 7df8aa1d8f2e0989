"""Progress of long work, and the signals that stop it (stop_on_signals, moving).

Progress is on stderr only: a live display (done/total, rate, time left) when stderr is a
terminal, and one summary line at the end when it is not (a pipe, a log file, CI). -q
silences both, as it silences every note. stdout carries only the command's output, so
`> file` and `| jq` are never mixed with progress.

Usage:
    with progress(app, "produce", total=size, unit="bytes") as shown:
        shown.update(done, detail="12,000 records")
        ...
        shown.summary = "produced 12,000 records ..."   # printed when the block ends
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # typing is not imported at run time: ~2.5 ms of a one-line produce
if TYPE_CHECKING:
    from typing import Any

    from kctl.cli._app import App

UNITS = ("records", "bytes", "partitions", "messages")


def amount(value: float, unit: str) -> str:
    if unit == "bytes":
        from kctl.sizes import format_bytes

        return format_bytes(int(value)) or "0 B"
    return f"{value:,.0f}"


class Progress:
    def __init__(self, app: App, label: str, total: float | None, unit: str, enabled: bool = True):
        if unit not in UNITS:
            raise ValueError(f"unknown unit {unit!r}")
        self.label = label
        self.total = total
        self.unit = unit
        self.done = 0.0
        self.detail = ""
        self.summary = ""
        self._app = app
        self._enabled = enabled and not app.quiet
        self._started = time.monotonic()
        self._live: Any = None  # rich.progress.Progress on a terminal
        self._task: Any = None

    @property
    def seconds(self) -> float:
        return time.monotonic() - self._started

    def __enter__(self) -> Progress:
        if self._enabled and self._app.stderr_is_tty:
            self._start_live()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._live is not None:
            self._live.stop()  # transient: the live lines are erased
        if exc_type is None and self.summary and self._enabled:
            self._app.note(self.summary)

    def update(self, done: float, *, total: float | None = None, detail: str | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        if detail is not None:
            self.detail = detail
        if self._live is not None:
            self._live.update(self._task, completed=done, total=self.total, detail=self.detail)

    def advance(self, step: float, *, detail: str | None = None) -> None:
        self.update(self.done + step, detail=detail)

    def _start_live(self) -> None:
        # rich is imported only here: a command that shows no progress never pays for it.
        from rich.console import Console
        from rich.progress import BarColumn, ProgressColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as Live
        from rich.text import Text

        unit = self.unit

        class Amounts(ProgressColumn):
            """done/total (or just done when the total is unknown) and the rate."""

            def render(self, task) -> Text:
                done = amount(task.completed, unit)
                shown = f"{done}/{amount(task.total, unit)}" if task.total is not None else done
                if unit != "bytes":
                    shown = f"{shown} {unit}"
                speed = task.speed
                return Text(f"{shown} {amount(speed, unit) if speed else '-'}/s")

        console = Console(file=self._app.stderr, stderr=True)
        self._live = Live(
            TextColumn("{task.description}"), BarColumn(bar_width=24), Amounts(), TextColumn("{task.fields[detail]}"),
            TimeRemainingColumn(), console=console, transient=True, speed_estimate_period=10,
        )
        self._task = self._live.add_task(self.label, total=self.total, detail=self.detail)
        self._live.start()


def progress(app: App, label: str, *, total: float | None = None, unit: str = "records", enabled: bool = True) -> Progress:
    """A Progress for `with`; enabled=False shows nothing (for a command whose long
    mode is one option among others)."""
    return Progress(app, label, total, unit, enabled)


def stop_on_signals(*, interrupt: bool = True) -> Any:
    """The event SIGTERM and Ctrl-C set, handed to the library. With `interrupt` they
    also raise KeyboardInterrupt (consume: a write to a slow reader may block, and the
    consumer's close commits what the sink took; the consumer leaves its group at once
    instead of after session.timeout.ms). Without it (copy, redrive, clone) the loop
    sees the event between batches and commits what it wrote before it stops; a second
    signal interrupts at once."""
    import signal
    import threading

    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        return stop

    def handle(_signum: int, _frame: Any) -> None:
        if interrupt or stop.is_set():
            stop.set()
            raise KeyboardInterrupt
        stop.set()

    handle.kctl = True  # type: ignore[attr-defined]  # an earlier command's (in one process: the tests)
    signal.signal(signal.SIGTERM, handle)
    current = signal.getsignal(signal.SIGINT)
    if current is signal.default_int_handler or getattr(current, "kctl", False):
        signal.signal(signal.SIGINT, handle)
    return stop


def moving(app: App, label: str, move: Any, *, enabled: bool = True) -> Any:
    """Run a copy, redrive or clone (`move(stop, on_batch)`) with progress on stderr (unless
    not `enabled`); SIGTERM and Ctrl-C stop it after the batch being written, what it
    wrote committed."""
    stop = stop_on_signals(interrupt=False)
    with progress(app, label, unit="records", enabled=enabled) as shown:
        return move(stop, lambda read, planned: shown.update(read, total=planned))
