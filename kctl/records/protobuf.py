"""Protobuf schemas from the registry turned into message classes, for records in
Confluent's wire format (magic byte, schema id, message indexes, payload).

A registered Protobuf schema is .proto text (what Confluent's registry answers by
default) or a base64 FileDescriptorProto (what confluent-kafka's serializer registers;
Apicurio keeps it as sent). Text is compiled by protoc, the real parser, as shipped in the
grpcio-tools wheel; no .proto grammar is written here. References are fetched from the
registry under the names the schema imports them by. One compile per schema a run.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING, Any, cast

from kctl.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Protocol

    from kctl.admin.registry.schemas import Reference, Registry

    # google.protobuf has no type information: what kctl reads of its objects.
    class MessageDescriptor(Protocol):
        """A message type's Descriptor."""

        @property
        def name(self) -> str: ...
        @property
        def full_name(self) -> str: ...
        @property
        def nested_types(self) -> Sequence[MessageDescriptor]: ...

    class FileDescriptor(Protocol):
        @property
        def message_types_by_name(self) -> Mapping[str, MessageDescriptor]: ...

    class ProtoMessage(Protocol):
        """A message of a class GetMessageClass made."""

        @property
        def DESCRIPTOR(self) -> MessageDescriptor: ...
        def ParseFromString(self, serialized: bytes, /) -> int: ...
        def SerializeToString(self) -> bytes: ...

    class FileDescriptorProto(Protocol):
        """descriptor_pb2.FileDescriptorProto: one .proto file, compiled."""

        name: str
        @property
        def dependency(self) -> Sequence[str]: ...


class ProtobufError(ValueError):
    """A schema that does not compile, or a payload or JSON value that does not fit it."""


class ProtoSchema:
    """One registered Protobuf schema, compiled: its messages as classes."""

    def __init__(self, pool: object, file_descriptor: FileDescriptor):
        self.pool = pool
        self.file = file_descriptor
        self._classes: dict[tuple[int, ...], Callable[[], ProtoMessage]] = {}

    def messages(self) -> list[MessageDescriptor]:
        """The file's top-level message descriptors, in declaration order (index 0 first)."""
        return list(self.file.message_types_by_name.values())

    def descriptor(self, indexes: tuple[int, ...]) -> MessageDescriptor:
        """The message at Confluent's message indexes ([0]: the file's first message)."""
        found = self.messages()
        descriptor = None
        for index in indexes or (0,):
            if not 0 <= index < len(found):
                raise ProtobufError(f"message index {list(indexes)} is not in the schema")
            descriptor = found[index]
            found = list(descriptor.nested_types)
        return cast("MessageDescriptor", descriptor)  # the loop runs at least once

    def indexes_of(self, full_name: str) -> tuple[int, ...]:
        """Confluent's message indexes of FULL_NAME (or a bare message name)."""
        def walk(descriptors: Sequence[MessageDescriptor], path: tuple[int, ...]) -> tuple[int, ...] | None:
            for i, d in enumerate(descriptors):
                if d.full_name == full_name or d.name == full_name:
                    return (*path, i)
                found = walk(list(d.nested_types), (*path, i))
                if found:
                    return found
            return None

        found = walk(self.messages(), ())
        if found is None:
            names = ", ".join(d.full_name for d in self.messages()) or "none"
            raise UsageError(f"the schema has no message {full_name} (its messages: {names})")
        return found

    def message_class(self, indexes: tuple[int, ...]) -> Callable[[], ProtoMessage]:
        if indexes not in self._classes:
            from google.protobuf import message_factory

            self._classes[indexes] = message_factory.GetMessageClass(self.descriptor(indexes))
        return self._classes[indexes]

    def decode(self, indexes: tuple[int, ...], payload: bytes) -> dict[str, Any]:
        """PAYLOAD as a dict in Protobuf's JSON mapping, with the .proto's field names and
        fields at their default values included (as Confluent's console consumer shows)."""
        from google.protobuf import json_format
        from google.protobuf.message import DecodeError

        message = self.message_class(indexes)()
        try:
            message.ParseFromString(payload)
        except DecodeError as exc:
            raise ProtobufError(f"not a {message.DESCRIPTOR.full_name}: {exc}") from None
        return json_format.MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)

    def encode(self, indexes: tuple[int, ...], datum: object) -> bytes:
        """DATUM (JSON as Protobuf's JSON mapping reads it) as the message's bytes."""
        from google.protobuf import json_format

        message = self.message_class(indexes)()
        if not isinstance(datum, dict):
            raise ProtobufError(f"{message.DESCRIPTOR.full_name}: the schema wants an object, the value has {type(datum).__name__}")
        try:
            json_format.ParseDict(datum, message)
        except json_format.ParseError as exc:
            # Its words, on one line (it adds the known fields on a second).
            words = " ".join(str(exc).split()).replace("..", ".")
            raise ProtobufError(f"{message.DESCRIPTOR.full_name}: {words}") from None
        return message.SerializeToString()


