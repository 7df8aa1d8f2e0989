"""AdminSession: one confluent-kafka AdminClient built from ClientSettings, and the one
place that waits on its futures, so timeouts and connection failures are judged the
same way by every command."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from kctl.admin.client.errors import describe, error_of, no_such_topic, translate
from kctl.config.model import ClientSettings
from kctl.config.secrets import mask
from kctl.errors import ConfigError, KctlError, NotAuthorizedError, Resource, TimeoutError_, UnreachableError

if TYPE_CHECKING:  # the wire client's commands never wait on a future: not imported for them
    import concurrent.futures

log = logging.getLogger("kctl.admin")
# librdkafka's own log lines go here instead of straight to stderr; --debug shows them.
librdkafka_log = logging.getLogger("kctl.librdkafka")
# Without a handler, Python's last-resort handler would print librdkafka's warnings.
logging.getLogger("kctl").addHandler(logging.NullHandler())

_CONNECTION_ERRORS = frozenset({"_TRANSPORT", "_RESOLVE", "_ALL_BROKERS_DOWN", "_SSL", "_AUTHENTICATION"})
_POLL_INTERVAL = 0.05
# A KRaft broker learns of a topic a moment after the controller has created it (10-30 ms
# on loopback between three idle nodes; more on a loaded machine), so a script that creates
# a topic and at once describes it may ask a broker that does not know it yet. A topic
# missing from an answer is asked for again for this long before kctl says it does not exist.
NEW_TOPIC_GRACE = 1.0
# Brokers apply the metadata log independently: once one broker shows a change just made
# (a topic created or deleted, a leader elected), a short settle lets the others catch up,
# so the next command sees it wherever it asks.
SETTLE_SECONDS = 0.3
T = TypeVar("T")


def topic_missing(metadata: Any, name: str) -> bool:
    """Whether a Metadata answer lacks topic `name` (absent, or no partitions: its error)."""
    topic = metadata.topics.get(name)
    return topic is None or not topic.partitions


def unknown_topic(result: Any) -> bool:
    """Whether one item's result (see wait_all) is an UNKNOWN_TOPIC_OR_PARTITION error."""
    return getattr(result, "kafka_error", None) == "UNKNOWN_TOPIC_OR_PARTITION"


def unknown_topic_in(results: Mapping[Any, Any]) -> bool:
    """Whether a batch's per-item results hold an UNKNOWN_TOPIC_OR_PARTITION error."""
    return any(unknown_topic(r) for r in results.values())


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
        return factory(config, logger=librdkafka_log)
    except KafkaException as exc:
        error = error_of(exc)
        text = error.str() if error is not None else str(exc)
        raise ConfigError(
            f"unable to configure the Kafka {role}: {text}",
            hint="-X takes librdkafka properties; kctl -X help lists the common ones",
        ) from exc
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"unable to configure the Kafka {role}: {exc}") from exc


