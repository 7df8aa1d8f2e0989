"""confluent-kafka's AdminClient for one session, and the one place that waits on its
futures, so timeouts and connection failures are judged the same way by every operation
that goes through librdkafka (the admin writes, and the Kafka operations of
over_librdkafka when the wire client cannot honour the session's settings)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import cached_property

from kctl.admin.client.errors import describe, error_of, translate
from kctl.admin.client.logs import debug, logger
from kctl.config.model import ClientSettings
from kctl.errors import ConfigError, KctlError, NotAuthorizedError, Resource, TimeoutError_, UnreachableError

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    import concurrent.futures
    from typing import Any

    from kctl.admin.client.kafka import AclBindingFilter


def librdkafka_log() -> Any:
    """The logger librdkafka's own log lines go to instead of straight to stderr; --debug
    shows them."""
    return logger("kctl.librdkafka")


_CONNECTION_ERRORS = frozenset({"_TRANSPORT", "_RESOLVE", "_ALL_BROKERS_DOWN", "_SSL", "_AUTHENTICATION"})
_POLL_INTERVAL = 0.05


def _label(key: Any) -> str:
    """How an error names one item of a batch: a partition as Kafka's logs do (orders-2)."""
    if isinstance(key, tuple) and len(key) == 2:
        return f"of {key[0]}-{key[1]}"
    return str(key)


def build_client(factory: Callable[..., Any], config: dict[str, Any], role: str) -> Any:
    """A librdkafka client (AdminClient, Producer, Consumer) built from `config`; a
    property librdkafka refuses (usually from -X) is a ConfigError naming it."""
    from confluent_kafka import KafkaException

    try:
        return factory(config, logger=librdkafka_log())
    except KafkaException as exc:
        error = error_of(exc)
        text = error.str() if error is not None else str(exc)
        raise ConfigError(
            action=f"configure the Kafka {role}", cause=text,
            hint="{properties} takes librdkafka properties; kctl -X help lists the common ones",
        ) from exc
    except (TypeError, ValueError) as exc:
        raise ConfigError(action=f"configure the Kafka {role}", cause=str(exc)) from exc


