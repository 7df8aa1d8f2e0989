"""The loopback bridge that lets librdkafka's clients (consume, produce, the admin writes,
group commits) reach a cluster whose listeners take only SASL/GSSAPI, which
confluent-kafka's wheels are built without.

The bridge listens on 127.0.0.1, one port per broker. librdkafka connects there with SASL
PLAIN and a secret made for this process (so no other local process can use a listener
to ride kctl's Kerberos identity); for each such connection the bridge opens one to the
broker with kctl's wire client, TLS and GSSAPI included (kctl.admin.client.kerberos),
answers librdkafka's SASL exchange itself, and from then on relays Kafka's frames both
ways unchanged, except the answers that name brokers' addresses (Metadata,
FindCoordinator, DescribeCluster), whose hosts and ports become the bridge's own, and
ApiVersions, which caps the APIs whose answers would name brokers in fields the bridge
does not rewrite (Fetch v16+ and Produce v10+ carry KIP-951's leader endpoints; share
fetches) so that librdkafka never learns an address it cannot reach.

Everything runs on one thread (a selector over every connection); opening a connection
upstream (TCP, TLS, GSSAPI: a round trip to the KDC the first time) runs on a short-lived
thread of its own so that it never stalls the relay. The first upstream connection is
made before librdkafka is given the bridge's address: a missing or expired ticket is
kctl's one-line error (exit 77), not a client that retries until --timeout.
"""

from __future__ import annotations

import collections
import hmac
import secrets
import selectors
import socket
import ssl
import struct
import threading
from typing import TYPE_CHECKING

from kctl.admin.client.logs import logger
from kctl.messages import codec

if TYPE_CHECKING:
    import logging
    from collections.abc import Callable, Mapping
    from typing import Protocol

    from kctl.admin.client.wire import Connection

log: logging.Logger = logger("kctl.bridge")
_SIZE = struct.Struct(">i")
_REQUEST = struct.Struct(">hhi")
_USER = "kctl"
# API keys.
_PRODUCE, _FETCH, _METADATA, _FIND_COORDINATOR = 0, 1, 3, 10
_SASL_HANDSHAKE, _API_VERSIONS, _SASL_AUTHENTICATE, _DESCRIBE_CLUSTER = 17, 18, 36, 60
_SHARE_FETCH, _SHARE_ACKNOWLEDGE = 78, 79
_NAMES = {_METADATA: "Metadata", _FIND_COORDINATOR: "FindCoordinator", _DESCRIBE_CLUSTER: "DescribeCluster",
          _API_VERSIONS: "ApiVersions"}
# The highest versions whose answers name no broker the bridge leaves unrewritten.
_CAPS = {_PRODUCE: 9, _FETCH: 15, _SASL_HANDSHAKE: 1, **{key: codec.valid_versions(name + "Response")[1]
                                                         for key, name in _NAMES.items() if key != _API_VERSIONS},
         _SASL_AUTHENTICATE: codec.valid_versions("SaslAuthenticateResponse")[1]}
_DROPPED = {_SHARE_FETCH, _SHARE_ACKNOWLEDGE}
_UNSUPPORTED_SASL_MECHANISM, _SASL_AUTHENTICATION_FAILED = 33, 58
_CHUNK = 1 << 20


