"""Idempotent and transactional producer state of one partition (Kafka's
ProducerStateManager).

Per producer id the epoch and the last five batches' sequence and offset ranges are kept:
a retried batch that matches one of them is a duplicate and is answered with the offsets it
got the first time; any other gap in the sequence is refused. A producer's open transaction
is its first offset since its last marker: the lowest of these is the partition's last
stable offset. The state is rebuilt on start from a snapshot (written at clean shutdown and
at segment roll) plus the batches after it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import cast

from kctl.broker.protocol import errors
from kctl.messages.records import BatchHeader, InvalidBatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NotRequired, TypedDict

    # (first_sequence, last_sequence, first_offset, last_offset)
    _BatchRange = tuple[int, int, int, int]

    class _ProducerJson(TypedDict):
        """A producer's entry in the snapshot (the three optional keys are absent from older ones)."""
        epoch: int
        batches: list[Sequence[int]]  # each a _BatchRange: written as a tuple, read back as a list
        last_timestamp: NotRequired[int]
        txn_first_offset: NotRequired[int]
        coordinator_epoch: NotRequired[int]

RETAINED_BATCHES = 5
_INT32_MAX = 0x7FFFFFFF


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    # (first_sequence, last_sequence, first_offset, last_offset), oldest first
    batches: deque[_BatchRange] = field(default_factory=lambda: deque(maxlen=RETAINED_BATCHES))
    last_timestamp: int = -1
    # First offset of the producer's open transaction here, -1 when none is open.
    current_txn_first_offset: int = -1
    coordinator_epoch: int = -1


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction ended by a marker: its first offset and the marker's offset."""
    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        # producer id -> first offset of its open transaction (ordered by first offset)
        self.ongoing: dict[int, int] = {}

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction: the last stable offset."""
        return min(self.ongoing.values()) if self.ongoing else None

    def check(self, header: BatchHeader) -> tuple[int, int] | None:
        """The original (first, last) offsets when the batch is a duplicate, else None.

        Raises InvalidBatch with the Kafka error for a fenced epoch or a sequence gap."""
        pid = header.producer_id
        if pid < 0 or header.base_sequence < 0:
            return None
        entry = self.producers.get(pid)
        if entry is None:
            return None
        if header.producer_epoch < entry.epoch:
            raise InvalidBatch(f"producer {pid} epoch {header.producer_epoch} is older than "
                               f"{entry.epoch}", errors.INVALID_PRODUCER_EPOCH)
        if header.producer_epoch == entry.epoch:
            for first_seq, last_seq, first_offset, last_offset in entry.batches:
                if first_seq == header.base_sequence and last_seq == header.last_sequence:
                    return first_offset, last_offset
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise InvalidBatch(f"producer {pid} new epoch {header.producer_epoch} starts at "
                                   f"sequence {header.base_sequence}, not 0",
                                   errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
            return None
        if entry.batches:
            expected = (entry.batches[-1][1] + 1) & _INT32_MAX
            if header.base_sequence != expected:
                raise InvalidBatch(f"producer {pid} sent sequence {header.base_sequence}, "
                                   f"expected {expected}", errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
        return None

    def update(self, header: BatchHeader) -> None:
        """Record an appended data batch (offsets already assigned)."""
        pid = header.producer_id
        if pid < 0:
            return
        entry = self._entry(pid, header.producer_epoch)
        if header.base_sequence >= 0:
            entry.batches.append((header.base_sequence, header.last_sequence,
                                  header.base_offset, header.last_offset))
        entry.last_timestamp = header.max_timestamp
        if header.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = header.base_offset
            self.ongoing[pid] = header.base_offset

    def _entry(self, pid: int, epoch: int) -> ProducerEntry:
        entry = self.producers.get(pid)
        if entry is None or epoch > entry.epoch:
            # A new epoch starts its sequences over; an open transaction stays open until
            # its marker (the coordinator bumps the epoch when it aborts one).
            old = entry
            entry = self.producers[pid] = ProducerEntry(epoch)
            if old is not None:
                entry.current_txn_first_offset = old.current_txn_first_offset
                entry.coordinator_epoch = old.coordinator_epoch
        return entry

    def check_marker(self, producer_id: int, producer_epoch: int) -> None:
        """Raise InvalidBatch when a marker's epoch is older than the producer's."""
        entry = self.producers.get(producer_id)
        if entry is not None and producer_epoch < entry.epoch:
            raise InvalidBatch(f"marker for producer {producer_id} has epoch {producer_epoch}, "
                               f"older than {entry.epoch}", errors.INVALID_PRODUCER_EPOCH)

    def complete(self, header: BatchHeader, aborted: bool, coordinator_epoch: int) -> CompletedTxn | None:
        """Record an appended end-transaction marker; the transaction it ended, if one was
        open here."""
        pid = header.producer_id
        entry = self._entry(pid, header.producer_epoch)
        entry.last_timestamp = header.max_timestamp
        entry.coordinator_epoch = coordinator_epoch
        first = entry.current_txn_first_offset
        entry.current_txn_first_offset = -1
        self.ongoing.pop(pid, None)
        if first < 0:
            return None
        return CompletedTxn(pid, first, header.base_offset, aborted)

    def to_json(self) -> dict[str, _ProducerJson]:  # by producer id
        return {str(pid): {"epoch": e.epoch, "batches": list(e.batches),
                           "last_timestamp": e.last_timestamp,
                           "txn_first_offset": e.current_txn_first_offset,
                           "coordinator_epoch": e.coordinator_epoch}
                for pid, e in self.producers.items()}

    def load_json(self, data: dict[str, _ProducerJson]) -> None:
        for pid, value in data.items():
            entry = ProducerEntry(value["epoch"], last_timestamp=value.get("last_timestamp", -1),
                                  current_txn_first_offset=value.get("txn_first_offset", -1),
                                  coordinator_epoch=value.get("coordinator_epoch", -1))
            entry.batches.extend(cast("_BatchRange", tuple(b)) for b in value["batches"])
            self.producers[int(pid)] = entry
            if entry.current_txn_first_offset >= 0:
                self.ongoing[int(pid)] = entry.current_txn_first_offset
