"""Run the bundled broker in the foreground: `python -m kctl.broker --data-dir DIR [--port N]`.

Prints one line `kctl-broker listening on HOST:PORT` on stdout once clients can connect
(with --port 0 the kernel picks the port; a port another process holds ends it with status
98, ADDRESS_IN_USE), and then nothing more there: a parent reads that
line from a pipe it may close. The --ready-file gets `HOST:PORT` and the broker's pid on two
lines (a leftover of a killed broker is recognised by its pid). SIGTERM and SIGINT shut
down cleanly: logs flushed, checkpoints and the clean-shutdown marker written.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import signal
import sys
from pathlib import Path

from kctl.broker.broker import Broker, BrokerConfig
from kctl.broker.process import READY_PREFIX, read_ready_file
from kctl.broker.storage.manager import StorageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Protocol, TypedDict

    from kctl.broker.security.listeners import Listener

    class BrokerArgs(Protocol):
        """The options parse_args reads (an argparse.Namespace)."""

        data_dir: Path
        host: str
        port: int
        advertised_host: str | None
        advertised_port: int | None
        node_id: int
        log_file: Path | None
        log_level: str
        ready_file: Path | None
        num_partitions: int
        no_auto_create: bool
        no_log_cleaner: bool
        config: list[str]
        sasl: str | None
        user: list[str]
        users_file: Path | None
        tls: bool
        tls_cert: Path | None
        tls_key: Path | None
        listener: list[str]
        authorizer: bool
        super_user: list[str]
        allow_everyone_if_no_acl_found: bool

    class SecuritySettings(TypedDict):
        """BrokerConfig's security fields, as security_settings gives them."""

        security_protocol: str
        extra_listeners: list[Listener]
        sasl_mechanisms: tuple[str, ...]
        users: dict[str, str]
        tls_cert: Path | None
        tls_key: Path | None
        authorizer: bool
        super_users: tuple[str, ...]
        allow_everyone_if_no_acl_found: bool

log = logging.getLogger("kctl.broker")


class AddressInUse(StorageError):
    """Another process listens on the broker's port."""


# The broker process's exit status when its port is taken (Linux's EADDRINUSE), which
# `kctl local start` says as such.
ADDRESS_IN_USE = 98


async def serve(config: BrokerConfig, ready: Callable[[Broker], None] | None = None,
                stop: asyncio.Event | None = None) -> dict[str, int]:
    """Open the data directory, listen, call ready(broker) and run until `stop` is set."""
    from kctl.broker.server import BrokerServer

    broker = Broker(config)
    report: dict[str, int] = broker.open()
    if not report["clean_shutdown"] and report["partitions"]:
        log.warning("recovered after an unclean shutdown: %d partitions checked, %d bytes "
                    "truncated", report["partitions"], report["truncated_bytes"])
    server = BrokerServer(broker)
    try:
        await server.start()
    except OSError as exc:
        broker.close()
        error = AddressInUse if exc.errno == errno.EADDRINUSE else StorageError
        raise error(f"cannot listen on {config.host}:{config.port}: {exc.strerror or exc}") from None
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(signum, stop.set)
        except (RuntimeError, ValueError):  # not the main thread
            pass
    log.info("listening on %s (cluster %s, data %s)", ", ".join(map(str, config.listeners)),
             broker.cluster_id, config.data_dir)
    if ready is not None:
        ready(broker)
    try:
        await stop.wait()
    finally:
        await server.close()
        broker.close()
        log.info("stopped cleanly")
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m kctl.broker",
                                     description="kctl's bundled single-node Kafka broker")
    parser.add_argument("--data-dir", required=True, type=Path)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9092)
    parser.add_argument("--advertised-host")
    parser.add_argument("--advertised-port", type=int,
                        help="the --port listener's port as clients reach it (a proxy or port forward in front)")
    parser.add_argument("--node-id", type=int, default=1)
    parser.add_argument("--log-file", type=Path)
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--ready-file", type=Path,
                        help="written with HOST:PORT once clients can connect")
    parser.add_argument("--num-partitions", type=int, default=1)
    parser.add_argument("--no-auto-create", action="store_true")
    parser.add_argument("--no-log-cleaner", action="store_true",
                        help="log.cleaner.enable=false: compacted topics keep every record")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a static setting in server.properties' names (kctl.broker.settings)")
    security = parser.add_argument_group("security")
    security.add_argument("--sasl", metavar="MECHANISMS",
                          help="SASL on the --port listener: plain,scram-sha-256,scram-sha-512")
    security.add_argument("--user", action="append", default=[], metavar="NAME:PASSWORD")
    security.add_argument("--users-file", type=Path, help="NAME:PASSWORD lines")
    security.add_argument("--tls", action="store_true", help="TLS on the --port listener")
    security.add_argument("--tls-cert", type=Path, help="PEM certificate chain (default: generated)")
    security.add_argument("--tls-key", type=Path, help="PEM private key of --tls-cert")
    security.add_argument("--listener", action="append", default=[], metavar="PROTOCOL://HOST:PORT",
                          help="another listener beside --port's")
    security.add_argument("--authorizer", action="store_true", help="enforce ACLs")
    security.add_argument("--super-user", action="append", default=[], metavar="PRINCIPAL")
    security.add_argument("--allow-everyone-if-no-acl-found", action="store_true")
    return parser.parse_args(argv)


