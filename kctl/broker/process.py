"""Run the bundled broker as a child process: for `kctl local`, kctl.testing and kctl's tests.

The child is `python -m kctl.broker`; it writes HOST:PORT to a ready file once it listens,
which is how the parent learns the port (with port 0) and knows clients can connect.
Detached brokers (`kctl local start`) get their own session, log to <data-dir>/broker.log
and leave broker.pid there; attached ones die with their parent's stop().
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

PID_FILE = "broker.pid"
LOG_FILE = "broker.log"
READY_FILE = "broker.ready"


class BrokerProcessError(RuntimeError):
    pass


@dataclass
class BrokerProcess:
    data_dir: Path
    port: int = 0
    host: str = "127.0.0.1"
    detach: bool = False
    extra_args: list[str] = field(default_factory=list)
    process: subprocess.Popen | None = None
    bootstrap: str = ""

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_FILE

    @property
    def ready_path(self) -> Path:
        return self.data_dir / READY_FILE

    def command(self) -> list[str]:
        return [sys.executable, "-m", "kctl.broker", "--data-dir", str(self.data_dir),
                "--host", self.host, "--port", str(self.port),
                "--ready-file", str(self.ready_path), "--pid-file",
                str(self.data_dir / PID_FILE), "--log-file", str(self.log_path),
                *self.extra_args]

    def start(self, timeout: float = 15.0) -> str:
        """Launch and wait until the broker listens; returns its bootstrap address."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.ready_path.unlink(missing_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=log, start_new_session=self.detach, close_fds=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready_path.exists():
                self.bootstrap = self.ready_path.read_text().strip()
                if self.bootstrap:
                    return self.bootstrap
            code = self.process.poll()
            if code is not None:
                raise BrokerProcessError(f"the broker exited with status {code}: {last_error(self.log_path)}")
            time.sleep(0.01)
        self.kill()
        raise BrokerProcessError(f"the broker did not listen within {timeout:g}s: "
                                 f"{last_error(self.log_path)}")

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
        self.stop()
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


def running_pid(data_dir: Path) -> int | None:
    """The pid of the broker serving data_dir, if one is alive."""
    try:
        pid = int((data_dir / PID_FILE).read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid
