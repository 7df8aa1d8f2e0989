"""The asyncio listener: one task per connection, requests answered strictly in order.

Framing rules (Kafka's SocketServer): a size above socket.request.max.bytes is refused before
any of the body is read; a frame that cannot be parsed (bad size, unknown API key or
version, truncated or garbage body) closes only that connection, with one log line. Like
Kafka, a connection processes one request at a time, so responses keep request order.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import struct
import time
from dataclasses import dataclass

from .broker import Broker
from .handlers import HANDLERS
from .protocol import apis, errors, frames
from .protocol.errors import ProtocolError

log = logging.getLogger("kctl.broker.server")
_SIZE = struct.Struct(">i")


@dataclass(slots=True)
class RequestContext:
    header: frames.RequestHeader
    client_host: str
    api: apis.Api

    @property
    def version(self) -> int:
        return self.header.api_version


class BrokerServer:
    def __init__(self, broker: Broker):
        self.broker = broker
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task] = set()
        self._accept_error_logged = -1e9
        self._refused_accepts = 0

    async def start(self) -> None:
        config = self.broker.config
        asyncio.get_running_loop().set_exception_handler(self._loop_exception)
        self._server = await asyncio.start_server(self._serve, config.host, config.port,
                                                  reuse_address=True, limit=1 << 20)
        if config.port == 0:  # an ephemeral port: advertise the one the kernel picked
            config.port = self._server.sockets[0].getsockname()[1]
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

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._connections.add(task)
        peer = writer.get_extra_info("peername") or ("?", 0)
        host = peer[0]
        try:
            while True:
                try:
                    head = await reader.readexactly(4)
                except asyncio.IncompleteReadError:
                    return
                (size,) = _SIZE.unpack(head)
                if head[:2] == b"\x16\x03":  # a TLS handshake record: ClientHello
                    raise ProtocolError("a TLS client connected; this listener is plaintext "
                                        "(security.protocol=PLAINTEXT)")
                if size < 8 or size > self.broker.config.max_request_bytes:
                    raise ProtocolError(f"request size {size} is outside 8..."
                                        f"{self.broker.config.max_request_bytes}")
                frame = memoryview(await reader.readexactly(size))
                chunks = await self._handle(frame, host)
                if chunks:
                    writer.writelines(chunks)
                    await writer.drain()
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
            writer.close()

    async def _handle(self, frame: memoryview, host: str) -> list | None:
        header, pos = frames.parse_header(frame)
        api = apis.APIS.get(header.api_key)
        if api is None:
            raise ProtocolError(f"unknown api key {header.api_key}")
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
        try:
            request = apis.decode_request(api, version, frame[pos:])
        except Exception as exc:
            raise ProtocolError(f"malformed {api.name} v{version} request: "
                                f"{type(exc).__name__}: {exc}") from None
        context = RequestContext(header, host, api)
        response = await HANDLERS[api.key](self.broker, context, request)
        if response is None:
            return None
        body = apis.encode_response(api, version, response)
        flexible_header = flexible and header.api_key != apis.API_VERSIONS
        return frames.response_frame(header.correlation_id, flexible_header, body)

