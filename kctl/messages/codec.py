"""Kafka's wire format for the messages defined in this package, driven by their JSON
definitions: what a request or response looks like in each version (flexible versions'
compact encodings and tagged fields included) is read from the definition, never written
out by hand per message.

Written here rather than taken from a library because of what the libraries cost to
import, measured on the project's machine: kafka-python's schema-driven codec is the same
idea, but any `import kafka.protocol...` runs kafka-python's package `__init__`, which
imports its whole client (130-230 ms); kio's generated classes cost ~115 ms for four
messages (dataclasses, asyncio). An everyday command's whole budget above Python's floor
is ~25 ms (issue 37); this module and a few definitions cost ~3 ms.

Decoded messages are `Struct`s whose attributes are the fields' names in snake case
(`ErrorCode` -> `error_code`), the names kafka-python gives them; requests are built from
keyword arguments with the same names, and a field left out takes its default.
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Callable
from functools import cache, cached_property

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    # A field's decoder and encoder: the value read from a _Reader, and the value written
    # as chunks of bytes appended to `out`. Field values are whatever the definition says
    # (ints, strings, bytes, UUIDs, lists, Structs).
    Read: TypeAlias = "Callable[[_Reader], Any]"
    Write: TypeAlias = "Callable[[list[bytes], Any], None]"
    # A message's JSON definition, or one of its fields' (kctl/messages/*.json).
    Spec: TypeAlias = "dict[str, Any]"

_HERE = os.path.dirname(__file__)
_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


class CodecError(ValueError):
    """Bytes that are not the message they should be (short, or a length out of range)."""


class Struct:
    """A decoded message or one of its structs: fields as attributes."""

    def __init__(self, **fields: Any):
        self.__dict__.update(fields)

    def __getattr__(self, name: str) -> Any:
        # Only for attributes the message lacks (its fields are in __dict__): said to type
        # checkers, which cannot know a message's fields, as "any field may be read".
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"Struct({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Struct) and self.__dict__ == other.__dict__


def snake(name: str) -> str:
    return _SNAKE.sub("_", name).lower()


# -- versions ---------------------------------------------------------------------------------

def _in_range(spec: str | None, version: int) -> bool:
    """Whether `version` is in a definition's version range ("0+", "3-5", "2", "none")."""
    if spec is None or spec == "none":
        return False
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    low, _, high = spec.partition("-")
    return int(low) <= version <= int(high or low)


def version_range(spec: str) -> tuple[int, int]:
    """(lowest, highest) of a validVersions range."""
    low, _, high = spec.partition("-")
    return int(low), int(high or low)


# -- reading ----------------------------------------------------------------------------------

class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes | memoryview, pos: int = 0):
        self.data = data
        self.pos = pos

    def take(self, size: int) -> bytes:
        end = self.pos + size
        if size < 0 or end > len(self.data):
            raise CodecError(f"message too short: {size} bytes wanted at {self.pos} of {len(self.data)}")
        chunk = bytes(self.data[self.pos:end])
        self.pos = end
        return chunk


def _fixed(fmt: str) -> tuple[Read, Write]:
    packer = struct.Struct(">" + fmt)

    def read(r: _Reader) -> Any:
        try:
            (value,) = packer.unpack_from(r.data, r.pos)
        except struct.error as exc:
            raise CodecError(f"message too short at {r.pos}") from exc
        r.pos += packer.size
        return value

    def write(out: list[bytes], value: Any) -> None:
        out.append(packer.pack(value))

    return read, write


def read_uvarint(r: _Reader) -> int:
    value = shift = 0
    data, pos = r.data, r.pos
    while True:
        if pos >= len(data):
            raise CodecError("message too short in a varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            r.pos = pos
            return value
        shift += 7
        if shift > 63:
            raise CodecError("varint too long")


_ONE_BYTE = [bytes((i,)) for i in range(0x80)]


def write_uvarint(out: list[bytes], value: int) -> None:
    if value < 0x80:  # most lengths and counts: one byte, from a table
        out.append(_ONE_BYTE[value])
        return
    chunk = bytearray()
    while value > 0x7F:
        chunk.append((value & 0x7F) | 0x80)
        value >>= 7
    chunk.append(value)
    out.append(bytes(chunk))


_INT8 = _fixed("b")
_INT16 = _fixed("h")
_INT32 = _fixed("i")
_PRIMITIVES = {
    "bool": (lambda r: bool(_INT8[0](r)), lambda out, v: out.append(b"\x01" if v else b"\x00"), False),
    "int8": (*_INT8, 0),
    "int16": (*_INT16, 0),
    "uint16": (*_fixed("H"), 0),
    "int32": (*_INT32, 0),
    "uint32": (*_fixed("I"), 0),
    "int64": (*_fixed("q"), 0),
    "float64": (*_fixed("d"), 0.0),
}
_FORMATS = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "float64": "d"}
_NULL_UUID = bytes(16)


