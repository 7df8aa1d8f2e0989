"""Committed offsets of every group, kept in an append-only journal that survives restarts.

Kafka keeps these in the compacted `__consumer_offsets` topic; a single node needs only the
same guarantee: a commit answered with success is on disk (in the page cache, which outlives
the broker process) before the response is sent. The journal holds one JSON object per line
and is compacted into a fresh file on every start:

    {"commit": group, "offsets": [[topic, partition, offset, leader_epoch, metadata, ms], ...]}
    {"delete_group": group}
    {"delete_offsets": group, "partitions": [[topic, partition], ...]}

A torn last line (the broker killed mid-write) is ignored, as Kafka ignores a torn batch.
A write that fails (disk full) is cut back off the journal and not applied, so the next
line starts clean and the error is what the client is told.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..storage.journal import Journal

JOURNAL = "consumer-offsets.jsonl"


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp: int


class OffsetStore:
    def __init__(self, data_dir: Path):
        self.journal = Journal(data_dir / JOURNAL)
        self.groups: dict[str, dict[tuple[str, int], CommittedOffset]] = {}

    @property
    def path(self) -> Path:
        return self.journal.path

    def open(self) -> int:
        """Replay and compact the journal; returns the number of unreadable lines skipped."""
        return self.journal.open(self._apply, lambda: (_commit_entry(g, o.items()) for g, o in self.groups.items() if o))

    def close(self) -> None:
        self.journal.close()

    def _write(self, entry: dict) -> None:
        self.journal.write(entry)

    def _apply(self, entry: dict) -> None:
        if "commit" in entry:
            group = self.groups.setdefault(entry["commit"], {})
            for topic, partition, offset, epoch, metadata, ms in entry["offsets"]:
                group[(topic, int(partition))] = CommittedOffset(int(offset), int(epoch),
                                                                 metadata, int(ms))
        elif "delete_group" in entry:
            self.groups.pop(entry["delete_group"], None)
        elif "delete_offsets" in entry:
            group = self.groups.get(entry["delete_offsets"], {})
            for topic, partition in entry["partitions"]:
                group.pop((topic, int(partition)), None)
        else:
            raise KeyError("unknown journal entry")

    def commit(self, group: str, offsets: dict[tuple[str, int], CommittedOffset]) -> None:
        if not offsets:
            return
        self._write(_commit_entry(group, offsets.items()))
        self.groups.setdefault(group, {}).update(offsets)

    def delete_group(self, group: str) -> None:
        if group in self.groups:
            self._write({"delete_group": group})
            del self.groups[group]

    def delete_offsets(self, group: str, partitions: list[tuple[str, int]]) -> None:
        offsets = self.groups.get(group)
        if not offsets:
            return
        gone = [p for p in partitions if p in offsets]
        if gone:
            self._write({"delete_offsets": group, "partitions": [list(p) for p in gone]})
        for p in gone:
            del offsets[p]

    def delete_topic(self, topic: str) -> None:
        for group, offsets in self.groups.items():
            self.delete_offsets(group, [p for p in offsets if p[0] == topic])

    def committed(self, group: str) -> dict[tuple[str, int], CommittedOffset]:
        return self.groups.get(group, {})


def _commit_entry(group: str, items) -> dict:
    return {"commit": group, "offsets": [[t, p, o.offset, o.leader_epoch, o.metadata,
                                          o.commit_timestamp] for (t, p), o in items]}
