"""Running a full-screen command (`kctl top`) in a real pseudo-terminal, as a user would:
wait for its screen, press keys, collect everything it wrote."""

from __future__ import annotations

import os
import pty
import re
import select
import shlex
import subprocess
import time
from collections.abc import Sequence

# The global options that take a value, to find the noun of a `kctl` line.
_VALUED = {"-b", "--bootstrap-server", "--context", "-X", "-o", "--output", "--timeout"}


def kctl_noun(command: str) -> str | None:
    """The noun of a `kctl ...` line (after the global options), None for anything else."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or words[0] != "kctl":
        return None
    rest = iter(words[1:])
    for word in rest:
        if word in _VALUED:
            next(rest, None)
        elif not word.startswith("-"):
            return word
    return None


def run_in_terminal(argv: Sequence[str], *, env: dict[str, str], cwd: str | os.PathLike | None = None, ready: bytes,
                    keys: bytes = b"q", timeout: float = 60, size: tuple[int, int] = (100, 30)) -> tuple[int, bytes]:
    """Start argv on a new pseudo-terminal of `size` (columns, rows), wait until it has
    written `ready`, type `keys`, and wait for it to exit: (exit status, all it wrote).
    Fails when `ready` does not come or the process does not end within `timeout`."""
    controller, terminal = pty.openpty()
    env = {**env, "TERM": env.get("TERM", "xterm-256color"), "COLUMNS": str(size[0]), "LINES": str(size[1])}
    process = subprocess.Popen(list(argv), stdin=terminal, stdout=terminal, stderr=terminal, env=env, cwd=cwd,
                               close_fds=True, start_new_session=True)
    os.close(terminal)
    output = b""
    deadline = time.monotonic() + timeout

    def read(until: float, seen: bytes | None = None) -> None:
        nonlocal output
        while time.monotonic() < until and (seen is None or seen not in _plain(output)):
            if select.select([controller], [], [], 0.1)[0]:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # the process closed the terminal
                    return
                if not chunk:
                    return
                output += chunk

    try:
        read(deadline, ready)
        if ready not in _plain(output):
            raise AssertionError(f"{' '.join(argv)}: {ready!r} not shown within {timeout:g}s: {output[-2000:]!r}")
        os.write(controller, keys)
        code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
        read(time.monotonic() + 0.5)
        return code, output
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)


def _plain(output: bytes) -> bytes:
    """What the terminal shows, roughly: escape sequences dropped (a screen is written in
    pieces between cursor moves, so words are compared without them)."""
    return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]", b"", output)


class Terminal:
    """A full-screen program on a pseudo-terminal whose screen is kept as a terminal
    keeps it (pyte, a VT100 emulator): what a user sees after each redraw, stale cells
    included, which a program's own rendering of itself would not show."""

    def __init__(self, argv: Sequence[str], *, env: dict[str, str], size: tuple[int, int] = (120, 30)):
        import pyte

        self.screen = pyte.Screen(*size)
        self.stream = pyte.ByteStream(self.screen)
        self.controller, terminal = pty.openpty()
        env = {**env, "TERM": "xterm-256color", "COLUMNS": str(size[0]), "LINES": str(size[1])}
        self.process = subprocess.Popen(list(argv), stdin=terminal, stdout=terminal, stderr=terminal, env=env,
                                        close_fds=True, start_new_session=True)
        os.close(terminal)
        # pyte answers nothing back, so the program's queries (cursor position, colours)
        # go unanswered, as on a dumb terminal: Textual carries on without the answers.

    def _read(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        while True:
            left = until - time.monotonic()
            if not select.select([self.controller], [], [], max(0.0, min(left, 0.05)))[0]:
                if left <= 0:
                    return
                continue
            try:
                chunk = os.read(self.controller, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.stream.feed(chunk)

    def lines(self) -> list[str]:
        """The screen as shown now, a string per row."""
        self._read(0)
        return list(self.screen.display)

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.lines())

    def wait_for(self, check, *, timeout: float = 30, what: str = "") -> str:
        """The screen's text once check(text) is true (a string: once it is shown)."""
        test = (lambda text: check in text) if isinstance(check, str) else check
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._read(0.1)
            text = self.text()
            if test(text):
                return text
        raise AssertionError(f"{what or check!r} not shown within {timeout:g}s; the screen:\n{self.text()}")

    def settle(self, seconds: float) -> str:
        """The screen after `seconds` more of output."""
        self._read(seconds)
        return self.text()

    def press(self, keys: str | bytes) -> None:
        os.write(self.controller, keys.encode() if isinstance(keys, str) else keys)

    def close(self, keys: bytes = b"q", timeout: float = 30) -> int:
        """Type `keys` (q: leave) and wait for the exit status."""
        try:
            self.press(keys)
            deadline = time.monotonic() + timeout
            while self.process.poll() is None and time.monotonic() < deadline:
                self._read(0.1)
            return self.process.wait(timeout=1)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            os.close(self.controller)
