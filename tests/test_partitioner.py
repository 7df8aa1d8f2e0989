"""kctl's murmur2 (kctl/partitioner.py, written out to spare the produce path kafka-python's
import) is Kafka's: equal to kafka-python's copy of the Java client's function on random
keys of every length class; tests/cli/test_record_search.py checks the placement against
Java's own producer."""

from __future__ import annotations

import random

from kafka.partitioner.default import murmur2 as java_clients_murmur2

from kctl.partitioner import murmur2, partition_for


def test_murmur2_is_kafkas():
    rng = random.Random(59)
    for _ in range(5000):
        key = rng.randbytes(rng.randrange(0, 70))
        unsigned = java_clients_murmur2(key)
        assert murmur2(key) == (unsigned - (1 << 32) if unsigned & 0x80000000 else unsigned), key
        assert partition_for(key, 7) == (unsigned & 0x7FFFFFFF) % 7


def test_known_values():
    # Kafka's own UtilsTest.testMurmur2 cases.
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107