class LibrdkafkaAdmin:
    """A lazily built AdminClient for one cluster; `config()` gives its properties."""

    def __init__(self, settings: ClientSettings, config: Callable[[], dict[str, Any]], debug_config: Callable[[], Mapping[str, Any]]):
        self.settings = settings
        self.timeout = settings.timeout
        self._config = config
        self._debug_config = debug_config
        self._connection_errors: list[Any] = []

    def config(self) -> dict[str, Any]:
        """The librdkafka properties of any client of the session (AdminSession.client_config)."""
        return self._config()

    @cached_property
    def client(self) -> Any:
        from confluent_kafka.admin import AdminClient

        config = self._config()
        config["error_cb"] = self._on_error
        debug("kctl.admin", "admin client config: %s", dict(self._debug_config()))
        return build_client(AdminClient, config, "client")

    def _on_error(self, error: Any) -> None:
        debug("kctl.admin", "client error: %s", error)
        if error.name() in _CONNECTION_ERRORS:
            self._connection_errors.append(error)

    def _forget_old_errors(self) -> None:
        """Once a request is over, its connection errors are too: a long-lived session
        (watch loops) must not judge later requests by an outage that has ended."""
        if "client" not in self.__dict__:
            return  # the client could not even be built; there is nothing to forget
        self.client.poll(0)
        self._connection_errors.clear()

    def _all_brokers_down(self) -> bool:
        """Whether librdkafka said every broker is down, and every bootstrap server has
        failed: librdkafka counts brokers it has not tried yet as down, so a first
        bootstrap server refusing would otherwise make a cluster whose others are up
        look unreachable."""
        if not any(e.name() == "_ALL_BROKERS_DOWN" for e in self._connection_errors):
            return False
        # Each connection error's text starts with its broker: "host:port/bootstrap: ..."
        # (or "host:port/ID: ..." for a broker learnt from metadata); a bootstrap server
        # is HOST:PORT (checked before), perhaps after a scheme ("PLAINTEXT://").
        failed = {str(e.str()).split("/", 1)[0] for e in self._connection_errors if e.name() != "_ALL_BROKERS_DOWN"}
        servers = [s.strip().rpartition("://")[2] for s in (self.settings.bootstrap_servers or "").split(",") if s.strip()]
        return all(server in failed for server in servers)

    def _unreachable(self, action: str) -> KctlError:
        # _ALL_BROKERS_DOWN says only "n/n brokers are down"; the error before it says why.
        causes = [e for e in self._connection_errors if e.name() != "_ALL_BROKERS_DOWN"]
        cause = describe(causes[-1]) if causes else describe(self._connection_errors[-1])
        if any(e.name() == "_AUTHENTICATION" for e in causes):
            return NotAuthorizedError(
                action=action, cause=f"authentication failed at {self.settings.bootstrap_servers}: {cause}",
                hint="check sasl.mechanism and its credentials: sasl.username/sasl.password or sasl.oauthbearer.* ({properties}, the context, KCTL_X_*)",
            )
        return UnreachableError(
            action=action, cause=f"cluster unreachable at {self.settings.bootstrap_servers}: {cause}",
            hint="check {bootstrap}, the context, and that the brokers are up",
        )

    def wait(self, future: concurrent.futures.Future, action: str) -> Any:
        """The result of one admin future, or the KctlError for why there is none.

        Polls the client while waiting so connection errors arrive as they happen:
        when every broker is down there is no point waiting out the timeout.
        """
        return self.check(self.wait_all({None: future}, action)[None])

    def wait_all(self, futures: Mapping[Any, concurrent.futures.Future], action: str, *,
                 resource_type: str | None = None) -> dict[Any, Any]:
        """Results (or KctlErrors, per key) for a batch of futures sharing one deadline.

        Connection failures and timeouts concern the whole batch and are raised; a
        per-item broker error (unknown topic, already exists...) is returned in place
        of that item's result so batch commands can report each item; with
        `resource_type`, the keys are names of that type and each error is about its own.
        """

        deadline = time.monotonic() + self.timeout + 1.0
        pending = dict(futures)
        results: dict[Any, Any] = {}
        try:
            return self._wait(pending, results, deadline, action, len(futures), resource_type)
        finally:
            self._forget_old_errors()

    def _wait(self, pending: dict, results: dict, deadline: float, action: str, count: int,
              resource_type: str | None) -> dict[Any, Any]:
        from confluent_kafka import KafkaException

        while pending:
            self.client.poll(0)
            if self._all_brokers_down():
                raise self._unreachable(action)
            for key, future in list(pending.items()):
                if not future.done():
                    continue
                del pending[key]
                try:
                    results[key] = future.result()
                except KafkaException as exc:
                    error = error_of(exc)
                    if error is None:
                        raise KctlError(action=action, cause=str(exc)) from exc
                    if error.name() in ("_TIMED_OUT", "REQUEST_TIMED_OUT") or error.name() in _CONNECTION_ERRORS:
                        raise self._timeout_or_unreachable(action) from exc
                    resource = Resource(resource_type, key) if resource_type and isinstance(key, str) else None
                    results[key] = translate(error, action if count == 1 else f"{action} {_label(key)}", resource)
            if pending:
                if time.monotonic() > deadline:
                    raise self._timeout_or_unreachable(action)
                # One future stands for the batch: librdkafka completes a request's futures
                # together, and registering a waiter on each of 40,000 (ListOffsets of a
                # large cluster) takes 0.12 s, more than the request, on every interval.
                import concurrent.futures

                concurrent.futures.wait((next(iter(pending.values())),), timeout=_POLL_INTERVAL)
        return results

    def _timeout_or_unreachable(self, action: str) -> KctlError:
        self.client.poll(0)
        if self._connection_errors:
            return self._unreachable(action)
        return TimeoutError_(
            action=action, cause=f"no answer from {self.settings.bootstrap_servers} within {self.timeout:g}s",
            hint="raise {timeout} if the cluster is slow",
        )

    def list_all_topics(self, action: str) -> Any:
        """librdkafka's metadata of every topic, failing fast when every broker is down.
        list_topics blocks for its whole timeout when nothing answers, so it is asked in
        short slices with the connection errors checked in between."""
        deadline = time.monotonic() + self.timeout
        try:
            return self._metadata(deadline, action)
        finally:
            self._forget_old_errors()

    def _metadata(self, deadline: float, action: str) -> Any:
        from confluent_kafka import KafkaException

        while True:
            remaining = deadline - time.monotonic()
            try:
                return self.client.list_topics(timeout=max(0.05, min(0.5, remaining)))
            except KafkaException as exc:
                error = error_of(exc)
                retriable = error is not None and (
                    error.name() in ("_TIMED_OUT", "REQUEST_TIMED_OUT") or error.name() in _CONNECTION_ERRORS
                )
                if not retriable:
                    raise translate(error, action) if error is not None else KctlError(action=action, cause=str(exc)) from exc
                self.client.poll(0)
                if self._all_brokers_down():
                    raise self._unreachable(action) from exc
                if time.monotonic() >= deadline:
                    raise self._timeout_or_unreachable(action) from exc

    def check(self, result: Any) -> Any:
        """Raise a per-item KctlError returned by wait_all; pass results through."""
        if isinstance(result, KctlError):
            raise result
        return result


def binding_filter(fields: AclBindingFilter) -> Any:
    """confluent-kafka's AclBindingFilter of a filter in Kafka's names (kctl.admin.client.
    kafka.AclBindingFilter): what describe_acls asks, and kctl.admin.security.acls deletes
    (the admin writes are librdkafka's)."""
    from confluent_kafka.admin import AclBindingFilter as Filter
    from confluent_kafka.admin import AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    resource_type, name, pattern_type, principal, host, operation, permission = fields
    kind = ResourceType.BROKER if resource_type == "CLUSTER" else ResourceType[resource_type or "ANY"]
    # None matches any name, principal or host (confluent-kafka's hints say str).
    return Filter(kind, name, ResourcePatternType[pattern_type], principal, host,  # type: ignore[arg-type]
                  AclOperation[operation or "ANY"], AclPermissionType[permission or "ANY"])
