"""`Api`: a Kafka API by name (kctl.messages.apis has one for each API kctl speaks), typed
for type checkers by its request's fields and its answer. At run time only its name: the
fast reads import it, and typing costs ~4 ms to import."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Generic, TypeVar

    Q = TypeVar("Q")
    R = TypeVar("R")

    class Api(Generic[Q, R]):
        """A Kafka API by name, typed by its request's fields (Q) and its answer (R)."""

        name: str

        def __init__(self, name: str) -> None: ...
else:
    class Api:
        __slots__ = ("name",)

        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return f"Api({self.name!r})"