class AdminSession:
    """A lazily connected admin client for one cluster."""

    def __init__(self, settings: ClientSettings):
        if not settings.bootstrap_servers:
            raise ConfigError(
                "unable to connect: no bootstrap servers given",
                hint="use -b HOST:PORT, KCTL_BOOTSTRAP_SERVERS, or a context (kctl context set NAME -b HOST:PORT)",
            )
        self.settings = settings
        self.timeout = settings.timeout
        self._connection_errors: list[Any] = []

    def client_config(self) -> dict[str, Any]:
        """librdkafka properties for any client of this session (admin, consumer, producer)."""
        config: dict[str, Any] = {"bootstrap.servers": self.settings.bootstrap_servers}
        # Give up on a silent (black-holed) address within --timeout so the failure is
        # reported as unreachable rather than as a timeout.
        config["socket.connection.setup.timeout.ms"] = max(1000, int(self.timeout * 1000 * 0.5))
        # Connect to the bootstrap brokers at once: with sparse connections librdkafka
        # waits ~50 ms before its first connection, a third of a short command's time.
        config["enable.sparse.connections"] = "false"
        config.update(self.settings.properties)
        if self.settings.aws_msk_iam:
            config.setdefault("security.protocol", "SASL_SSL")
            mechanism = config.pop("sasl.mechanisms", None) or config.get("sasl.mechanism", "OAUTHBEARER")
            if mechanism.upper() != "OAUTHBEARER":
                raise ConfigError(f"unable to use AWS MSK IAM with sasl.mechanism={mechanism}: MSK IAM authenticates with OAUTHBEARER")
            config["sasl.mechanism"] = "OAUTHBEARER"
            config["oauth_cb"] = self.tokens.librdkafka_callback
        return config

    @cached_property
    def tokens(self) -> Any:
        """The session's OAUTHBEARER token source for kafka-python, shared with librdkafka
        for AWS MSK IAM (one signer, one cached token)."""
        from kctl.admin.client.oauth import kafka_python_source

        return kafka_python_source(self.settings.properties, self.settings.aws_msk_iam)

    def debug_config(self) -> Mapping[str, Any]:
        return mask({k: ("(kctl's token callback)" if callable(v) else str(v)) for k, v in self.client_config().items()})

    @cached_property
    def client(self) -> Any:
        from confluent_kafka.admin import AdminClient

        config = self.client_config()
        config["error_cb"] = self._on_error
        log.debug("admin client config: %s", dict(self.debug_config()))
        return build_client(AdminClient, config, "client")

    @cached_property
    def kafka_python(self) -> Any:
        """kafka-python's admin client, for the APIs librdkafka lacks (see kafka_python.py)."""
        from kctl.admin.client.kafka_python import connect

        return connect(self.settings, tokens=lambda: self.tokens)

    def run_kafka_python(self, fn: Callable[[Any], Any], action: str, needs: str | None = None) -> Any:
        from kctl.admin.client.kafka_python import run

        return run(self.kafka_python, fn, action, self.settings.bootstrap_servers, needs)

    @cached_property
    def wire(self) -> Any:
        """kctl's own client (kctl.admin.client.wire) for the group reads: the same
        settings and token source as the other two."""
        from kctl.admin.client.wire import WireClient

        return WireClient(self.settings, tokens=lambda: self.tokens)

    def wire_available(self) -> bool:
        """Whether the wire client honours every setting of the session: a command with a
        librdkafka path takes it otherwise (a librdkafka-only property, an unknown one)."""
        try:
            self.wire  # noqa: B018 - building it checks every property
        except ConfigError:
            return False
        return True

    @cached_property
    def api_versions(self) -> dict[int, tuple[int, int]]:
        """The APIs a broker of the cluster supports ({API key: (min, max) version}), asked
        once: what a Kafka release lacks (share groups before 4.x) is said before asking."""
        wire = self.wire
        return wire.call("describe the cluster's APIs", lambda: wire.bootstrap(wire.deadline()).versions)

    def close(self) -> None:
        if "wire" in self.__dict__:
            self.__dict__.pop("wire").close()
        if "kafka_python" in self.__dict__:
            try:
                self.__dict__.pop("kafka_python").close()
            except Exception:  # noqa: BLE001 - closing must not mask the command's outcome
                log.debug("closing kafka-python client failed", exc_info=True)

    def _on_error(self, error: Any) -> None:
        log.debug("client error: %s", error)
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
        return any(e.name() == "_ALL_BROKERS_DOWN" for e in self._connection_errors)

    def _unreachable(self, action: str) -> KctlError:
        # _ALL_BROKERS_DOWN says only "n/n brokers are down"; the error before it says why.
        causes = [e for e in self._connection_errors if e.name() != "_ALL_BROKERS_DOWN"]
        cause = describe(causes[-1]) if causes else describe(self._connection_errors[-1])
        if any(e.name() == "_AUTHENTICATION" for e in causes):
            return NotAuthorizedError(
                f"unable to {action}: authentication failed at {self.settings.bootstrap_servers}: {cause}",
                hint="check sasl.mechanism and its credentials: sasl.username/sasl.password or sasl.oauthbearer.* (-X, the context, KCTL_X_*)",
            )
        return UnreachableError(
            f"unable to {action}: cluster unreachable at {self.settings.bootstrap_servers}: {cause}",
            hint="check -b/--bootstrap-server, the context, and that the brokers are up",
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
                        raise KctlError(f"unable to {action}: {exc}") from exc
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
            f"unable to {action}: no answer from {self.settings.bootstrap_servers} within {self.timeout:g}s",
            hint="raise --timeout if the cluster is slow",
        )

    def metadata(self, action: str, topics: Collection[str] = ()) -> Any:
        """Cluster metadata (all topics), failing fast when every broker is down.

        list_topics blocks for its whole timeout when nothing answers, so it is asked
        in short slices with the connection errors checked in between. While one of
        `topics` is missing, it is asked again for up to NEW_TOPIC_GRACE.
        """

        deadline = time.monotonic() + self.timeout
        try:
            return self.ask_until_found(lambda: self._metadata(deadline, action), lambda metadata: any(topic_missing(metadata, t) for t in topics))
        finally:
            self._forget_old_errors()

    def settle(self, brokers: int | None = None) -> None:
        """Wait SETTLE_SECONDS on a cluster of several brokers (one broker has nothing to
        catch up). `brokers` when the caller has just counted them; otherwise a Metadata
        request for no topic counts them (through the wire client when the settings allow
        it: a listing of every topic costs seconds at 18,000 partitions)."""
        if brokers is None:
            if self.wire_available():
                wire = self.wire
                brokers = len(wire.call("describe cluster", lambda: wire.brokers(wire.deadline())))
            else:
                brokers = len(self.metadata("describe cluster").brokers)
        if brokers > 1:
            time.sleep(SETTLE_SECONDS)

    def ask_every_broker(self, action: str, api: str, fields: dict[str, Any], low: int, high: int, loading: str) -> list[tuple[int, Any]]:
        """(broker id, answer) of every broker to `api`, all asked at once through the wire
        client. While one answers that a coordinator is loading, not elected yet or has
        moved (COORDINATOR_RETRIABLE, after a restart or a leader change), every broker
        is asked again until --timeout, as Kafka's admin client does; `loading` says what
        was still loading then. Any other error code is raised."""
        from kctl.admin.client.errors import COORDINATOR_RETRIABLE, RETRY_BACKOFF, for_kafka_code
        from kctl.messages.errors import error_name
        from kctl.polling import poll

        wire = self.wire

        def ask() -> list[tuple[int, Any]] | None:
            deadline = wire.deadline()
            nodes = wire.brokers(deadline)
            answers = wire.fan_out([(node, api, fields, low, high) for node in nodes], deadline)
            for answer in answers:
                if answer.error_code:
                    if error_name(answer.error_code) in COORDINATOR_RETRIABLE:
                        return None
                    raise for_kafka_code(answer.error_code, None, action)
            return list(zip(nodes, answers))

        found = poll(lambda: wire.call(action, ask), lambda answer: answer is not None, timeout=self.timeout,
                     interval=RETRY_BACKOFF, stop_before=True)
        if found is None:
            raise TimeoutError_(f"unable to {action}: {loading} at the timeout", hint="raise --timeout if the cluster is starting or electing")
        return found

    def ask_until_found(self, ask: Callable[[], T], lacks_one: Callable[[T], bool]) -> T:
        """`ask()`, and again while `lacks_one(answer)` says a topic is missing from it, for
        up to NEW_TOPIC_GRACE (within --timeout): the last answer."""
        answer = ask()
        end = time.monotonic() + min(NEW_TOPIC_GRACE, self.timeout)
        pause = 0.02
        while lacks_one(answer) and time.monotonic() + pause < end:
            time.sleep(pause)
            pause = min(2 * pause, 0.2)
            answer = ask()
        return answer

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
                    raise translate(error, action) if error is not None else KctlError(f"unable to {action}: {exc}") from exc
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


def missing_topic_error(session: AdminSession, name: str, action: str, hint: str | None = None) -> KctlError:
    """Why the cluster's metadata lacks topic `name`. Brokers list only the topics a user
    may describe, so ask for this one by name to tell "no such topic" from "not
    authorized" (Describe answers without creating topics, unlike a producer's Metadata)."""
    from confluent_kafka import TopicCollection

    try:
        futures = session.client.describe_topics(TopicCollection([name]), request_timeout=session.timeout)
        result = session.wait_all(futures, f"describe topic {name}").get(name)
    except KctlError as exc:
        result = exc
    if isinstance(result, NotAuthorizedError):
        return NotAuthorizedError(f"unable to {action}: TOPIC_AUTHORIZATION_FAILED: not authorized to access topic {name}")
    return no_such_topic(action, name, hint)
