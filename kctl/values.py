"""Value: the result types of kctl's everyday paths (config, a cluster's brokers, topics,
partitions, offsets, configs, groups and their lag), as plain slotted classes.

Why not dataclasses: the reads scripts run in loops answer in 20-30 ms where the Go CLIs
do (issue 59), and importing dataclasses costs a read ~7 ms (it imports inspect, ast,
dis and tokenize) and defining each frozen dataclass ~0.35 ms more (its methods are
compiled from source as the class is made): 8-11 ms of a `group lag`, measured. A
NamedTuple would be cheap to define, but is a tuple: json would write it as an array and
it would equal any tuple of its values. These classes write their `__init__` out, and get
from Value what a frozen dataclass has: equality and hashing by field, a repr, `replace`
and the field order that makes their JSON keys (kctl.output.render). Their __init__
takes keywords only, as the dataclasses' did, but for the types built by the thousand in
the loops that read an answer (kctl.admin.client.kafka's layouts and offsets,
kctl.messages.records' batches and records: POSITIONAL), whose fields go by position
(tests/test_architecture.py checks both).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any


if TYPE_CHECKING:  # a TypeVar bound by name compiles that name: ~0.7 ms at import
    from typing import TypeVar

    V = TypeVar("V", bound="Value")


# The modules whose Values take their fields by position (see the module docstring).
POSITIONAL = ("kctl.admin.client.kafka", "kctl.messages.records")


class Value:
    """A value object: its fields are its __slots__ (in the order of its JSON keys), each
    set once by its __init__; equal when of the same type with equal fields."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((type(self).__name__, *self._fields()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{name}={getattr(self, name)!r}' for name in self.__slots__)})"


def replace(value: V, **changes: Any) -> V:
    """A copy of `value` with some fields changed, as dataclasses.replace makes one."""
    return type(value)(**{name: changes.get(name, getattr(value, name)) for name in value.__slots__})


def fields(value: Value | type[Value]) -> tuple[str, ...]:
    """The field names, in order."""
    return value.__slots__
