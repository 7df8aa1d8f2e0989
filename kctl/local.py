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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True, kw_only=True)
class BrokerOptions:
    """How to run an instance: where it listens, and its security (kctl local start's flags)."""

    host: str = "127.0.0.1"
    port: int = 9092
    # SASL mechanisms on the main listener ("plain,scram-sha-512"), None for none.
    sasl: str | None = None
    # NAME:PASSWORD; they reach a detached broker through its environment, never its argv.
    users: tuple[str, ...] = ()
    users_file: Path | None = None
    tls: bool = False
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # More listeners, PROTOCOL://HOST:PORT.
    listeners: tuple[str, ...] = ()
    authorizer: bool = False
    # Principals allowed everything; with the authorizer and none given: the first user,
    # or User:ANONYMOUS without SASL.
    super_users: tuple[str, ...] = ()
    # Static settings, KEY=VALUE in server.properties' names (kctl.broker.settings).
    configs: tuple[str, ...] = ()

    @property
    def secured(self) -> bool:
        return bool(self.sasl or self.users or self.users_file or self.tls or self.tls_cert or self.tls_key or self.listeners
                    or self.authorizer or self.super_users)


def _broker_args(options: BrokerOptions) -> list[str]:
    """The `python -m kctl.broker` options for the static settings and the security
    settings (the users aside)."""
    args = [f"--config={pair}" for pair in options.configs]
    args += ["--sasl", options.sasl] if options.sasl else []
    args += ["--users-file", str(options.users_file.absolute())] if options.users_file else []
    args += ["--tls"] if options.tls else []
    args += ["--tls-cert", str(options.tls_cert.absolute())] if options.tls_cert else []
    args += ["--tls-key", str(options.tls_key.absolute())] if options.tls_key else []
    for listener in options.listeners:
        args += ["--listener", listener]
    super_users = options.super_users
    if options.authorizer:
        args.append("--authorizer")
        if not super_users:
            first = options.users[0].partition(":")[0] if options.users else _first_user_in(options.users_file)
            if options.sasl and not first and options.sasl.strip().lower() == "oauthbearer":
                first = TOKEN_PRINCIPAL  # the principal of the tokens the saved context makes
            super_users = (f"User:{first}",) if options.sasl and first else ("User:ANONYMOUS",)
    for principal in super_users:
        args += ["--super-user", principal]
    return args


def _first_user_in(users_file: Path | None) -> str | None:
    """The first user a users file names (an unreadable file is reported by the check)."""
    from kctl.broker.security.options import read_users_file

    try:
        return next(iter(read_users_file(users_file)), None) if users_file else None
    except ValueError:
        return None


