"""Translating librdkafka errors, and Kafka error codes from answers read without it, into
KctlError subclasses with Kafka's error names."""

from __future__ import annotations

from collections.abc import Mapping

from kctl.errors import (
    AlreadyExistsError,
    ConfigError,
    InvalidError,
    KctlError,
    NotAuthorizedError,
    NotFoundError,
    Resource,
    TimeoutError_,
    UnreachableError,
)

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any

# librdkafka abbreviates a few of Kafka's error names; users search for Kafka's.
# Answers that mean "ask again shortly": the coordinator is loading its share of
# __consumer_offsets or __transaction_state (after a restart or a leader change), not
# elected yet, or has moved. Kafka's own admin client retries them until its timeout; so
# does kctl, every RETRY_BACKOFF seconds.
COORDINATOR_RETRIABLE = frozenset({"COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"})
RETRY_BACKOFF = 0.1

_KAFKA_NAMES = {
    "UNKNOWN_TOPIC_OR_PART": "UNKNOWN_TOPIC_OR_PARTITION",
    "NOT_LEADER_FOR_PARTITION": "NOT_LEADER_OR_FOLLOWER",
    "TOPIC_EXCEPTION": "INVALID_TOPIC_EXCEPTION",
}

_LIBRDKAFKA_NAMES = {kafka: librdkafka for librdkafka, kafka in _KAFKA_NAMES.items()}

_BY_NAME: dict[str, type[KctlError]] = {
    "UNKNOWN_TOPIC_OR_PART": NotFoundError,
    "UNKNOWN_TOPIC_ID": NotFoundError,
    "GROUP_ID_NOT_FOUND": NotFoundError,
    "TOPIC_ALREADY_EXISTS": AlreadyExistsError,
    "TOPIC_EXCEPTION": InvalidError,
    "INVALID_PARTITIONS": InvalidError,
    "INVALID_REPLICATION_FACTOR": InvalidError,
    "INVALID_REPLICA_ASSIGNMENT": InvalidError,
    "INVALID_CONFIG": InvalidError,
    "INVALID_REQUEST": InvalidError,
    "POLICY_VIOLATION": InvalidError,
    "UNSUPPORTED_VERSION": InvalidError,
    "MSG_SIZE_TOO_LARGE": InvalidError,
    "TOPIC_AUTHORIZATION_FAILED": NotAuthorizedError,
    "GROUP_AUTHORIZATION_FAILED": NotAuthorizedError,
    "CLUSTER_AUTHORIZATION_FAILED": NotAuthorizedError,
    "SASL_AUTHENTICATION_FAILED": NotAuthorizedError,
    "_AUTHENTICATION": NotAuthorizedError,
    "_SSL": UnreachableError,
    "_TRANSPORT": UnreachableError,
    "_ALL_BROKERS_DOWN": UnreachableError,
    "_RESOLVE": UnreachableError,
    "_TIMED_OUT": TimeoutError_,
    "REQUEST_TIMED_OUT": TimeoutError_,
    "_INVALID_ARG": ConfigError,
}


def kafka_name(error: Any) -> str:
    """Kafka's name for a confluent_kafka.KafkaError."""
    name = error.name()
    return _KAFKA_NAMES.get(name, name)