# NAME:PASSWORD lines, as --users-file holds them: how `kctl local start` hands the broker
# its users without putting passwords in the broker's argv (which `ps` shows to everyone).
USERS_ENV = "KCTL_BROKER_USERS"


def config_from_args(args: BrokerArgs) -> BrokerConfig:
    """The broker's configuration from parsed options (ValueError: one line); --config
    wins over the older flags for the same setting."""
    from kctl.broker import settings

    fields = {"num_partitions": args.num_partitions, "auto_create_topics": not args.no_auto_create,
              "log_cleaner_enable": not args.no_log_cleaner, **settings.parse(args.config)}
    config = BrokerConfig(data_dir=args.data_dir, host=args.host, port=args.port,
                          advertised_host=args.advertised_host, advertised_port=args.advertised_port, node_id=args.node_id,
                          **fields, **security_settings(args))
    if config.ssl_client_auth != "none":
        if not any(listener.tls for listener in config.listeners):
            raise ValueError(f"--config ssl.client.auth={config.ssl_client_auth} needs a TLS listener (--tls, or an SSL --listener)")
        if config.ssl_truststore is None:
            raise ValueError(f"--config ssl.client.auth={config.ssl_client_auth} needs --config ssl.truststore.location=PEM "
                             "(the CAs that sign the clients' certificates)")
        if not os.access(config.ssl_truststore, os.R_OK):
            raise ValueError(f"--config ssl.truststore.location={config.ssl_truststore}: cannot be read")
    return config


def security_settings(args: BrokerArgs) -> SecuritySettings:
    """BrokerConfig's security fields from the options (ValueError: one line)."""
    from kctl.broker.security import options
    from kctl.broker.security.listeners import Listener, protocol_for
    from kctl.broker.security.sasl import MECHANISMS

    named = dict(options.parse_user(text) for text in args.user)
    named.update(options.parse_users_text(os.environ.get(USERS_ENV, ""), USERS_ENV))
    from_file = options.read_users_file(args.users_file) if args.users_file else {}
    # The users named on the command line first (the first is whom clients of `kctl local`
    # connect as), and they win over the file's.
    users = {**named, **{name: password for name, password in from_file.items() if name not in named}}
    mechanisms = options.parse_mechanisms(args.sasl) if args.sasl else MECHANISMS
    protocol = protocol_for(bool(args.sasl), args.tls)
    extra = options.extra_listeners(args.listener, args.host)
    settings: SecuritySettings = {"security_protocol": protocol, "extra_listeners": extra, "sasl_mechanisms": mechanisms,
                                  "users": users, "tls_cert": args.tls_cert, "tls_key": args.tls_key,
                                  "authorizer": args.authorizer,
                                  "super_users": tuple(options.parse_principal(p) for p in args.super_user),
                                  "allow_everyone_if_no_acl_found": args.allow_everyone_if_no_acl_found}
    options.check([Listener(protocol, args.host, args.port), *extra], mechanisms, users,
                  args.tls_cert, args.tls_key)
    return settings


def main(argv: list[str] | None = None) -> int:
    args: BrokerArgs = parse_args(argv)
    handler = logging.FileHandler(args.log_file) if args.log_file else logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(args.log_level.upper())
    try:
        config = config_from_args(args)
    except ValueError as exc:
        log.error("%s", exc)
        print(f"error: {exc}", file=sys.stderr)
        return 2

    def ready(broker: Broker) -> None:
        host, port = config.advertised
        if args.ready_file:  # for `kctl local status`; the stdout line is what starts wait for
            tmp = args.ready_file.with_name(args.ready_file.name + ".tmp")
            try:
                tmp.write_text(f"{host}:{port}\n{os.getpid()}\n")
                os.replace(tmp, args.ready_file)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                log.warning("ready file not written: %s", exc.strerror or exc)
        others = "".join(f" {listener}" for listener in config.extra_listeners)
        print(f"{READY_PREFIX}{host}:{port}{others}", flush=True)
        _detach_stdout()

    try:
        asyncio.run(serve(config, ready))
    except StorageError as exc:
        log.error("%s", exc)
        print(f"error: {exc}", file=sys.stderr)
        return ADDRESS_IN_USE if isinstance(exc, AddressInUse) else 1
    finally:
        if args.ready_file and read_ready_file(args.ready_file)[1] == os.getpid():
            args.ready_file.unlink()
    return 0


def _detach_stdout() -> None:
    """Point stdout at /dev/null, so a parent that read the ready line and closed its pipe
    can never make a later write fail."""
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
