"""`kctl spark dump --decode`: values in the schema registry's wire format as typed columns.

The dump keeps every column it always has (`value` stays the record's bytes, so the dump
still replays byte for byte) and gains three:

    value_schema_id      int     the id in the value's framing (null: not in the wire format)
    value_decoded        struct  the value, typed by the subject's latest schema
    value_decode_error   string  why a value is not decoded (null when it is)

The columns' types come from one schema, TOPIC-value's latest version (the reader's
schema: Avro values written with older versions are resolved to it, as Avro's schema
resolution says; Protobuf and JSON Schema fields are matched by name). Types follow
Spark's own Avro and Protobuf readers where they have one (long -> bigint, enum ->
string, timestamp-millis -> timestamp, map -> map<string, ...>); what has no Spark type
(a union of several types, a recursive record, a JSON object without properties) is a
JSON string. Decoding runs in kctl_kafka's read tasks as they read (the plan travels as
source options), with fastavro, protoc-compiled Protobuf descriptors and json, each schema
fetched once per task.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import io
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypedDict, cast

if TYPE_CHECKING:
    import pyarrow as pa
    from fastavro.types import NamedSchemas
    from fastavro.types import Schema as AvroSchema
    from google.protobuf.descriptor import Descriptor, FieldDescriptor

    from kctl.admin.registry.schemas import Reference, Registry, RegistrySettings
    from kctl.records.protobuf import ProtoSchema

# A schema as its decoder takes it (_parse): fastavro's parsed Avro, a compiled ProtoSchema,
# or a JSON Schema document (json.loads's value: a dict, which AvroSchema's dict covers).
_Parsed: TypeAlias = "AvroSchema | ProtoSchema"
# A writer's schema (_Decoder._writer): its type, the parsed schema, whether it is the reader's.
_Writer: TypeAlias = "tuple[str, _Parsed, bool]"

COLUMNS = ("value_schema_id", "value_decoded", "value_decode_error")


def _json_text() -> pa.DataType:
    """The type of a field held as JSON text. large_string only to tell it from a string
    field while decoding (a string goes in quoted); Spark gets a string (spark_type)."""
    import pyarrow as pa

    return pa.large_string()


@dataclass(frozen=True)
class DecodePlan:
    """What the executors need: the registry and the reader's schema (picklable)."""

    registry: RegistrySettings
    subject: str
    schema_id: int
    version: int | None
    type: str  # AVRO | PROTOBUF | JSON
    schema: str
    references: tuple[Reference, ...]

    def describe(self) -> dict[str, str | int | None]:
        """For the manifest."""
        return {"subject": self.subject, "schema_id": self.schema_id, "version": self.version, "type": self.type}


def plan_decode(registry: Registry, topic: str) -> DecodePlan:
    """TOPIC's values decoded as its subject's (TopicNameStrategy) latest schema."""
    from kctl.errors import NotFoundError

    subject = f"{topic}-value"
    try:
        found = registry.version(subject)
    except NotFoundError:
        raise NotFoundError(action=f"decode {topic}", cause=f"the schema registry has no subject {subject}",
                            hint="{decode} reads values registered under TOPIC-value (TopicNameStrategy)") from None
    plan = DecodePlan(registry.settings, subject, found.id, found.version, found.type, found.schema, tuple(found.references))
    arrow_type(plan)  # a schema kctl cannot type fails here, on the driver
    return plan


# -- types ------------------------------------------------------------------------------

def arrow_type(plan: DecodePlan) -> pa.DataType:
    """The value_decoded column's Arrow type for PLAN's schema."""
    return _type_of(plan.type, _parse(plan.type, plan.schema, plan.references, plan.schema_id, _registry(plan)))


def _parse(kind: str, text: str, references: tuple[Reference, ...], schema_id: int, registry: Registry) -> _Parsed:
    """A schema as its decoder takes it: fastavro's parsed Avro, a compiled ProtoSchema,
    a JSON Schema document."""
    if kind == "AVRO":
        return _avro_schema(text, references, registry)
    if kind == "PROTOBUF":
        from kctl.records.protobuf import compile_schema

        return compile_schema(registry, text, references, name=f"schema-{schema_id}.proto")
    return json.loads(text)


