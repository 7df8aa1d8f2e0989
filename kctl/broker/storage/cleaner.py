"""The log cleaner: compaction of `cleanup.policy=compact` logs (Kafka's LogCleaner,
Cleaner and LogCleanerManager), keeping the latest record of every key.

Which log, and how much of it (LogCleanerManager's rules):
- the cleanable range ends at the first uncleanable offset: the active segment, the last
  stable offset (an open transaction), or the first segment holding a record younger
  than `min.compaction.lag.ms`, whichever comes first; whole segments only;
- the dirty part starts at the cleaner checkpoint (`cleaner-offset-checkpoint` in the data
  directory, Kafka's format): everything before it was cleaned already;
- a log is cleaned when its dirty ratio (dirty bytes / cleanable bytes) reaches
  `min.cleanable.dirty.ratio`, when its oldest dirty record is older than
  `max.compaction.lag.ms`, or when a delete horizon it stamped has passed; the dirtiest
  first.

How (Cleaner's): an offset map of the dirty part (key -> latest offset; records of aborted
transactions count for nothing), then every segment of the cleanable range is recopied
keeping a record only if no later record has its key. Records of aborted transactions are
dropped, and so are records without a key. A batch keeps its base offset, last offset delta and producer fields, so offsets
and producer sequences stay as they were; a producer's last batch stays even when empty.
Tombstones and transaction markers stay for `delete.retention.ms` after the first clean
that sees them (KIP-534: the batch is stamped with its delete horizon), and go at a later
clean.

Where: the recopying runs in a separate process (one worker, started on first use), so
produce and fetch never wait on it. It writes `<base>.log.cleaned` (with its .index and
.timeindex) beside each segment; the broker then swaps them in between two requests:
the old indexes are deleted, the cleaned log is renamed over the old one (atomic), then
the cleaned indexes. A crash at any point leaves the old segment or the new one, never a
mix: leftover `.cleaned` files are deleted on start, and missing indexes are rebuilt.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import mmap
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kctl.broker.storage.files import FilePool
from kctl.broker.storage.segment import LogSegment, file_name
from kctl.messages import records

log = logging.getLogger("kctl.broker.cleaner")

CHECKPOINT = "cleaner-offset-checkpoint"
SUFFIX = ".cleaned"


@dataclass(frozen=True)
class SegmentToClean:
    base_offset: int
    size: int


@dataclass(frozen=True)
class CleanPlan:
    """Everything the worker needs: it sees files, not the broker's objects."""
    directory: str
    segments: tuple[SegmentToClean, ...]
    first_dirty: int
    end: int  # first uncleanable offset: a segment boundary
    now: int
    delete_retention_ms: int
    index_interval_bytes: int
    # Aborted transactions: (producer id, first offset, last offset)
    aborted: tuple[tuple[int, int, int], ...]
    # Each producer's last batch (by last offset): kept even when all its records go.
    producer_last_offsets: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CleanResult:
    segments: tuple[SegmentToClean, ...]  # the segments recopied, as they were planned
    end: int
    records_read: int
    records_kept: int
    bytes_before: int
    bytes_after: int
    # The earliest delete horizon stamped or still pending: the log is cleaned again then.
    next_horizon: int | None


# -- the worker (a separate process) ----------------------------------------------------------


