"""Committed offsets of every group, kept in the internal topic `__consumer_offsets` in
Kafka's record format (coordinator/offsets_topic.py), created when a group first needs
it, as a Kafka group coordinator keeps them: a commit is appended to the group's partition of that topic before it is answered,
and the latest record per key wins when the topic is read back on start. The topic is
compacted by the log cleaner; tombstones remove offsets and groups.

Brokers of earlier kctl versions kept the offsets in a JSON-lines journal
(`consumer-offsets.jsonl`); it is read once on start, its offsets written to the topic,
and then removed (a crash in between reads it again: the same offsets again change
nothing). A write that fails (disk full) leaves the log and the offsets as they were, and
the error is what the client is told.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kctl.broker.coordinator import offsets_topic as topic
from kctl.messages import records
from kctl.messages.records import BatchHeader, InvalidBatch

log = logging.getLogger("kctl.broker.coordinator")

LEGACY_JOURNAL = "consumer-offsets.jsonl"


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp: int


class OffsetStore:
    def __init__(self, data_dir: Path, logs, clock: Callable[[], int], partitions: int = topic.PARTITIONS):
        self.data_dir = data_dir
        self.logs = logs  # the LogManager holding __consumer_offsets
        self.clock = clock
        self.partitions = partitions
        self.groups: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        self.notify: Callable[[], None] = lambda: None

    # -- start --------------------------------------------------------------------------------

    def open(self) -> int:
        """Read the topic back (when there is one), migrate a legacy journal. Returns the
        number of records that could not be read."""
        skipped = 0
        if topic.TOPIC in self.logs.topics:
            self.partitions = self.logs.topics[topic.TOPIC].partitions
            for partition in range(self.partitions):
                skipped += self._replay(self.logs.logs[(topic.TOPIC, partition)])
        self._migrate_journal()
        return skipped

    def ensure_topic(self) -> None:
        """Create the topic when a group first needs it (FindCoordinator, a commit), as
        Kafka does: a broker nobody uses as a group coordinator starts without it."""
        if topic.TOPIC not in self.logs.topics:
            self.logs.create_topic(topic.TOPIC, self.partitions, dict(topic.CONFIGS))
            log.info("created %s with %d partitions", topic.TOPIC, self.partitions)

    def close(self) -> None:
        """Nothing of its own to close: the topic's logs are the LogManager's."""

    def _replay(self, plog) -> int:
        skipped = 0
        for segment in plog.segments:
            for batch, header in segment.batches_from(max(plog.log_start_offset, segment.base_offset)):
                if header.is_control:
                    continue
                for record in records.iter_records(batch, header):
                    try:
                        self._apply(record.key, record.value)
                    except (ValueError, IndexError, UnicodeDecodeError, TypeError):
                        skipped += 1
        if skipped:
            log.warning("%s-%d: skipped %d unreadable records", plog.topic, plog.partition, skipped)
        return skipped

    def _apply(self, key: bytes | None, value: bytes | None) -> None:
        parsed = topic.parse_key(key) if key else None
        if parsed is None or parsed[0] != "offset":
            return  # group metadata: the coordinators keep groups in memory
        _kind, group, name, partition = parsed
        if value is None:
            self.groups.get(group, {}).pop((name, partition), None)
            return
        offset, epoch, metadata, timestamp = topic.parse_offset_value(value)
        self.groups.setdefault(group, {})[(name, partition)] = CommittedOffset(offset, epoch, metadata, timestamp)

    def _migrate_journal(self) -> None:
        journal = self.data_dir / LEGACY_JOURNAL
        try:
            lines = journal.read_bytes().splitlines()
        except FileNotFoundError:
            return
        legacy: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a torn last line
            if "commit" in entry:
                group = legacy.setdefault(entry["commit"], {})
                for name, partition, offset, epoch, metadata, ms in entry["offsets"]:
                    group[(name, int(partition))] = CommittedOffset(int(offset), int(epoch), metadata, int(ms))
            elif "delete_group" in entry:
                legacy.pop(entry["delete_group"], None)
            elif "delete_offsets" in entry:
                for name, partition in entry["partitions"]:
                    legacy.get(entry["delete_offsets"], {}).pop((name, int(partition)), None)
        for group, offsets in legacy.items():
            if offsets:
                self.commit(group, offsets)
        for name, partition in self.logs.logs:
            if name == topic.TOPIC:
                self.logs.logs[(name, partition)].flush()
        journal.unlink()
        log.info("moved the committed offsets of %d groups from %s to %s", len(legacy), LEGACY_JOURNAL, topic.TOPIC)

    # -- writing --------------------------------------------------------------------------------

    def _write(self, group: str, pairs: list[tuple[bytes, bytes | None]]) -> None:
        """Append the records as one batch to the group's partition, or nothing: raises
        OSError (the disk) with the log as it was."""
        if not pairs:
            return
        self.ensure_topic()
        now = self.clock()
        block = b"".join(records.encode_record(i, 0, key, value, b"\x00") for i, (key, value) in enumerate(pairs))
        header = BatchHeader(0, 0, 0, 2, 0, 0, len(pairs) - 1, now, now, -1, -1, -1, len(pairs))
        plog = self.logs.logs[(topic.TOPIC, topic.partition_for(group, self.partitions))]
        try:
            plog.append(bytes(records.build_batch(header, block, len(pairs))))
        except InvalidBatch as exc:  # kctl's own batch: a bug, not the client's fault
            raise OSError(f"offsets record refused: {exc}") from exc
        self.notify()

    def commit(self, group: str, offsets: dict[tuple[str, int], CommittedOffset]) -> None:
        if not offsets:
            return
        self._write(group, [(topic.offset_key(group, t, p),
                             topic.offset_value(o.offset, o.leader_epoch, o.metadata, o.commit_timestamp))
                            for (t, p), o in offsets.items()])
        self.groups.setdefault(group, {}).update(offsets)

    def delete_group(self, group: str) -> None:
        offsets = self.groups.get(group)
        if offsets is None:
            return
        self._write(group, [(topic.offset_key(group, t, p), None) for t, p in offsets] + [(topic.group_key(group), None)])
        del self.groups[group]

    def delete_offsets(self, group: str, partitions: list[tuple[str, int]]) -> None:
        offsets = self.groups.get(group)
        if not offsets:
            return
        gone = [p for p in partitions if p in offsets]
        self._write(group, [(topic.offset_key(group, t, p), None) for t, p in gone])
        for p in gone:
            del offsets[p]

    def delete_topic(self, name: str) -> None:
        for group, offsets in list(self.groups.items()):
            self.delete_offsets(group, [p for p in offsets if p[0] == name])

    def write_group(self, group: str, protocol_type: str, generation: int, protocol: str | None, leader: str | None,
                    members: list[topic.GroupMember]) -> None:
        """A classic group's generation, as Kafka records it (best effort: the coordinator
        keeps groups in memory; the record is for tools that read the topic)."""
        try:
            self._write(group, [(topic.group_key(group),
                                 topic.group_value(protocol_type, generation, protocol, leader, self.clock(), members))])
        except OSError as exc:
            log.warning("group %s: metadata record not written: %s", group, exc.strerror or exc)

    def committed(self, group: str) -> dict[tuple[str, int], CommittedOffset]:
        return self.groups.get(group, {})
