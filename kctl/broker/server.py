"""The asyncio listener: one task per connection, requests answered strictly in order.

Framing rules (Kafka's SocketServer): a size above socket.request.max.bytes is refused before
any of the body is read; a frame that cannot be parsed (bad size, unknown API key or
version, truncated or garbage body) closes only that connection, with one log line. Like
Kafka, a connection processes one request at a time, so responses keep request order.

Limits of a shared broker, as Kafka's SocketServer and ConnectionQuotas set them: a
connection that makes no progress for connections.max.idle.ms (nothing read or written,
no request in a handler) is closed by a watchdog; max.connections bounds the connections
served (one more waits, unserved, until another closes, as Kafka's acceptor waits), and
max.connections.per.ip each address's (one more is closed at once, and
max.connections.per.ip.overrides sets it per address); the first two may be changed at
runtime, as on Kafka. Since a connection is read only after its last answer has been
written out, a client that stops reading holds at most one answer in the broker's memory.

Each listener (security/listeners.py) is one server socket; SSL and SASL_SSL ones wrap
connections in TLS. On a SASL listener a connection may send only ApiVersions and the SASL
requests until it has authenticated (security/sasl.py); anything else closes it, as Kafka
closes it.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import struct
import time
from dataclasses import dataclass

from kctl.broker import quotas
from kctl.broker.broker import Broker
from kctl.broker.handlers import HANDLERS, access
from kctl.broker.protocol import apis, errors, frames
from kctl.broker.protocol.errors import ProtocolError
from kctl.broker.security import sasl
from kctl.broker.security.listeners import Listener
from kctl.broker.security.principal import distinguished_name, parse_rules, principal_name
from kctl.broker.security.sasl import Session
from kctl.broker.storage.manager import StorageError

log = logging.getLogger("kctl.broker.server")
_SIZE = struct.Struct(">i")
# What a SASL listener serves before authentication: ApiVersions, SaslHandshake, SaslAuthenticate
_BEFORE_AUTHENTICATION = frozenset({18, 17, 36})
_FAILED_AUTHENTICATION_DELAY_S = 0.1
_QUOTA_KEYS = {0: quotas.PRODUCE, 1: quotas.FETCH}


@dataclass(slots=True)
class RequestContext:
    header: frames.RequestHeader
    client_host: str
    api: apis.Api
    session: Session

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def principal(self) -> str:
        return self.session.principal

    def allowed(self, broker, operation: int, resource_type: int, name: str) -> bool:
        """Whether this request's principal may do `operation` on the resource."""
        return broker.authorizer.authorize(self.session.principal, self.client_host, operation,
                                           resource_type, name)


class _Connection:
    """What the idle watchdog and the connection limits know of a connection."""

    __slots__ = ("writer", "host", "port", "last_active", "busy", "buffered")

    def __init__(self, writer: asyncio.StreamWriter, host: str, port: int):
        self.writer = writer
        self.host = host
        self.port = port
        self.last_active = time.monotonic()
        self.busy = False  # a request in its handler (a long-poll Fetch, a JoinGroup) is not idle
        self.buffered = 0  # the answer bytes still to write at the watchdog's last look


