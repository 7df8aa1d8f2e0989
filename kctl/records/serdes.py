"""Keys and values in Confluent's wire format (magic byte 0, a 4-byte schema id, the
payload), decoded through the schema registry with confluent-kafka's deserializers.

`consume --value-format auto` decodes a value when it starts with the magic byte and the
registry knows the id, else leaves it as bytes; `avro` and `json-schema` insist (a value
that is not one is a failed record, shown as bytes). Schemas are fetched once a run (the
registry client caches them by id).
"""

from __future__ import annotations

import datetime
import decimal
import io
import json
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import fastavro

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Protocol, TypeAlias, TypeVar

    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
    from confluent_kafka.serialization import SerializationContext
    from fastavro.validation import ValidationErrorData

    from kctl.admin.registry.schemas import Registry, SchemaVersion
    from kctl.records.model import ConsumedRecord, ProducerRecord
    from kctl.records.protobuf import ProtobufError, ProtoSchema

    # What confluent-kafka's serializers take as a record's headers (its private
    # confluent_kafka._types.HeadersType, written out: kctl stays off its private modules).
    HeadersType: TypeAlias = dict[str, str | bytes | None] | list[tuple[str, str | bytes | None]]

    # An Avro schema as fastavro parses it: a type's name, a union, or a JSON object
    # (whose members are any JSON).
    AvroSchema: TypeAlias = str | list["AvroSchema"] | dict[str, Any]
    # A value as JSON reads it, and as fastavro writes it (bytes for bytes and fixed).
    Datum: TypeAlias = None | bool | int | float | str | bytes | list["Datum"] | dict[str, "Datum"]

    class SettableRecord(ConsumedRecord, Protocol):
        """A consumed record whose key and value can be replaced (confluent_kafka.Message)."""

        def set_key(self, key: bytes) -> None: ...
        def set_value(self, value: bytes) -> None: ...

    Settable = TypeVar("Settable", bound=SettableRecord)

# --value-format / --key-format -> the registry's schema type ("auto": whichever it is).
FORMATS = {"avro": "AVRO", "protobuf": "PROTOBUF", "json-schema": "JSON", "auto": None}
ENCODINGS = {"AVRO": "avro", "PROTOBUF": "protobuf", "JSON": "json-schema"}



class DecodeError(ValueError):
    """A key or value that is not what --key-format/--value-format says."""


@dataclass(frozen=True, slots=True)
class Decoded:
    data: object  # as the deserializer returns it; json_default encodes what JSON lacks
    schema_id: int
    schema_type: str
    subject: str | None


def schema_id(data: bytes | None) -> int | None:
    """The schema id of Confluent's wire format, or None when DATA is not in it."""
    if data is None or len(data) < 5 or data[0] != 0:
        return None
    return int.from_bytes(data[1:5], "big")


