"""A TCP proxy in front of a bundled broker that understands Kafka's framing enough to
lose an answer on purpose: the way to make "the request was written but its answer never
arrived" happen when a test wants it, instead of hoping a race does.

The broker listens on 127.0.0.1:PORT and advertises 127.0.0.3:PORT; the proxy listens on
127.0.0.3:PORT, so every connection a client makes (bootstrap, then the broker the
metadata names) goes through it.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable

ADDRESS = "127.0.0.3"


def read_frame(sock: socket.socket) -> bytes | None:
    head = _read(sock, 4)
    if head is None:
        return None
    body = _read(sock, struct.unpack(">i", head)[0])
    return None if body is None else head + body


def _read(sock: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        try:
            chunk = sock.recv(left)
        except OSError:
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def serve_each(listener: socket.socket, serve: Callable[[socket.socket], None]) -> None:
    """Accept connections on `listener` until it is closed, each served on a thread of its own."""

    def accept() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(client,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()


class KafkaProxy:
    """Relays request and answer frames one by one. `on_answer(api_key, answer)` runs as an
    answer arrives from the broker and returns whether to pass it on; when it returns False
    the client's connection is closed instead (the answer is lost)."""

    def __init__(self, port: int, target: tuple[str, int], on_answer: Callable[[int, bytes], bool] = lambda key, answer: True):
        self.on_answer = on_answer
        self._target = target
        self._listener = socket.create_server((ADDRESS, port))
        serve_each(self._listener, self._serve)

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self._target)
        except OSError:
            client.close()
            return
        try:
            while (request := read_frame(client)) is not None:
                api_key = struct.unpack_from(">h", request, 4)[0]
                upstream.sendall(request)
                answer = read_frame(upstream)
                if answer is None or not self.on_answer(api_key, answer):
                    return
                client.sendall(answer)
        except OSError:
            pass
        finally:
            client.close()
            upstream.close()

    def close(self) -> None:
        self._listener.close()
