"""Fixtures for the bundled broker's own tests: a private broker per test (to restart,
kill -9 or corrupt) and raw protocol helpers."""

from __future__ import annotations

import socket
import struct

import pytest

from kctl.broker.process import BrokerProcess


@pytest.fixture
def broker(tmp_path):
    process = BrokerProcess(tmp_path / "data")
    process.start()
    yield process
    process.stop()


def request_frame(api_key: int, version: int, body: bytes, correlation_id: int = 1,
                  client_id: bytes = b"raw", flexible: bool = False) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    if flexible:
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def roundtrip(bootstrap: str, frame: bytes, timeout: float = 5.0) -> bytes | None:
    """Send raw bytes; the response frame, or None when the broker closed the connection."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(frame)
        head = read_exactly(sock, 4)
        if head is None:
            return None
        return read_exactly(sock, struct.unpack(">i", head)[0])


def read_exactly(sock, n: int) -> bytes | None:
    """`n` bytes from `sock`; None when the broker closed (or reset) the connection first."""
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        data += chunk
    return data
