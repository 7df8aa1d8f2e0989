"""A JSON Schema validator for the keywords record payloads use, for `audit --json-schema`.

Supported: type, enum, const, properties, required, additionalProperties (true, false or
a schema), items (one schema), minItems/maxItems, minLength/maxLength, pattern, minimum,
maximum, exclusiveMinimum/exclusiveMaximum (numbers, as in draft 6+), multipleOf, allOf,
anyOf, oneOf, not. Annotations ($schema, $id, title, description, ...) are ignored. Any
other keyword ($ref, format, if/then, ...) is refused when the schema is loaded rather
than silently not checked: an audit that says "valid" must have checked what it says.

Pure Python, no dependencies: it runs inside Spark's Python workers.
"""

from __future__ import annotations

import json
import re
from typing import Any

ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "definitions", "$defs"})
KEYWORDS = frozenset({
    "type", "enum", "const", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
    "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "allOf", "anyOf", "oneOf", "not",
})
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}


class SchemaError(ValueError):
    """The schema uses something this validator does not check, or is malformed."""


def check_schema(schema: Any, where: str = "#") -> None:
    """Refuse schemas with keywords that would not be checked."""
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        raise SchemaError(f"{where}: a schema must be an object or a boolean")
    for key, value in schema.items():
        if key in ANNOTATIONS:
            continue
        if key not in KEYWORDS:
            raise SchemaError(f"{where}: keyword {key!r} is not supported (supported: {', '.join(sorted(KEYWORDS))})")
        if key == "type":
            names = value if isinstance(value, list) else [value]
            unknown = [n for n in names if n not in _TYPES]
            if unknown:
                raise SchemaError(f"{where}: unknown type {unknown[0]!r}")
        elif key == "properties":
            for name, sub in value.items():
                check_schema(sub, f"{where}/properties/{name}")
        elif key in ("items", "not") or (key == "additionalProperties" and not isinstance(value, bool)):
            check_schema(value, f"{where}/{key}")
        elif key in ("allOf", "anyOf", "oneOf"):
            if not isinstance(value, list) or not value:
                raise SchemaError(f"{where}/{key}: expected a non-empty list of schemas")
            for index, sub in enumerate(value):
                check_schema(sub, f"{where}/{key}/{index}")
        elif key == "pattern":
            try:
                re.compile(value)
            except re.error as exc:
                raise SchemaError(f"{where}/pattern: {exc}") from None


def load(text: str) -> Any:
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"not JSON: {exc}") from None
    check_schema(schema)
    return schema


def valid(value: Any, schema: Any) -> bool:
    if schema is True:
        return True
    if schema is False:
        return False
    kind = schema.get("type")
    if kind is not None and not any(_TYPES[name](value) for name in (kind if isinstance(kind, list) else [kind])):
        return False
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        return False
    if "const" in schema and not _same(value, schema["const"]):
        return False
    if isinstance(value, dict) and not _valid_object(value, schema):
        return False
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
            return False
        if "items" in schema and not all(valid(item, schema["items"]) for item in value):
            return False
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", len(value)):
            return False
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            return False
    if _TYPES["number"](value) and not _valid_number(value, schema):
        return False
    if "allOf" in schema and not all(valid(value, sub) for sub in schema["allOf"]):
        return False
    if "anyOf" in schema and not any(valid(value, sub) for sub in schema["anyOf"]):
        return False
    if "oneOf" in schema and sum(valid(value, sub) for sub in schema["oneOf"]) != 1:
        return False
    return not ("not" in schema and valid(value, schema["not"]))


def _valid_object(value: dict, schema: dict) -> bool:
    if any(name not in value for name in schema.get("required", ())):
        return False
    properties = schema.get("properties", {})
    for name, item in value.items():
        if name in properties:
            if not valid(item, properties[name]):
                return False
        elif "additionalProperties" in schema and not valid(item, schema["additionalProperties"]):
            return False
    return True


def _valid_number(value, schema: dict) -> bool:
    if "minimum" in schema and value < schema["minimum"]:
        return False
    if "maximum" in schema and value > schema["maximum"]:
        return False
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        return False
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        return False
    return not ("multipleOf" in schema and (value / schema["multipleOf"]) % 1 != 0)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def validator(schema: Any):
    """A function bytes -> bool (None for a null value) for one schema."""

    def check(raw: bytes | None) -> bool | None:
        if raw is None:
            return None
        try:
            document = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return False
        return valid(document, schema)

    return check