class RecordDecoder:
    """Decodes one run's keys and values; `failures` counts what could not be."""

    fields: tuple[str, ...]

    def __init__(self, registry: Registry, *, key_format: str | None, value_format: str | None,
                 warn: Callable[[str], None] | None = None):
        self.registry = registry
        self.client = registry.client
        self.formats = {"key": key_format, "value": value_format}
        self.fields = tuple(f for f in ("key", "value") if self.formats[f] is not None)
        self.warn = warn or (lambda message: None)
        self.failures = 0
        self._types: dict[int, str | None] = {}
        self._subjects: dict[tuple[int, str | None, str], str | None] = {}
        self._deserializers: dict[str, AvroDeserializer | JSONDeserializer] = {}
        self._protos: dict[int, ProtoSchema | ProtobufError] = {}  # schema id -> ProtoSchema, or the ProtobufError compiling it
        # Avro schemas without references or rules, parsed: read with fastavro directly,
        # which is what the deserializer does after its lookups and rule checks
        # (measured: 2 µs a record against its 11 µs).
        self._plain_avro: dict[int, AvroSchema] = {}

    def decode(self, message: ConsumedRecord, field: str) -> Decoded | None:
        """The decoded key or value of a confluent_kafka.Message; None to show it as bytes."""
        wanted = self.formats[field]
        if wanted is None:
            return None
        data = message.key() if field == "key" else message.value()
        if data is None:
            return None
        try:
            return self._decode(message, field, data, wanted)
        except DecodeError as exc:
            self.failures += 1
            if wanted != "auto" or self.failures <= 10:
                where = f"{message.topic()}:{message.partition()}@{message.offset()}"
                self.warn(f"{where}: {field} not decoded ({exc}); shown as bytes")
            return None

    def _decode(self, message: ConsumedRecord, field: str, data: bytes, wanted: str) -> Decoded | None:
        found = schema_id(data)
        if found is None:
            if wanted == "auto":
                return None
            raise DecodeError("not in the schema registry's wire format: no magic byte 0 and schema id")
        kind = self._types[found] if found in self._types else self._type(found, auto=wanted == "auto")
        if kind is None:
            return None  # auto: an id the registry does not know; these are bytes
        if wanted != "auto" and FORMATS[wanted] != kind:
            raise DecodeError(f"schema {found} is {ENCODINGS.get(kind, kind)}, not {wanted}")
        plain = self._plain_avro.get(found)
        if plain is not None:  # the hot path: no context, no deserializer machinery
            decoded: object
            try:
                decoded = fastavro.schemaless_reader(io.BytesIO(data[5:]), plain, None)
            except Exception as exc:  # fastavro's errors on a payload that does not fit
                raise DecodeError(f"schema {found}: {exc}") from None
        elif kind == "PROTOBUF":
            decoded = self._protobuf(found, data)
        else:
            decoded = self._deserialized(kind, found, message, field, data)
        key = (found, message.topic(), field)
        subject = self._subjects[key] if key in self._subjects else self._subject(found, message.topic(), field)
        return Decoded(decoded, found, kind, subject)

    def _protobuf(self, found: int, data: bytes) -> dict[str, Any]:
        from kctl.records.protobuf import ProtobufError, compile_schema, split_payload

        if found not in self._protos:
            schema = self.registry.by_id(found)
            try:
                self._protos[found] = compile_schema(self.registry, schema.schema, schema.references, name=f"schema-{found}.proto")
            except ProtobufError as exc:
                self._protos[found] = exc
        proto = self._protos[found]
        try:
            if isinstance(proto, ProtobufError):
                raise proto
            return proto.decode(*split_payload(data))
        except ProtobufError as exc:
            raise DecodeError(f"schema {found}: {exc}") from None

    def _deserialized(self, kind: str, found: int, message: ConsumedRecord, field: str, data: bytes) -> object:
        from confluent_kafka.serialization import MessageField, SerializationContext

        # A consumed record has its topic; its headers are a list of (name, bytes or None).
        context = SerializationContext(cast("str", message.topic()), MessageField.KEY if field == "key" else MessageField.VALUE,
                                       cast("HeadersType | None", message.headers()))
        try:
            return self._deserializer(kind)(data, context)
        except Exception as exc:  # the deserializers raise SerializationError, fastavro's and jsonschema's errors
            raise DecodeError(f"schema {found}: {exc}") from None

    def _type(self, found: int, *, auto: bool) -> str | None:
        if found not in self._types:
            from kctl.errors import NotFoundError

            try:
                schema = self.registry.by_id(found)
            except NotFoundError:
                if not auto:
                    raise DecodeError(f"the registry has no schema {found}") from None
                self._types[found] = None
                return None
            self._types[found] = schema.type
            raw = self.client.get_schema(found)  # cached by the client since by_id
            if schema.type == "AVRO" and not schema.references and not (raw.rule_set or raw.metadata):
                self._plain_avro[found] = fastavro.parse_schema(json.loads(schema.schema))
        return self._types[found]

    def _subject(self, found: int, topic: str | None, field: str) -> str | None:
        """The subject the schema is registered under: the topic's (TopicNameStrategy)
        when it is one of them, else the first."""
        if (found, topic, field) not in self._subjects:
            try:
                versions = self.client.get_schema_versions(found)
            except Exception:  # a registry without this endpoint: the subject stays unknown
                versions = []
            subjects = [v.subject for v in versions]
            preferred = f"{topic}-{field}"
            self._subjects[(found, topic, field)] = preferred if preferred in subjects else (subjects[0] if subjects else None)
        return self._subjects[(found, topic, field)]

    def _deserializer(self, kind: str) -> AvroDeserializer | JSONDeserializer:
        if kind not in self._deserializers:
            from confluent_kafka.schema_registry import topic_subject_name_strategy

            # The writer's schema comes by the id in each record; the subject only matters
            # for reader schemas kctl does not ask for. confluent-kafka 2.16's default
            # strategy first asks the registry's associations endpoint, which Apicurio,
            # Karapace and older Confluent registries do not have: only a 404 falls back,
            # any other answer (a proxy's 403) would fail every record.
            conf = {"subject.name.strategy": topic_subject_name_strategy}
            if kind == "AVRO":
                from confluent_kafka.schema_registry.avro import AvroDeserializer

                self._deserializers[kind] = AvroDeserializer(self.client, conf=conf)
            else:
                from confluent_kafka.schema_registry.json_schema import JSONDeserializer

                self._deserializers[kind] = JSONDeserializer(None, schema_registry_client=self.client, conf=conf)
        return self._deserializers[kind]