def _batches(path: Path):
    """(bytes, header) of every batch of a segment file, read through a memory map."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            position = 0
            while position + records.HEADER_SIZE <= size:
                header = records.read_header(mapped, position)
                if position + header.size > size:
                    break
                yield mapped[position:position + header.size], header
                position += header.size


class _Aborted:
    def __init__(self, aborted):
        self.ranges: dict[int, list[tuple[int, int]]] = {}
        for pid, first, last in aborted:
            self.ranges.setdefault(pid, []).append((first, last))

    def __contains__(self, batch_header) -> bool:
        ranges = self.ranges.get(batch_header.producer_id)
        if not ranges or not batch_header.is_transactional:
            return False
        return any(first <= batch_header.base_offset <= last for first, last in ranges)


def clean(plan: CleanPlan) -> CleanResult:
    """Recopy the planned segments into `.cleaned` files (run in the worker process)."""
    directory = Path(plan.directory)
    aborted = _Aborted(plan.aborted)
    # Pass 1: the latest offset of every key in the dirty part.
    latest: dict[bytes, int] = {}
    for segment in plan.segments:
        if _segment_end(plan, segment) <= plan.first_dirty:
            continue
        for batch, header in _batches(directory / file_name(segment.base_offset, ".log")):
            if header.last_offset < plan.first_dirty or header.is_control or header in aborted:
                continue
            for offset, key, _tombstone in records.iter_keys(batch, header):
                if key is not None and offset >= plan.first_dirty:
                    latest[key] = offset
    # Pass 2: recopy. A dirty batch holding none of the latest offsets has nothing to
    # keep, which the sorted offsets tell without decoding it.
    live = sorted(latest.values())
    read = kept = before = after = 0
    horizons: list[int] = []
    files = FilePool(8)
    # Fault injection for tests: a pause after each cleaned segment, so that a kill -9
    # can be aimed at the middle of a clean.
    pause = int(os.environ.get("KCTL_CLEANER_SEGMENT_PAUSE_MS", "0")) / 1000
    _discard(directory, plan.segments)  # a crashed run's leftovers
    for segment in plan.segments:
        out = LogSegment(directory, segment.base_offset, plan.index_interval_bytes, plan.now, files, SUFFIX)
        for batch, header in _batches(directory / file_name(segment.base_offset, ".log")):
            before += header.size
            read += header.records_count
            cleaned = _clean_batch(batch, header, plan, latest, live, aborted, horizons)
            if cleaned is None:
                continue
            new_header = records.read_header(cleaned)
            out.append(cleaned, new_header)
            kept += new_header.records_count
            after += len(cleaned)
        out.flush()
        out.close()
        if pause:
            import time

            time.sleep(pause)
    files.close_all()
    return CleanResult(plan.segments, plan.end, read, kept, before, after, min(horizons) if horizons else None)


def _segment_end(plan: CleanPlan, segment: SegmentToClean) -> int:
    later = [s.base_offset for s in plan.segments if s.base_offset > segment.base_offset]
    return min(later) if later else plan.end


def _clean_batch(batch, header, plan: CleanPlan, latest: dict, live: list, aborted: _Aborted, horizons: list) -> bytes | None:
    """The batch as it is kept (the same bytes when nothing changes), or None to drop it.
    Records without a key are dropped, as Kafka's cleaner drops them."""
    horizon = header.delete_horizon
    if header.is_control:
        if horizon is None:
            horizons.append(plan.now + plan.delete_retention_ms)
            return _stamped(batch, header, list(records.iter_records(batch, header)), plan)
        if plan.now >= horizon:
            return None
        horizons.append(horizon)
        return batch
    last_of_producer = header.producer_id >= 0 and plan.producer_last_offsets.get(header.producer_id) == header.last_offset
    if header in aborted:
        return _rebuilt(header, [], plan) if last_of_producer else None
    if header.base_offset >= plan.first_dirty:
        first = bisect.bisect_left(live, header.base_offset)
        if first == len(live) or live[first] > header.last_offset:
            return _rebuilt(header, [], plan) if last_of_producer else None
    expired = horizon is not None and plan.now >= horizon
    kept, dropped, tombstones = [], False, False
    for record in records.iter_records(batch, header):
        offset = header.base_offset + record.offset_delta
        if record.key is None or latest.get(record.key, -1) > offset:
            dropped = True
        elif record.value is None and expired:
            dropped = True
        else:
            kept.append(record)
            tombstones |= record.value is None
    if not kept:
        return _rebuilt(header, [], plan) if last_of_producer else None
    if tombstones and horizon is None:
        horizons.append(plan.now + plan.delete_retention_ms)
        return _stamped(batch, header, kept, plan)
    if tombstones:
        horizons.append(horizon)
    if not dropped:
        return batch
    return _rebuilt(header, kept, plan, xerial=_xerial(batch, header))


def _xerial(batch, header) -> bool:
    return header.compression == 2 and bytes(batch[records.HEADER_SIZE:records.HEADER_SIZE + 8]) == records.XERIAL_MAGIC


def _rebuilt(header, kept, plan: CleanPlan, xerial: bool = False) -> bytearray:
    block = b"".join(records.zigzag(len(r.body)) + r.body for r in kept)
    return records.build_batch(header, block, len(kept), xerial)


