"""Format strings for records, in both directions.

Output (consume): `%t` topic, `%p` partition, `%o` offset, `%k` key, `%v` value,
`%h` headers as `k=v,k2=v2`, `%T` timestamp (epoch ms), `%d` timestamp (ISO-8601 UTC),
`%K` / `%S` key / value size in bytes (-1 for null), `%%` a percent sign. `%k`, `%v` and
`%h` take an encoding: `%v{hex}`, `%k{base64}`, `%h{base64}` (header values); the default
writes the bytes as they are. Backslash escapes (`\\n`, `\\t`, `\\0`, `\\xHH`) work in the
text between fields. kcat's and rpk's `-f` use the same letters.

Input (produce): the same string describes how one input record is split into fields:
`%k`, `%v`, `%p`, `%T` (epoch ms or any kctl time), `%h` (`k=v,...`), and `%t`, `%o`,
`%d`, `%K`, `%S` which are read and ignored, so a line written by `consume -f` can be fed
back through `produce -f` with the same string. Each field runs up to the first
occurrence of the text that follows it; the last field takes the rest of the record.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kctl.records.model import ANY_PARTITION, ConsumedRecord, ProducerRecord, RecordError, unescape

_FIELD = re.compile(r"%(.)(?:\{(\w+)\})?", re.DOTALL)
# The same letters both ways: input reads and ignores the ones a record cannot set.
FIELDS = frozenset("tpokvhTdKS")
_ENCODED = frozenset("kvh")
ENCODINGS = ("raw", "hex", "base64")


@dataclass(frozen=True)
class Field:
    letter: str
    encoding: str = "raw"


Part = str | Field


class TemplateError(ValueError):
    pass


def parse(template: str) -> list[Part]:
    """The template as literal strings and Fields, escapes resolved."""
    parts: list[Part] = []
    position = 0
    for match in _FIELD.finditer(template):
        if match.start() > position:
            parts.append(unescape(template[position : match.start()]))
        letter, encoding = match.group(1), match.group(2)
        position = match.end()
        if letter == "%":
            parts.append("%")
            continue
        if letter not in FIELDS:
            raise TemplateError(f"unknown field %{letter} (known: {' '.join('%' + c for c in sorted(FIELDS))} %%)")
        if encoding is not None:
            if letter not in _ENCODED:
                raise TemplateError(f"%{letter} takes no encoding; only %k, %v and %h do")
            if encoding not in ENCODINGS:
                raise TemplateError(f"unknown encoding {{{encoding}}} for %{letter} (known: {', '.join(ENCODINGS)})")
        parts.append(Field(letter, encoding or "raw"))
    if position < len(template):
        parts.append(unescape(template[position:]))
    # Adjacent literals (from %%) read better merged, and input parsing relies on it.
    merged: list[Part] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    return merged


# -- output ---------------------------------------------------------------------------------


def _encode(data: bytes | None, encoding: str) -> bytes:
    if data is None:
        return b""
    if encoding == "hex":
        return data.hex().encode()
    if encoding == "base64":
        return base64.b64encode(data)
    return data


def _headers_text(headers: Any, encoding: str) -> bytes:
    if not headers:
        return b""
    return b",".join(k.encode() + b"=" + _encode(v, encoding) for k, v in headers)


def _iso(ms: int) -> bytes:
    from kctl.timespec import format_instant

    return (format_instant(ms) or "").encode()


def _getter(field: Field) -> Callable[[Any], bytes]:
    letter, enc = field.letter, field.encoding
    if letter == "v":
        if enc == "raw":
            return lambda m: m.value() or b""
        return lambda m: _encode(m.value(), enc)
    if letter == "k":
        if enc == "raw":
            return lambda m: m.key() or b""
        return lambda m: _encode(m.key(), enc)
    if letter == "t":
        return lambda m: m.topic().encode()
    if letter == "p":
        return lambda m: b"%d" % m.partition()
    if letter == "o":
        return lambda m: b"%d" % m.offset()
    if letter == "T":
        return lambda m: b"%d" % m.timestamp()[1]
    if letter == "d":
        return lambda m: _iso(m.timestamp()[1])
    if letter == "h":
        return lambda m: _headers_text(m.headers(), enc)
    if letter == "K":
        return lambda m: b"%d" % (-1 if m.key() is None else len(m.key()))
    if letter == "S":
        return lambda m: b"%d" % (-1 if m.value() is None else len(m.value()))
    raise AssertionError(letter)


def compile_output(template: str) -> Callable[[ConsumedRecord], bytes]:
    """A function from a consumed record to its output bytes."""
    return _render(parse(template))


def _constant(text: bytes) -> Callable[[Any], bytes]:
    return lambda _m: text


def _render(parts: list[Part]) -> Callable[[Any], bytes]:
    getters = [_constant(p.encode()) if isinstance(p, str) else _getter(p) for p in parts]
    return lambda m: b"".join([g(m) for g in getters])


def compile_batch(template: str) -> Callable[[list[Any]], bytes]:
    """A function from a batch of messages to their output bytes, joined."""
    parts = parse(template)
    if parts == [Field("v"), "\n"]:
        # The default, and the hot path: one join over the values, the last newline from
        # a trailing empty item (adding it after the join copied the whole batch again:
        # ~0.1 s for 200 MB here). A null value (None) makes join raise: only then is
        # the batch walked in Python. (A comprehension: on Python 3.11, 7 ms for 200,000
        # librdkafka Messages where map(Message.value, ...) took 11 ms.)
        def values(messages: list[ConsumedRecord]) -> bytes:
            items: list = [m.value() for m in messages]
            items.append(b"")
            try:
                return b"\n".join(items)
            except TypeError:
                return b"\n".join([v or b"" for v in items])

        return values
    render = _render(parts)
    return lambda messages: b"".join([render(m) for m in messages])


# -- input ----------------------------------------------------------------------------------


def _decode(text: bytes, encoding: str, what: str) -> bytes:
    try:
        if encoding == "hex":
            return bytes.fromhex(text.decode("ascii"))
        if encoding == "base64":
            return base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise RecordError(f"{what} is not valid {encoding}") from None
    return text


def _int(text: bytes, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise RecordError(f"{what} {text[:40]!r} is not an integer") from None


def _timestamp(text: bytes) -> int:
    if text.isdigit():
        return int(text)
    from kctl.errors import UsageError
    from kctl.timespec import parse_instant

    try:
        return parse_instant(text.decode(errors="replace"))
    except UsageError:
        raise RecordError(f"timestamp {text[:40]!r} is not epoch milliseconds or an ISO-8601 time") from None


def parse_headers(text: bytes, encoding: str = "raw") -> list[tuple[str, bytes | None]]:
    """`k=v,k2=v2` (as %h writes it) into header pairs."""
    if not text:
        return []
    headers: list[tuple[str, bytes | None]] = []
    for item in text.split(b","):
        key, sep, value = item.partition(b"=")
        if not sep or not key:
            raise RecordError(f"header {item[:40]!r} is not of the form key=value")
        headers.append((key.decode(errors="replace"), _decode(value, encoding, f"header {key.decode(errors='replace')}")))
    return headers


class InputTemplate:
    """Splits one input record (bytes, delimiter removed) into a ProducerRecord."""

    def __init__(self, template: str, *, null_marker: bytes | None = None, parts: list[Part] | None = None):
        if parts is None:
            # A trailing newline ends records in consume's templates; here the delimiter does.
            parts = parse(template[:-2] if template.endswith("\\n") else template.rstrip("\n"))
        self.parts = parts
        self.null_marker = null_marker
        previous_field = False
        for part in self.parts:
            is_field = isinstance(part, Field)
            if is_field and previous_field:
                raise TemplateError("two fields need text between them, e.g. '%k\\t%v'")
            previous_field = is_field
        letters = [p.letter for p in self.parts if isinstance(p, Field)]
        if "v" not in letters:
            raise TemplateError("an input template needs %v (the value)")
        for letter in set(letters):
            if letters.count(letter) > 1:
                raise TemplateError(f"%{letter} appears twice")
        self.fast_separator = self._fast_separator()

    @classmethod
    def key_value(cls, separator: str, *, null_marker: bytes | None = None) -> InputTemplate:
        """KEY SEPARATOR VALUE, the separator taken literally."""
        return cls("", null_marker=null_marker, parts=[Field("k"), separator, Field("v")])

    def _fast_separator(self) -> bytes | None:
        """The separator when the template is just '%k<sep>%v', the usual key/value split."""
        if len(self.parts) == 3 and self.parts[0] == Field("k") and self.parts[2] == Field("v") and isinstance(self.parts[1], str):
            return self.parts[1].encode()
        return None

    def __call__(self, data: bytes) -> ProducerRecord:
        if self.fast_separator is not None:
            key, sep, value = data.partition(self.fast_separator)
            if not sep:
                raise RecordError(f"no key separator {self.fast_separator.decode(errors='replace')!r}")
            return ProducerRecord(self._null(value), self._null(key))
        return self._parse(data)

    def _null(self, data: bytes) -> bytes | None:
        return None if data == self.null_marker else data

    def _parse(self, data: bytes) -> ProducerRecord:
        fields: dict[str, bytes] = {}
        encodings: dict[str, str] = {}
        position = 0
        parts = self.parts
        for index, part in enumerate(parts):
            if isinstance(part, str):
                literal = part.encode()
                if not data.startswith(literal, position):
                    raise RecordError(f"expected {part!r} at byte {position}")
                position += len(literal)
                continue
            if index + 1 < len(parts):
                literal = parts[index + 1].encode()  # type: ignore[union-attr]
                end = data.find(literal, position)
                if end < 0:
                    raise RecordError(f"no {parts[index + 1]!r} after %{part.letter}")
            else:
                end = len(data)
            fields[part.letter] = data[position:end]
            encodings[part.letter] = part.encoding
            position = end
        value: bytes | None = fields["v"]
        key: bytes | None = fields.get("k")
        value = None if value is None or value == self.null_marker else _decode(value, encodings["v"], "value")
        if key is not None:
            key = None if key == self.null_marker else _decode(key, encodings["k"], "key")
        partition = _int(fields["p"], "partition") if "p" in fields else ANY_PARTITION
        timestamp = _timestamp(fields["T"]) if "T" in fields else 0
        headers = parse_headers(fields["h"], encodings["h"]) if "h" in fields else None
        return ProducerRecord(value, key, partition, timestamp, headers)