def split_payload(data: bytes) -> tuple[tuple[int, ...], bytes]:
    """Confluent's framing of a Protobuf record: the message indexes and the payload."""
    from confluent_kafka.schema_registry.serde import SchemaId

    framing = SchemaId("PROTOBUF")
    try:
        rest = framing.from_bytes(io.BytesIO(data))
    except Exception as exc:  # a truncated index array: EOFError or struct.error
        raise ProtobufError(f"the message indexes are cut short ({exc})") from None
    return tuple(framing.message_indexes or ()), rest.read()


def frame(schema_id: int, indexes: tuple[int, ...], payload: bytes) -> bytes:
    from confluent_kafka.schema_registry.serde import SchemaId

    return SchemaId("PROTOBUF", schema_id, None, list(indexes)).id_to_bytes() + payload


def compile_schema(registry: Registry | None, schema_text: str, references: Iterable[Reference] | None, *,
                   name: str = "schema.proto") -> ProtoSchema:
    """SCHEMA_TEXT (with REFERENCES, kctl's or confluent's Reference objects, fetched from
    REGISTRY) as a ProtoSchema."""
    sources: dict[str, str] = {}
    binaries: dict[str, FileDescriptorProto] = {}
    _collect(registry, name, schema_text, references, sources, binaries, set())
    descriptors = dict(binaries)
    if sources:
        descriptors.update(_protoc(sources, binaries))
    from google.protobuf import descriptor_pool

    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(file_name: str) -> None:
        if file_name in added:
            return
        added.add(file_name)
        proto = descriptors.get(file_name) or _well_known(file_name)
        for dependency in proto.dependency:
            add(dependency)
        pool.Add(proto)

    try:
        add(name)
        return ProtoSchema(pool, pool.FindFileByName(name))
    except (TypeError, KeyError) as exc:  # the pool's words for a file that does not link
        raise ProtobufError(f"the schema does not link: {exc}") from None


def _collect(registry: Registry | None, name: str, text: str, references: Iterable[Reference] | None, sources: dict[str, str],
             binaries: dict[str, FileDescriptorProto], seen: set[str]) -> None:
    if name in seen:
        return
    seen.add(name)
    proto = _descriptor_proto(text)
    if proto is not None:
        proto.name = name
        binaries[name] = proto
    else:
        sources[name] = text
    for reference in references or ():
        found = cast("Registry", registry).version(reference.subject, reference.version)  # references come with a registry
        _collect(registry, reference.name, found.schema, found.references, sources, binaries, seen)


def _descriptor_proto(text: str) -> FileDescriptorProto | None:
    """TEXT as a FileDescriptorProto when it is one in base64, else None (.proto text)."""
    if not text or any(c.isspace() for c in text.strip()) or "{" in text or ";" in text:
        return None
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    try:
        proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text.strip(), validate=True))
    except (binascii.Error, DecodeError, ValueError):
        return None
    return proto


def _well_known(file_name: str) -> FileDescriptorProto:
    """google/protobuf/*.proto and the like, which schemas import without a reference."""
    import importlib

    from google.protobuf import descriptor_pb2, descriptor_pool

    module = file_name.removesuffix(".proto").replace("/", ".") + "_pb2"
    try:
        importlib.import_module(module)
        found = descriptor_pool.Default().FindFileByName(file_name)
    except (ImportError, KeyError):
        raise ProtobufError(f"the schema imports {file_name}, which neither its references nor the well-known types have") from None
    proto = descriptor_pb2.FileDescriptorProto()
    found.CopyToProto(proto)
    return proto


def _protoc(sources: dict[str, str], binaries: dict[str, FileDescriptorProto]) -> dict[str, FileDescriptorProto]:
    """SOURCES (.proto texts by file name) compiled by protoc into FileDescriptorProtos."""
    try:
        import grpc_tools
    except ImportError:
        raise UsageError(action="read Protobuf schemas", cause="the grpcio-tools package (protoc) is not installed; pip install grpcio-tools") from None
    from google.protobuf import descriptor_pb2

    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    with tempfile.TemporaryDirectory(prefix="kctl-proto-") as directory:
        for file_name, text in sources.items():
            path = os.path.join(directory, "src", file_name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as out:
                out.write(text)
        args = [sys.executable, "-m", "grpc_tools.protoc", f"--proto_path={os.path.join(directory, 'src')}", f"--proto_path={well_known}",
                "--include_imports", f"--descriptor_set_out={os.path.join(directory, 'out.pb')}"]
        if binaries:
            given = descriptor_pb2.FileDescriptorSet(file=list(binaries.values()))
            with open(os.path.join(directory, "in.pb"), "wb") as out:
                out.write(given.SerializeToString())
            args.append(f"--descriptor_set_in={os.path.join(directory, 'in.pb')}")
        # A process of its own: protoc writes its errors to file descriptor 2, which a
        # one-line error has to catch.
        done = subprocess.run([*args, *sources], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            first = next((line for line in done.stderr.splitlines() if line.strip()), "protoc failed")
            raise ProtobufError(f"the schema does not compile: {first.replace(os.path.join(directory, 'src') + os.sep, '')}")
        with open(os.path.join(directory, "out.pb"), "rb") as data:
            compiled = descriptor_pb2.FileDescriptorSet.FromString(data.read())
    return {proto.name: proto for proto in compiled.file}