def describe(error: Any) -> str:
    """`NAME: description` for a KafkaError, e.g. `TOPIC_ALREADY_EXISTS: Topic 'x' already exists.`"""
    text = error.str() or ""
    if "Request(processor=" in text:
        # Kafka's controller puts a dump of its internal request object in some
        # authorization errors (a forwarded request's envelope): use the error's own words.
        from confluent_kafka import KafkaError

        text = KafkaError(error.code()).str()
    # librdkafka prefixes broker errors with "Broker: " and local ones with "Local: ".
    for prefix in ("Broker: ", "Local: "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return f"{kafka_name(error)}: {text}" if text else kafka_name(error)


def error_class(error: Any) -> type[KctlError]:
    """The KctlError subclass (and so the exit status) for a KafkaError."""
    return _BY_NAME.get(error.name(), KctlError)


def error_class_named(name: str) -> type[KctlError]:
    """The KctlError subclass for an error by Kafka's name (or librdkafka's local one)."""
    return BY_KAFKA_NAME.get(name) or _BY_NAME.get(_LIBRDKAFKA_NAMES.get(name, name), KctlError)


def translate(error: Any, action: str, resource: Resource | None = None) -> KctlError:
    """A KctlError for `unable to <action>: <NAME: description>` (about `resource`)."""
    return error_class(error)(action=action, cause=describe(error), kafka_error=kafka_name(error), resource=resource)


def missing_topic(name: str, error: str | None, action: str, hint: str | None = None, *, named: bool = False) -> KctlError:
    """Why a Metadata answer has no partitions for topic `name` (`error`: the answer's error
    name for it): not authorized to describe it, or no such topic (`named`: the cause names
    it, for an action about two topics)."""
    if error == "TOPIC_AUTHORIZATION_FAILED":
        return NotAuthorizedError(action=action, cause=f"TOPIC_AUTHORIZATION_FAILED: not authorized to access topic {name}",
                                  kafka_error=error, resource=Resource("topic", name))
    return no_such_topic(action, name, hint, named=named)


def no_such_topic(action: str, name: str, hint: str | None = None, *, named: bool = False) -> NotFoundError:
    """`unable to <action>: UNKNOWN_TOPIC_OR_PARTITION: no such topic` (`named`: ... topic
    NAME), about topic `name`."""
    return NotFoundError(action=action, cause="UNKNOWN_TOPIC_OR_PARTITION: no such topic" + (f" {name}" if named else ""), hint=hint,
                         kafka_error="UNKNOWN_TOPIC_OR_PARTITION", resource=Resource("topic", name))


def error_of(exc: BaseException) -> Any | None:
    """The KafkaError inside a KafkaException, or None."""
    args = getattr(exc, "args", ())
    if args and hasattr(args[0], "name") and hasattr(args[0], "str"):
        return args[0]
    return None


# Kafka's error names (an answer's error_code, by kctl.messages.errors) -> KctlError class.
BY_KAFKA_NAME: Mapping[str, type[KctlError]] = {
    "UNKNOWN_TOPIC_OR_PARTITION": NotFoundError,
    "UNKNOWN_TOPIC_ID": NotFoundError,
    "NO_REASSIGNMENT_IN_PROGRESS": NotFoundError,
    "INVALID_REPLICA_ASSIGNMENT": InvalidError,
    "INVALID_REPLICATION_FACTOR": InvalidError,
    "INVALID_PARTITIONS": InvalidError,
    "INVALID_REQUEST": InvalidError,
    "INVALID_CONFIG": InvalidError,
    "POLICY_VIOLATION": InvalidError,
    "MESSAGE_TOO_LARGE": InvalidError,
    "ELECTION_NOT_NEEDED": InvalidError,
    "PREFERRED_LEADER_NOT_AVAILABLE": InvalidError,
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": InvalidError,
    "UNSUPPORTED_VERSION": InvalidError,
    "REQUEST_TIMED_OUT": TimeoutError_,
    "GROUP_ID_NOT_FOUND": NotFoundError,
    "CLUSTER_AUTHORIZATION_FAILED": NotAuthorizedError,
    "TOPIC_AUTHORIZATION_FAILED": NotAuthorizedError,
    "GROUP_AUTHORIZATION_FAILED": NotAuthorizedError,
    "SASL_AUTHENTICATION_FAILED": NotAuthorizedError,
    "SECURITY_DISABLED": InvalidError,
    "INVALID_UPDATE_VERSION": InvalidError,
    "FEATURE_UPDATE_FAILED": InvalidError,
    "DELEGATION_TOKEN_AUTH_DISABLED": InvalidError,
    "DELEGATION_TOKEN_NOT_FOUND": NotFoundError,
    "DELEGATION_TOKEN_OWNER_MISMATCH": NotAuthorizedError,
    "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED": NotAuthorizedError,
    "DELEGATION_TOKEN_AUTHORIZATION_FAILED": NotAuthorizedError,
    "DELEGATION_TOKEN_EXPIRED": InvalidError,
    "INVALID_PRINCIPAL_TYPE": InvalidError,
}


def for_kafka_code(code: int, message: str | None, action: str, resource: Resource | None = None) -> KctlError:
    """The KctlError for an error code in an answer: `unable to <action>: NAME: <the
    broker's message, or Kafka's description of the error>`, about `resource`. A topic
    or group the answer says does not exist is "no such topic" / "no such group", as
    kctl says it whichever client asked."""
    from kctl.messages.errors import ERRORS, error_name

    name = error_name(code)
    text = message or _MISSING.get((name, resource.type if resource else None)) or ERRORS.get(code, (name, ""))[1]
    return BY_KAFKA_NAME.get(name, KctlError)(action=action, cause=f"{name}: {text}" if text else name, kafka_error=name,
                                              resource=resource)


_MISSING: dict[tuple[str, str | None], str] = {("UNKNOWN_TOPIC_OR_PARTITION", "topic"): "no such topic",
                                               ("GROUP_ID_NOT_FOUND", "group"): "no such group"}