class Bridge:
    """Loopback listeners for one cluster's brokers; `open_upstream(host, port)` makes an
    authenticated connection to a broker (the wire client's Connection)."""

    def __init__(self, open_upstream: Callable[[str, int], Connection]):
        self._open_upstream = open_upstream
        self.secret = secrets.token_urlsafe(24)
        self._selector = selectors.DefaultSelector()
        self._listeners: dict[tuple[str, int], int] = {}  # broker address -> local port
        self._lock = threading.Lock()
        self._ready: collections.deque[tuple[socket.socket, Connection]] = collections.deque()  # (downstream, upstream) made by openers
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._selector.register(self._wake_read, selectors.EVENT_READ, ("wake", None))
        self._spare: dict[tuple[str, int], Connection] = {}  # an upstream connection opened before any client came
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="kctl-bridge", daemon=True)
        self._thread.start()

    # -- what librdkafka is given -------------------------------------------------------------

    def start(self, bootstrap: list[tuple[str, int]]) -> list[str]:
        """Listeners for the bootstrap servers, the first one's upstream connection made now
        (its failure raised: no ticket, unreachable); their loopback addresses."""
        first = bootstrap[0]
        self._spare[first] = self._open_upstream(*first)
        return [f"127.0.0.1:{self.listen(*address)}" for address in bootstrap]

    def librdkafka_config(self, config: Mapping[str, object], bootstrap: list[str]) -> dict[str, object]:
        """`config` for a librdkafka client that connects through the bridge: its SASL and TLS
        settings are the bridge's business, PLAIN with the bridge's secret is librdkafka's."""
        bridged = {k: v for k, v in config.items()
                   if not k.startswith(("sasl.", "ssl.", "enable.ssl.")) and k not in ("security.protocol", "sasl.mechanisms")}
        bridged.update({"bootstrap.servers": ",".join(bootstrap), "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": "PLAIN", "sasl.username": _USER, "sasl.password": self.secret})
        return bridged

    def listen(self, host: str, port: int) -> int:
        """The local port relaying to broker host:port (a listener made on first ask)."""
        with self._lock:
            local = self._listeners.get((host, port))
            if local is None:
                server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                server.bind(("127.0.0.1", 0))
                server.listen(64)
                server.setblocking(False)
                local = server.getsockname()[1]
                self._listeners[(host, port)] = local
                self._selector.register(server, selectors.EVENT_READ, ("listener", (host, port)))
        return local

    def close(self) -> None:
        self._closed = True
        self._wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(5)

    # -- the loop ---------------------------------------------------------------------------------

    def _wake(self) -> None:
        try:
            self._wake_write.send(b"x")
        except OSError:
            pass

    def _run(self) -> None:
        try:
            while not self._closed:
                for key, events in self._selector.select(timeout=1.0):
                    kind, data = key.data
                    if kind == "wake":
                        try:
                            self._wake_read.recv(4096)
                        except OSError:
                            pass
                        self._adopt()
                    elif kind == "listener":
                        self._accept(key.fileobj, data)  # type: ignore[arg-type]
                    else:
                        data.ready(key.fileobj, events)
        except Exception:  # noqa: BLE001 - the relay must not die silently
            log.exception("the GSSAPI bridge stopped")
        finally:
            for key in list(self._selector.get_map().values()):
                try:
                    key.fileobj.close()  # type: ignore[union-attr]
                except OSError:
                    pass
            self._selector.close()
            self._wake_write.close()
            for spare in self._spare.values():
                spare.close()

    def _accept(self, server: socket.socket, address: tuple[str, int]) -> None:
        try:
            downstream, _ = server.accept()
        except BlockingIOError:
            return
        downstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        spare = self._spare.pop(address, None)
        if spare is not None:
            self._ready.append((downstream, spare))
            self._adopt()
            return
        threading.Thread(target=self._connect, args=(downstream, address), name="kctl-bridge-open", daemon=True).start()

    def _connect(self, downstream: socket.socket, address: tuple[str, int]) -> None:
        try:
            upstream = self._open_upstream(*address)
        except Exception as exc:  # noqa: BLE001 - said, and librdkafka sees the connection close
            log.warning("bridge: unable to connect to %s:%d: %s", address[0], address[1], getattr(exc, "message", exc))
            downstream.close()
            return
        self._ready.append((downstream, upstream))
        self._wake()

    def _adopt(self) -> None:
        while self._ready:
            downstream, upstream = self._ready.popleft()
            _Pair(self, downstream, upstream.detach_socket())


class _Outbox:
    """Bytes waiting to be sent on a non-blocking socket (chunks, never copied to join)."""

    __slots__ = ("chunks", "offset")

    def __init__(self) -> None:
        self.chunks: collections.deque[bytes | memoryview] = collections.deque()
        self.offset = 0

    def __bool__(self) -> bool:
        return bool(self.chunks)

    def send(self, sock: socket.socket) -> None:
        while self.chunks:
            view = memoryview(self.chunks[0])[self.offset:]
            try:
                sent = sock.send(view[:_CHUNK * 4])
            except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                return
            self.offset += sent
            if self.offset == len(self.chunks[0]):
                self.chunks.popleft()
                self.offset = 0


