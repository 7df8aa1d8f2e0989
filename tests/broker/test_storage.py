"""Log storage with an injected clock: offsets, rolling, retention, DeleteRecords, index
lookups, timestamps and idempotent producer checks, on Kafka's file layout."""

from __future__ import annotations

import errno
import os
import struct

import google_crc32c
import pytest

from kctl.broker.configs import TOPIC_CONFIGS, LogConfig
from kctl.broker.protocol import errors
from kctl.broker.storage.files import FilePool
from kctl.broker.storage.index import OffsetIndex, TimeIndex
from kctl.broker.storage.log import Log
from kctl.messages import records
from kctl.messages.records import InvalidBatch


def batch(count: int = 1, timestamp: int = 1000, pid: int = -1, epoch: int = 0, seq: int = -1,
          value: bytes = b"v" * 100, key: bytes | None = None) -> bytes:
    """A real uncompressed RecordBatch v2 with `count` records."""
    records = b""
    encoded_key = _varint(-1) if key is None else _varint(len(key)) + key
    for i in range(count):
        body = b"\x00" + _varint(0) + _varint(i) + encoded_key + _varint(len(value)) + value + _varint(0)
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
        plog.append(batch(1, timestamp=clock.now, key=b"k"))
    segments = len(plog.segments)
    clock.now += 30_000
    assert plog.enforce_retention(clock.now) == 0
    clock.now += 40_000  # every closed segment's newest record is now older than 60 s
    assert plog.enforce_retention(clock.now) == segments - 1
    assert plog.log_start_offset == plog.segments[0].base_offset
    assert plog.delete_records_before(plog.log_end_offset) == plog.log_end_offset

    sized = make_log(tmp_path / "b", clock, segment_bytes=600, retention_bytes=1500)
    for _ in range(12):
        sized.append(batch(1, timestamp=clock.now, key=b"k"))
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


def _failing_once(monkeypatch, cls, name, errno_=24):
    """Make cls.name raise OSError(errno_) on its next call only (EMFILE by default)."""
    original = getattr(cls, name)
    calls = []

    def failing(self, *args, **kwargs):
        if not calls:
            calls.append(1)
            raise OSError(errno_, os.strerror(errno_))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, failing)
    return calls


@pytest.mark.parametrize("step", [(OffsetIndex, "append"), (TimeIndex, "maybe_append")])
def test_a_failed_append_leaves_nothing_behind(tmp_path, monkeypatch, step):
    """An append is all or nothing: a failure after the batch reached the .log (here at
    the index step, as EMFILE did) cuts the file back, so a retry stores it once and a
    crash-restart recovers every acknowledged batch and nothing else."""
    clock = Clock()
    plog = make_log(tmp_path, clock, index_interval_bytes=1)  # every batch is indexed
    acked = [plog.append(batch(1, timestamp=clock.now, pid=3, seq=i))[0] for i in range(3)]
    size = plog.active.size
    _failing_once(monkeypatch, *step)
    with pytest.raises(OSError):
        plog.append(batch(1, timestamp=clock.now, pid=3, seq=3))
    assert plog.active.size == size == os.path.getsize(plog.active.path)
    assert plog.log_end_offset == 3
    acked.append(plog.append(batch(1, timestamp=clock.now, pid=3, seq=3))[0])  # the retry
    acked.append(plog.append(batch(1, timestamp=clock.now, pid=3, seq=4))[0])
    assert acked == [0, 1, 2, 3, 4]
    # A crash: no close, no clean shutdown; recovery re-validates from offset 0.
    again = Log(tmp_path / "t-0", "t", 0, plog.config, clock)
    assert again.open(0, 0, False) == 0
    offsets = [header.base_offset for _, header in again.active.batches_from(0)]
    assert offsets == [0, 1, 2, 3, 4]


def test_a_failed_flush_cuts_the_batch_back(tmp_path, monkeypatch):
    clock = Clock()
    plog = make_log(tmp_path, clock, flush_messages=1)
    plog.append(batch(1, timestamp=clock.now))
    size = plog.active.size
    _failing_once(monkeypatch, type(plog.active), "flush", errno.EIO)
    with pytest.raises(OSError):
        plog.append(batch(1, timestamp=clock.now))
    assert plog.active.size == size == os.path.getsize(plog.active.path)
    assert plog.append(batch(1, timestamp=clock.now))[0] == 1


def test_compact_delete_topics_are_still_deleted_by_time_and_size(tmp_path):
    clock = Clock()
    plog = make_log(tmp_path, clock, segment_bytes=600, retention_ms=60_000,
                    cleanup_policy="compact,delete")
    for _ in range(12):
        plog.append(batch(1, timestamp=clock.now, key=b"k"))
    segments = len(plog.segments)
    clock.now += 70_000
    assert plog.enforce_retention(clock.now) == segments - 1
    sized = make_log(tmp_path / "b", clock, segment_bytes=600, retention_bytes=1500,
                     cleanup_policy="compact,delete")
    for _ in range(12):
        sized.append(batch(1, timestamp=clock.now, key=b"k"))
    assert sized.enforce_retention(clock.now) > 0
    compact_only = make_log(tmp_path / "c", clock, segment_bytes=600, retention_ms=60_000,
                            cleanup_policy="compact")
    for _ in range(12):
        compact_only.append(batch(1, timestamp=clock.now, key=b"k"))
    clock.now += 70_000
    assert compact_only.enforce_retention(clock.now) == 0


def test_many_logs_share_a_bounded_pool_of_open_files(tmp_path):
    """Descriptors are borrowed from one pool: 300 partitions with several segments each
    never hold more than its capacity open, and every read still finds its bytes."""
    clock = Clock()
    files = FilePool(capacity=16)
    values = {name: d.default for name, d in TOPIC_CONFIGS.items()}
    values.update({"segment.bytes": "400", "index.interval.bytes": "1"})
    logs = []
    for p in range(300):
        plog = Log(tmp_path / f"t-{p}", "t", p, LogConfig.from_values(values), clock, files)
        plog.open(0, 0, True)
        logs.append(plog)
    for round_ in range(6):
        for plog in logs:
            plog.append(batch(1, timestamp=clock.now, value=b"%d" % round_ * 100))
            assert files.open_count <= 16
    assert all(len(plog.segments) >= 3 for plog in logs)
    for plog in logs:
        data = plog.read(0, 1 << 20, True)
        assert len(records.split_batches(data)) == 6
    assert files.open_count <= 16
    for plog in logs:
        plog.close()
    assert files.open_count == 0
