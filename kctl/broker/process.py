"""Run the bundled broker as a child process: for `kctl local`, kctl.testing and kctl's tests.

The child is `python -m kctl.broker`; it prints one line with HOST:PORT (then any other
listeners as PROTOCOL://HOST:PORT) on its stdout (a pipe) once it listens, which is how the parent learns the port (with port 0) and knows
clients can connect: unlike a file in the data directory, a pipe cannot hold a line left by
an earlier broker. Detached brokers (`kctl local start`) get their own session and log to
<data-dir>/broker.log; attached ones die with their parent's stop(). Whether a broker runs
on a directory is told by the directory's lock (kctl.broker.storage.lock), never by a pid
file.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kctl.broker.storage.lock import holder

READY_PREFIX = "kctl-broker listening on "
LOG_FILE = "broker.log"
READY_FILE = "broker.ready"


class BrokerProcessError(RuntimeError):
    """The broker did not start; `status` is its exit status when it exited."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass
class BrokerProcess:
    data_dir: Path
    port: int = 0
    host: str = "127.0.0.1"
    detach: bool = False
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None  # added to this process's environment for the child
    # Run in the child before exec (tests: resource limits such as RLIMIT_NOFILE).
    preexec_fn: Callable[[], None] | None = None
    process: subprocess.Popen | None = None
    bootstrap: str = ""
    listeners: list[str] = field(default_factory=list)  # the others, PROTOCOL://HOST:PORT

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_FILE

    @property
    def ready_path(self) -> Path:
        return self.data_dir / READY_FILE

    def command(self) -> list[str]:
        return [sys.executable, "-m", "kctl.broker", "--data-dir", str(self.data_dir),
                "--host", self.host, "--port", str(self.port),
                "--ready-file", str(self.ready_path), "--log-file", str(self.log_path),
                *self.extra_args]

    def start(self, timeout: float = 15.0) -> str:
        """Launch and wait until the broker listens; returns its bootstrap address."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        pid = holder(self.data_dir)
        if pid is not None:  # the child would refuse too; say it without spawning one
            raise BrokerProcessError(f"data directory {self.data_dir} is in use by another "
                                     f"broker (pid {pid})")
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=log, start_new_session=self.detach, close_fds=True,
                preexec_fn=self.preexec_fn, env={**os.environ, **self.env} if self.env else None)
        stdout = self.process.stdout
        assert stdout is not None  # a pipe: Popen(stdout=PIPE)
        try:
            line = _read_line(stdout, time.monotonic() + timeout)
        finally:
            stdout.close()
        if line.startswith(READY_PREFIX):
            self.bootstrap, *self.listeners = line[len(READY_PREFIX):].split()
            return self.bootstrap
        try:
            code = self.process.wait(1.0)
        except subprocess.TimeoutExpired:
            self.kill()
            raise BrokerProcessError(f"the broker did not listen within {timeout:g}s: "
                                     f"{last_error(self.log_path)}") from None
        raise BrokerProcessError(f"the broker exited with status {code}: {last_error(self.log_path)}", code)

    def stop(self, timeout: float = 15.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL: no flush, no checkpoint, no clean-shutdown marker (crash tests)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def restart(self, timeout: float = 15.0) -> str:
        """A clean stop and a start, each given `timeout` (a stop that outlasts it would
        end in SIGKILL, and the start in recovering every log)."""
        self.stop(timeout)
        if self.bootstrap:
            self.port = int(self.bootstrap.rsplit(":", 1)[1])
        return self.start(timeout)


def last_error(log_path: Path) -> str:
    """The last ERROR line of a broker log (or its last line), for one-line messages."""
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "no log written"
    for line in reversed(lines):
        if " ERROR " in line or line.startswith("error:"):
            return line.split(": ", 1)[-1] if " ERROR " in line else line[len("error: "):]
    return lines[-1] if lines else "no log written"


def read_ready_file(path: Path) -> tuple[str | None, int | None]:
    """(bootstrap, pid) from a ready file; Nones when it is missing or unreadable."""
    try:
        bootstrap, pid = path.read_text().split()
        return bootstrap, int(pid)
    except (FileNotFoundError, ValueError):
        return None, None


def _read_line(pipe, deadline: float) -> str:
    """The first line written to `pipe` before `deadline`; "" on end of file or time-out."""
    data = b""
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([pipe], [], [], remaining)[0]:
            return ""
        chunk = os.read(pipe.fileno(), 4096)
        if not chunk:
            return ""
        data += chunk
    return data.split(b"\n", 1)[0].decode(errors="replace")