def _read_uuid(r: _Reader) -> Any:
    import uuid  # only messages with topic ids pay for it

    return uuid.UUID(bytes=r.take(16))


def _write_uuid(out: list[bytes], value: Any) -> None:
    out.append(_NULL_UUID if value is None else getattr(value, "bytes", value))


def _length_prefixed(compact: bool, nullable: bool, what: str) -> tuple[Read, Write]:
    """Reader and writer of a length and that many bytes (a string decodes them as UTF-8)."""

    def read_length(r: _Reader) -> int:
        if compact:
            first = r.data[r.pos] if r.pos < len(r.data) else 0x80
            if first < 0x80:  # a length below 127: one byte (read inline, the hot path)
                r.pos += 1
                return first - 1
            return read_uvarint(r) - 1
        return _INT16[0](r) if what == "string" else _INT32[0](r)

    def read(r: _Reader) -> Any:
        size = read_length(r)
        if size < 0:
            if not nullable:
                raise CodecError(f"null {what} where the definition allows none")
            return None
        start = r.pos
        end = start + size
        if end > len(r.data):
            raise CodecError(f"message too short: {size} bytes wanted at {start} of {len(r.data)}")
        r.pos = end
        return str(r.data[start:end], "utf-8") if what == "string" else bytes(r.data[start:end])

    def write(out: list[bytes], value: Any) -> None:
        if value is None:
            if compact:
                out.append(b"\x00")
            else:
                (_INT16 if what == "string" else _INT32)[1](out, -1)
            return
        chunk = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        if compact:
            write_uvarint(out, len(chunk) + 1)
        else:
            (_INT16 if what == "string" else _INT32)[1](out, len(chunk))
        out.append(chunk)

    return read, write


def _read_count(r: _Reader, compact: bool) -> int:
    """An array's length (-1: null): a compact one's unsigned varint holds length + 1."""
    if not compact:
        return _INT32[0](r)
    first = r.data[r.pos] if r.pos < len(r.data) else 0x80
    if first < 0x80:  # fewer than 127 items: one byte, read inline (the hot path)
        r.pos += 1
        return first - 1
    return read_uvarint(r) - 1


def _write_count(out: list[bytes], value: Any, compact: bool) -> None:
    """An array's length as _read_count reads it (None: a null array)."""
    count = -1 if value is None else len(value)
    write_uvarint(out, count + 1) if compact else _INT32[1](out, count)


def _fixed_array(fmt: str, compact: bool, nullable: bool) -> tuple[Read, Write]:
    """Reader and writer of an array of fixed-size numbers (replica lists, partition ids),
    the items read by one struct.unpack_from."""
    size = struct.calcsize(">" + fmt)

    def read(r: _Reader) -> Any:
        count = _read_count(r, compact)
        if count < 0:
            if not nullable:
                raise CodecError("null array where the definition allows none")
            return None
        try:
            values = list(struct.unpack_from(f">{count}{fmt}", r.data, r.pos))
        except struct.error as exc:
            raise CodecError(f"message too short for {count} items at {r.pos}") from exc
        r.pos += count * size
        return values

    def write(out: list[bytes], value: Any) -> None:
        _write_count(out, value, compact)
        if value is not None:
            out.append(struct.pack(f">{len(value)}{fmt}", *value))

    return read, write


# -- compiling a definition for one version ----------------------------------------------------

class _Field:
    __slots__ = ("name", "read", "write", "default", "tag", "fmt")

    def __init__(self, name, read, write, default, tag, fmt=None):
        self.name, self.read, self.write, self.default, self.tag = name, read, write, default, tag
        self.fmt = fmt  # struct format of a fixed-size field read in order (None: any other)


def _default(spec: Spec, kind: str, nullable: bool) -> Any:
    value = spec.get("default")
    if value == "null" and nullable:
        return None
    if kind in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return int(str(value), 0) if value is not None else 0
    if kind == "float64":
        return float(value) if value is not None else 0.0
    if kind == "bool":
        return str(value).lower() == "true" if value is not None else False
    if kind == "string":
        return value if value is not None else ""
    if kind in ("bytes", "records"):
        return b"" if not nullable else None
    if kind == "uuid":
        return None
    return None  # arrays and structs: filled in by the caller


