"""The bridge to kafka-python's admin client, for the APIs librdkafka does not offer
(partition reassignments, log dirs, DescribeTopicPartitions, metadata quorum), and the one
place kctl touches kafka-python's private API.

It is built from the same ClientSettings as the confluent-kafka client, translating
librdkafka property names, so a context or -X flag means the same thing whichever
client serves a command. kafka-python's errors are translated to KctlErrors here.

What kctl relies on beyond kafka-python's public API (PRIVATE_API below; pyproject pins
the versions it was checked on, tests/admin/test_client_adapters.py fails on an
installed version that lacks one of them):
  - KafkaAdminClient._manager: its connection manager, to send any protocol request to a
    chosen node (`send`) on its event loop (`run`), and its cluster metadata (`cluster`:
    the live brokers, and the group coordinators it caches in `_coordinators`);
  - KafkaAdminClient._find_coordinator_ids: FindCoordinator v4, batched;
  - KafkaAdminClient._describe_configs_request/_process_responses and
    _alter_configs_request/_process_responses: the cluster-wide broker default, which its
    public calls route to no broker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kctl.admin.client.errors import BY_KAFKA_NAME
from kctl.admin.client.properties import OAUTHBEARER_PROPERTIES, SSL_PROPERTIES, ignored
from kctl.admin.client.tls import TlsSettings, client_context
from kctl.config.model import ClientSettings
from kctl.errors import (
    ConfigError,
    InvalidError,
    KctlError,
    NotAuthorizedError,
    TimeoutError_,
    UnreachableError,
)

# kafka-python logs connection failures at ERROR; they become one KctlError instead.
logging.getLogger("kafka").addHandler(logging.NullHandler())
logging.getLogger("kafka").propagate = False

# librdkafka property -> kafka-python keyword.
_DIRECT = {
    "client.id": "client_id",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
}
# SASL mechanisms kafka-python carries; any other is refused, never replaced by another.
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
def translate_config(settings: ClientSettings, tokens: Callable[[], Any] | None = None) -> dict[str, Any]:
    """kafka-python keyword arguments equivalent to the librdkafka settings. `tokens`
    gives the OAUTHBEARER token source (kctl.admin.client.oauth) when the mechanism needs one."""
    properties = settings.properties
    config: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap_servers.split(",") if settings.bootstrap_servers else [],
        "request_timeout_ms": int(settings.timeout * 1000),
        "bootstrap_timeout_ms": int(settings.timeout * 1000),
        "client_id": "kctl",
    }
    default_protocol = "SASL_SSL" if settings.aws_msk_iam else "plaintext"
    protocol = properties.get("security.protocol", default_protocol).upper()
    config["security_protocol"] = protocol
    mechanism = properties.get("sasl.mechanism") or properties.get("sasl.mechanisms") or ("OAUTHBEARER" if settings.aws_msk_iam else None)
    if mechanism:
        config["sasl_mechanism"] = mechanism.upper()
        if mechanism.upper() not in _MECHANISMS:
            raise ConfigError(
                f"unable to configure the kafka-python client: sasl.mechanism {mechanism} is not supported by it",
                hint=f"this command uses kafka-python for an API librdkafka lacks; it supports {', '.join(_MECHANISMS)}",
            )
    if mechanism and mechanism.upper() == "OAUTHBEARER":
        source = tokens() if tokens is not None else None
        if source is None:
            from kctl.admin.client.oauth import kafka_python_source

            source = kafka_python_source(properties, settings.aws_msk_iam)
        config["sasl_oauth_token_provider"] = source.kafka_python_provider()
    for key, value in properties.items():
        if key in _DIRECT:
            config[_DIRECT[key]] = value
        elif key in ("sasl.mechanisms",) or key in OAUTHBEARER_PROPERTIES or key in SSL_PROPERTIES:
            continue
        elif not ignored(key):
            raise ConfigError(
                f"unable to configure the kafka-python client: property {key!r} has no kafka-python equivalent",
                hint="this command uses kafka-python for an API librdkafka lacks; it supports PLAINTEXT, SSL and SASL PLAIN/SCRAM/OAUTHBEARER settings",
            )
    if protocol.endswith("SSL"):
        tls = TlsSettings.from_properties(properties)
        config["ssl_context"] = client_context(tls)  # kafka-python's own ssl_* settings then do not apply
        config["ssl_check_hostname"] = tls.check_hostname and tls.verify
    return config


class _BootstrapFailures(logging.Handler):
    """Keeps why each bootstrap connection failed: kafka-python only logs it, then gives
    up with a bare timeout, which would hide a refused connection or a bad password."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.causes: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        if str(record.msg).startswith("Bootstrap connection to") and len(args) >= 2:
            cause = args[1]
            if isinstance(cause, BaseException):
                self.causes.append(cause)


