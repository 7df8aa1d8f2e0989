"""The transaction coordinator of a single node (Kafka's TransactionCoordinator and
TransactionStateManager, transaction.version 1: KIP-98, KIP-447, KIP-890 part 1).

Per transactional id it keeps the producer id and epoch, the timeout, the state and what
the open transaction has touched (partitions, groups, the offsets it will commit). Every
change is one JSON line in an append-only journal, `transaction-state.jsonl` (the role of
Kafka's `__transaction_state` topic), written before the request is answered and compacted
on start:

    {"id": "tx-1", "pid": 4000, "epoch": 2, "timeout": 60000, "state": "Ongoing",
     "partitions": [["orders", 0]], "groups": ["billing"],
     "offsets": {"billing": [["orders", 0, 17, -1, "", 1700000000000]]},
     "start": 1700000000000, "update": 1700000000123}

Ending a transaction is Kafka's two-phase sequence, each step durable before the next:
PrepareCommit or PrepareAbort, the markers on every partition (and the offsets committed),
then CompleteCommit or CompleteAbort. The partitions and the group coordinator live on this
node too, so nothing waits on another broker. A transaction found prepared on start (the
broker was killed between the steps) is completed then, as a new Kafka coordinator does; an
open one stays open until its producer ends it, re-initialises (which aborts it) or its
timeout aborts it (with an epoch bump that fences the old producer).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kctl.broker.coordinator.offsets import CommittedOffset
from kctl.broker.protocol import errors
from kctl.broker.storage.journal import Journal
from kctl.messages.records import InvalidBatch

log = logging.getLogger("kctl.broker.transactions")

JOURNAL = "transaction-state.jsonl"

EMPTY, ONGOING = "Empty", "Ongoing"
PREPARE_COMMIT, PREPARE_ABORT = "PrepareCommit", "PrepareAbort"
COMPLETE_COMMIT, COMPLETE_ABORT = "CompleteCommit", "CompleteAbort"
STATES = (EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT,
          "Dead", "PrepareEpochFence")
MAX_EPOCH = 32767
DEFAULT_MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: str = EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    # Offsets TxnOffsetCommit sent, committed to their groups when the transaction commits.
    pending_offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = field(default_factory=dict)
    start_ms: int = -1
    update_ms: int = -1

    def to_json(self) -> dict:
        return {
            "id": self.transactional_id, "pid": self.producer_id, "epoch": self.producer_epoch,
            "timeout": self.timeout_ms, "state": self.state,
            "partitions": sorted([t, p] for t, p in self.partitions), "groups": sorted(self.groups),
            "offsets": {g: [[t, p, o.offset, o.leader_epoch, o.metadata, o.commit_timestamp]
                            for (t, p), o in sorted(offsets.items())]
                        for g, offsets in self.pending_offsets.items()},
            "start": self.start_ms, "update": self.update_ms,
        }

    @classmethod
    def from_json(cls, data: dict) -> TransactionMetadata:
        return cls(
            transactional_id=data["id"], producer_id=int(data["pid"]), producer_epoch=int(data["epoch"]),
            timeout_ms=int(data["timeout"]), state=data["state"] if data["state"] in STATES else EMPTY,
            partitions={(t, int(p)) for t, p in data["partitions"]}, groups=set(data["groups"]),
            pending_offsets={g: {(t, int(p)): CommittedOffset(int(o), int(e), md, int(ms)) for t, p, o, e, md, ms in rows}
                             for g, rows in data["offsets"].items()},
            start_ms=int(data["start"]), update_ms=int(data["update"]),
        )


class TransactionCoordinator:
    """`logs` is the LogManager (markers go to its partition logs), `allocate_producer_id`
    hands out never-reused ids, `commit_offsets(group, offsets)` is the group
    coordinator's commit and `notify()` wakes fetches waiting for new data."""

    def __init__(self, data_dir: Path, clock: Callable[[], int], logs, allocate_producer_id: Callable[[], int],
                 commit_offsets: Callable[[str, dict], None], notify: Callable[[], None] = lambda: None,
                 max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS):
        self.journal = Journal(data_dir / JOURNAL)
        self.clock = clock
        self.logs = logs
        self.allocate_producer_id = allocate_producer_id
        self.commit_offsets = commit_offsets
        self.notify = notify
        self.max_timeout_ms = max_timeout_ms
        self.transactions: dict[str, TransactionMetadata] = {}
        self.by_producer_id: dict[int, TransactionMetadata] = {}

    # -- the journal --------------------------------------------------------------------------

    def open(self) -> int:
        """Replay and compact the journal, then complete prepared transactions. Returns
        the number of unreadable lines skipped (a torn last line after kill -9)."""
        skipped = self.journal.open(lambda entry: self._index(TransactionMetadata.from_json(entry)),
                                    lambda: (meta.to_json() for meta in self.transactions.values()))
        for meta in list(self.transactions.values()):
            if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
                log.info("completing transaction %s left in %s", meta.transactional_id, meta.state)
                try:
                    self._complete(meta)
                except (OSError, InvalidBatch) as exc:
                    log.error("transaction %s not completed: %s", meta.transactional_id, exc)
        return skipped

    def close(self) -> None:
        self.journal.close()

    def _index(self, meta: TransactionMetadata) -> None:
        old = self.transactions.get(meta.transactional_id)
        if old is not None and self.by_producer_id.get(old.producer_id) is old:
            del self.by_producer_id[old.producer_id]
        self.transactions[meta.transactional_id] = meta
        self.by_producer_id[meta.producer_id] = meta

    def _persist(self, meta: TransactionMetadata) -> None:
        """Write the transaction's state, or nothing: raises OSError with the journal as it was."""
        meta.update_ms = self.clock()
        self.journal.write(meta.to_json())
        self._index(meta)
        self.journal.compact_if_grown(lambda: (m.to_json() for m in self.transactions.values()), len(self.transactions))

    def _save(self, meta: TransactionMetadata, **changes) -> None:
        """Apply `changes` to a copy, persist it, and only then make it the state: a write
        the disk refuses changes nothing."""
        updated = TransactionMetadata(**{**meta.__dict__, "partitions": set(meta.partitions), "groups": set(meta.groups),
                                         "pending_offsets": {g: dict(o) for g, o in meta.pending_offsets.items()}})
        for name, value in changes.items():
            setattr(updated, name, value)
        self._persist(updated)

    # -- InitProducerId -------------------------------------------------------------------------

    def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int,
                         producer_epoch: int, fenced: int) -> tuple[int, int, int]:
        """(error, producer id, epoch) for a transactional producer starting or restarting.
        A transaction it left open is aborted first, with the epoch bumped, so the previous
        instance of the producer is fenced. `fenced` is the error for a stale epoch."""
        if timeout_ms <= 0 or timeout_ms > self.max_timeout_ms:
            return errors.INVALID_TRANSACTION_TIMEOUT, -1, -1
        meta = self.transactions.get(transactional_id)
        now = self.clock()
        if meta is None:
            pid = self.allocate_producer_id()
            meta = TransactionMetadata(transactional_id, pid, 0, timeout_ms, EMPTY, update_ms=now)
            self._persist(meta)
            return errors.NONE, pid, 0
        if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
            self._complete(meta)
            meta = self.transactions[transactional_id]
        if producer_id >= 0 and (producer_id, producer_epoch) != (meta.producer_id, meta.producer_epoch):
            return fenced, -1, -1
        if meta.state == ONGOING:
            # Fence the previous instance: its transaction is aborted under a new epoch.
            meta = self._abort_with_bump(meta)
        pid, epoch = meta.producer_id, meta.producer_epoch + 1
        if epoch >= MAX_EPOCH - 1:
            pid, epoch = self.allocate_producer_id(), 0
        self._save(meta, producer_id=pid, producer_epoch=epoch, timeout_ms=timeout_ms, state=EMPTY,
                   partitions=set(), groups=set(), pending_offsets={}, start_ms=-1)
        return errors.NONE, pid, epoch

    def _abort_with_bump(self, meta: TransactionMetadata) -> TransactionMetadata:
        epoch = min(meta.producer_epoch + 1, MAX_EPOCH - 1)
        self._save(meta, producer_epoch=epoch, state=PREPARE_ABORT)
        meta = self.transactions[meta.transactional_id]
        self._complete(meta)
        return self.transactions[meta.transactional_id]

    # -- the open transaction ---------------------------------------------------------------------

    def _check_producer(self, transactional_id: str, producer_id: int, producer_epoch: int,
                        fenced: int) -> tuple[int, TransactionMetadata | None]:
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return errors.INVALID_PRODUCER_ID_MAPPING, None
        if producer_epoch != meta.producer_epoch:
            return fenced, None
        if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return errors.CONCURRENT_TRANSACTIONS, None
        return errors.NONE, meta

    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: list[tuple[str, int]], fenced: int, verify_only: bool = False) -> dict[tuple[str, int], int]:
        """AddPartitionsToTxn: every partition's error (all or none are added)."""
        error, meta = self._check_producer(transactional_id, producer_id, producer_epoch, fenced)
        if error:
            return {tp: error for tp in partitions}
        if verify_only:
            return {tp: errors.NONE if meta.state == ONGOING and tp in meta.partitions else errors.INVALID_TXN_STATE
                    for tp in partitions}
        unknown = {tp for tp in partitions if tp not in self.logs.logs}
        if unknown:
            return {tp: errors.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else errors.OPERATION_NOT_ATTEMPTED
                    for tp in partitions}
        if meta.state == ONGOING and set(partitions) <= meta.partitions:
            return {tp: errors.NONE for tp in partitions}
        self._open(meta, partitions=meta.partitions | set(partitions))
        return {tp: errors.NONE for tp in partitions}

    def _open(self, meta: TransactionMetadata, **changes) -> None:
        if meta.state != ONGOING:
            changes.update(state=ONGOING, start_ms=self.clock())
        self._save(meta, **changes)

    def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int, group: str, fenced: int) -> int:
        """AddOffsetsToTxn: the group's offsets will be committed with the transaction."""
        error, meta = self._check_producer(transactional_id, producer_id, producer_epoch, fenced)
        if error:
            return error
        if not group:
            return errors.INVALID_GROUP_ID
        if meta.state != ONGOING or group not in meta.groups:
            self._open(meta, groups=meta.groups | {group})
        return errors.NONE

    def txn_offset_commit(self, transactional_id: str, group: str, producer_id: int, producer_epoch: int,
                          offsets: dict[tuple[str, int], CommittedOffset], fenced: int) -> int:
        """TxnOffsetCommit: offsets held until the transaction ends."""
        error, meta = self._check_producer(transactional_id, producer_id, producer_epoch, fenced)
        if error:
            return error
        if meta.state != ONGOING or group not in meta.groups:
            return errors.INVALID_TXN_STATE
        pending = {g: dict(o) for g, o in meta.pending_offsets.items()}
        pending.setdefault(group, {}).update(offsets)
        self._save(meta, pending_offsets=pending)
        return errors.NONE

    def pending_offsets(self, group: str) -> set[tuple[str, int]]:
        """Partitions of `group` with transactional offsets not yet committed or aborted
        (OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for them)."""
        found: set[tuple[str, int]] = set()
        for meta in self.transactions.values():
            if meta.state == ONGOING and group in meta.pending_offsets:
                found.update(meta.pending_offsets[group])
        return found

    def verify(self, topic: str, partition: int, header) -> None:
        """A transactional batch is accepted only from the producer epoch whose open
        transaction added this partition (KIP-890's verification)."""
        meta = self.by_producer_id.get(header.producer_id)
        if meta is not None and header.producer_epoch < meta.producer_epoch:
            raise InvalidBatch(f"producer {header.producer_id} epoch {header.producer_epoch} is fenced by "
                               f"epoch {meta.producer_epoch}", errors.INVALID_PRODUCER_EPOCH)
        if meta is None or meta.state != ONGOING or (topic, partition) not in meta.partitions \
                or header.producer_epoch != meta.producer_epoch:
            raise InvalidBatch(f"producer {header.producer_id} has no open transaction with "
                               f"{topic}-{partition} added", errors.INVALID_TXN_STATE)

    # -- ending ---------------------------------------------------------------------------------

    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool, fenced: int) -> int:
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return errors.INVALID_PRODUCER_ID_MAPPING
        if producer_epoch != meta.producer_epoch:
            return fenced
        prepared = PREPARE_COMMIT if commit else PREPARE_ABORT
        if meta.state == (COMPLETE_COMMIT if commit else COMPLETE_ABORT):
            return errors.NONE  # a retry of the request that ended it
        if meta.state == prepared:
            self._complete(meta)
            return errors.NONE
        if meta.state != ONGOING:
            return errors.INVALID_TXN_STATE
        self._save(meta, state=prepared)
        self._complete(self.transactions[transactional_id])
        return errors.NONE

    def _complete(self, meta: TransactionMetadata) -> None:
        """Second phase: a marker on every partition where the producer's transaction is
        open, the offsets committed, then the Complete state. Safe to run again after a
        failure: a partition already marked has no open transaction left. (A partition
        added but never written to needs no marker: its verification fences a stale
        producer.)"""
        commit = meta.state == PREPARE_COMMIT
        for topic, partition in sorted(meta.partitions):
            plog = self.logs.logs.get((topic, partition))
            if plog is not None and meta.producer_id in plog.producers.ongoing:
                plog.append_marker(meta.producer_id, meta.producer_epoch, commit, 0)
        if commit:
            for group, offsets in meta.pending_offsets.items():
                if offsets:
                    self.commit_offsets(group, offsets)
        self._save(meta, state=COMPLETE_COMMIT if commit else COMPLETE_ABORT, partitions=set(), groups=set(),
                   pending_offsets={})
        self.notify()

    def write_markers(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                      partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """WriteTxnMarkers (kafka-transactions abort): markers written as asked."""
        results = {}
        for tp in partitions:
            plog = self.logs.logs.get(tp)
            if plog is None:
                results[tp] = errors.UNKNOWN_TOPIC_OR_PARTITION
                continue
            try:
                plog.append_marker(producer_id, producer_epoch, commit, coordinator_epoch)
                results[tp] = errors.NONE
            except InvalidBatch as exc:
                results[tp] = exc.error_code
            except OSError as exc:
                log.error("cannot write a transaction marker to %s-%d: %s", tp[0], tp[1], exc.strerror or exc)
                results[tp] = errors.KAFKA_STORAGE_ERROR
        self.notify()
        return results

    def tick(self) -> None:
        """Abort transactions open longer than their timeout, fencing their producer."""
        now = self.clock()
        for meta in list(self.transactions.values()):
            if meta.state == ONGOING and meta.start_ms >= 0 and now - meta.start_ms > meta.timeout_ms:
                log.info("transaction %s timed out after %d ms: aborting it", meta.transactional_id, meta.timeout_ms)
                self._abort_with_bump(meta)

    # -- describing ---------------------------------------------------------------------------------

    def list(self, states: list[str], producer_ids: list[int], min_duration_ms: int, pattern: str | None) -> list[TransactionMetadata]:
        now = self.clock()
        regex = re.compile(pattern) if pattern else None
        return [
            meta for meta in sorted(self.transactions.values(), key=lambda m: m.transactional_id)
            if (not states or meta.state in states)
            and (not producer_ids or meta.producer_id in producer_ids)
            and (min_duration_ms < 0 or (meta.state == ONGOING and now - meta.start_ms >= min_duration_ms))
            and (regex is None or regex.fullmatch(meta.transactional_id))
        ]