def _stamped(batch, header, kept, plan: CleanPlan) -> bytearray:
    """The batch with its delete horizon set: base_timestamp becomes the horizon, so every
    record's timestamp delta is recomputed against it (their timestamps do not change)."""
    horizon = plan.now + plan.delete_retention_ms
    block = b"".join(
        records.encode_record(r.offset_delta, header.base_timestamp + r.timestamp_delta - horizon, r.key, r.value,
                              records.record_headers_block(r))
        for r in kept)
    stamped = records.BatchHeader(**{name: getattr(header, name) for name in records.BatchHeader.__slots__})
    stamped.attributes |= records.DELETE_HORIZON_BIT
    stamped.base_timestamp = horizon
    return records.build_batch(stamped, block, len(kept), _xerial(batch, header))


# -- the broker's side --------------------------------------------------------------------------


class LogCleaner:
    """Chooses logs, hands the work to the worker process, swaps the results in."""

    def __init__(self, manager, clock):
        self.manager = manager  # the LogManager
        self.clock = clock
        self.checkpoints: dict[tuple[str, int], int] = {}
        self.horizons: dict[tuple[str, int], int] = {}
        self._worker = None  # the worker process (asyncio.subprocess.Process)
        self.cleaned = 0  # logs cleaned since start (tests and logs)

    @property
    def path(self) -> Path:
        return self.manager.dir / CHECKPOINT

    def open(self) -> None:
        from kctl.broker.storage.manager import read_checkpoint

        self.checkpoints = read_checkpoint(self.path)

    def close(self) -> None:
        if self._worker is not None and self._worker.returncode is None:
            self._worker.kill()
        self._worker = None

    # -- choosing -------------------------------------------------------------------------------

    def plan(self, plog, now: int) -> CleanPlan | None:
        """The cleanable range of a compacted log, when it is due for cleaning."""
        config = plog.config
        if not config.compact or len(plog.segments) < 2:
            return None
        limit = min(plog.active.base_offset, plog.last_stable_offset)
        segments = []
        for i, segment in enumerate(plog.segments[:-1]):
            end = plog.segments[i + 1].base_offset
            if end > limit or (segment.max_timestamp >= 0 and now - segment.max_timestamp < config.min_compaction_lag_ms):
                break
            segments.append(segment)
        if not segments:
            return None
        end = plog.segments[len(segments)].base_offset
        key = (plog.topic, plog.partition)
        first_dirty = max(self.checkpoints.get(key, 0), plog.log_start_offset)
        dirty = sum(s.size for i, s in enumerate(segments) if plog.segments[i + 1].base_offset > first_dirty)
        total = sum(s.size for s in segments)
        if total == 0:
            return None
        oldest_dirty = min((s.max_timestamp for i, s in enumerate(segments)
                            if plog.segments[i + 1].base_offset > first_dirty and s.max_timestamp >= 0), default=None)
        due = (dirty / total >= config.min_cleanable_dirty_ratio and dirty > 0
               or oldest_dirty is not None and dirty > 0 and now - oldest_dirty > config.max_compaction_lag_ms
               or key in self.horizons and now >= self.horizons[key])
        if not due:
            return None
        return CleanPlan(
            directory=str(plog.dir), segments=tuple(SegmentToClean(s.base_offset, s.size) for s in segments),
            first_dirty=first_dirty, end=end, now=now, delete_retention_ms=config.delete_retention_ms,
            index_interval_bytes=config.index_interval_bytes,
            aborted=tuple((a.producer_id, a.first_offset, a.last_offset) for a in plog.aborted if a.first_offset < end),
            producer_last_offsets={pid: e.batches[-1][3] for pid, e in plog.producers.producers.items() if e.batches},
        )

    def _dirtiest(self, now: int):
        best = None
        for plog in list(self.manager.logs.values()):
            plan = self.plan(plog, now)
            if plan is None:
                continue
            dirty = sum(s.size for s in plan.segments if s.base_offset >= plan.first_dirty)
            if best is None or dirty > best[0]:
                best = (dirty, plog, plan)
        return best[1:] if best else None

    # -- running ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Clean one log at a time, for ever; sleep log.cleaner.backoff.ms when none is due."""
        while True:
            try:
                cleaned = await self.clean_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # keep cleaning other logs; this one is tried again later
                log.exception("log cleaner failed")
                cleaned = False
            if not cleaned:
                await self._back_off()

    async def _back_off(self) -> None:
        """Sleep log.cleaner.backoff.ms, in short naps so a changed value applies at once."""
        slept = 0
        while slept < self.backoff_ms:
            nap = min(500, self.backoff_ms - slept)
            await asyncio.sleep(nap / 1000)
            slept += nap

    @property
    def backoff_ms(self) -> int:
        """log.cleaner.backoff.ms, which may be changed at runtime (kctl config alter)."""
        for configs in (self.manager.broker_overrides, self.manager.broker_defaults):
            if configs.get("log.cleaner.backoff.ms"):
                return int(configs["log.cleaner.backoff.ms"])
        return 15_000

    async def clean_once(self) -> bool:
        chosen = self._dirtiest(self.clock())
        if chosen is None:
            return False
        plog, plan = chosen
        result = await self._worker_clean(plan)
        doomed = []
        for step in self._swap(plog, result):
            doomed.append(step)
            await asyncio.sleep(0)  # requests are served between two segments' swaps
        await asyncio.to_thread(_delete, doomed)
        return True

    async def _worker_clean(self, plan: CleanPlan) -> CleanResult:
        """Run `clean(plan)` in the worker process (started on first use, restarted if it
        died): plans and results travel as length-prefixed pickles over its stdin/stdout."""
        import pickle
        import struct
        import sys

        if self._worker is None or self._worker.returncode is not None:
            # Not `-m` this module: its classes must unpickle as kctl.broker.storage.cleaner's.
            self._worker = await asyncio.create_subprocess_exec(
                sys.executable, "-c", "from kctl.broker.storage.cleaner import worker_main; worker_main()",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        worker = self._worker
        payload = pickle.dumps(plan)
        worker.stdin.write(struct.pack(">I", len(payload)) + payload)
        await worker.stdin.drain()
        (size,) = struct.unpack(">I", await worker.stdout.readexactly(4))
        answer = pickle.loads(await worker.stdout.readexactly(size))
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def apply(self, plog, result: CleanResult) -> None:
        """Swap the cleaned segments in and delete the old ones, all at once."""
        _delete(list(self._swap(plog, result)))

    def _swap(self, plog, result: CleanResult):
        """Swap the cleaned segments in one by one, yielding each old segment's doomed
        file; then make the renames durable and checkpoint the cleaned range."""
        import time

        from kctl.broker.storage.log import fsync_directory

        started = time.perf_counter()
        key = (plog.topic, plog.partition)
        if self.manager.logs.get(key) is not plog:  # deleted meanwhile
            _discard(Path(plog.dir), result.segments)
            return
        for planned in result.segments:
            doomed = plog.replace_segment(planned.base_offset, planned.size, SUFFIX)
            if doomed is not None:
                yield doomed
        fsync_directory(plog.dir)
        self.checkpoints[key] = result.end
        if result.next_horizon is not None:
            self.horizons[key] = result.next_horizon
        else:
            self.horizons.pop(key, None)
        self._save_checkpoints()
        self.cleaned += 1
        log.info("cleaned %s-%d up to offset %d: %d of %d records kept, %d -> %d bytes (swapped in %.1f ms)",
                 plog.topic, plog.partition, result.end, result.records_kept, result.records_read, result.bytes_before,
                 result.bytes_after, (time.perf_counter() - started) * 1000)

    def _save_checkpoints(self) -> None:
        from kctl.broker.storage.manager import write_checkpoint

        live = {k: v for k, v in self.checkpoints.items() if k in self.manager.logs}
        try:
            write_checkpoint(self.path, live)
        except OSError as exc:  # the next clean redoes the work; nothing is lost
            log.warning("cleaner checkpoint not written: %s", exc.strerror or exc)


def _die_with_parent() -> None:
    """On Linux, the worker is killed when the broker dies (kill -9 included), rather than
    finishing a clean nobody will swap in."""
    import ctypes
    import signal

    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        except OSError:
            pass


def worker_main() -> None:
    """The worker process: plans in on stdin, results (or the exception) out on stdout."""
    import pickle
    import struct

    _die_with_parent()
    # The broker's requests come first: cleaning is background work.
    os.nice(10)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = stdin.read(4)
        if len(head) < 4:
            return  # the broker closed the pipe
        plan = pickle.loads(stdin.read(struct.unpack(">I", head)[0]))
        try:
            answer = clean(plan)
        except Exception as exc:  # noqa: BLE001 - the broker logs it and goes on
            answer = RuntimeError(f"{type(exc).__name__}: {exc}")
        payload = pickle.dumps(answer)
        stdout.write(struct.pack(">I", len(payload)) + payload)
        stdout.flush()


def _delete(paths) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


def _discard(directory: Path, segments) -> None:
    for segment in segments:
        for ext in (".log", ".index", ".timeindex"):
            (directory / file_name(segment.base_offset, ext + SUFFIX)).unlink(missing_ok=True)

