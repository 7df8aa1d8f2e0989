"""Where a keyed record goes: Kafka's Java producer's partitioner (murmur2 of the key bytes,
made positive, modulo the partition count: `Utils.toPositive(Utils.murmur2(key)) %
numPartitions`), or librdkafka's default (consistent: CRC-32 of the key modulo the count).

kctl writes keys where Java producers put them (murmur2, librdkafka's `murmur2_random`)
unless told `--partitioner consistent`; `record consume --key` reads only the partition a
key maps to; `spark replay --partition-map hash` places replayed keys the same way.

murmur2 is written out here, as Kafka's Utils.murmur2: kafka-python has the same
function, but importing it imports the whole kafka package, 71 ms of a one-line `record
produce` (measured, issue 59); tests/test_partitioner.py holds this copy equal to
kafka-python's on random keys, and tests/cli/test_record_search.py to Java's producer.
"""

from __future__ import annotations

import struct
import zlib

_SEED, _M = 0x9747B28C, 0x5BD1E995
_MASK = 0xFFFFFFFF


def _unsigned_murmur2(data: bytes) -> int:
    """Kafka's murmur2 of `data` as an unsigned 32-bit int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    words = length // 4
    for k in struct.unpack_from(f"<{words}I", data):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail:
        rest = words * 4
        if tail == 3:
            h ^= data[rest + 2] << 16
        if tail >= 2:
            h ^= data[rest + 1] << 8
        h ^= data[rest]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h

# kctl's names, and librdkafka's `partitioner` for each.
PARTITIONERS = {"murmur2": "murmur2_random", "consistent": "consistent_random"}


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (seed 0x9747b28c) as a signed 32-bit int, as Java returns it."""
    h = _unsigned_murmur2(data)
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: bytes, partitions: int) -> int:
    """murmur2's partition for a key (Java's default partitioner)."""
    return (_unsigned_murmur2(key) & 0x7FFFFFFF) % partitions


def partition_of(key: bytes | None, partitions: int, partitioner: str) -> int | None:
    """The partition `partitioner` gives a key; None for keys it spreads at random (no key;
    an empty key too for librdkafka's consistent partitioner, which treats it as none)."""
    if key is None or (not key and partitioner == "consistent"):
        return None
    if partitioner == "consistent":
        return zlib.crc32(key) % partitions
    return partition_for(key, partitions)
