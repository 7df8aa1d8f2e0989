"""Requests to coordinators through kctl's wire client: a group's (key type 0) or a
transactional id's (key type 1). Each coordinator is found with FindCoordinator (v4: every
key in one request), gets one request for all the keys it owns, and every coordinator's
request is sent before any answer is read. A coordinator that is loading, not available
or has moved (COORDINATOR_RETRIABLE) is asked again until the session's timeout, as Kafka's
admin client does."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from kctl.admin.client.errors import COORDINATOR_RETRIABLE, RETRY_BACKOFF, for_kafka_code
from kctl.admin.client.session import AdminSession
from kctl.errors import TimeoutError_
from kctl.messages import apis
from kctl.messages.errors import error_name
from kctl.polling import poll

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any, Protocol, TypeVar

    from kctl.messages.api import Api

    R = TypeVar("R")

    # A request to send: (API, its fields or a function of the version giving them,
    # lowest and highest version kctl can read the answer of).
    Request = tuple[Api[Any, R], Any, int | None, int | None]

    class Part(Protocol):
        """A key's part of an answer: its error code says whether to ask again."""

        @property
        def error_code(self) -> int: ...

    P = TypeVar("P", bound=Part)

GROUP, TRANSACTION = 0, 1
_KEYS = {GROUP: "group", TRANSACTION: "transactional id"}
_COORDINATORS = {GROUP: "group", TRANSACTION: "transaction"}


def per_coordinator(
    session: AdminSession, key_type: int, keys: Sequence[str], request: Callable[[list[str]], Request[R]],
    parts: Callable[[R], Iterable[tuple[str, P]]], action: str,
) -> dict[str, tuple[P, int]]:
    """Send request(keys) to each coordinator for the keys it owns; each key's part of the
    answer (parts(response) yields (key, part with an error_code)) and its coordinator's id.
    Keys whose coordinator is loading, not available or has moved are asked again until
    the session's timeout; their last retriable answers are then the result."""
    wire = session.wire
    found: dict[str, tuple[P, int]] = {}
    pending = list(dict.fromkeys(keys))

    def run() -> tuple[dict[str, Any], dict[str, tuple[P, int]]]:
        deadline = wire.deadline()
        coordinators = find_coordinators(session, key_type, pending, deadline)
        if coordinators is None:  # no coordinator found yet for some of the keys
            return {k: None for k in pending}, {}
        owned: dict[int, list[str]] = {}
        for key, node in coordinators.items():
            owned.setdefault(node, []).append(key)
        nodes = list(owned)
        answers = wire.fan_out([(node, *request(owned[node])) for node in nodes], deadline)
        retry: dict[str, Any] = {}
        done: dict[str, tuple[P, int]] = {}
        for node, response in zip(nodes, answers):
            for key, part in parts(response):
                if part.error_code and error_name(part.error_code) in COORDINATOR_RETRIABLE:
                    retry[key] = (part, node)
                    wire.coordinators.pop((key_type, key), None)  # moved or loading: find it again
                else:
                    done[key] = (part, node)
        return retry, done

    def ask() -> dict[str, Any]:
        nonlocal pending
        retry, done = wire.call(action, run)
        found.update(done)
        pending = list(retry)
        return retry

    if not pending:
        return found
    retry = poll(ask, lambda retry: not retry, timeout=session.timeout, interval=RETRY_BACKOFF, stop_before=True)
    if None in retry.values():
        raise TimeoutError_(action=action, cause=f"no {_COORDINATORS[key_type]} coordinator available within the timeout",
                            hint="raise {timeout} if the cluster is starting or electing")
    found.update(retry)  # the retriable answers are the result; callers report them
    return found


def find_coordinators(session: AdminSession, key_type: int, keys: Sequence[str], deadline: float) -> dict[str, int] | None:
    """{key: coordinator node id} (FindCoordinator v4, all keys not found before in this
    command in one request), or None while one of them has no coordinator yet."""
    wire = session.wire
    known = wire.coordinators
    unknown = [key for key in keys if (key_type, key) not in known]
    if unknown:
        (answer,) = wire.fan_out([(None, apis.FIND_COORDINATOR, {"key_type": key_type, "coordinator_keys": unknown}, 4, 6)], deadline)
        for c in answer.coordinators:
            if c.error_code:
                if error_name(c.error_code) in COORDINATOR_RETRIABLE:
                    return None
                raise for_kafka_code(c.error_code, c.error_message, f"find the coordinator of {_KEYS[key_type]} {c.key}")
            wire.learn(c.node_id, c.host, c.port)
            known[(key_type, c.key)] = c.node_id
    return {key: known[(key_type, key)] for key in keys}
