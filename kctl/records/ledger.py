"""Which records of a partition a redrive has still to send, kept in its group's committed
offset and the metadata committed with it (OffsetCommit's `committed_metadata`).

A redrive sends a record back, or holds it back: --where left it out, it names no topic,
a topic that does not exist, or the dead-letter topic itself. A held-back record must be
sent by a later run (without the filter, with --create-topics...), and a record sent must
never be sent again. So the committed offset is the first record still to send, not the
end of what was read, and the metadata lists the records at or after it that were sent
already, as run lengths from the committed offset:

    kctl-redrive/1:T1.S1.T2.S2...   (base 36)

T1 offsets still to send from the committed offset on, then S1 done, T2 to send, ... up
to the open end, from which everything is still to send. No metadata (what Kafka's tools
and older kctl commit) means: everything from the committed offset on. Offsets without a
record (transaction markers, compacted records) may fall in either kind of run.
"""

from __future__ import annotations

import re

PREFIX = "kctl-redrive/1:"
# Kafka's offset.metadata.max.bytes is 4096 by default; what a ledger may take of it, and
# the room a redrive keeps for the runs that grow after its last check (two run lengths of
# up to 13 base-36 digits, an offset's most, and their separators).
BUDGET = 4000
SLACK = 28
_RUNS = re.compile(r"[0-9a-z]+(\.[0-9a-z]+)*")


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, digit = divmod(number, 36)
        out = digits[digit] + out
        if not number:
            return out


class Ledger:
    """Offsets still to send: finite `ranges` ([low, high), ascending, apart) below `tail`,
    and every offset from `tail` on."""

    __slots__ = ("ranges", "tail")

    def __init__(self, ranges: list[tuple[int, int]], tail: int):
        self.ranges = ranges
        self.tail = tail

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ledger) and (self.ranges, self.tail) == (other.ranges, other.tail)

    def __repr__(self) -> str:
        return f"Ledger({self.ranges!r}, {self.tail})"

    @classmethod
    def committed(cls, offset: int | None, metadata: str | None) -> Ledger:
        """The ledger a group's commit says: nothing committed is everything to send."""
        if offset is None or offset < 0:
            return cls([], 0)
        metadata = metadata.rstrip("\x00") if metadata else metadata  # librdkafka commits a C string's NUL
        if not metadata or not metadata.startswith(PREFIX) or not _RUNS.fullmatch(metadata[len(PREFIX):]):
            return cls([], offset)
        runs = [int(n, 36) for n in metadata[len(PREFIX):].split(".")]
        if len(runs) % 2 or not all(runs):
            return cls([], offset)  # not a ledger kctl wrote: the offset alone
        ranges, at = [], offset
        for todo, done in zip(runs[::2], runs[1::2]):
            ranges.append((at, at + todo))
            at += todo + done
        return cls(ranges, at)

    def todo(self, offset: int) -> bool:
        """Whether the record at `offset` is still to send."""
        return offset >= self.tail or self.held(offset)

    def held(self, offset: int) -> bool:
        """Whether the record at `offset` was held back (in a finite range, not the open end)."""
        return any(low <= offset < high for low, high in self.ranges)

    def after(self, start: int, end: int, held: list[tuple[int, int]]) -> Ledger:
        """This ledger once the offsets [start, end) were read: those before `start` are left
        behind (--from), those read and not `held` back are done."""
        carried = [(max(low, end), high) for low, high in self.ranges if high > end]
        ranges = [r for r in held if r[0] < r[1]] + carried
        tail = max(self.tail, end)
        if ranges and ranges[-1][1] >= tail:  # a held range reaching the open end joins it
            tail = min(tail, ranges.pop()[0])
        return Ledger(_merged(ranges), tail)

    def commit(self) -> tuple[int, str | None]:
        """The offset and metadata to commit: the first offset still to send, and the runs."""
        if not self.ranges:
            return self.tail, None
        runs: list[int] = []
        at = self.ranges[0][0]
        for low, high in self.ranges:  # apart (after()): a run done between each two
            if low > at:
                runs.append(low - at)
            runs.append(high - low)
            at = high
        runs.append(self.tail - at)
        return self.ranges[0][0], PREFIX + ".".join(_base36(n) for n in runs)

    def size(self) -> int:
        """The metadata's length in bytes."""
        metadata = self.commit()[1]
        return len(metadata) if metadata else 0


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if out and low <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return out
