"""Run the bundled broker in the foreground: `python -m kctl.broker --data-dir DIR [--port N]`.

Prints one line `kctl-broker listening on HOST:PORT` on stdout once clients can connect
(with --port 0 the kernel picks the port), and then nothing more there: a parent reads that
line from a pipe it may close. The --ready-file gets `HOST:PORT` and the broker's pid on two
lines (a leftover of a killed broker is recognised by its pid). SIGTERM and SIGINT shut
down cleanly: logs flushed, checkpoints and the clean-shutdown marker written.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

from .broker import Broker, BrokerConfig
from .process import READY_PREFIX, read_ready_file
from .storage.manager import StorageError

log = logging.getLogger("kctl.broker")


async def serve(config: BrokerConfig, ready=None, stop: asyncio.Event | None = None) -> dict:
    """Open the data directory, listen, call ready(broker) and run until `stop` is set."""
    from .server import BrokerServer

    broker = Broker(config)
    report = broker.open()
    if not report["clean_shutdown"] and report["partitions"]:
        log.warning("recovered after an unclean shutdown: %d partitions checked, %d bytes "
                    "truncated", report["partitions"], report["truncated_bytes"])
    server = BrokerServer(broker)
    try:
        await server.start()
    except OSError as exc:
        broker.close()
        raise StorageError(f"cannot listen on {config.host}:{config.port}: "
                           f"{exc.strerror or exc}") from None
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(signum, stop.set)
        except (RuntimeError, ValueError):  # not the main thread
            pass
    log.info("listening on %s:%d (cluster %s, data %s)", config.host, config.port,
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


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m kctl.broker",
                                     description="kctl's bundled single-node Kafka broker")
    parser.add_argument("--data-dir", required=True, type=Path)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9092)
    parser.add_argument("--advertised-host")
    parser.add_argument("--node-id", type=int, default=1)
    parser.add_argument("--log-file", type=Path)
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--ready-file", type=Path,
                        help="written with HOST:PORT once clients can connect")
    parser.add_argument("--num-partitions", type=int, default=1)
    parser.add_argument("--no-auto-create", action="store_true")
    parser.add_argument("--no-log-cleaner", action="store_true",
                        help="log.cleaner.enable=false: compacted topics keep every record")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    handler = logging.FileHandler(args.log_file) if args.log_file else logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(args.log_level.upper())
    config = BrokerConfig(data_dir=args.data_dir, host=args.host, port=args.port,
                          advertised_host=args.advertised_host, node_id=args.node_id,
                          num_partitions=args.num_partitions,
                          auto_create_topics=not args.no_auto_create,
                          log_cleaner_enable=not args.no_log_cleaner)

    def ready(broker):
        host, port = config.advertised
        if args.ready_file:  # for `kctl local status`; the stdout line is what starts wait for
            tmp = args.ready_file.with_name(args.ready_file.name + ".tmp")
            try:
                tmp.write_text(f"{host}:{port}\n{os.getpid()}\n")
                os.replace(tmp, args.ready_file)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                log.warning("ready file not written: %s", exc.strerror or exc)
        print(f"{READY_PREFIX}{host}:{port}", flush=True)
        _detach_stdout()

    try:
        asyncio.run(serve(config, ready))
    except StorageError as exc:
        log.error("%s", exc)
        print(f"error: {exc}", file=sys.stderr)
        return 1
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
