"""Idempotent producer state of one partition (Kafka's ProducerStateManager).

Per producer id the epoch and the last five batches' sequence and offset ranges are kept:
a retried batch that matches one of them is a duplicate and is answered with the offsets it
got the first time; any other gap in the sequence is refused. The state is rebuilt on start
from a snapshot (written at clean shutdown and at segment roll) plus the batches after it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..protocol import errors
from ..protocol.records import BatchHeader, InvalidBatch

RETAINED_BATCHES = 5
_INT32_MAX = 0x7FFFFFFF


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    # (first_sequence, last_sequence, first_offset, last_offset), oldest first
    batches: deque = field(default_factory=lambda: deque(maxlen=RETAINED_BATCHES))
    last_timestamp: int = -1


class ProducerStateManager:
    def __init__(self):
        self.producers: dict[int, ProducerEntry] = {}

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
        """Record an appended batch (offsets already assigned)."""
        pid = header.producer_id
        if pid < 0:
            return
        entry = self.producers.get(pid)
        if entry is None or header.producer_epoch > entry.epoch:
            entry = self.producers[pid] = ProducerEntry(header.producer_epoch)
        if header.base_sequence >= 0:
            entry.batches.append((header.base_sequence, header.last_sequence,
                                  header.base_offset, header.last_offset))
        entry.last_timestamp = header.max_timestamp

    def to_json(self) -> dict:
        return {str(pid): {"epoch": e.epoch, "batches": list(e.batches),
                           "last_timestamp": e.last_timestamp}
                for pid, e in self.producers.items()}

    def load_json(self, data: dict) -> None:
        for pid, value in data.items():
            entry = ProducerEntry(value["epoch"], last_timestamp=value.get("last_timestamp", -1))
            entry.batches.extend(tuple(b) for b in value["batches"])
            self.producers[int(pid)] = entry
