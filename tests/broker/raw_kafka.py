"""A raw Kafka client for tests that compare brokers answer by answer: any request the
bundled broker serves, at a chosen version, over a SASL connection authenticated by kctl's
own client, and the answer as plain dicts and lists (so two brokers' answers compare with
==). Messages are encoded with kctl's codec where kctl holds the definition, else with
kafka-python's classes, as the bundled broker itself does."""

from __future__ import annotations

import struct
import time
from typing import Any

from kctl.admin.client.wire import Connection, Security
from kctl.broker.protocol.apis import APIS, build_message, message_class
from kctl.config.model import ClientSettings
from kctl.messages import codec
from tests.broker.conftest import read_exactly

_BY_NAME = {api.name: api for api in APIS.values()}


class Closed(Exception):
    """The broker closed the connection instead of answering."""


def connect(bootstrap: str, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> RawClient:
    properties = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
                  "sasl.username": user, "sasl.password": password}
    settings = ClientSettings(bootstrap_servers=bootstrap, properties=properties, timeout=15, context=None)
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    connection = Connection(host, int(port), Security(settings), "raw", time.monotonic() + 15)
    return RawClient(connection.detach_socket())


def connect_unauthenticated(bootstrap: str) -> RawClient:
    """A connection with nothing sent yet (for SASL exchanges made by hand)."""
    import socket

    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    return RawClient(socket.create_connection((host, int(port)), timeout=15))


class RawClient:
    def __init__(self, sock):
        self.sock = sock
        self.correlation = 0

    def request(self, api_name: str, version: int, fields: dict[str, Any], timeout: float = 15) -> dict | None:
        """The answer as a dict; None when the request expects none (Produce acks=0);
        Closed when the broker closed the connection."""
        api = _BY_NAME[api_name]
        self.correlation += 1
        own = codec.has_definition(api_name + "Request")
        if own:
            request = codec.message(api_name + "Request", version)
            body, flexible = request.encode(**fields), request.flexible
        else:
            cls = message_class(api, "Request")
            body, flexible = build_message(cls, version, fields).encode(version=version), cls.flexible_version_q(version)
        client_id = b"raw"
        header = struct.pack(">hhih", api.key, version, self.correlation, len(client_id)) + client_id
        frame = header + (b"\x00" if flexible else b"") + body
        self.sock.settimeout(timeout)
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        if api_name == "Produce" and fields.get("acks") == 0:
            return None
        size = struct.unpack(">i", self._read(4))[0]
        answer = self._read(size)
        if struct.unpack_from(">i", answer)[0] != self.correlation:
            raise AssertionError("an answer out of order")
        position = 4
        if flexible and api_name != "ApiVersions":
            position = codec.message("ResponseHeader", 1).decode_with_end(answer, 0)[1]
        if codec.has_definition(api_name + "Response"):
            return plain(codec.message(api_name + "Response", version).decode(answer, position))
        response = message_class(api, "Response").decode(answer[position:], version=version)
        return plain(response.to_dict(json=False))

    def _read(self, size: int) -> bytes:
        try:
            data = read_exactly(self.sock, size)
        except TimeoutError as exc:
            raise Closed(str(exc)) from None
        if data is None:
            raise Closed("closed")
        return data

    def close(self) -> None:
        self.sock.close()


def plain(value: Any) -> Any:
    """Decoded structs as dicts, sets (kafka-python's bitfields) as ints, memoryviews as bytes."""
    if isinstance(value, codec.Struct):
        return {k: plain(v) for k, v in value.__dict__.items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sum(1 << bit for bit in value)
    if isinstance(value, memoryview):
        return bytes(value)
    return value
