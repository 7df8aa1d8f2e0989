"""Log storage with an injected clock: offsets, rolling, retention, DeleteRecords, index
lookups, timestamps and idempotent producer checks, on Kafka's file layout."""

from __future__ import annotations

import struct

import google_crc32c
import pytest

from kctl.broker.configs import TOPIC_CONFIGS, LogConfig
from kctl.broker.protocol import errors
from kctl.broker.protocol.records import InvalidBatch
from kctl.broker.storage.log import Log


def batch(count: int = 1, timestamp: int = 1000, pid: int = -1, epoch: int = 0, seq: int = -1,
          value: bytes = b"v" * 100) -> bytes:
    """A real uncompressed RecordBatch v2 with `count` records."""
    records = b""
    for i in range(count):
        body = b"\x00" + _varint(0) + _varint(i) + _varint(-1) + _varint(len(value)) + value + _varint(0)
        records += _varint(len(body)) + body
    tail = struct.pack(">hiqqqhii", 0, count - 1, timestamp, timestamp, pid, epoch, seq, count) + records
    crc = google_crc32c.value(tail)
    head = struct.pack(">qiibI", 0, 4 + 1 + 4 + len(tail), 0, 2, crc)
    return head + tail


def _varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = b""
    while True:
        if n < 0x80:
            return out + bytes([n])
        out += bytes([n & 0x7F | 0x80])
        n >>= 7


class Clock:
    def __init__(self):
        self.now = 1_000_000

    def __call__(self):
        return self.now


def make_log(tmp_path, clock, **overrides) -> Log:
    values = {name: d.default for name, d in TOPIC_CONFIGS.items()}
    values.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
    plog = Log(tmp_path / "t-0", "t", 0, LogConfig.from_values(values), clock)
    plog.open(0, 0, True)
    return plog


def test_offsets_roll_by_size_and_reads_span_segments(tmp_path):
    clock = Clock()
    plog = make_log(tmp_path, clock, segment_bytes=1000, index_interval_bytes=200)
    for i in range(20):
        base, last, _ = plog.append(batch(2, timestamp=clock.now))
        assert (base, last) == (2 * i, 2 * i + 1)
    assert len(plog.segments) > 3
    names = sorted(p.name for p in (tmp_path / "t-0").iterdir() if p.suffix == ".log")
    assert names[0] == "00000000000000000000.log" and len(names) == len(plog.segments)
    data = plog.read(17, 10_000, True)
    assert struct.unpack_from(">q", data, 0)[0] == 16  # the batch holding offset 17
    assert len(plog.read(0, 10, True)) > 10  # min_one: the first batch even when too big
    assert plog.read(0, 10, False) == b""


def test_retention_by_time_and_bytes_and_delete_records(tmp_path):
    clock = Clock()
    plog = make_log(tmp_path, clock, segment_bytes=600, retention_ms=60_000)
    for _ in range(12):
        plog.append(batch(1, timestamp=clock.now))
    segments = len(plog.segments)
    clock.now += 30_000
    assert plog.enforce_retention(clock.now) == 0
    clock.now += 40_000  # every closed segment's newest record is now older than 60 s
    assert plog.enforce_retention(clock.now) == segments - 1
    assert plog.log_start_offset == plog.segments[0].base_offset
    assert plog.delete_records_before(plog.log_end_offset) == plog.log_end_offset

    sized = make_log(tmp_path / "b", clock, segment_bytes=600, retention_bytes=1500)
    for _ in range(12):
        sized.append(batch(1, timestamp=clock.now))
    sized.enforce_retention(clock.now)
    assert sized.size <= 1500 + 600


def test_lookup_by_timestamp_and_max_timestamp(tmp_path):
    clock = Clock()
    plog = make_log(tmp_path, clock)
    for i in range(10):
        plog.append(batch(1, timestamp=clock.now - 10_000 + i * 1000))
    assert plog.offset_for_timestamp(clock.now - 10_000 + 4500) == 5
    assert plog.offset_for_timestamp(clock.now + 1) is None
    assert plog.max_timestamp_offset() == (clock.now - 1000, 9)


def test_batch_validation_errors(tmp_path):
    clock = Clock()
    plog = make_log(tmp_path, clock, max_message_bytes=500)
    with pytest.raises(InvalidBatch) as too_large:
        plog.append(batch(5))
    assert too_large.value.error_code == errors.MESSAGE_TOO_LARGE
    corrupt = bytearray(batch(1))
    corrupt[-3] ^= 1
    with pytest.raises(InvalidBatch) as bad_crc:
        plog.append(bytes(corrupt))
    assert bad_crc.value.error_code == errors.CORRUPT_MESSAGE
    with pytest.raises(InvalidBatch) as future:
        plog.append(batch(1, timestamp=clock.now + 2 * 3600_000))
    assert future.value.error_code == errors.INVALID_TIMESTAMP
    assert plog.log_end_offset == 0


def test_idempotent_producer_duplicates_and_gaps(tmp_path):
    clock = Clock()
    plog = make_log(tmp_path, clock)
    assert plog.append(batch(2, timestamp=clock.now, pid=7, seq=0))[:2] == (0, 1)
    assert plog.append(batch(2, timestamp=clock.now, pid=7, seq=2))[:2] == (2, 3)
    # A retried batch is answered with its original offsets and not stored again.
    assert plog.append(batch(2, timestamp=clock.now, pid=7, seq=0))[:2] == (0, 1)
    assert plog.log_end_offset == 4
    with pytest.raises(InvalidBatch) as gap:
        plog.append(batch(1, timestamp=clock.now, pid=7, seq=9))
    assert gap.value.error_code == errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert plog.append(batch(1, timestamp=clock.now, pid=7, epoch=1, seq=0))[0] == 4
    with pytest.raises(InvalidBatch) as fenced:
        plog.append(batch(1, timestamp=clock.now, pid=7, epoch=0, seq=4))
    assert fenced.value.error_code == errors.INVALID_PRODUCER_EPOCH
    # The state survives a reopen (snapshot plus replay of later batches).
    plog.close()
    again = Log(tmp_path / "t-0", "t", 0, plog.config, clock)
    again.open(0, 5, True)
    assert again.append(batch(1, timestamp=clock.now, pid=7, epoch=1, seq=0))[0] == 4