def _type_of(kind: str, parsed: _Parsed) -> pa.DataType:
    import pyarrow as pa

    if kind == "AVRO":
        named: NamedSchemas = dict(parsed.get("__named_schemas", {})) if isinstance(parsed, dict) else {}
        return _avro_type(cast("AvroSchema", parsed), named, ())
    if kind == "PROTOBUF":
        return _proto_type(cast("ProtoSchema", parsed).descriptor((0,)), ())
    found = _json_type(parsed, parsed, 0)
    return found if pa.types.is_struct(found) else pa.struct([pa.field("value", found)])


_AVRO_PRIMITIVES = {"null": "null", "boolean": "bool_", "int": "int32", "long": "int64", "float": "float32",
                    "double": "float64", "bytes": "binary", "string": "string"}


def _avro_type(schema: AvroSchema, named: NamedSchemas, seen: tuple[str, ...]) -> pa.DataType:
    import pyarrow as pa

    if isinstance(schema, str):
        if schema in _AVRO_PRIMITIVES:
            return getattr(pa, _AVRO_PRIMITIVES[schema])()
        if schema in seen:
            return _json_text()  # a recursive record: Spark has no type for it
        return _avro_type(named[schema], named, seen)
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        return _avro_type(branches[0], named, seen) if len(branches) == 1 else _json_text()
    kind, logical = schema.get("type"), schema.get("logicalType")
    if logical == "decimal" and kind in ("bytes", "fixed"):
        return pa.decimal128(int(schema["precision"]), int(schema.get("scale", 0)))
    if logical == "date" and kind == "int":
        return pa.date32()
    # In the logical type's unit: a field's default comes from fastavro as the bare
    # number (decode_batches casts to Spark's microseconds).
    if logical in ("timestamp-millis", "timestamp-micros") and kind == "long":
        return pa.timestamp("ms" if logical.endswith("millis") else "us", tz="UTC")
    if logical in ("local-timestamp-millis", "local-timestamp-micros") and kind == "long":
        return pa.timestamp("ms" if logical.endswith("millis") else "us")
    if logical in ("time-millis", "time-micros", "uuid"):
        return pa.string()  # Spark has no time of day; a UUID is text
    if kind == "record":
        name = cast(str, schema.get("name"))  # fastavro's parsed records all have one
        full = f"{schema['namespace']}.{name}" if schema.get("namespace") and "." not in str(name) else name
        named[full] = named[name] = schema
        inner = (*seen, full, name)
        return pa.struct([pa.field(f["name"], _avro_type(f["type"], named, inner)) for f in schema["fields"]])
    if kind == "enum":
        return pa.string()
    if kind == "array":
        return pa.list_(_avro_type(schema["items"], named, seen))
    if kind == "map":
        return pa.map_(pa.string(), _avro_type(schema["values"], named, seen))
    if kind == "fixed":
        return pa.binary()
    return _avro_type(cast("AvroSchema", kind), named, seen)  # {"type": "long"} and logical types Spark lacks (time-*, uuid)


def _proto_type(descriptor: Descriptor, seen: tuple[str, ...]) -> pa.DataType:
    import pyarrow as pa
    from google.protobuf.descriptor import FieldDescriptor as F

    if descriptor.full_name == "google.protobuf.Timestamp":
        return pa.timestamp("us", tz="UTC")
    seen = (*seen, descriptor.full_name)
    scalars: dict[int, pa.DataType] = {
               F.TYPE_DOUBLE: pa.float64(), F.TYPE_FLOAT: pa.float32(), F.TYPE_INT64: pa.int64(), F.TYPE_SINT64: pa.int64(),
               F.TYPE_SFIXED64: pa.int64(), F.TYPE_UINT64: pa.decimal128(20, 0), F.TYPE_FIXED64: pa.decimal128(20, 0),
               F.TYPE_INT32: pa.int32(), F.TYPE_SINT32: pa.int32(), F.TYPE_SFIXED32: pa.int32(), F.TYPE_UINT32: pa.int64(),
               F.TYPE_FIXED32: pa.int64(), F.TYPE_BOOL: pa.bool_(), F.TYPE_STRING: pa.string(), F.TYPE_BYTES: pa.binary(),
               F.TYPE_ENUM: pa.string()}

    def field_type(field: FieldDescriptor) -> pa.DataType:
        if field.type in (F.TYPE_MESSAGE, F.TYPE_GROUP):
            inner = field.message_type
            if inner.GetOptions().map_entry:
                return pa.map_(field_type(inner.fields_by_name["key"]), field_type(inner.fields_by_name["value"]))
            return _json_text() if inner.full_name in seen else _proto_type(inner, seen)
        return scalars[field.type]

    fields = []
    for field in descriptor.fields:
        kind = field_type(field)
        # is_repeated in protobuf >= 6; label (3: repeated) before it.
        repeated = getattr(field, "is_repeated", getattr(field, "label", 0) == 3) and not pa.types.is_map(kind)
        fields.append(pa.field(field.name, pa.list_(kind) if repeated else kind))
    return pa.struct(fields)


