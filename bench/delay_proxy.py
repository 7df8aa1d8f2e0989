"""A TCP proxy that puts a network's distance between Kafka clients and a broker: each
direction delayed by --delay-ms (RTT = twice that), a new connection's first bytes by the
TCP handshake's round trip more, and every request the clients send logged (API, version,
connection, time), so a benchmark can count each command's requests and its sequential
rounds. netem is not available on this machine's kernel; this is the stand-in.

    python bench/delay_proxy.py --upstream 127.0.0.1:9092 --listen 19092 --delay-ms 10

The broker must advertise the proxy's address (Kafka: advertised.listeners; the bundled
broker: --advertised-port), or clients go round it after their first Metadata answer.
Requests are read from plaintext and SASL_PLAINTEXT streams; a TLS stream is opaque, and
its rounds are counted from the flights of bytes the client sends.
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import threading
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Request:
    at: float  # perf_counter seconds when its first byte reached the proxy
    connection: int
    api_key: int
    api_version: int


@dataclass
class Traffic:
    """What passed through since the last reset."""

    requests: list[Request] = field(default_factory=list)
    # Times a client began sending after a pause (TLS streams' stand-in for requests).
    flights: list[float] = field(default_factory=list)
    connections: int = 0

    def rounds(self, delay: float) -> int:
        """Sequential rounds: sends that had to wait for an answer are at least a round
        trip (2 x delay) after the ones before them; sends within `delay` of each other
        went together (pipelined, or in parallel to several brokers)."""
        times = sorted([r.at for r in self.requests] + self.flights)
        if not times:
            return 0
        return 1 + sum(1 for before, after in zip(times, times[1:]) if after - before >= delay)


class DelayProxy:
    """Runs in a thread of its own; `port` is where clients connect."""

    def __init__(self, upstream: tuple[str, int], delay: float, *, host: str = "127.0.0.1", port: int = 0,
                 hold: int = 0, hold_timeout: float = 10.0):
        """`hold`: forward nothing any client sends until that many connections are open
        (or `hold_timeout` seconds passed, and then `held_out` is set): a client that
        opens them one after another, each waiting for an answer, is held out."""
        self.upstream = upstream
        self.delay = delay
        self.hold = hold
        self.hold_timeout = hold_timeout
        self.held_out = False
        self._all_open: asyncio.Event | None = None
        self.host = host
        self.port = port
        self.traffic = Traffic()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="delay-proxy", daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._connections = 0

    def start(self) -> int:
        self._thread.start()
        self._ready.wait(10)
        return self.port

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def take(self) -> Traffic:
        """What passed since the last take, and start counting afresh."""
        with self._lock:
            taken, self.traffic = self.traffic, Traffic()
        return taken

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._all_open = asyncio.Event()
        self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, self.host, self.port))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        accepted = time.perf_counter()
        self._connections += 1
        number = self._connections
        with self._lock:
            self.traffic.connections += 1
        assert self._all_open is not None
        if self._connections >= self.hold:
            self._all_open.set()
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return
        # The handshake: a real client's connect() returns a round trip after it began,
        # and its first bytes arrive half a round trip later.
        first_at = accepted + 3 * self.delay
        await asyncio.gather(self._pump(client_reader, server_writer, number, first_at, upstream=True),
                             self._pump(server_reader, client_writer, number, 0.0, upstream=False))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: int, not_before: float,
                    *, upstream: bool) -> None:
        """Copy one direction, each chunk delivered `delay` after it arrived, in order."""
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()
        frames = _Frames(self, connection) if upstream else None

        async def deliver() -> None:
            if upstream and self.hold and self._all_open is not None:
                try:
                    await asyncio.wait_for(self._all_open.wait(), self.hold_timeout)
                except TimeoutError:
                    self.held_out = True
                    self._all_open.set()
            while (item := await queue.get()) is not None:
                due, data = item
                wait = due - time.perf_counter()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
            writer.close()

        sender = asyncio.ensure_future(deliver())
        last = 0.0
        try:
            while data := await reader.read(1 << 16):
                now = time.perf_counter()
                if frames is not None:
                    if now - last >= self.delay / 2:
                        frames.flight(now)
                    last = now
                    frames.feed(now, data)
                queue.put_nowait((max(now + self.delay, not_before), data))
        except (ConnectionError, OSError):
            pass
        finally:
            queue.put_nowait(None)
            try:
                await sender
            except (ConnectionError, OSError):
                pass


class _Frames:
    """Kafka request frames (4-byte size, then api_key, api_version, ...) read off one
    client's stream; a stream that starts as TLS is left opaque."""

    def __init__(self, proxy: DelayProxy, connection: int):
        self.proxy = proxy
        self.connection = connection
        self.buffer = b""
        self.started: float | None = None
        self.opaque: bool | None = None

    def flight(self, at: float) -> None:
        if self.opaque:
            with self.proxy._lock:
                self.proxy.traffic.flights.append(at)

    def feed(self, at: float, data: bytes) -> None:
        if self.opaque is None:
            self.opaque = data[:1] == b"\x16"  # a TLS handshake record
            if self.opaque:
                self.flight(at)
        if self.opaque:
            return
        if not self.buffer:
            self.started = at
        self.buffer += data
        while len(self.buffer) >= 8:
            size, api_key, api_version = struct.unpack(">ihh", self.buffer[:8])
            if len(self.buffer) < 4 + size:
                break
            with self.proxy._lock:
                self.proxy.traffic.requests.append(Request(self.started or at, self.connection, api_key, api_version))
            self.buffer = self.buffer[4 + size:]
            self.started = at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", required=True, help="HOST:PORT of the broker")
    parser.add_argument("--listen", type=int, default=0, help="port to listen on (default: any)")
    parser.add_argument("--delay-ms", type=float, default=10.0, help="each direction's delay (RTT is twice this)")
    args = parser.parse_args()
    host, port = args.upstream.rsplit(":", 1)
    proxy = DelayProxy((host, int(port)), args.delay_ms / 1000, port=args.listen)
    print(f"127.0.0.1:{proxy.start()} -> {args.upstream}, {args.delay_ms:g} ms each way", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        proxy.stop()


if __name__ == "__main__":
    main()
