"""The log cleaner on a log in a temporary directory, without a broker: what it keeps
(per key, tombstones and their delete horizon, aborted transactions, a producer's last
batch), and every state a crash can leave between writing `.cleaned` files and swapping
them in, each reopened as a restarted broker would."""

from __future__ import annotations

import os

import pytest

from kctl.broker.configs import TOPIC_CONFIGS, LogConfig
from kctl.broker.storage.cleaner import SUFFIX, LogCleaner, clean
from kctl.broker.storage.log import Log
from kctl.broker.storage.segment import file_name
from kctl.messages import records
from kctl.messages.records import BatchHeader


class Clock:
    def __init__(self):
        self.now = 1_000_000

    def __call__(self):
        return self.now


def keyed_batch(pairs, timestamp: int, compression: int = 0, pid: int = -1, seq: int = -1, transactional=False) -> bytes:
    """A RecordBatch v2 of (key, value) records; value None is a tombstone."""
    block = b"".join(records.encode_record(i, 0, k, v, b"\x00") for i, (k, v) in enumerate(pairs))
    attributes = compression | (records.TRANSACTIONAL_BIT if transactional else 0)
    header = BatchHeader(0, 0, 0, 2, 0, attributes, len(pairs) - 1, timestamp, timestamp, pid, 0 if pid >= 0 else -1,
                         seq, len(pairs))
    return bytes(records.build_batch(header, block, len(pairs)))


class FakeManager:
    """What LogCleaner asks of the LogManager."""

    def __init__(self, directory, plog):
        self.dir = directory
        self.logs = {(plog.topic, plog.partition): plog}
        self.broker_overrides, self.broker_defaults = {}, {}


def open_log(directory, clock, **configs) -> Log:
    values = {name: d.default for name, d in TOPIC_CONFIGS.items()}
    values.update({"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", **configs})
    plog = Log(directory / "t-0", "t", 0, LogConfig.from_values(values), clock)
    plog.open(0, 0, False)
    return plog


def contents(plog: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    data = plog.read(plog.log_start_offset, 1 << 30, True)
    out = []
    for position, header in records.split_batches(data):
        if header.is_control:
            continue
        batch = data[position:position + header.size]
        out += [(header.base_offset + r.offset_delta, r.key, r.value) for r in records.iter_records(batch, header)]
    return out


@pytest.fixture
def dirty(tmp_path):
    """Three segments of k0..k2 (rounds 0, 1, 2; k1's last value a tombstone, lz4 in the
    middle), then an active segment."""
    clock = Clock()
    plog = open_log(tmp_path, clock)
    plog.append(keyed_batch([(b"k0", b"a0"), (b"k1", b"a1"), (b"k2", b"a2")], clock.now))
    plog.roll()
    plog.append(keyed_batch([(b"k0", b"b0"), (b"k1", b"b1"), (b"k2", b"b2")], clock.now, compression=3))
    plog.roll()
    plog.append(keyed_batch([(b"k0", b"c0"), (b"k1", None)], clock.now))
    plog.roll()
    plog.append(keyed_batch([(b"active", b"x")], clock.now))
    return tmp_path, clock, plog


def test_the_latest_value_per_key_and_tombstones_until_their_horizon(dirty):
    directory, clock, plog = dirty
    cleaner = LogCleaner(FakeManager(directory, plog), clock)
    plan = cleaner.plan(plog, clock.now)
    assert [s.base_offset for s in plan.segments] == [0, 3, 6] and plan.end == 8
    result = clean(plan)
    cleaner.apply(plog, result)
    # k2's latest is in the first clean segment's successor; the tombstone stays (horizon
    # stamped now + delete.retention.ms), the active segment is never touched.
    assert contents(plog) == [(5, b"k2", b"b2"), (6, b"k0", b"c0"), (7, b"k1", None), (8, b"active", b"x")]
    assert result.next_horizon == clock.now + 86_400_000
    assert plog.log_end_offset == 9 and plog.log_start_offset == 0
    # Once the horizon has passed, the next clean drops the tombstone.
    clock.now += 86_400_001
    assert cleaner.plan(plog, clock.now) is not None  # due because of the horizon alone
    cleaner.apply(plog, clean(cleaner.plan(plog, clock.now)))
    assert contents(plog) == [(5, b"k2", b"b2"), (6, b"k0", b"c0"), (8, b"active", b"x")]
    assert cleaner.plan(plog, clock.now) is None  # nothing dirty, no horizon pending


def test_aborted_transactions_go_and_a_producers_last_batch_stays_empty(tmp_path):
    clock = Clock()
    plog = open_log(tmp_path, clock)
    plog.append(keyed_batch([(b"a", b"1")], clock.now, pid=7, seq=0))
    plog.append(keyed_batch([(b"a", b"2")], clock.now, pid=7, seq=1))  # 7's last batch
    plog.append(keyed_batch([(b"t", b"aborted")], clock.now, pid=9, seq=0, transactional=True))
    plog.append_marker(9, 0, False, 0)
    plog.roll()
    plog.append(keyed_batch([(b"a", b"3")], clock.now))
    plog.roll()
    plog.append(keyed_batch([(b"active", b"x")], clock.now))
    cleaner = LogCleaner(FakeManager(tmp_path, plog), clock)
    cleaner.apply(plog, clean(cleaner.plan(plog, clock.now)))
    assert contents(plog) == [(4, b"a", b"3"), (5, b"active", b"x")]
    kept = [h for _p, h in records.split_batches(plog.read(0, 1 << 20, True))]
    # Each producer's last batch is kept, empty, so its sequence survives (7's, and 9's
    # aborted one); the abort marker stays until its delete horizon.
    assert [(h.base_offset, h.producer_id, h.records_count, h.is_control) for h in kept] == [
        (1, 7, 0, False), (2, 9, 0, False), (3, 9, 1, True), (4, -1, 1, False), (5, -1, 1, False)]


def reopened(directory, clock) -> Log:
    return open_log(directory, clock)


@pytest.mark.parametrize("crash", ["cleaned-files-written", "old-indexes-deleted", "log-renamed", "swapped"])
def test_a_crash_during_the_swap_leaves_old_or_new(dirty, crash):
    """Each state the cleaner passes through, frozen and reopened: the log reads as it was
    or as cleaned, never a mix, and no `.cleaned` file survives the start."""
    directory, clock, plog = dirty
    before = contents(plog)
    cleaner = LogCleaner(FakeManager(directory, plog), clock)
    plan = cleaner.plan(plog, clock.now)
    clean(plan)
    segment_dir = directory / "t-0"
    base = 0
    old = {ext: segment_dir / file_name(base, ext) for ext in (".log", ".index", ".timeindex")}
    new = {ext: segment_dir / file_name(base, ext + SUFFIX) for ext in old}
    plog.close()
    if crash in ("old-indexes-deleted", "log-renamed", "swapped"):
        old[".index"].unlink()
        old[".timeindex"].unlink()
    if crash in ("log-renamed", "swapped"):
        os.replace(new[".log"], old[".log"])
    if crash == "swapped":
        os.replace(new[".index"], old[".index"])
        os.replace(new[".timeindex"], old[".timeindex"])
    again = reopened(directory, clock)
    assert not list(segment_dir.glob("*" + SUFFIX))
    after = contents(again)
    cleaned_first = [r for r in before if r[0] >= 3]  # segment 0 cleaned: all its keys have later values
    assert after == (before if crash in ("cleaned-files-written", "old-indexes-deleted") else cleaned_first)
    # Reads by offset still work across the swapped segment.
    assert [o for o, _k, _v in contents(again)] == sorted(o for o, _k, _v in after)
