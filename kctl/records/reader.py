"""Splitting an input stream into records at a delimiter, as the bytes arrive.

read1() returns whatever one read of the pipe gives, so a record typed at a terminal or
written by a slow producer is sent at once instead of waiting for a full buffer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

CHUNK = 1 << 20


def split_records(stream: BinaryIO, delimiter: bytes = b"\n") -> Iterator[list[bytes]]:
    """Lists of records (delimiter removed), in input order. A last record without a
    trailing delimiter is still a record; nothing after a final delimiter is."""
    read = getattr(stream, "read1", stream.read)
    pending = b""
    while True:
        chunk = read(CHUNK)
        if not chunk:
            break
        pieces = (pending + chunk).split(delimiter) if pending else chunk.split(delimiter)
        pending = pieces.pop()
        if pieces:
            yield pieces
    if pending:
        yield [pending]