# How many of one struct are read (or written) before a function is written out for it
# (_Compiled.written_read, written_write); until then its fields are taken in a loop.
# Writing one out costs ~0.1 ms (compile()), which the few small answers of a one-shot read
# never earn back (~1.5 ms of a `group list`, issue 59), while a large answer (an
# OffsetFetch of 100,000 offsets) crosses the line at its first array.
_WRITE_OUT_AFTER = 16


class _Compiled:
    """One struct's fields for one version: decode bytes to a Struct, encode keywords."""

    def __init__(self, fields: list[_Field], flexible: bool):
        self.fields = [f for f in fields if f.tag is None]
        self.tagged = {f.tag: f for f in fields if f.tag is not None}
        self.flexible = flexible
        self._reads = self._writes = 0

    def read(self, r: _Reader) -> Struct:
        return self.reader(1)(r)

    def write(self, out: list[bytes], value: Any) -> None:
        self.writer(1)(out, value)

    def reader(self, count: int) -> Callable[[_Reader], Struct]:
        """The decoder for the next `count` structs."""
        self._reads += count
        return self.written_read if self._reads > _WRITE_OUT_AFTER else self._read_fields

    def writer(self, count: int) -> Write:
        """The encoder for the next `count` structs."""
        self._writes += count
        return self.written_write if self._writes > _WRITE_OUT_AFTER else self._write_fields

    def _read_fields(self, r: _Reader) -> Struct:
        """written_read's decoding, field by field."""
        data = r.data
        values: dict[str, Any] = {}
        try:
            for f in self.fields:
                values[f.name] = _fresh(f.default) if f.read is None else f.read(r)
            if self.flexible and not self.tagged:
                if data[r.pos]:
                    self._read_tags(r, {})
                else:
                    r.pos += 1
        except (struct.error, IndexError) as exc:
            raise CodecError(f"message too short at {r.pos}") from exc
        if self.flexible and self.tagged:
            self._read_tags(r, values)
        o = object.__new__(Struct)
        o.__dict__ = values
        return o

    def _write_fields(self, out: list[bytes], value: Any) -> None:
        """written_write's encoding, field by field."""
        get = value.get if type(value) is dict else (lambda name, default: getattr(value, name, default))
        for f in self.fields:
            if f.write is not None:
                v = get(f.name, _MISSING)
                f.write(out, _fresh(f.default) if v is _MISSING else v)
        if self.flexible:
            if self.tagged:
                self._write_tags(out, get)
            else:
                out.append(b"\x00")

    @cached_property
    def written_read(self) -> Callable[[_Reader], Struct]:
        """A decoder written out for this struct: decoding is the hot path of the group
        reads (100,000 committed offsets of 10,000 groups in one OffsetFetch answer), and a
        function written out per struct, with runs of fixed-size fields read by one
        struct.unpack_from, decodes 2-3x faster than a loop over the fields (measured).
        Made when a struct has been read _WRITE_OUT_AFTER times (see there)."""
        env: dict[str, Any] = {"Struct": Struct, "new": object.__new__, "error": struct.error, "CodecError": CodecError,
                               "read_tags": self._read_tags}
        lines = ["def read(r):", "    data = r.data", "    try:"]
        items: list[str] = []
        index = 0
        while index < len(self.fields):
            f = self.fields[index]
            if f.read is None:
                env[f"D{index}"] = f.default
                items.append(f"{f.name!r}: {'[]' if isinstance(f.default, list) else f'D{index}'}")
                index += 1
            elif f.fmt is not None:
                run: list[tuple[int, _Field]] = []
                while index < len(self.fields) and self.fields[index].fmt is not None:
                    run.append((index, self.fields[index]))
                    index += 1
                packer = struct.Struct(">" + "".join(g.fmt for _, g in run))
                env[f"S{run[0][0]}"] = packer
                lines.append(f"        {''.join(f'v{i}, ' for i, _ in run)}= S{run[0][0]}.unpack_from(data, r.pos)")
                lines.append(f"        r.pos += {packer.size}")
                items += [f"{g.name!r}: v{i}" for i, g in run]
            else:
                env[f"R{index}"] = f.read
                lines.append(f"        v{index} = R{index}(r)")
                items.append(f"{f.name!r}: v{index}")
                index += 1
        if self.flexible and not self.tagged:  # the usual case: no tagged field sent, one zero byte
            lines += ["        if data[r.pos]:", "            read_tags(r, {})", "        else:", "            r.pos += 1"]
        lines += ["        pass", "    except (error, IndexError) as exc:", "        raise CodecError(f'message too short at {r.pos}') from exc",
                  f"    d = {{{', '.join(items)}}}"]
        if self.flexible and self.tagged:
            lines.append("    read_tags(r, d)")
        lines += ["    o = new(Struct)", "    o.__dict__ = d", "    return o"]
        exec(compile("\n".join(lines), f"<kctl codec {id(self)}>", "exec"), env)  # noqa: S102 - code built above from field names
        return env["read"]

    def _read_tags(self, r: _Reader, values: dict[str, Any]) -> None:
        for f in self.tagged.values():
            values[f.name] = _fresh(f.default)
        for _ in range(read_uvarint(r)):
            tag = read_uvarint(r)
            size = read_uvarint(r)
            end = r.pos + size
            field = self.tagged.get(tag)
            if field is not None:
                values[field.name] = field.read(_Reader(r.data[:end], r.pos))
            r.pos = end

    @cached_property
    def written_write(self) -> Write:
        """An encoder written out for this struct, as `written_read` is: fields taken from
        a dict (or an object's attributes), runs of fixed-size fields packed by one struct.pack.
        The bundled broker encodes its answers with it (a Metadata answer of 2,000
        partitions: 9 ms, against 19 ms with a loop over the fields and 20-28 ms with
        kafka-python's classes, measured)."""
        env: dict[str, Any] = {"MISSING": _MISSING, "write_tags": self._write_tags}
        lines = ["def write(out, value):",
                 "    get = value.get if type(value) is dict else (lambda name, default: getattr(value, name, default))"]
        present = [(i, f) for i, f in enumerate(self.fields) if f.write is not None]
        index = 0
        while index < len(present):
            i, f = present[index]
            run = [(i, f)]
            if f.fmt is not None:
                while index + len(run) < len(present) and present[index + len(run)][1].fmt is not None:
                    run.append(present[index + len(run)])
            for j, g in run:
                env[f"D{j}"] = g.default
                default = "[]" if isinstance(g.default, list) else f"D{j}"
                lines.append(f"    v{j} = get({g.name!r}, MISSING)")
                lines.append(f"    if v{j} is MISSING: v{j} = {default}")
            if f.fmt is not None:
                env[f"S{i}"] = struct.Struct(">" + "".join(g.fmt for _, g in run))
                lines.append(f"    out.append(S{i}.pack({', '.join(f'v{j}' for j, _ in run)}))")
            else:
                env[f"W{i}"] = f.write
                lines.append(f"    W{i}(out, v{i})")
            index += len(run)
        if self.flexible:
            lines.append("    write_tags(out, get)" if self.tagged else "    out.append(b'\\x00')")
        exec(compile("\n".join(lines), f"<kctl codec write {id(self)}>", "exec"), env)  # noqa: S102 - code built above from field names
        return env["write"]

    def _write_tags(self, out: list[bytes], get: Callable[[str, Any], Any]) -> None:
        present: list[tuple[int, bytes]] = []
        for tag, f in sorted(self.tagged.items()):
            v = get(f.name, _MISSING)
            if v is not _MISSING and v != f.default:
                parts: list[bytes] = []
                f.write(parts, v)
                present.append((tag, b"".join(parts)))
        write_uvarint(out, len(present))
        for tag, chunk in present:
            write_uvarint(out, tag)
            write_uvarint(out, len(chunk))
            out.append(chunk)