def connect(settings: ClientSettings, tokens: Callable[[], Any] | None = None) -> Any:
    """A connected kafka.KafkaAdminClient, or the KctlError for why there is none."""
    from kafka import KafkaAdminClient, errors

    config = translate_config(settings, tokens)
    failures = _BootstrapFailures()
    manager_log = logging.getLogger("kafka.net.manager")
    manager_log.addHandler(failures)
    try:
        return KafkaAdminClient(**config)
    except Exception as exc:  # noqa: BLE001 - every failure becomes one KctlError
        if isinstance(exc, errors.KafkaTimeoutError) and "bootstrap" in str(exc) and failures.causes:
            raise _bootstrap_error(failures.causes, settings.bootstrap_servers, config.get("sasl_mechanism")) from exc
        raise translate_error(exc, "connect", settings.bootstrap_servers) from exc
    finally:
        manager_log.removeHandler(failures)


def _bootstrap_error(causes: list[BaseException], bootstrap: str | None, mechanism: str | None) -> KctlError:
    """The error for a bootstrap that failed. Any refused login wins: after refusing one,
    the broker closes the connection, and the next attempt may only see that."""
    from kafka import errors

    for cause in causes:
        if isinstance(cause, KctlError):
            return cause  # kctl's own OAUTHBEARER token source failed: its error says why
    hint = "check sasl.mechanism and its credentials: sasl.username/sasl.password or sasl.oauthbearer.* (-X, the context, KCTL_X_*)"
    authentication = tuple(getattr(errors, n) for n in ("AuthenticationFailedError", "SaslAuthenticationFailedError") if hasattr(errors, n))
    refused = [c for c in causes if isinstance(c, authentication)]
    if refused:
        cause = refused[-1]
        # kafka-python's text repeats the class name: "[Error 58] X: X: Authentication failed..."
        text = str(cause.args[0]) if cause.args else ""
        text = text.split(": ", 1)[1] if text.startswith(type(cause).__name__ + ": ") else text
        return NotAuthorizedError(f"unable to connect: authentication failed at {bootstrap}: {kafka_error_name(cause)}: {text}", hint=hint)
    closed = [c for c in causes if "socket disconnected" in str(c)]
    cut_short = tuple(getattr(errors, n) for n in ("RequestTimedOutError", "KafkaTimeoutError") if hasattr(errors, n))
    if mechanism and closed and all(c in closed or isinstance(c, cut_short) for c in causes):
        # The broker accepted the connection and closed it: with SASL, what it does after
        # refusing a login when its answer did not reach the client (seen under load). An
        # attempt timed out among them is one the --timeout budget cut short.
        return NotAuthorizedError(
            f"unable to connect: {bootstrap} closed the connection before SASL {mechanism} authentication completed", hint=hint
        )
    return UnreachableError(
        f"unable to connect: cluster unreachable at {bootstrap}: {causes[-1]}",
        hint="check {bootstrap}, the context, and that the brokers are up",
    )




def kafka_error_name(error: Any) -> str:
    """Kafka's name for a kafka-python error class or instance (e.g. UNKNOWN_TOPIC_OR_PARTITION)."""
    return getattr(error, "message", None) or type(error).__name__


def translate_error(exc: BaseException, action: str, bootstrap: str | None = None) -> KctlError:
    from kafka import errors

    if isinstance(exc, KctlError):
        return exc
    connection_errors = tuple(
        getattr(errors, name) for name in ("NoBrokersAvailable", "KafkaConnectionError", "NodeNotReadyError") if hasattr(errors, name)
    )
    if isinstance(exc, connection_errors):
        return UnreachableError(
            f"unable to {action}: cluster unreachable at {bootstrap}: {exc}",
            hint="check {bootstrap}, the context, and that the brokers are up",
        )
    if isinstance(exc, getattr(errors, "KafkaTimeoutError", ())):
        return TimeoutError_(f"unable to {action}: no answer within the timeout", hint="raise {timeout} if the cluster is slow")
    if isinstance(exc, errors.KafkaConfigurationError):
        return ConfigError(f"unable to configure the kafka-python client: {exc}")
    if isinstance(exc, errors.BrokerResponseError):
        return for_code(exc, action)
    # kafka-python's own check that a broker lacks the API: what Kafka would answer.
    lacking = isinstance(exc, getattr(errors, "IncompatibleBrokerVersion", ()))
    return KctlError(action=action, cause=f"{type(exc).__name__}: {exc}", kafka_error="UNSUPPORTED_VERSION" if lacking else None)


def for_code(error: Any, action: str) -> KctlError:
    """A KctlError for a kafka-python BrokerResponseError class or instance."""
    name = kafka_error_name(error)
    description = getattr(error, "description", None) or ""
    text = f"{name}: {description}" if description else name
    return BY_KAFKA_NAME.get(name, KctlError)(action=action, cause=text, kafka_error=name)