def checked_config(data_dir: Path, options: BrokerOptions) -> Any:
    """The broker's configuration (kctl.broker.main's), checked before anything starts: a
    setting it refuses is a UsageError."""
    from kctl.broker.main import config_from_args, parse_args
    from kctl.errors import UsageError

    args = parse_args(["--data-dir", str(data_dir), "--host", options.host, "--port", str(options.port), *_broker_args(options),
                       *[f"--user={user}" for user in options.users]])
    try:
        return config_from_args(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def start(data_dir: Path, options: BrokerOptions, timeout: float) -> LocalStatus:
    """Start a detached broker on data_dir, or return the one already running there."""
    from kctl.broker.process import BrokerProcess, BrokerProcessError

    current = status(data_dir)
    if current.state == "running":
        return _listening(data_dir, current, timeout)
    # The users go in the broker's environment, not its argv: `ps` shows argv to everyone.
    env = {"KCTL_BROKER_USERS": "".join(f"{user}\n" for user in options.users)} if options.users else None
    process = BrokerProcess(data_dir, port=options.port, host=options.host, detach=True, extra_args=_broker_args(options), env=env)
    try:
        process.start(timeout)
    except BrokerProcessError as exc:
        from kctl.broker.main import ADDRESS_IN_USE

        if exc.status == ADDRESS_IN_USE:
            raise _port_in_use(options.host, options.port) from None
        raise LocalBrokerError(action="start the local broker", cause=str(exc),
                               hint=f"see {process.log_path}") from None
    return status(data_dir)


def _port_in_use(host: str, port: int) -> KctlError:
    return KctlError(action="start the local broker", cause=f"port {port} of {host} is in use by another process",
                     exit_code=ExitCode.IN_USE, hint="{port} 0 lets the system pick a free port (or stop what listens there)")


def serve_foreground(config: Any, ready: Callable[[str], None]) -> None:
    """Run the broker of `config` in this process until interrupted; `ready(bootstrap)`
    once it listens."""
    import asyncio

    from kctl.broker.main import AddressInUse, serve
    from kctl.broker.storage.manager import StorageError

    try:
        asyncio.run(serve(config, lambda broker: ready("{}:{}".format(*config.advertised))))
    except AddressInUse:
        raise _port_in_use(config.host, config.port) from None
    except StorageError as exc:
        raise LocalBrokerError(action="start the local broker", cause=str(exc)) from None


# The client properties client_properties sets: a restart without security drops them again.
CLIENT_KEYS = ("security.protocol", "sasl.mechanism", "sasl.username", "sasl.password", "ssl.ca.location",
               "enable.sasl.oauthbearer.unsecure.jwt", "sasl.oauthbearer.config")


def client_properties(config: Any) -> list[tuple[str, str]]:
    """What a client needs on the first listener of a broker run with `config` (None: a
    plain one): its security protocol, the strongest SASL mechanism as the first user, and
    the generated CA to verify the broker with."""
    if config is None:
        return []
    from kctl.broker.security.tls import generated_paths

    properties = []
    if config.security_protocol != "PLAINTEXT":
        properties.append(("security.protocol", config.security_protocol))
    if config.security_protocol.startswith("SASL_"):
        mechanism = next((m for m in ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN") if m in config.sasl_mechanisms), "OAUTHBEARER")
        if mechanism == "OAUTHBEARER":  # unsecured JWTs naming the first user (or super user), made by the client
            user = _token_principal(config)
            properties += [("sasl.mechanism", mechanism), ("enable.sasl.oauthbearer.unsecure.jwt", "true"),
                           ("sasl.oauthbearer.config", f"principal={user}")]
        else:
            user = next(iter(config.users))  # the first user (else the users file's first)
            properties += [("sasl.mechanism", mechanism), ("sasl.username", user), ("sasl.password", config.users[user])]
    if config.security_protocol.endswith("SSL") and config.tls_cert is None:
        properties.append(("ssl.ca.location", str(generated_paths(config.data_dir)[0])))
    return properties


# Whom the tokens of an OAUTHBEARER-only broker's saved context name, when no user or
# super user says: made its super user when --authorizer names none.
TOKEN_PRINCIPAL = "admin"


def _token_principal(config: Any) -> str:
    """The principal the saved context's unsecured tokens name: the first user, else the
    first User: super user, else TOKEN_PRINCIPAL."""
    if config.users:
        return next(iter(config.users))
    named = [p.partition(":")[2] for p in config.super_users if p.startswith("User:") and p != "User:ANONYMOUS"]
    return named[0] if named else TOKEN_PRINCIPAL


def _listening(data_dir: Path, current: LocalStatus, timeout: float) -> LocalStatus:
    """A broker that holds the lock but has not written its address yet is starting."""
    from kctl.polling import poll

    if current.state == "running" and current.bootstrap is None:
        current = poll(lambda: status(data_dir), lambda now: now.state != "running" or now.bootstrap is not None, timeout=timeout, interval=0.02)
    if current.state != "running" or current.bootstrap is None:
        raise LocalBrokerError(action="start the local broker", cause=f"the one starting on {data_dir} "
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
        raise LocalBrokerError(action="stop the local broker", cause=f"the lock on {data_dir} is held by "
                               f"{f'pid {pid}' if pid else 'a process that did not write its pid'}, "
                               "which is not a kctl broker", hint="nothing was signalled")
    from kctl.polling import poll

    os.kill(pid, signal.SIGTERM)
    if poll(lambda: holder(data_dir), lambda pid_holding: pid_holding is None, timeout=timeout, interval=0.02) is None:
        return current
    raise LocalBrokerError(action="stop the local broker", cause=f"pid {pid} still runs "
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
            raise LocalBrokerError(action=f"purge {data_dir}", cause="it is not a kctl broker data directory",
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
        raise NotFoundError(action="read the local broker log", cause=f"{path} does not exist",
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