def json_default(value: object) -> str:
    """What JSON lacks, for json.dumps(default=...): Avro bytes and fixed as Avro's JSON
    encoding has them (one character per byte, ISO-8859-1), decimals as strings (no float
    rounding), times as ISO-8601, UUIDs as text."""
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


# Built once (json.dumps with arguments builds an encoder per call).
ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=json_default)


def decoded_envelope(envelope: dict[str, object], message: ConsumedRecord, decoder: RecordDecoder) -> dict[str, object]:
    """ENVELOPE (envelope.to_envelope) with the decoder's fields decoded: the key or value
    as JSON, `*_encoding` avro|json-schema|protobuf, and `*_schema_id` and `*_subject`
    (null when the record's key or value is not decoded)."""
    for field in decoder.fields:
        found = decoder.decode(message, field)
        if found is not None:
            envelope[field] = found.data
            envelope[f"{field}_encoding"] = ENCODINGS[found.schema_type]
        envelope[f"{field}_schema_id"] = found.schema_id if found is not None else None
        envelope[f"{field}_subject"] = found.subject if found is not None else None
    return envelope


def decode_in_place(messages: list[Settable], decoder: RecordDecoder) -> list[Settable]:
    """MESSAGES with decoded keys and values replaced by their compact JSON text (for
    --format templates)."""
    for message in messages:
        for field in decoder.fields:
            found = decoder.decode(message, field)
            if found is not None:
                text = ENCODER.encode(found.data).encode()
                (message.set_key if field == "key" else message.set_value)(text)
    return messages