class BrokerServer:
    def __init__(self, broker: Broker):
        self.broker = broker
        self._servers: list[asyncio.AbstractServer] = []
        self.listeners: list[Listener] = []
        self._connections: set[asyncio.Task] = set()
        self._accept_error_logged = -1e9
        self._refused_accepts = 0
        self._served: dict[asyncio.Task, _Connection] = {}
        self._by_host: dict[str, int] = {}
        self._slot_freed = asyncio.Event()
        self._watchdog: asyncio.Task | None = None
        self._principal_rules: tuple | None = None  # with mutual TLS: ssl.principal.mapping.rules

    async def start(self) -> None:
        """Listen on every listener (OSError: one cannot; ssl.SSLError: bad certificate)."""
        config = self.broker.config
        asyncio.get_running_loop().set_exception_handler(self._loop_exception)
        tls = mutual = None
        if any(listener.tls for listener in config.listeners):
            from kctl.broker.security import tls as tls_files

            cert, key = config.tls_cert, config.tls_key
            if cert is None:
                cert, key = tls_files.ensure_generated(
                    config.data_dir, [listener.host for listener in config.listeners] + [config.advertised_host or ""])
            try:
                tls = tls_files.server_context(cert, key)
            except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
                raise StorageError(f"cannot use TLS certificate {cert} and key {key}: "
                                   f"{getattr(exc, 'reason', None) or exc.strerror or exc}") from None
            mutual = tls
            if config.ssl_client_auth != "none":
                # SSL listeners only: on SASL_SSL ones SASL authenticates, as on Kafka
                # (where ssl.client.auth applies to them only when set for the listener).
                try:
                    mutual = tls_files.server_context(cert, key, config.ssl_client_auth, config.ssl_truststore)
                except (OSError, ValueError) as exc:
                    raise StorageError(f"cannot use ssl.truststore.location {config.ssl_truststore}: "
                                       f"{getattr(exc, 'reason', None) or exc.strerror or exc}") from None
                self._principal_rules = parse_rules(config.ssl_principal_mapping_rules)
        try:
            for listener in config.listeners:
                server = await asyncio.start_server(
                    lambda r, w, listener=listener: self._serve(r, w, listener), listener.host, listener.port,
                    reuse_address=True, limit=1 << 20, ssl=(tls if listener.sasl else mutual) if listener.tls else None,
                    ssl_handshake_timeout=10 if listener.tls else None)
                self._servers.append(server)
                if listener.port == 0:  # an ephemeral port: advertise the one the kernel picked
                    listener.port = server.sockets[0].getsockname()[1]
                self.listeners.append(listener)
        except BaseException:
            for server in self._servers:
                server.close()
            raise
        config.port = self.listeners[0].port
        config.extra_listeners = self.listeners[1:]
        self._watchdog = asyncio.get_running_loop().create_task(self._close_idle())
        self.broker.start_background()

    def _loop_exception(self, loop, context: dict) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):
            # asyncio retries accept() a second later; give it descriptors to accept with.
            # It reports every pending connection, so one line per 10 s is enough.
            self.broker.logs.files.shrink()
            self._refused_accepts += 1
            now = time.monotonic()
            if now - self._accept_error_logged >= 10:
                log.error("out of file descriptors: %d connection(s) not accepted yet (%s); "
                          "raise `ulimit -n` or close idle clients", self._refused_accepts,
                          exc.strerror)
                self._accept_error_logged, self._refused_accepts = now, 0
            return
        loop.default_exception_handler(context)

    def _certificate_principal(self, writer: asyncio.StreamWriter, default: str) -> str:
        """User: and the client certificate's subject, mapped by ssl.principal.mapping.rules
        (no certificate, with ssl.client.auth=requested: ANONYMOUS); ProtocolError when no
        rule applies, as Kafka refuses the connection."""
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not der:
            return default
        try:
            return "User:" + principal_name(distinguished_name(der), self._principal_rules)
        except ValueError as exc:
            raise ProtocolError(f"client certificate refused: {exc}") from None

    def _limit(self, name: str, static: int) -> int:
        """A connection limit: its dynamic value (kctl config alter broker) or the static one."""
        logs = self.broker.logs
        value = logs.broker_overrides.get(name) or logs.broker_defaults.get(name)
        return int(value) if value else static

    def _host_limit(self, host: str) -> int:
        config = self.broker.config
        if host in config.max_connections_per_ip_overrides:
            return config.max_connections_per_ip_overrides[host]
        return self._limit("max.connections.per.ip", config.max_connections_per_ip)

    async def _admitted(self, host: str, port: int, writer: asyncio.StreamWriter) -> _Connection | None:
        """The connection counted against the limits, once max.connections has room for
        it (None: over its address's max.connections.per.ip, closed)."""
        waited = False
        while len(self._served) >= self._limit("max.connections", self.broker.config.max_connections):
            if not waited:
                log.info("connection from %s:%s waits: max.connections (%d) reached", host, port, len(self._served))
                waited = True
            self._slot_freed.clear()
            await self._slot_freed.wait()
        if self._by_host.get(host, 0) >= self._host_limit(host):
            log.warning("closing connection from %s:%s: max.connections.per.ip (%d) reached for %s",
                        host, port, self._host_limit(host), host)
            return None
        connection = _Connection(writer, host, port)
        self._served[asyncio.current_task()] = connection  # type: ignore[index]
        self._by_host[host] = self._by_host.get(host, 0) + 1
        return connection

    def _released(self, task: asyncio.Task) -> None:
        connection = self._served.pop(task, None)
        if connection is not None:
            count = self._by_host.get(connection.host, 1) - 1
            if count:
                self._by_host[connection.host] = count
            else:
                self._by_host.pop(connection.host, None)
            self._slot_freed.set()

    async def _close_idle(self) -> None:
        """Every connection that has made no progress for connections.max.idle.ms is closed
        (an answer still being written counts as progress while its bytes leave)."""
        while True:
            idle = self.broker.config.connections_max_idle_ms / 1000
            await asyncio.sleep(min(1.0, max(0.05, idle / 4)))
            now = time.monotonic()
            for connection in list(self._served.values()):
                if connection.busy or now - connection.last_active < idle:
                    continue
                transport = connection.writer.transport
                buffered = transport.get_write_buffer_size()
                if buffered and buffered != connection.buffered:
                    connection.buffered, connection.last_active = buffered, now
                    continue
                log.info("closing connection from %s:%s: idle for %d ms (connections.max.idle.ms)",
                         connection.host, connection.port, int((now - connection.last_active) * 1000))
                transport.abort()

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     listener: Listener) -> None:
        task = asyncio.current_task()
        self._connections.add(task)
        peer = writer.get_extra_info("peername") or ("?", 0)
        host = peer[0]
        session = Session(listener, self.broker.sasl if listener.sasl else None)
        try:
            connection = await self._admitted(host, peer[1], writer)
            if connection is None:
                return
            if listener.tls and not listener.sasl and self._principal_rules is not None:
                session.principal = self._certificate_principal(writer, session.principal)
            while True:
                try:
                    head = await reader.readexactly(4)
                except asyncio.IncompleteReadError:
                    return
                connection.last_active = time.monotonic()
                (size,) = _SIZE.unpack(head)
                if head[:2] == b"\x16\x03":  # a TLS handshake record: ClientHello
                    raise ProtocolError(f"a TLS client connected; this listener is {listener.protocol}")
                if session.raw_tokens:  # SASL after a v0 handshake: a bare token, no header
                    if not 0 <= size <= sasl.MAX_TOKEN_BYTES:
                        raise ProtocolError(f"SASL token size {size} is outside 0...{sasl.MAX_TOKEN_BYTES}")
                    token = await reader.readexactly(size)
                    try:
                        answer = session.authenticate(token)
                    except sasl.SaslFailed as exc:
                        raise ProtocolError(f"SASL authentication failed: {exc}") from None
                    writer.writelines([_SIZE.pack(len(answer)), answer])
                    await writer.drain()
                    continue
                if size < 8 or size > self.broker.config.max_request_bytes:
                    raise ProtocolError(f"request size {size} is outside 8..."
                                        f"{self.broker.config.max_request_bytes}")
                frame = memoryview(await reader.readexactly(size))
                connection.busy = True
                try:
                    chunks = await self._handle(frame, host, session)
                finally:
                    connection.busy = False
                    connection.last_active = time.monotonic()
                if chunks:
                    writer.writelines(chunks)
                    await writer.drain()
                    connection.last_active = time.monotonic()
                if session.throttle_ms:  # over its quota: not read again until the time is up
                    await asyncio.sleep(session.throttle_ms / 1000)
                    session.throttle_ms = 0
                if session.close_after_response:
                    # Kafka's connection.failed.authentication.delay.ms (100): the client
                    # reads the error before it sees the connection close.
                    await asyncio.sleep(_FAILED_AUTHENTICATION_DELAY_S)
                    log.info("closing connection from %s:%s: authentication failed", host, peer[1])
                    return
        except ProtocolError as exc:
            log.warning("closing connection from %s:%s: %s", host, peer[1], exc)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except OSError as exc:  # storage the handler did not answer for; the client retries
            log.error("closing connection from %s:%s: %s", host, peer[1], exc)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("closing connection from %s:%s after an internal error", host, peer[1])
        finally:
            self._connections.discard(task)
            self._released(task)
            self.broker.share_groups.connection_closed(session)  # its share sessions end with it
            writer.close()

    async def _handle(self, frame: memoryview, host: str, session: Session) -> list | None:
        header, pos = frames.parse_header(frame)
        api = apis.APIS.get(header.api_key)
        if api is None:
            raise ProtocolError(f"unknown api key {header.api_key}")
        if session.needs_authentication and header.api_key not in _BEFORE_AUTHENTICATION:
            raise ProtocolError(f"{api.name} request before SASL authentication "
                                f"(listener {session.listener.protocol})")
        if session.expires_at is not None and header.api_key not in _BEFORE_AUTHENTICATION and session.expired:
            raise ProtocolError(f"{api.name} request after the SASL session of {session.principal} ended "
                                "without re-authentication (connections.max.reauth.ms)")
        version = header.api_version
        if not api.lowest_served <= version <= api.max_version:
            if header.api_key == apis.API_VERSIONS:
                # Answered as v0 so that any client can read the supported ranges.
                body = apis.encode_response(api, 0, {"error_code": errors.UNSUPPORTED_VERSION,
                                                     "api_keys": apis.api_version_entries()})
                return frames.response_frame(header.correlation_id, False, body)
            raise ProtocolError(f"unsupported {api.name} version {version} "
                                f"(served: {api.lowest_served}-{api.max_version})")
        flexible = api.flexible(version)
        if flexible:
            pos = frames.skip_tagged_fields(frame, pos)
        request = apis.decode_request(api, version, frame[pos:])  # ProtocolError: the connection closes
        context = RequestContext(header, host, api, session)
        handler = HANDLERS[api.key]
        if self.broker.authorizer.enabled:
            response = await access.guarded(handler, api.key, self.broker, context, request)
        else:
            response = await handler(self.broker, context, request)
        body = None if response is None else apis.encode_response(api, version, response)
        if api.key in _QUOTA_KEYS and self.broker.security.quotas:
            # Produce is measured by the request's size, Fetch by the answer's (Kafka's way)
            size = len(frame) if api.key == apis.PRODUCE else len(body)
            who = (session.principal.partition(":")[2], header.client_id or "")
            session.throttle_ms = self.broker.quotas.record(_QUOTA_KEYS[api.key], *who, size)
            if session.throttle_ms and api.key != apis.PRODUCE:
                # A Fetch over its quota gets no records (the client asks again, from the
                # same offsets, after the throttle), as Kafka's throttled fetch response.
                self.broker.quotas.record(_QUOTA_KEYS[api.key], *who, -size)
                response = {"throttle_time_ms": 0, "error_code": errors.NONE, "session_id": 0, "responses": []}
            if session.throttle_ms and response is not None:
                response["throttle_time_ms"] = session.throttle_ms
                body = apis.encode_response(api, version, response)
        if body is None:
            return None
        flexible_header = flexible and header.api_key != apis.API_VERSIONS
        return frames.response_frame(header.correlation_id, flexible_header, body)

