"""Kafka's topic and broker config definitions, for checking resource files offline.

`kafka_configs.tsv` is printed from Apache Kafka's own ConfigDefs by
tests/backends/KafkaConfigs.java (a test keeps it equal to the jars the tests run):
scope, name, type, and the validator as Kafka prints it. The validator strings are
read here rather than re-typed, so a new Kafka release is one regenerated file.
Validators kctl cannot read (class names, listener maps) are left to the broker, which
`kctl diff` asks with validate-only requests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

# Topic configs a reassignment sets and clears; never part of a resource's desired state.
MANAGED_BY_REASSIGNMENT = frozenset({"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"})

_RANGE = re.compile(r"^\[(?P<min>-?[\d.]+)?,?\.\.\.(?:,(?P<max>-?[\d.]+))?\]$")
_INT_BITS = {"SHORT": 16, "INT": 32, "LONG": 64}


@dataclass(frozen=True)
class ConfigDef:
    scope: str
    name: str
    type: str
    validator: str


@cache
def definitions(scope: str) -> dict[str, ConfigDef]:
    text = resources.files(__package__).joinpath("kafka_configs.tsv").read_text(encoding="utf-8")
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        kind, name, type_, validator = (line.split("\t") + [""])[:4]
        if kind == scope:
            out[name] = ConfigDef(kind, name, type_, validator)
    return out


def check(scope: str, name: str, value: str) -> str | None:
    """Why `value` is not valid for config `name` in `scope` (topic | broker), or None."""
    definition = definitions(scope).get(name)
    if definition is None:
        import difflib

        close = difflib.get_close_matches(name, definitions(scope), n=1)
        return f"unknown {scope} config" + (f" (did you mean {close[0]}?)" if close else "")
    return _check_type(definition, value) or _check_validator(definition, value)


def _check_type(d: ConfigDef, value: str) -> str | None:
    if d.type == "BOOLEAN" and value.strip().lower() not in ("true", "false"):
        return f"must be true or false, not {value!r}"
    if d.type in _INT_BITS:
        try:
            number = int(value.strip())
        except ValueError:
            return f"must be an integer, not {value!r}"
        bits = _INT_BITS[d.type]
        if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
            return f"must fit in {bits} bits ({d.type.lower()}), not {value}"
    if d.type == "DOUBLE":
        try:
            float(value.strip())
        except ValueError:
            return f"must be a number, not {value!r}"
    return None


def _check_validator(d: ConfigDef, value: str) -> str | None:
    validator = d.validator
    if not validator or validator == "null":
        return None
    alternatives = [v.strip() for v in validator.split(" or ")]
    reasons = [_one(d, value, v) for v in alternatives]
    if all(r is not None for r in reasons):
        return f"must be {validator}, not {value!r}"
    return None


def _one(d: ConfigDef, value: str, validator: str) -> str | None:
    """None when `value` passes this validator (or kctl cannot read it: the broker will)."""
    if validator in ("non-empty string", "non-null string"):
        return None if value.strip() else "empty"
    if validator == "non-empty list":
        return None if any(p.strip() for p in value.split(",")) else "empty"
    match = _RANGE.match(validator)
    if match:
        try:
            number = float(value.strip())
        except ValueError:
            return "not a number"
        low, high = match.group("min"), match.group("max")
        if (low is not None and number < float(low)) or (high is not None and number > float(high)):
            return "out of range"
        return None
    if re.fullmatch(r"-?\d+", validator):
        return None if value.strip() == validator else "different"
    if validator.startswith("[") and validator.endswith("]") and "..." not in validator and ":" not in validator:
        choices = [c.strip() for c in validator[1:-1].split(",")]
        given = [p.strip() for p in value.split(",")] if d.type == "LIST" else [value.strip()]
        return None if all(g in choices for g in given) else "not a choice"
    return None


def config_string(value: Any) -> str:
    """A YAML scalar as Kafka's config string: true -> "true", 100 -> "100"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