class RecordEncoder:
    """Values (JSON text) serialized in the registry's wire format with one schema, chosen
    once for the run: a subject's version, or a schema file registered (when new) under
    the subject its strategy names. A value that does not fit says where, as a RecordError
    for produce to report with its line."""

    schema: SchemaVersion
    # Avro: the parsed schema; JSON Schema: its validator (jsonschema has no types).
    parsed: AvroSchema
    validator: Any
    serializer: AvroSerializer | JSONSerializer
    context: SerializationContext
    # Protobuf: the compiled schema, and the message indexes of the values' message.
    proto: ProtoSchema
    indexes: tuple[int, ...]

    def __init__(self, registry: Registry, topic: str, *, subject: str | None, version: int | str = "latest",
                 schema_file: Path | None = None, schema_type: str | None = None, strategy: str = "topic", message: str | None = None):
        from confluent_kafka.schema_registry import Schema

        from kctl.errors import UsageError

        self.registry = registry
        if schema_file is not None:
            from kctl.admin.registry.schemas import read_schema_file

            text, kind = read_schema_file(schema_file, schema_type)
            subject = subject or _subject_for(strategy, topic, text, kind, message)
            found = registry.register(subject, text, kind, [])
        else:
            found = registry.version(cast("str", subject), version)  # without a schema file the caller names the subject
        self.schema = found
        if message is not None and found.type != "PROTOBUF":
            raise UsageError(action=f"produce with {found.subject}", cause=f"{{value_message}} is for Protobuf schemas; this one is {ENCODINGS.get(found.type, found.type)}")
        if found.type == "PROTOBUF":
            self._protobuf_setup(found, message)
            return
        schema = Schema(found.schema, found.type, [])
        # The serializers look the subject up by their naming strategy: name ours.
        conf = {"auto.register.schemas": False, "use.schema.id": found.id, "subject.name.strategy": lambda _ctx, _name: found.subject}
        if found.type == "AVRO":
            import fastavro
            from confluent_kafka.schema_registry.avro import AvroSerializer

            self.parsed = fastavro.parse_schema(json.loads(found.schema))
            self.serializer = AvroSerializer(registry.client, schema, conf=conf)
        else:
            import jsonschema
            from confluent_kafka.schema_registry.json_schema import JSONSerializer

            document = json.loads(found.schema)
            self.validator = jsonschema.validators.validator_for(document)(document)
            self.serializer = JSONSerializer(schema, registry.client, conf=conf)
        from confluent_kafka.serialization import MessageField, SerializationContext

        self.context = SerializationContext(topic, MessageField.VALUE)

    def _protobuf_setup(self, found: SchemaVersion, message: str | None) -> None:
        from kctl.errors import UsageError
        from kctl.records.protobuf import ProtobufError, compile_schema

        try:
            self.proto = compile_schema(self.registry, found.schema, found.references, name=f"schema-{found.id}.proto")
        except ProtobufError as exc:
            raise UsageError(action=f"produce with {found.subject}", cause=str(exc)) from None
        if not self.proto.messages():
            raise UsageError(action=f"produce with {found.subject}", cause="the schema has no message")
        self.indexes = self.proto.indexes_of(message) if message else (0,)

    def encode(self, record: ProducerRecord | None) -> ProducerRecord | None:
        from kctl.records.model import RecordError

        if record is None or record.value is None:
            return record  # a skipped line, or a tombstone
        try:
            datum: Datum = json.loads(record.value)
        except ValueError as exc:
            raise RecordError(f"value is not JSON ({exc})") from None
        if self.schema.type == "PROTOBUF":
            from kctl.records.protobuf import ProtobufError, frame

            try:
                return record._replace(value=frame(self.schema.id, self.indexes, self.proto.encode(self.indexes, datum)))
            except ProtobufError as exc:
                raise RecordError(str(exc)) from None
        if self.schema.type == "AVRO":
            named: dict[str, AvroSchema] = self.parsed.get("__named_schemas", {}) if isinstance(self.parsed, dict) else {}
            datum = _from_avro_json(datum, self.parsed, named)
        self._validate(datum)
        try:
            value = self.serializer(datum, self.context)
        except Exception as exc:  # what validation did not catch (the serializer's own checks)
            raise RecordError(f"value does not fit schema {self.schema.id}: {exc}") from None
        return record._replace(value=value)

    def _validate(self, datum: Datum) -> None:
        from kctl.records.model import RecordError

        if self.schema.type == "AVRO":
            from fastavro.validation import ValidationError, validate

            try:
                validate(datum, self.parsed, raise_errors=True)
            except ValidationError as exc:
                raise RecordError(_avro_problem(exc.errors[0])) from None
            return
        import jsonschema

        problem = jsonschema.exceptions.best_match(self.validator.iter_errors(datum))
        if problem is not None:
            raise RecordError(f"{problem.json_path}: {problem.message}")


