"""The record shape kctl produces, and the escapes shared by templates and separators."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: ~2.5 ms of a one-line produce
if TYPE_CHECKING:
    from typing import NamedTuple, Protocol

# librdkafka's "no partition": let the partitioner choose.
ANY_PARTITION = -1


if TYPE_CHECKING:
    class ProducerRecord(NamedTuple):
        """One record to produce. timestamp 0 means "now" (librdkafka's CreateTime default)."""

        value: bytes | None
        key: bytes | None = None
        partition: int = ANY_PARTITION
        timestamp: int = 0
        headers: list[tuple[str, bytes | None]] | None = None
else:
    import collections

    # typing's NamedTuple is collections' with annotations: the same at run time.
    ProducerRecord = collections.namedtuple("ProducerRecord", "value key partition timestamp headers",
                                            defaults=(None, ANY_PARTITION, 0, None))
    ProducerRecord.__doc__ = """One record to produce. timestamp 0 means "now" (librdkafka's CreateTime default)."""


if TYPE_CHECKING:
    class ConsumedRecord(Protocol):
        """A consumed record as filters, templates and envelopes read it: Kafka's fields behind
        methods. librdkafka's Message is one as it arrives, so the hot path copies nothing per
        record (200,000 wrapper objects cost ~0.2 s)."""

        def topic(self) -> str | None: ...
        def partition(self) -> int | None: ...
        def offset(self) -> int | None: ...
        def key(self) -> bytes | None: ...
        def value(self) -> bytes | None: ...
        def headers(self) -> list[tuple[str, bytes | None]] | None: ...
        # (timestamp type: 0 none, 1 CreateTime, 2 LogAppendTime; epoch ms)
        def timestamp(self) -> tuple[int, int]: ...
else:
    ConsumedRecord = object  # a type for mypy only


class RecordError(ValueError):
    """An input record kctl cannot read; the message says what is wrong, not where."""


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\"}


def unescape(text: str) -> str:
    r"""Backslash escapes as shells leave them in flags: \n \t \r \0 \\ and \xHH."""
    out = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if nxt == "x" and _is_hex(text[i + 2 : i + 4]):
                out.append(chr(int(text[i + 2 : i + 4], 16)))
                i += 4
                continue
        out.append(char)
        i += 1
    return "".join(out)


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)
