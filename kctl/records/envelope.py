"""The JSON envelope of a record: what `consume -o json|jsonl` writes and what
`produce --input jsonl` reads, so the two round-trip.

    {"topic": "orders", "partition": 0, "offset": 42,
     "timestamp": 1790000000000, "timestamp_type": "CreateTime",
     "key": "k1", "key_encoding": "text",
     "value": "aGVsbG8=", "value_encoding": "base64",
     "headers": [{"key": "trace", "value": "abc", "value_encoding": "text"}]}

Every key is always present (a stable contract). Bytes that are valid UTF-8 are written
as text; anything else as base64, with `*_encoding` saying which. Null keys, values and
header values are JSON null. `timestamp_type` uses Kafka's names: CreateTime,
LogAppendTime, or NoTimestampType (timestamp null).

Input accepts the same object; `topic`, `offset` and `timestamp_type` are ignored (the
topic is the one named on the command line). For convenience `headers` may also be an
object ({"k": "v"}) and a `key` or `value` that is a JSON object, array or number is sent
as its compact JSON text. `timestamp` is epoch milliseconds or an ISO-8601 string.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from kctl.records.model import ANY_PARTITION, ConsumedRecord, ProducerRecord, RecordError

TIMESTAMP_TYPES = {0: "NoTimestampType", 1: "CreateTime", 2: "LogAppendTime"}
_FIELDS = frozenset({"key", "value", "key_encoding", "value_encoding", "headers", "partition", "timestamp"})
_IGNORED = frozenset({"topic", "offset", "timestamp_type"})


def _text(data: bytes | None) -> tuple[str | None, str]:
    if data is None:
        return None, "text"
    try:
        return data.decode("utf-8"), "text"
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), "base64"


def to_envelope(message: ConsumedRecord) -> dict[str, Any]:
    """The envelope of a consumed record."""
    kind, timestamp = message.timestamp()
    key, key_encoding = _text(message.key())
    value, value_encoding = _text(message.value())
    headers = []
    for name, raw in message.headers() or ():
        text, encoding = _text(raw)
        headers.append({"key": name, "value": text, "value_encoding": encoding})
    return {
        "topic": message.topic(),
        "partition": message.partition(),
        "offset": message.offset(),
        "timestamp": timestamp if kind else None,
        "timestamp_type": TIMESTAMP_TYPES.get(kind, "NoTimestampType"),
        "key": key,
        "key_encoding": key_encoding,
        "value": value,
        "value_encoding": value_encoding,
        "headers": headers,
    }


# Built once: json.dumps with non-default arguments builds a new encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def encode(message: ConsumedRecord) -> bytes:
    """The envelope as compact JSON (UTF-8, no newline)."""
    return _ENCODER.encode(to_envelope(message)).encode()


def encode_share(message: Any) -> bytes:
    """A share-group record's envelope (kctl.records.share.ShareRecord) as compact JSON,
    with its delivery count and acknowledgement after the rest: a function of its own,
    so that other records' envelopes pay nothing for it."""
    envelope = to_envelope(message)
    envelope["delivery_count"] = message.delivery_count
    envelope["acknowledgement"] = message.acknowledgement
    return _ENCODER.encode(envelope).encode()


def encode_decoded(message: ConsumedRecord, decoder: Any) -> bytes:
    """The envelope with keys and values decoded by their schemas (records.schemas)."""
    from kctl.records.serdes import ENCODER, decoded_envelope

    return ENCODER.encode(decoded_envelope(to_envelope(message), message, decoder)).encode()


# -- input ----------------------------------------------------------------------------------


def _bytes(value: Any, encoding: Any, what: str) -> bytes | None:
    if value is None:
        return None
    if encoding not in (None, "text", "base64", "hex"):
        raise RecordError(f"{what}_encoding must be text, base64 or hex, not {encoding!r}")
    if not isinstance(value, str):
        if encoding in ("base64", "hex"):
            raise RecordError(f"{what} must be a string when {what}_encoding is {encoding}")
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    try:
        if encoding == "base64":
            return base64.b64decode(value, validate=True)
        if encoding == "hex":
            return bytes.fromhex(value)
        return value.encode("utf-8")
    except (binascii.Error, ValueError) as exc:
        # UnicodeEncodeError (a lone surrogate such as "\ud800") is a ValueError too.
        kind = encoding if encoding in ("base64", "hex") else "UTF-8 text"
        raise RecordError(f"{what} is not valid {kind}") from exc


def _headers(raw: Any) -> list[tuple[str, bytes | None]] | None:
    if raw is None:
        return None
    if isinstance(raw, dict):
        return [(str(k), _bytes(v, "text", f"header {k}")) for k, v in raw.items()]
    if not isinstance(raw, list):
        raise RecordError("headers must be a list of {key, value} objects or an object")
    headers = []
    for item in raw:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            headers.append((item["key"], _bytes(item.get("value"), item.get("value_encoding"), f"header {item['key']}")))
        elif isinstance(item, list) and len(item) == 2 and isinstance(item[0], str):
            headers.append((item[0], _bytes(item[1], "text", f"header {item[0]}")))
        else:
            raise RecordError("each header must be {\"key\": ..., \"value\": ...} or [key, value]")
    return headers


def _timestamp(raw: Any) -> int:
    if raw is None:
        return 0
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
        return raw
    if isinstance(raw, str):
        from kctl.errors import UsageError
        from kctl.timespec import parse_instant

        try:
            return parse_instant(raw)
        except UsageError:
            pass
    raise RecordError(f"timestamp {raw!r} is not epoch milliseconds or an ISO-8601 time")


def from_line_by_key(line: bytes) -> ProducerRecord | None:
    """The record in one JSON line, its partition left to the producer's partitioner (by
    key, as the record was first produced): a copy keeps its keys together whatever the
    destination's partition count."""
    record = from_line(line)
    return record._replace(partition=ANY_PARTITION) if record is not None else None


def from_line(line: bytes) -> ProducerRecord | None:
    """The record in one JSON line; None for a blank line."""
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise RecordError(f"not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise RecordError(f"expected a JSON object, got {type(obj).__name__}")
    unknown = set(obj) - _FIELDS - _IGNORED
    if unknown:
        raise RecordError(f"unknown field {sorted(unknown)[0]!r} (known: {', '.join(sorted(_FIELDS))})")
    partition = obj.get("partition")
    if partition is None:
        partition = ANY_PARTITION
    elif not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
        raise RecordError(f"partition {partition!r} is not a partition number")
    return ProducerRecord(
        _bytes(obj.get("value"), obj.get("value_encoding"), "value"),
        _bytes(obj.get("key"), obj.get("key_encoding"), "key"),
        partition,
        _timestamp(obj.get("timestamp")),
        _headers(obj.get("headers")),
    )