def _from_avro_json(datum: Datum, schema: AvroSchema, named: dict[str, AvroSchema]) -> Datum:
    """JSON as consume writes Avro (bytes and fixed as ISO-8859-1 text) or as Avro's JSON
    encoding has it (unions tagged {"type": value}), turned into what fastavro writes:
    bytes for bytes, the bare value for a union."""
    if isinstance(schema, str):
        if schema in named:
            return _from_avro_json(datum, named[schema], named)
        if schema == "bytes" and isinstance(datum, str):
            try:
                return datum.encode("latin-1")
            except UnicodeEncodeError:
                return datum  # validation says what is wrong with it
        return datum
    if isinstance(schema, list):
        if isinstance(datum, dict) and len(datum) == 1:
            (tag, inner), = datum.items()
            for branch in schema:
                if tag == _branch_name(branch):
                    return _from_avro_json(inner, branch, named)
        for branch in schema:  # an untagged value: the first branch it can be
            if branch != "null" and datum is not None:
                converted = _from_avro_json(datum, branch, named)
                if converted is not datum:
                    return converted
        return datum
    kind = schema.get("type")
    if kind == "record" and isinstance(datum, dict):
        fields: dict[str, AvroSchema] = {f["name"]: f["type"] for f in schema["fields"]}
        return {k: (_from_avro_json(v, fields[k], named) if k in fields else v) for k, v in datum.items()}
    if kind == "array" and isinstance(datum, list):
        return [_from_avro_json(v, schema["items"], named) for v in datum]
    if kind == "map" and isinstance(datum, dict):
        return {k: _from_avro_json(v, schema["values"], named) for k, v in datum.items()}
    if kind in ("bytes", "fixed") and isinstance(datum, str):
        return _from_avro_json(datum, "bytes", named)
    return datum


def _branch_name(branch: AvroSchema) -> str:
    if isinstance(branch, dict):
        return str(branch.get("name") or branch.get("type"))
    return str(branch)


def _avro_problem(error: ValidationErrorData) -> str:
    """One fastavro validation error as a line: the field's path, what the schema wanted,
    what the value had."""
    schema: AvroSchema
    datum: Datum
    schema, datum = error.schema, error.datum
    if isinstance(schema, dict) and schema.get("type") == "record" and isinstance(datum, dict):
        missing = [f for f in schema["fields"] if f["name"] not in datum and "default" not in f]
        if missing:
            field = missing[0]
            return f"{schema['name']}.{field['name']}: missing (the schema wants {_type_name(field['type'])})"
    where: str | None = error.field or (schema.get("name") if isinstance(schema, dict) else "value")
    if datum is None:  # fastavro reads a missing field as null
        return f"{where}: missing or null (the schema wants {_type_name(schema)})"
    return f"{where}: the schema wants {_type_name(schema)}, the value has {json.dumps(datum, default=str)[:80]}"


def _type_name(schema: AvroSchema) -> str:
    if isinstance(schema, list):
        return " or ".join(_type_name(s) for s in schema)
    if isinstance(schema, dict):
        return str(schema.get("name") or schema.get("type"))
    return str(schema)


def _subject_for(strategy: str, topic: str, text: str, kind: str, message: str | None = None) -> str:
    """The subject a schema file goes under: topic (TOPIC-value), record (the record's
    full name) or topic-record (TOPIC-FULLNAME), as Confluent's serializers name them."""
    if strategy == "topic":
        return f"{topic}-value"
    from kctl.errors import UsageError

    if kind == "PROTOBUF":
        from kctl.records.protobuf import ProtobufError, compile_schema

        try:
            proto = compile_schema(None, text, [])
        except ProtobufError as exc:
            raise UsageError(action="read the schema file", cause=str(exc)) from None
        if not proto.messages():
            raise UsageError(action=f"name a subject by --subject-strategy {strategy}", cause="the schema has no message")
        full = proto.descriptor(proto.indexes_of(message) if message else (0,)).full_name
        return full if strategy == "record" else f"{topic}-{full}"
    document: dict[str, Any] = json.loads(text) if kind in ("AVRO", "JSON") else {}
    name: str | None = document.get("name") if kind == "AVRO" else document.get("title")
    if not name:
        raise UsageError(action=f"name a subject by --subject-strategy {strategy}", cause=f"the schema has no {'name' if kind == 'AVRO' else 'title'}")
    full = f"{document['namespace']}.{name}" if kind == "AVRO" and document.get("namespace") and "." not in name else name
    return full if strategy == "record" else f"{topic}-{full}"
