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

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from ..storage.files import write_all

log = logging.getLogger("kctl.broker.coordinator")

JOURNAL = "consumer-offsets.jsonl"


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp: int


class OffsetStore:
    def __init__(self, data_dir: Path):
        self.path = data_dir / JOURNAL
        self.groups: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        self._fd: int | None = None
        self._size = 0

    def open(self) -> int:
        """Replay and compact the journal; returns the number of unreadable lines skipped."""
        skipped = 0
        try:
            with open(self.path, "rb") as handle:
                for line in handle:
                    try:
                        self._apply(json.loads(line))
                    except (ValueError, KeyError, TypeError):
                        skipped += 1
        except FileNotFoundError:
            pass
        if skipped:
            log.warning("skipped %d unreadable lines in %s", skipped, self.path)
        try:
            self._compact()
        except OSError as exc:  # a full disk: the journal as it is stays valid
            log.warning("%s not compacted: %s", self.path, exc.strerror or exc)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._size = os.fstat(self._fd).st_size
        return skipped

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _compact(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(tmp, "w") as handle:
                for group, offsets in self.groups.items():
                    if offsets:
                        handle.write(json.dumps(_commit_entry(group, offsets.items())) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def _write(self, entry: dict) -> None:
        """Append one line, or nothing: raises OSError with the journal unchanged."""
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        try:
            write_all(self._fd, line, self._size)
        except OSError:
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:  # the next line is written at the same place anyway
                pass
            raise
        self._size += len(line)

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
