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
