"""The KctlError hierarchy and the documented exit statuses.

Everything below the CLI raises a KctlError; only `kctl.cli.main` renders it, once, as
`error: unable to <verb> <object>: <cause>` on stderr and exits with its `exit_code`.
The ExitCode table is part of kctl's contract: the man page's EXIT STATUS section and
`kctl --help` are generated from it.

0-3 follow the Nagios plugin convention because health and status commands report
through them; every other failure has its own code so scripts never mistake an
error for a WARNING/CRITICAL verdict.
"""

# No `from __future__ import annotations`: nothing here is annotated at run time but the
# methods, whose annotations are evaluated once at import.

import collections
import enum
from collections.abc import Mapping

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any, Generic, NamedTuple, TypeVar

    R = TypeVar("R")


class ExitCode(enum.IntEnum):
    OK = 0
    ERROR = 1
    CRITICAL = 2
    UNKNOWN = 3
    PARTIAL_FAILURE = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    ABORTED = 7
    IN_USE = 8
    GROUP_ACTIVE = 10
    RESET_INCOMPLETE = 11
    USAGE = 64
    INVALID = 65
    UNREACHABLE = 69
    TIMEOUT = 75
    NOT_AUTHORIZED = 77
    CONFIG = 78
    INTERRUPTED = 130


EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "success (health and status commands: OK)",
    ExitCode.ERROR: "unexpected failure (health and status commands: WARNING)",
    ExitCode.CRITICAL: "health and status commands: CRITICAL; spark audit: problems found; diff: the cluster differs from the files; schema check: not compatible",
    ExitCode.UNKNOWN: "health and status commands: UNKNOWN (the state could not be read); local status: the broker is not running (LSB's 3)",
    ExitCode.PARTIAL_FAILURE: "a batch operation failed for some of its items (each is reported)",
    ExitCode.NOT_FOUND: "a named topic, group, broker or context does not exist",
    ExitCode.ALREADY_EXISTS: "the resource to create already exists",
    ExitCode.ABORTED: "not confirmed: declined at the prompt, or --yes missing without a terminal",
    ExitCode.IN_USE: "what the command needs is taken by another process (local start: the port)",
    ExitCode.GROUP_ACTIVE: "refused: the group has active members (offset reset, group delete, offset delete)",
    ExitCode.RESET_INCOMPLETE: "offset reset not (fully) applied: the broker refused or the read-back differs",
    ExitCode.USAGE: "malformed command line: unknown option, bad flag value",
    ExitCode.INVALID: "the request or input is invalid (topic name, config, replication factor, file)",
    ExitCode.UNREACHABLE: "no broker of the cluster could be reached",
    ExitCode.TIMEOUT: "the cluster was reached but did not answer within --timeout",
    ExitCode.NOT_AUTHORIZED: "authentication or authorization failed",
    ExitCode.CONFIG: "the configuration is invalid: config file, context, -X property",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C) before the command finished; a --follow or --watch run stopped with Ctrl-C ends as it would on its own (0; cluster health --watch: its last status)",
}


# A hint names a setting the user can change as `{name}`, the name the library gives it (a
# keyword argument, a setting: `{timeout}`, `{allow_new_group}`); the CLI renders it as its
# flag (`--timeout`), other callers as words (render_hint). Compiled on first use: every
# command imports this module, few render a hint.
_SETTING = r"\{([a-z][a-z0-9_]*)\}"


def render_hint(hint: str, names: Mapping[str, str] | None = None) -> str:
    """`hint` with each `{setting}` named as `names` says (a flag, for the CLI), else in
    words (`allow_new_group` -> `allow new group`)."""
    import re

    return re.sub(_SETTING, lambda m: (names or {}).get(m.group(1)) or m.group(1).replace("_", " "), hint)


def settings_in(hint: str) -> list[str]:
    """The `{setting}` names a hint mentions."""
    import re

    return re.findall(_SETTING, hint)


if TYPE_CHECKING:
    class Resource(NamedTuple):
        """What an error is about, in Kafka's resource terms: ("topic", "orders"),
        ("group", "billing"), ("context", "prod")."""

        type: str
        name: str
else:
    # typing's NamedTuple is collections' with annotations: the same at run time.
    Resource = collections.namedtuple("Resource", "type name")