def _received(sock: socket.socket) -> list[bytes]:
    """What a non-blocking socket holds now (TLS's buffered records included)."""
    chunks: list[bytes] = []
    while True:
        try:
            chunk = sock.recv(_CHUNK)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            break
        if not chunk:
            if chunks:
                break  # what came before the close is still passed on; the next read sees it
            raise ConnectionResetError("peer closed")
        chunks.append(chunk)
        if len(chunk) < _CHUNK and not (isinstance(sock, ssl.SSLSocket) and sock.pending()):
            break
    return chunks


if TYPE_CHECKING:
    class _Address(Protocol):
        """A broker in an answer (Metadata's, DescribeCluster's) or a coordinator (FindCoordinator's)."""

        host: str
        port: int


class _Pair:
    """One librdkafka connection (downstream) and its broker connection (upstream)."""

    def __init__(self, bridge: Bridge, downstream: socket.socket, upstream: socket.socket):
        self.bridge = bridge
        self.down, self.up = downstream, upstream
        self.down_in, self.up_in = bytearray(), bytearray()
        self.to_down, self.to_up = _Outbox(), _Outbox()
        self.authenticated = False
        self.closing = False
        self.rewrite: dict[int, tuple[int, int]] = {}  # correlation id -> (API key, version)
        self.passing = 0  # bytes of the answer being passed on still to come
        self.gathering = 0  # the size of the answer being gathered to rewrite (0: none)
        self.events: dict[socket.socket, int] = {}
        for sock in (downstream, upstream):
            sock.setblocking(False)
            bridge._selector.register(sock, selectors.EVENT_READ, ("pair", self))
            self.events[sock] = selectors.EVENT_READ

    def ready(self, sock: object, events: int) -> None:
        try:
            if events & selectors.EVENT_READ:
                if sock is self.down:
                    for chunk in _received(self.down):
                        self.down_in += chunk
                    self._requests()
                else:
                    for chunk in _received(self.up):
                        self._split(chunk)
            self.to_up.send(self.up)
            self.to_down.send(self.down)
            if self.closing and not self.to_down:
                raise ConnectionResetError("closed by the bridge")
            self._interest()
        except (OSError, codec.CodecError, ValueError) as exc:
            log.debug("bridge: connection closed: %s", exc)
            self.close()

    def _interest(self) -> None:
        for sock, box in ((self.down, self.to_down), (self.up, self.to_up)):
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if box else 0)
            if self.events[sock] != events:  # an epoll_ctl only when it changes
                self.bridge._selector.modify(sock, events, ("pair", self))
                self.events[sock] = events

    def _requests(self) -> None:
        """librdkafka's requests, each handled whole (they are small: fetches and metadata
        asked for, batches to produce)."""
        buffer = self.down_in
        size: int
        while len(buffer) >= 4:
            (size,) = _SIZE.unpack_from(buffer)
            if size < 8:
                raise ValueError(f"a request frame of {size} bytes")
            if len(buffer) < 4 + size:
                break
            frame = bytes(buffer[:4 + size])
            del buffer[:4 + size]
            self._request(frame)

    def _split(self, chunk: bytes) -> None:
        """The broker's answers. Passed on as they arrive, chunk by chunk (a fetch of
        megabytes is never gathered in memory: relaying 200 MB of fetches took 2.9x the
        direct time when each answer was gathered first), except the answers to rewrite,
        gathered whole; a frame's first 8 bytes (size, correlation id) decide which."""
        view, position, end = memoryview(chunk), 0, len(chunk)
        size: int
        correlation: int
        while position < end:
            if self.passing:
                take = min(self.passing, end - position)
                self.to_down.chunks.append(view[position:position + take])
                self.passing -= take
                position += take
                continue
            wanted = self.gathering or 8
            take = min(wanted - len(self.up_in), end - position)
            self.up_in += view[position:position + take]
            position += take
            if len(self.up_in) < wanted:
                break
            if self.gathering:
                frame = bytes(self.up_in)
                self.up_in.clear()
                self.gathering = 0
                self._response(frame)
                continue
            size, correlation = struct.unpack_from(">ii", self.up_in)
            if size < 4:
                raise ValueError(f"an answer frame of {size} bytes")
            if correlation in self.rewrite:
                self.gathering = 4 + size
            else:
                self.to_down.chunks.append(bytes(self.up_in))
                self.up_in.clear()
                self.passing = 4 + size - 8

    # -- librdkafka -> broker -------------------------------------------------------------------

    def _request(self, frame: bytes) -> None:
        key: int
        version: int
        correlation: int
        key, version, correlation = _REQUEST.unpack_from(frame, 4)
        if key in (_SASL_HANDSHAKE, _SASL_AUTHENTICATE):
            self._sasl(frame, key, version, correlation)
            return
        if not self.authenticated and key != _API_VERSIONS:
            raise ConnectionResetError(f"API {key} before SASL authentication")
        if key in _NAMES:
            self.rewrite[correlation] = (key, version)
        self.to_up.chunks.append(frame)

    def _sasl(self, frame: bytes, key: int, version: int, correlation: int) -> None:
        """librdkafka's PLAIN exchange, answered here: its secret is the bridge's."""
        name = "SaslHandshake" if key == _SASL_HANDSHAKE else "SaslAuthenticate"
        request = codec.message(name + "Request", version)
        header_version = 2 if request.flexible else 1
        _, body = codec.message("RequestHeader", header_version).decode_with_end(frame, 4)
        fields = request.decode(frame, body)
        if key == _SASL_HANDSHAKE:
            error = 0 if fields.mechanism == "PLAIN" else _UNSUPPORTED_SASL_MECHANISM
            answer: dict[str, object] = {"error_code": error, "mechanisms": ["PLAIN"]}
        else:
            expected = f"\x00{_USER}\x00{self.bridge.secret}".encode()
            good = hmac.compare_digest(bytes(fields.auth_bytes), expected)
            self.authenticated = self.authenticated or good
            answer = {"error_code": 0 if good else _SASL_AUTHENTICATION_FAILED,
                      "error_message": None if good else "not kctl's bridge secret", "auth_bytes": b"", "session_lifetime_ms": 0}
            if not good:
                self.closing = True
        response = codec.message(name + "Response", version)
        header = _SIZE.pack(correlation) + (b"\x00" if response.flexible else b"")
        body_bytes = response.encode(**answer)
        self.to_down.chunks.append(_SIZE.pack(len(header) + len(body_bytes)) + header + body_bytes)

    # -- broker -> librdkafka -------------------------------------------------------------------

    def _response(self, frame: bytes) -> None:
        correlation: int
        (correlation,) = _SIZE.unpack_from(frame, 4)
        wanted = self.rewrite.pop(correlation, None)
        if wanted is not None:
            frame = self._rewritten(frame, *wanted)
        self.to_down.chunks.append(frame)

    def _rewritten(self, frame: bytes, key: int, version: int) -> bytes:
        name = _NAMES[key]
        message = codec.message(name + "Response", version)
        position = 8
        if message.flexible and key != _API_VERSIONS:  # ApiVersions' header is v0 at every version
            _, position = codec.message("ResponseHeader", 1).decode_with_end(frame, 4)
        answer = message.decode(frame, position)
        if key == _API_VERSIONS:
            if answer.error_code:
                return frame  # librdkafka asks again at the version the broker names
            kept = [api for api in answer.api_keys if api.api_key not in _DROPPED]
            answer.__dict__["api_keys"] = kept
            for api in kept:
                cap = _CAPS.get(api.api_key)
                if cap is not None and api.max_version > cap:
                    api.max_version = max(cap, api.min_version)
        elif key == _FIND_COORDINATOR:
            if version < 4:
                self._local(answer)
            for coordinator in getattr(answer, "coordinators", None) or ():
                self._local(coordinator)
        else:  # Metadata, DescribeCluster
            for broker in answer.brokers:
                self._local(broker)
        body = message.encode(**answer.__dict__)
        head = frame[4:position]
        return _SIZE.pack(len(head) + len(body)) + head + body

    def _local(self, broker: _Address) -> None:
        if broker.host and broker.port > 0:
            broker.port = self.bridge.listen(broker.host, broker.port)
            broker.host = "127.0.0.1"

    def close(self) -> None:
        for sock in (self.down, self.up):
            try:
                self.bridge._selector.unregister(sock)
            except (KeyError, ValueError):
                pass
            try:
                sock.close()
            except OSError:
                pass
