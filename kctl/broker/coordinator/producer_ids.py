"""Producer id allocation for InitProducerId, never reusing an id across restarts.

Ids are handed out from blocks; the end of the current block is persisted before any id
from it is used, so a restarted broker starts past every id it may have given out (a reused
id would collide with the producer state stored in the logs).
"""

from __future__ import annotations

from pathlib import Path

BLOCK = 1000
FILE = "producer-ids"


class ProducerIdManager:
    def __init__(self, data_dir: Path):
        self.path = data_dir / FILE
        self._next = self._block_end = 0
        self.epochs: dict[int, int] = {}

    def open(self) -> None:
        try:
            self._next = self._block_end = int(self.path.read_text().strip() or 0)
        except (FileNotFoundError, ValueError):
            self._next = self._block_end = 0

    def allocate(self) -> int:
        if self._next >= self._block_end:
            from kctl.broker.storage.manager import atomic_write
            self._block_end = self._next + BLOCK
            atomic_write(self.path, f"{self._block_end}\n")
        pid = self._next
        self._next += 1
        return pid

    def init(self, producer_id: int, producer_epoch: int) -> tuple[int, int]:
        """(producer_id, epoch) for a new idempotent producer, or the next epoch for one
        re-initialising (KIP-360: librdkafka and Java send their current id and epoch to
        recover). Transactional producers get theirs from the transaction coordinator."""
        if producer_id >= 0 and producer_epoch >= 0 and producer_epoch < 32766:
            epoch = max(self.epochs.get(producer_id, producer_epoch), producer_epoch) + 1
            self.epochs[producer_id] = epoch
            return producer_id, epoch
        pid = self.allocate()
        self.epochs[pid] = 0
        return pid, 0
