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
import uuid
from dataclasses import dataclass
from typing import Any

# --value-format / --key-format -> the registry's schema type ("auto": whichever it is).
FORMATS = {"avro": "AVRO", "protobuf": "PROTOBUF", "json-schema": "JSON", "auto": None}
ENCODINGS = {"AVRO": "avro", "PROTOBUF": "protobuf", "JSON": "json-schema"}


class DecodeError(ValueError):
    """A key or value that is not what --key-format/--value-format says."""


@dataclass(frozen=True, slots=True)
class Decoded:
    data: Any  # JSON-ready
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

    def __init__(self, registry, *, key_format: str | None, value_format: str | None, warn=None):
        self.registry = registry
        self.client = registry.client
        self.formats = {"key": key_format, "value": value_format}
        self.fields = tuple(f for f in ("key", "value") if self.formats[f] is not None)
        self.warn = warn or (lambda message: None)
        self.failures = 0
        self._types: dict[int, str | None] = {}
        self._subjects: dict[tuple[int, str], str | None] = {}
        self._deserializers: dict[str, Any] = {}
        self._warned_protobuf = False

    def decode(self, message, field: str) -> Decoded | None:
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

    def _decode(self, message, field: str, data: bytes, wanted: str) -> Decoded | None:
        found = schema_id(data)
        if found is None:
            if wanted == "auto":
                return None
            raise DecodeError("not in the schema registry's wire format: no magic byte 0 and schema id")
        kind = self._type(found, auto=wanted == "auto")
        if kind is None:
            return None  # auto: an id the registry does not know; these are bytes
        if FORMATS[wanted] not in (None, kind):
            raise DecodeError(f"schema {found} is {ENCODINGS.get(kind, kind)}, not {wanted}")
        if kind == "PROTOBUF":
            if wanted == "auto":
                if not self._warned_protobuf:
                    self._warned_protobuf = True
                    self.warn("Protobuf keys and values are not decoded yet; shown as bytes")
                return None
            raise DecodeError("Protobuf is not decoded yet")
        from confluent_kafka.serialization import MessageField, SerializationContext

        context = SerializationContext(message.topic(), MessageField.KEY if field == "key" else MessageField.VALUE, message.headers())
        try:
            decoded = self._deserializer(kind)(data, context)
        except Exception as exc:  # the deserializers raise SerializationError, fastavro's and jsonschema's errors
            raise DecodeError(f"schema {found}: {exc}") from None
        return Decoded(json_ready(decoded), found, kind, self._subject(found, message.topic(), field))

    def _type(self, found: int, *, auto: bool) -> str | None:
        if found not in self._types:
            from kctl.errors import NotFoundError

            try:
                self._types[found] = self.registry.by_id(found).type
            except NotFoundError:
                if not auto:
                    raise DecodeError(f"the registry has no schema {found}") from None
                self._types[found] = None
        return self._types[found]

    def _subject(self, found: int, topic: str, field: str) -> str | None:
        """The subject the schema is registered under: the topic's (TopicNameStrategy)
        when it is one of them, else the first."""
        if (found, topic) not in self._subjects:
            try:
                versions = self.client.get_schema_versions(found)
            except Exception:  # a registry without this endpoint: the subject stays unknown
                versions = []
            subjects = [v.subject for v in versions]
            preferred = f"{topic}-{field}"
            self._subjects[(found, topic)] = preferred if preferred in subjects else (subjects[0] if subjects else None)
        return self._subjects[(found, topic)]

    def _deserializer(self, kind: str):
        if kind not in self._deserializers:
            if kind == "AVRO":
                from confluent_kafka.schema_registry.avro import AvroDeserializer

                self._deserializers[kind] = AvroDeserializer(self.client)
            else:
                from confluent_kafka.schema_registry.json_schema import JSONDeserializer

                self._deserializers[kind] = JSONDeserializer(None, schema_registry_client=self.client)
        return self._deserializers[kind]


def json_ready(value: Any) -> Any:
    """Decoded data as JSON can hold it: Avro bytes and fixed as Avro's JSON encoding does
    (one character per byte, ISO-8859-1), decimals as strings (no float rounding), times as
    ISO-8601, UUIDs as text."""
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def decoded_envelope(envelope: dict[str, Any], message, decoder: RecordDecoder) -> dict[str, Any]:
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


def decode_in_place(messages: list, decoder: RecordDecoder) -> list:
    """MESSAGES with decoded keys and values replaced by their compact JSON text (for
    --format templates)."""
    import json

    for message in messages:
        for field in decoder.fields:
            found = decoder.decode(message, field)
            if found is not None:
                text = json.dumps(found.data, ensure_ascii=False, separators=(",", ":")).encode()
                (message.set_key if field == "key" else message.set_value)(text)
    return messages
