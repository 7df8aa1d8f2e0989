"""The aborted-transaction index of a segment: `<base offset, 20 digits>.txnindex`.

Kafka's format (TransactionIndex / AbortedTxn): fixed 34-byte entries, big-endian,

    @0 version int16 (0)   @2 producer_id int64   @10 first_offset int64
    @18 last_offset int64 (the ABORT marker's offset)   @26 last_stable_offset int64

one per transaction aborted by a marker in that segment, in marker order. read_committed
fetches answer with the aborted transactions that overlap what they return, so consumers
can drop those records. A torn last entry (the broker killed mid-write) is ignored.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from kctl.broker.storage.files import write_all

ENTRY = struct.Struct(">hqqqq")


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def read_index(path: Path) -> list[AbortedTxn]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    entries = []
    for pos in range(0, len(data) - ENTRY.size + 1, ENTRY.size):
        version, producer_id, first, last, stable = ENTRY.unpack_from(data, pos)
        if version != 0:
            break
        entries.append(AbortedTxn(producer_id, first, last, stable))
    return entries


def append_entry(path: Path, entry: AbortedTxn) -> None:
    """Append one entry, or nothing: raises OSError with the index as it was."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        size = os.fstat(fd).st_size
        size -= size % ENTRY.size  # a torn entry from a crash is written over
        try:
            write_all(fd, ENTRY.pack(0, entry.producer_id, entry.first_offset, entry.last_offset,
                                     entry.last_stable_offset), size)
            os.ftruncate(fd, size + ENTRY.size)
        except OSError:
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def write_index(path: Path, entries: list[AbortedTxn]) -> None:
    """Replace the index (after recovery dropped entries past a truncated log end)."""
    if not entries:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(b"".join(ENTRY.pack(0, e.producer_id, e.first_offset, e.last_offset,
                                        e.last_stable_offset) for e in entries))
    os.replace(tmp, path)
