"""Request and response frames.

A frame is an int32 size followed by that many bytes. A request starts with a header:

    v1: api_key int16 | api_version int16 | correlation_id int32 | client_id nullable string
    v2: v1 followed by tagged fields (used by flexible versions)

client_id stays a legacy int16-length string even in v2. A response starts with
correlation_id (header v0), followed by tagged fields for flexible versions (v1) — except
ApiVersions, whose response header is always v0 so that any client can read it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kctl.broker.protocol.errors import ProtocolError

_HEADER = struct.Struct(">hhih")
_SIZE = struct.Struct(">i")


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def parse_header(frame: memoryview) -> tuple[RequestHeader, int]:
    """The v1 part of a request header and the offset just after it."""
    if len(frame) < _HEADER.size:
        raise ProtocolError(f"request of {len(frame)} bytes is shorter than a header")
    api_key, api_version, correlation_id, length = _HEADER.unpack_from(frame, 0)
    pos = _HEADER.size
    client_id = None
    if length >= 0:
        if pos + length > len(frame):
            raise ProtocolError("client_id runs past the end of the request")
        client_id = bytes(frame[pos:pos + length]).decode("utf-8", "replace")
        pos += length
    elif length != -1:
        raise ProtocolError(f"invalid client_id length {length}")
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def skip_tagged_fields(frame: memoryview, pos: int) -> int:
    """Skip a tagged-field section (header v2): count, then (tag, size, bytes) each."""
    count, pos = read_uvarint(frame, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(frame, pos)
        size, pos = read_uvarint(frame, pos)
        pos += size
        if pos > len(frame):
            raise ProtocolError("tagged field runs past the end of the request")
    return pos


def read_uvarint(buf, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ProtocolError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise ProtocolError("varint longer than 5 bytes")


def response_frame(correlation_id: int, flexible_header: bool, body) -> list:
    """The byte chunks of a response frame, ready for writelines()."""
    header = _SIZE.pack(correlation_id) + (b"\x00" if flexible_header else b"")
    return [_SIZE.pack(len(header) + len(body)), header, body]