def run(client: Any, fn: Callable[[Any], Any], action: str, bootstrap: str | None = None, needs: str | None = None) -> Any:
    """Call fn(client), translating whatever kafka-python raises. `needs` names what the
    request needs of the cluster: a broker without the API (UNSUPPORTED_VERSION, as the
    bundled broker answers) then reads "the cluster does not support <needs>"."""
    try:
        return fn(client)
    except Exception as exc:  # noqa: BLE001
        error = translate_error(exc, action, bootstrap)
        if needs and error.kafka_error == "UNSUPPORTED_VERSION":
            error = InvalidError(f"unable to {action}: the cluster does not support {needs}")
        raise error from exc


# -- kafka-python's private API: every use in kctl is here ----------------------------------

# (object, attribute) pairs: a class's attributes are checked on the class, "instance"
# ones on a connected client.
PRIVATE_API = (
    ("kafka.admin.KafkaAdminClient", "_find_coordinator_ids"),
    ("kafka.admin.KafkaAdminClient", "_describe_configs_request"),
    ("kafka.admin.KafkaAdminClient", "_describe_configs_process_responses"),
    ("kafka.admin.KafkaAdminClient", "_alter_configs_request"),
    ("kafka.admin.KafkaAdminClient", "_alter_configs_process_responses"),
    ("instance", "_manager.send"),
    ("instance", "_manager.run"),
    ("instance", "_manager.cluster.brokers"),
    ("instance", "_manager.cluster._coordinators"),
)


def missing_private_api(client: Any | None = None) -> list[str]:
    """The entries of PRIVATE_API this kafka-python lacks (instance ones only with a
    connected `client`)."""
    from kctl.admin.client.private_api import missing

    return missing(PRIVATE_API, client)


def run_async(client: Any, coroutine_function: Callable[[], Any]) -> Any:
    """Run `coroutine_function()` on the client's event loop and return its result."""
    return client._manager.run(coroutine_function)


def send_async(client: Any, request: Any, node_id: int | None = None) -> Any:
    """An awaitable of the response to `request`, sent to node_id (or any broker); for use
    inside run_async."""
    return client._manager.send(request, node_id=node_id)


def send_request(client: Any, request: Any, node_id: int | None = None) -> Any:
    """Send one kafka-python protocol request (to any broker, or to node_id) and return
    its response: for the APIs kafka-python's admin client has no method for."""

    async def call():
        return await send_async(client, request, node_id)

    return run_async(client, call)


def api_versions_response(client: Any, node_id: int | None = None) -> Any:
    """A broker's (node_id, or any) ApiVersions v3 answer: its APIs and its features."""
    from kafka.protocol.metadata import ApiVersionsRequest

    return send_request(client, ApiVersionsRequest(client_software_name="kctl", client_software_version="1", min_version=3), node_id)


def api_versions(client: Any, node_id: int | None = None) -> dict[int, tuple[int, int]]:
    """{API key: (min version, max version)} a broker (node_id, or any) supports."""
    return {a.api_key: (a.min_version, a.max_version) for a in api_versions_response(client, node_id).api_keys}


def find_group_coordinators(client: Any, group_ids: list[str]) -> Any:
    """An awaitable of {group id: coordinator node id} (FindCoordinator, batched)."""
    return client._find_coordinator_ids(group_ids)


def forget_group_coordinator(client: Any, group_id: str) -> None:
    """Drop the cached coordinator of a group, so that the next lookup asks the cluster
    (after NOT_COORDINATOR: it moved)."""
    from kafka.protocol.metadata import CoordinatorType

    client._manager.cluster._coordinators.pop((CoordinatorType.GROUP, group_id), None)


def broker_ids(client: Any) -> list[int]:
    """The node ids of the live brokers in the client's metadata."""
    return sorted(b.node_id for b in client._manager.cluster.brokers())


def raise_for_code(code: int, message: str | None, action: str) -> None:
    """Raise the KctlError for a response's error code (none for 0), with the broker's message."""
    if not code:
        return
    from kafka.errors import for_code as error_class

    kind = error_class(code)
    error = for_code(kind, action)
    if message:
        raise error.but(cause=f"{kafka_error_name(kind)}: {message}")
    raise error


def describe_cluster_default_configs(client: Any) -> dict[str, dict]:
    """DescribeConfigs for the cluster-wide broker default (resource name "").

    kafka-python routes broker resources to the broker they name, and "" names none, so
    the request is built and sent to any broker with its own helpers. librdkafka rejects
    an empty resource name outright.
    """
    from kafka.admin import ConfigResource, ConfigResourceType

    request = client._describe_configs_request([ConfigResource(ConfigResourceType.BROKER, "")])
    response = send_request(client, request)
    return client._describe_configs_process_responses([response], "all").get("broker", {}).get("", {})


def alter_cluster_default_configs(client: Any, configs: dict[str, tuple[str, str | None]], validate_only: bool) -> Any:
    """IncrementalAlterConfigs for the cluster-wide broker default; the error class or None."""
    from kafka.admin import ConfigResource, ConfigResourceType

    resource = ConfigResource(ConfigResourceType.BROKER, "", configs=configs)
    request = client._alter_configs_request([resource], validate_only, True)
    response = send_request(client, request)
    return client._alter_configs_process_responses(response.responses).get("broker", {}).get("")