def _json_type(schema: object, root: object, depth: int) -> pa.DataType:
    import pyarrow as pa

    if not isinstance(schema, dict) or depth > 32:
        return _json_text()
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return _json_type(target, root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind == "object" and isinstance(schema.get("properties"), dict) and schema["properties"]:
        return pa.struct([pa.field(name, _json_type(sub, root, depth + 1)) for name, sub in schema["properties"].items()])
    if kind == "array" and isinstance(schema.get("items"), dict):
        return pa.list_(_json_type(schema["items"], root, depth + 1))
    return cast("pa.DataType | None", {"string": pa.string(), "integer": pa.int64(), "number": pa.float64(),
                                       "boolean": pa.bool_()}.get(kind or "")) or _json_text()


# -- the plan as kctl_kafka options ---------------------------------------------------------

# The registry's credentials travel under keys with "password" and "token" in them: Spark
# redacts such options in its UI and logs (spark.redaction.regex).
OPTION, SECRET_OPTION, TOKEN_OPTION = "kctl.decode", "kctl.decode.password", "kctl.decode.token"


class _RegistryDocument(TypedDict):
    """OPTION's "registry": RegistrySettings without its secrets."""

    url: str
    timeout: float
    logical_cluster: str | None
    ssl_ca_location: str | None
    ssl_certificate_location: str | None
    ssl_key_location: str | None


class _PlanDocument(TypedDict):
    """OPTION's value (JSON): a DecodePlan."""

    subject: str
    schema_id: int
    version: int | None
    type: str
    schema: str
    references: list[tuple[str, str, int]]  # [name, subject, version] (JSON arrays)
    registry: _RegistryDocument


def plan_options(plan: DecodePlan) -> dict[str, str]:
    """PLAN as kctl_kafka options: the read tasks decode as they read (no second Python
    stage, and no pandas, which Spark's mapInArrow insists on)."""
    settings = plan.registry
    document = {"subject": plan.subject, "schema_id": plan.schema_id, "version": plan.version, "type": plan.type,
                "schema": plan.schema, "references": [[r.name, r.subject, r.version] for r in plan.references],
                "registry": {"url": settings.url, "timeout": settings.timeout, "logical_cluster": settings.logical_cluster,
                             "ssl_ca_location": settings.ssl_ca_location,
                             "ssl_certificate_location": settings.ssl_certificate_location, "ssl_key_location": settings.ssl_key_location}}
    options = {OPTION: json.dumps(document)}
    if settings.basic_auth:
        options[SECRET_OPTION] = settings.basic_auth
    if settings.bearer_token:
        options[TOKEN_OPTION] = settings.bearer_token
    return options


def plan_from_options(options: Mapping[str, str]) -> DecodePlan | None:
    from kctl.admin.registry.schemas import Reference, RegistrySettings

    text = options.get(OPTION)
    if not text:
        return None
    document: _PlanDocument = json.loads(text)
    settings = RegistrySettings(basic_auth=options.get(SECRET_OPTION) or None, bearer_token=options.get(TOKEN_OPTION) or None, **document["registry"])
    references = tuple(Reference(name=n, subject=s, version=v) for n, s, v in document["references"])
    return DecodePlan(settings, document["subject"], document["schema_id"], document["version"], document["type"], document["schema"], references)


def columns_ddl(plan: DecodePlan) -> str:
    """The decode columns as Spark DDL, for the source's schema."""
    return f", value_schema_id int, value_decoded {_ddl(spark_type(arrow_type(plan)))}, value_decode_error string"


def spark_type(kind: pa.DataType) -> pa.DataType:
    """KIND with every timestamp in microseconds, as Spark holds them."""
    import pyarrow as pa

    t = pa.types
    if t.is_struct(kind):
        return pa.struct([pa.field(f.name, spark_type(f.type)) for f in kind])
    if t.is_list(kind):
        return pa.list_(spark_type(kind.value_type))
    if t.is_map(kind):
        return pa.map_(spark_type(kind.key_type), spark_type(kind.item_type))
    if t.is_timestamp(kind):
        return pa.timestamp("us", tz=kind.tz)
    if t.is_large_string(kind):
        return pa.string()
    return kind


def _ddl(kind: pa.DataType) -> str:
    import pyarrow as pa

    t = pa.types
    if t.is_struct(kind):
        return "struct<" + ",".join(f"`{f.name.replace('`', '``')}`:{_ddl(f.type)}" for f in kind) + ">"
    if t.is_list(kind):
        return f"array<{_ddl(kind.value_type)}>"
    if t.is_map(kind):
        return f"map<{_ddl(kind.key_type)},{_ddl(kind.item_type)}>"
    if t.is_decimal(kind):
        return f"decimal({kind.precision},{kind.scale})"
    if t.is_timestamp(kind):
        return "timestamp" if kind.tz else "timestamp_ntz"
    names = {pa.string(): "string", pa.int32(): "int", pa.int64(): "bigint", pa.float32(): "float", pa.float64(): "double",
             pa.bool_(): "boolean", pa.binary(): "binary", pa.date32(): "date", pa.null(): "void"}
    return names[kind]


# -- decoding (in the read tasks) --------------------------------------------------------

def decode_batches(batches: Iterable[pa.RecordBatch], plan: DecodePlan) -> Iterator[pa.RecordBatch]:
    """BATCHES (source schema) with the three decode columns added."""
    import pyarrow as pa

    decoder = _Decoder(plan)
    decoded_type = decoder.type
    column_type = spark_type(decoded_type)
    for batch in batches:
        ids: list[int | None] = []
        values: list[object] = []
        errors: list[str | None] = []
        for value in batch.column("value").to_pylist():
            schema_id, datum, error = decoder.decode(value)
            ids.append(schema_id)
            values.append(datum)
            errors.append(error)
        typed = _typed_array(values, errors, decoded_type)
        if column_type != decoded_type:
            typed = typed.cast(column_type)
        columns = [*batch.columns, pa.array(ids, pa.int32()), typed, pa.array(errors, pa.string())]
        yield pa.RecordBatch.from_arrays(columns, names=[*batch.schema.names, *COLUMNS])


def _typed_array(values: list[object], errors: list[str | None], kind: pa.DataType) -> pa.Array[pa.Scalar[pa.DataType]]:
    """VALUES as an Arrow array of KIND; a value Arrow refuses (out of range) becomes
    null with its error, one by one, rather than failing the batch."""
    import pyarrow as pa

    try:
        return pa.array(values, kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        pass
    for i, value in enumerate(values):
        try:
            pa.array([value], kind)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            values[i], errors[i] = None, f"does not fit the column: {exc}"
    return pa.array(values, kind)


class _Decoder:
    """One task's decoding: the reader's schema parsed once, for the column's type and as
    the writer's schema of the values written with it; other writers' schemas fetched
    and parsed once each."""

    def __init__(self, plan: DecodePlan):
        self.plan = plan
        self.registry = _registry(plan)
        self._reader = _parse(plan.type, plan.schema, plan.references, plan.schema_id, self.registry)
        self.type = _type_of(plan.type, self._reader)
        # schema id -> (type, parsed, whether it is the reader's), or the error getting it.
        self._writers: dict[int, _Writer | Exception] = {plan.schema_id: (plan.type, self._reader, True)}

    def decode(self, value: bytes | None) -> tuple[int | None, object, str | None]:
        from kctl.records.serdes import schema_id as framed_id

        if value is None:
            return None, None, None  # a tombstone: nothing to decode, nothing wrong
        schema_id = framed_id(value)
        if schema_id is None:
            return None, None, "not in the schema registry's wire format"
        try:
            writer = self._writer(schema_id)
            return schema_id, conform(self._decode(writer, value), self.type), None
        except Exception as exc:  # whatever a payload can make a decoder raise: kept as the row's error
            return schema_id, None, " ".join(str(exc).split()) or type(exc).__name__

    def _writer(self, schema_id: int) -> _Writer:
        if schema_id not in self._writers:
            try:
                found = self.registry.by_id(schema_id)
                if found.type != self.plan.type:
                    raise ValueError(f"schema {schema_id} is {found.type}, not {self.plan.type}")
                self._writers[schema_id] = (found.type, _parse(found.type, found.schema, found.references, schema_id, self.registry), False)
            except Exception as exc:  # the registry's errors too: every value of this id gets it
                self._writers[schema_id] = exc
        writer = self._writers[schema_id]
        if isinstance(writer, Exception):
            raise writer
        return writer

    def _decode(self, writer: _Writer, value: bytes) -> object:
        kind, parsed, same = writer
        if kind == "AVRO":
            import fastavro

            # The reader's own schema needs no resolution (the common case, and faster).
            return fastavro.schemaless_reader(io.BytesIO(value[5:]), cast("AvroSchema", parsed),
                                              None if same else cast("AvroSchema", self._reader))
        if kind == "PROTOBUF":
            from kctl.records.protobuf import split_payload

            return cast("ProtoSchema", parsed).decode(*split_payload(value))
        return json.loads(value[5:])


def _registry(plan: DecodePlan) -> Registry:
    from kctl.admin.registry.schemas import Registry

    return Registry(plan.registry)


def _avro_schema(text: str, references: tuple[Reference, ...], registry: Registry) -> AvroSchema:
    """An Avro schema parsed with the named types of its references (fetched)."""
    import fastavro

    named: NamedSchemas = {}
    for reference in references or ():
        found = registry.version(reference.subject, reference.version)
        fastavro.parse_schema(_avro_schema_json(found.schema), named_schemas=named)
    return fastavro.parse_schema(_avro_schema_json(text), named_schemas=named)


def _avro_schema_json(text: str) -> AvroSchema:
    try:
        return json.loads(text)
    except ValueError:
        return text  # a bare primitive name


def conform(value: object, kind: pa.DataType) -> object:
    """VALUE (as a decoder returns it) shaped for the Arrow type KIND: fields matched by
    name, Protobuf's JSON mapping undone (int64 as strings, bytes as base64), and what the
    type cannot hold as null."""
    import pyarrow as pa

    if value is None:
        return None
    t = pa.types
    if t.is_struct(kind):
        if not isinstance(value, dict):
            return {kind.field(0).name: conform(value, kind.field(0).type)} if kind.num_fields == 1 and kind.field(0).name == "value" else None
        return {field.name: conform(value.get(field.name), field.type) for field in kind}
    if t.is_map(kind):
        return [(str(k), conform(v, kind.item_type)) for k, v in value.items()] if isinstance(value, dict) else None
    if t.is_list(kind):
        return [conform(v, kind.value_type) for v in value] if isinstance(value, list) else None
    if t.is_large_string(kind):
        from kctl.records.serdes import ENCODER

        return ENCODER.encode(value)
    if t.is_string(kind):
        if isinstance(value, str):
            return value
        return str(value) if isinstance(value, datetime.time | uuid.UUID) else None
    if t.is_boolean(kind):
        return value if isinstance(value, bool) else None
    if t.is_integer(kind):
        if isinstance(value, bool):
            return None
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                return None
        return int(value) if isinstance(value, int) or (isinstance(value, float) and value.is_integer()) else None
    if t.is_floating(kind):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        try:
            return float(value) if isinstance(value, str) else None  # Protobuf's "NaN", "Infinity"
        except ValueError:
            return None
    if t.is_binary(kind):
        if isinstance(value, bytes):
            return value
        try:
            return base64.b64decode(value) if isinstance(value, str) else None
        except ValueError:
            return None
    if t.is_decimal(kind):
        try:
            return decimal.Decimal(value) if isinstance(value, (str, int, decimal.Decimal)) else None
        except decimal.InvalidOperation:
            return None
    if t.is_timestamp(kind) or t.is_date(kind):
        if isinstance(value, int) and not isinstance(value, bool):
            return value  # a default, in the type's unit (days for a date)
    if t.is_timestamp(kind):
        if isinstance(value, str):
            try:
                value = datetime.datetime.fromisoformat(value)
            except ValueError:
                return None
        return value if isinstance(value, datetime.datetime) else None
    if t.is_date(kind):
        return value if isinstance(value, datetime.date) else None
    return None