_MISSING = object()


def _fresh(default: Any) -> Any:
    """A field's default, copied when it is mutable (an empty list per struct)."""
    return [] if isinstance(default, list) else default


def _compile_fields(specs: list[Spec], version: int, flexible: bool, common: dict[str, list[Spec]]) -> _Compiled:
    fields: list[_Field] = []
    for spec in specs:
        name = snake(spec["name"])
        present = _in_range(spec.get("versions"), version)
        nullable = _in_range(spec.get("nullableVersions"), version)
        tagged = flexible and present and _in_range(spec.get("taggedVersions"), version)
        kind = spec["type"]
        read = write = None
        if present:
            read, write = _type_codec(spec, kind, version, flexible, nullable, common)
        default = _default(spec, kind, nullable)
        if kind.startswith("[]") and not (nullable and spec.get("default") == "null"):
            default = []
        fmt = _FORMATS.get(kind) if present and not tagged else None
        fields.append(_Field(name, read, write, default, spec["tag"] if tagged else None, fmt))
    return _Compiled(fields, flexible)


def _type_codec(spec: Spec, kind: str, version: int, flexible: bool, nullable: bool, common: dict[str, list[Spec]]) -> tuple[Read, Write]:
    if kind in _PRIMITIVES:
        read, write, _ = _PRIMITIVES[kind]
        return read, write
    if kind == "uuid":
        return _read_uuid, _write_uuid
    if kind in ("string", "bytes", "records"):
        compact = flexible and spec.get("flexibleVersions", "0+") != "none"
        return _length_prefixed(compact, nullable, "string" if kind == "string" else "bytes")
    if kind.startswith("[]") and kind[2:] in _FORMATS and kind[2:] != "bool":
        return _fixed_array(_FORMATS[kind[2:]], flexible, nullable)
    if kind.startswith("[]"):
        element = kind[2:]
        item_read: Read | None
        item_write: Write | None
        if element in _PRIMITIVES or element in ("string", "bytes", "uuid"):
            item_read, item_write = _type_codec({}, element, version, flexible, False, common)
        else:
            struct_ = _compile_fields(spec.get("fields") or common[element], version, flexible, common)
            item_read = item_write = None

        def read_array(r: _Reader) -> Any:
            count = _read_count(r, flexible)
            if count < 0:
                if not nullable:
                    raise CodecError("null array where the definition allows none")
                return None
            if count > len(r.data) - r.pos:
                raise CodecError(f"array of {count} items in {len(r.data) - r.pos} bytes")
            read = item_read or struct_.reader(count)
            return [read(r) for _ in range(count)]

        def write_array(out: list[bytes], value: Any) -> None:
            _write_count(out, value, flexible)
            write = item_write or struct_.writer(len(value or ()))
            for item in value or ():
                write(out, item)

        return read_array, write_array
    struct_ = _compile_fields(spec.get("fields") or common[kind], version, flexible, common)
    if not nullable:
        return struct_.read, struct_.write

    def read_nullable(r: _Reader) -> Any:
        return None if _INT8[0](r) < 0 else struct_.read(r)

    def write_nullable(out: list[bytes], value: Any) -> None:
        if value is None:
            out.append(b"\xff")
        else:
            out.append(b"\x01")
            struct_.write(out, value)

    return read_nullable, write_nullable


