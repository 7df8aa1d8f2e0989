"""Instances of the bundled broker run by `kctl local`: start, stop, status, logs, purge.

An instance is a data directory; `kctl local start` runs `python -m kctl.broker` detached
with its log and ready files inside that directory, so several instances on different
directories and ports coexist and any later kctl finds them again. An instance runs while
its directory's lock is held (kctl.broker.storage.lock): a crashed broker's leftovers, or a
pid the kernel has since given to another process, are never mistaken for a broker.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from kctl.errors import ExitCode, KctlError, NotFoundError


class LocalBrokerError(KctlError):
    exit_code = ExitCode.ERROR


@dataclass(frozen=True, slots=True)
class LocalStatus:
    state: str  # running | stopped
    bootstrap: str | None
    pid: int | None
    data_dir: str
    topics: int  # the user's topics (internal ones such as __consumer_offsets left out)
    size_bytes: int
    log_file: str


def default_data_dir(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "kctl" / "local"


def status(data_dir: Path) -> LocalStatus:
    from kctl.broker.process import LOG_FILE, READY_FILE, read_ready_file
    from kctl.broker.storage.lock import holder

    pid = holder(data_dir)
    bootstrap = None
    if pid is not None:
        address, ready_pid = read_ready_file(data_dir / READY_FILE)
        if ready_pid == pid:  # not a file left by an earlier broker
            bootstrap = address
    topics = 0
    try:
        import json

        names = json.loads((data_dir / "kctl-metadata.json").read_text()).get("topics", {})
        topics = sum(1 for name in names if not name.startswith("__"))
    except (FileNotFoundError, ValueError):
        pass
    size = sum(p.stat().st_size for p in data_dir.rglob("*") if p.is_file()) if data_dir.exists() else 0
    return LocalStatus("running" if pid else "stopped", bootstrap, pid, str(data_dir), topics, size,
                       str(data_dir / LOG_FILE))


def start(data_dir: Path, host: str, port: int, timeout: float, broker_args: list[str] = (),
          broker_env: dict[str, str] | None = None) -> LocalStatus:
    """Start a detached broker on data_dir (`broker_args`: more `python -m kctl.broker`
    options, the security ones; `broker_env`: its users), or return the one already running
    there."""
    from kctl.broker.process import BrokerProcess, BrokerProcessError

    current = status(data_dir)
    if current.state == "running":
        return _listening(data_dir, current, timeout)
    process = BrokerProcess(data_dir, port=port, host=host, detach=True, extra_args=list(broker_args),
                            env=broker_env)
    try:
        process.start(timeout)
    except BrokerProcessError as exc:
        raise LocalBrokerError(f"unable to start the local broker: {exc}",
                               hint=f"see {process.log_path}") from None
    return status(data_dir)


def _listening(data_dir: Path, current: LocalStatus, timeout: float) -> LocalStatus:
    """A broker that holds the lock but has not written its address yet is starting."""
    from kctl.polling import poll

    if current.state == "running" and current.bootstrap is None:
        current = poll(lambda: status(data_dir), lambda now: now.state != "running" or now.bootstrap is not None, timeout=timeout, interval=0.02)
    if current.state != "running" or current.bootstrap is None:
        raise LocalBrokerError(f"unable to start the local broker: the one starting on {data_dir} "
                               f"(pid {current.pid}) did not listen within {timeout:g}s",
                               hint=f"see {current.log_file}")
    return current


def stop(data_dir: Path, timeout: float) -> LocalStatus | None:
    """SIGTERM the broker holding the directory's lock and wait until it lets go of it (a
    clean shutdown); None if no broker holds it."""
    from kctl.broker.storage.lock import holder

    current = status(data_dir)
    if current.pid is None:
        return None
    pid = current.pid
    if not pid or not _is_broker(pid):
        if holder(data_dir) is None:  # it exited meanwhile
            return current
        raise LocalBrokerError(f"unable to stop the local broker: the lock on {data_dir} is held by "
                               f"{f'pid {pid}' if pid else 'a process that did not write its pid'}, "
                               "which is not a kctl broker", hint="nothing was signalled")
    from kctl.polling import poll

    os.kill(pid, signal.SIGTERM)
    if poll(lambda: holder(data_dir), lambda pid_holding: pid_holding is None, timeout=timeout, interval=0.02) is None:
        return current
    raise LocalBrokerError(f"unable to stop the local broker: pid {pid} still runs "
                           f"after {timeout:g}s", hint=f"kill -9 {pid} forces it (the next start recovers the logs)")


def _is_broker(pid: int) -> bool:
    """Whether `pid` runs kctl (its broker or `kctl local start --foreground`), read from
    /proc; where there is no /proc the lock holder is taken at its word."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return not Path("/proc/self").exists()
    except OSError:
        return False
    return b"kctl" in command


def purge(data_dir: Path, timeout: float) -> bool:
    """Stop the broker if it runs and delete its data directory; False if none existed."""
    if not data_dir.exists():
        return False
    if not (data_dir / "meta.properties").exists() and any(data_dir.iterdir()):
        from kctl.broker.storage.manager import PROCESS_FILES

        if any(p.name not in PROCESS_FILES for p in data_dir.iterdir()):
            raise LocalBrokerError(f"unable to purge {data_dir}: it is not a kctl broker data directory",
                                   exit_code=ExitCode.INVALID)
    stop(data_dir, timeout)
    shutil.rmtree(data_dir)
    return True


def log_lines(data_dir: Path, count: int) -> list[str]:
    from kctl.broker.process import LOG_FILE

    path = data_dir / LOG_FILE
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max(count, 1) * 400))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        raise NotFoundError(f"unable to read the local broker log: {path} does not exist",
                            hint="kctl local start creates it") from None
    return lines[-count:] if count > 0 else []


def follow(data_dir: Path, write, poll: float = 0.2) -> None:
    """Write new log lines as they are appended, until interrupted."""
    from kctl.broker.process import LOG_FILE

    with open(data_dir / LOG_FILE, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        while True:
            chunk = handle.read()
            if chunk:
                write(chunk.decode("utf-8", "replace"))
            else:
                time.sleep(poll)