class KctlError(Exception):
    """An error for the user, built from its fields where it happens: what was being done
    (`action`) and what went wrong (`cause`), which make the one-line message `unable to
    <action>: <cause>`; Kafka's error name when the cluster answered with one; the
    resource it is about; an optional hint; the exit status. An error raised below the
    code that knows the action (a connection's authentication) has a cause only, and the
    caller names the action with `but(action=...)`. Callers judge an error by these
    fields, never by its text, and reword one by building another (`but`), never by
    cutting its message. Only a UsageError may be a ready-made line (`message`): a
    command line wrong in itself has no action to name."""

    exit_code: ExitCode = ExitCode.ERROR
    # Kafka's error name (NOT_LEADER_OR_FOLLOWER...) when the cluster answered with one:
    # callers that retry what Kafka calls retriable judge by it, not by the message.
    kafka_error: str | None = None
    # The topic, group or context the error is about (a NotFoundError: the one missing).
    resource: Resource | None = None
    # The code a service with codes of its own answered with (the Schema Registry's 40401).
    service_code: int | None = None

    def __init__(self, *, action: str | None = None, cause: str, hint: str | None = None, exit_code: ExitCode | None = None,
                 kafka_error: str | None = None, resource: Resource | None = None, service_code: int | None = None):
        self.action = action
        self.cause = cause
        super().__init__(self.message)
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code
        if kafka_error is not None:
            self.kafka_error = kafka_error
        if resource is not None:
            self.resource = resource
        if service_code is not None:
            self.service_code = service_code

    @property
    def message(self) -> str:
        """The line kctl prints after `error: `."""
        return f"unable to {self.action}: {self.cause}" if self.action is not None else self.cause

    def __str__(self) -> str:
        return self.message

    def but(self, *, action: str | None = None, cause: str | None = None, hint: str | None = None,
            resource: Resource | None = None, kind: "type[KctlError] | None" = None) -> "KctlError":
        """This error (its class, Kafka error, resource and exit status) with a new action,
        cause, hint or resource, or as another class: how a caller that knows more says it."""
        cls = kind or type(self)
        return cls(action=action if action is not None else self.action, cause=cause if cause is not None else self.cause,
                   hint=hint if hint is not None else self.hint, exit_code=self.exit_code if kind is None else None,
                   kafka_error=self.kafka_error, resource=resource or self.resource, service_code=self.service_code)


class UsageError(KctlError):
    """A command line kctl cannot run: an action and its cause, or (a line wrong in
    itself, such as two flags that exclude each other) a ready-made `message`."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str | None = None, *, action: str | None = None, cause: str | None = None, **fields: "Any"):
        if (message is None) == (cause is None):
            raise TypeError("UsageError takes a message, or a cause (and an action)")
        super().__init__(action=action, cause=message if message is not None else cause or "", **fields)


class NotFoundError(KctlError):
    exit_code = ExitCode.NOT_FOUND


class AlreadyExistsError(KctlError):
    exit_code = ExitCode.ALREADY_EXISTS


class AbortedError(KctlError):
    exit_code = ExitCode.ABORTED


class GroupActiveError(KctlError):
    """What a group with live members refuses: resets, deletion, deleting offsets in use."""
    exit_code = ExitCode.GROUP_ACTIVE


class InvalidError(KctlError):
    exit_code = ExitCode.INVALID


class UnreachableError(KctlError):
    exit_code = ExitCode.UNREACHABLE


class TimeoutError_(KctlError):
    """Named with a trailing underscore so it never shadows the builtin TimeoutError."""

    exit_code = ExitCode.TIMEOUT


class NotAuthorizedError(KctlError):
    exit_code = ExitCode.NOT_AUTHORIZED


class ConfigError(KctlError):
    exit_code = ExitCode.CONFIG


class PartialFailure(KctlError):
    """Raised after a batch operation has rendered its per-item results."""

    exit_code = ExitCode.PARTIAL_FAILURE


if TYPE_CHECKING:
    class Partial(NamedTuple, Generic[R]):
        """What an operation on several items gives, the one way the library returns per-item
        outcomes: the results of the items that succeeded (a list in the order asked, or a
        mapping by item) and the KctlError of each item that failed, by the item's key. It
        unpacks as `results, errors`; the command renders both and exits with the
        partial-failure status when some failed."""

        results: R
        errors: dict[Any, KctlError]
else:
    Partial = collections.namedtuple("Partial", "results errors")