# -- messages ---------------------------------------------------------------------------------

@cache
def has_definition(name: str) -> bool:
    """Whether this package holds the message's definition (e.g. "MetadataResponse")."""
    return os.path.isfile(os.path.join(_HERE, f"{name}.json"))


@cache
def definition(name: str) -> Spec:
    """A message's JSON definition from this package (e.g. "MetadataResponse")."""
    with open(os.path.join(_HERE, f"{name}.json"), encoding="utf-8") as file:
        text = file.read()
    return json.loads(_COMMENT.sub("", text))


class Message:
    """One message's codec for one version."""

    def __init__(self, name: str, version: int):
        spec = definition(name)
        self.name = name
        self.version = version
        self.api_key = spec.get("apiKey")
        low, high = version_range(spec["validVersions"])
        if not low <= version <= high:
            raise ValueError(f"{name} has no version {version} (valid: {spec['validVersions']})")
        self.flexible = _in_range(spec.get("flexibleVersions"), version)
        common = {c["name"]: c["fields"] for c in spec.get("commonStructs", ())}
        self._struct = _compile_fields(spec["fields"], version, self.flexible, common)

    def encode(self, **fields: Any) -> bytes:
        out: list[bytes] = []
        self._struct.write(out, fields)
        return b"".join(out)

    def decode(self, data: bytes | memoryview, pos: int = 0) -> Struct:
        """The message from data[pos:] (trailing bytes are left alone, as Kafka does)."""
        return self._struct.read(_Reader(data, pos))

    def decode_with_end(self, data: bytes | memoryview, pos: int = 0) -> tuple[Struct, int]:
        reader = _Reader(data, pos)
        return self._struct.read(reader), reader.pos


@cache
def message(name: str, version: int) -> Message:
    return Message(name, version)


def valid_versions(name: str) -> tuple[int, int]:
    return version_range(definition(name)["validVersions"])


def decode_versioned(name: str, data: bytes) -> Struct:
    """A message that starts with its own int16 version (the consumer protocol's
    subscriptions and assignments); a version newer than the definition's is read as
    the newest it knows, as Kafka's clients do (fields are only ever appended)."""
    reader = _Reader(data)
    version = _INT16[0](reader)
    low, high = valid_versions(name)
    if version < low:
        raise CodecError(f"{name} version {version} is below {low}")
    return message(name, min(version, high)).decode(data, reader.pos)
