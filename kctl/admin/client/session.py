"""AdminSession: everything kctl's library needs to talk to one cluster, built lazily from
ClientSettings: the Kafka operations (`kafka`, served by the client chosen once here),
librdkafka's AdminClient and its waiting (`client`, `wait_all`: kctl.admin.client.
librdkafka) and kctl's wire client (`wire`, and `ask`/`ask_all` for the APIs only it
serves)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import cached_property

from kctl.admin.client.librdkafka import LibrdkafkaAdmin, build_client, librdkafka_log
from kctl.admin.client.properties import TOKEN_AUTH, uses_bridge, uses_token_program
from kctl.config.model import ClientSettings
from kctl.config.secrets import mask
from kctl.errors import ConfigError, ExitCode, InvalidError, KctlError, UnreachableError
from kctl.messages import apis
from kctl.polling import poll

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:  # the wire client's commands never wait on a future: not imported for them
    import concurrent.futures
    from typing import Any, TypeVar

    from kctl.admin.client.kafka import AclBinding, AclBindingFilter, ClusterMetadata, Kafka
    from kctl.messages import types as t
    from kctl.messages.api import Api

    T = TypeVar("T")
    Q = TypeVar("Q")
    R = TypeVar("R")

__all__ = ["AdminSession", "build_client", "librdkafka_log", "topic_missing", "unknown_topic"]

# A topic being created is answered LEADER_NOT_AVAILABLE until its leaders are elected: it
# is asked for again for this long. A topic the answer does not know is not asked for
# again: a KRaft broker learns of a new topic a moment after the controller created it
# (10-30 ms on loopback), so the other brokers are asked at once (over_wire), and kctl's
# `topic create` returns once every broker knows it (await_every_broker); a name no broker
# knows is said at once, as Kafka's tools say it (issue 68).
NEW_TOPIC_GRACE = 1.0
# Brokers apply the metadata log independently: once one broker shows a change just made
# (a topic created or deleted, a leader elected), a short settle lets the others catch up,
# so the next command sees it wherever it asks.
SETTLE_SECONDS = 0.3


def topic_missing(metadata: Any, name: str) -> bool:
    """Whether a Metadata answer lacks topic `name` (absent, or no partitions: its error)."""
    topic = metadata.topics.get(name)
    return topic is None or not topic.partitions


def unknown_topic(result: Any) -> bool:
    """Whether one item's result (see wait_all) is an UNKNOWN_TOPIC_OR_PARTITION error."""
    return getattr(result, "kafka_error", None) == "UNKNOWN_TOPIC_OR_PARTITION"


class AdminSession:
    """A lazily connected admin client for one cluster."""

    def __init__(self, settings: ClientSettings):
        if not settings.bootstrap_servers:
            raise ConfigError(
                action="connect", cause="no bootstrap servers given",
                hint="use {bootstrap} HOST:PORT, KCTL_BOOTSTRAP_SERVERS, or a context (kctl context set NAME -b HOST:PORT)",
            )
        if settings.keyring and settings.context:  # the context's secrets in the OS keyring, read once
            from kctl.config.os_keyring import load
            from kctl.values import replace

            secrets = {key: load(settings.context, key) for key in settings.keyring}
            settings = replace(settings, properties={**settings.properties, **secrets}, keyring=())
        self.settings = settings
        self.timeout = settings.timeout
        self.librdkafka = LibrdkafkaAdmin(settings, self.client_config, self.debug_config)

    def client_config(self, *, portable: bool = False) -> dict[str, Any]:
        """librdkafka properties for any client of this session (admin, consumer, producer).
        With SASL GSSAPI, which confluent-kafka's wheels lack, or a delegation token, which
        librdkafka cannot send, the client connects through the session's loopback bridge
        (kctl.admin.client.bridge). A token command or file
        becomes the session's token callback, unless `portable` (settings for another
        process, Spark's executors, which run the command themselves: oauth.with_token_program)."""
        config = self._librdkafka_properties()
        if not portable and uses_token_program(config):
            from kctl.admin.client.oauth import with_token_program

            config = with_token_program(config, self.tokens)
            # The first token now: a failing command is kctl's one line, not librdkafka's
            # "OAuth token not set" after its timeout.
            self.tokens.current()
        if self.bridged:
            bridge, addresses = self.bridge
            return bridge.librdkafka_config(config, addresses)
        return config

    @property
    def bridged(self) -> bool:
        """Whether librdkafka's clients go through the session's loopback bridge: SASL
        GSSAPI (Kerberos) or a delegation token (properties.uses_bridge)."""
        return uses_bridge(self.settings.properties, self.settings.aws_msk_iam)

    @cached_property
    def bridge(self) -> tuple[Any, list[str]]:
        """The loopback bridge librdkafka's clients reach a GSSAPI cluster through, its first
        connection to the cluster made (and authenticated) now, and its bootstrap addresses."""
        from kctl.admin.client.bridge import Bridge
        from kctl.admin.client.wire import ConnectFailed, split_address

        wire = self.wire
        bootstrap = [split_address(a) for a in (self.settings.bootstrap_servers or "").split(",")]

        def open_upstream(host: str, port: int) -> Any:
            return wire.connect(host, port, "connect")

        bridge = Bridge(open_upstream)
        causes: list[BaseException] = []
        for index in range(len(bootstrap)):  # the first bootstrap server that answers leads
            try:
                return bridge, bridge.start(bootstrap[index:] + bootstrap[:index])
            except KctlError as exc:
                if exc.exit_code != ExitCode.UNREACHABLE:
                    bridge.close()
                    raise
                causes.append(exc)
        bridge.close()
        raise causes[-1] if causes else ConnectFailed([])

    def _librdkafka_properties(self) -> dict[str, Any]:
        config: dict[str, Any] = {"bootstrap.servers": self.settings.bootstrap_servers}
        # Give up on a silent (black-holed) address within --timeout so the failure is
        # reported as unreachable rather than as a timeout.
        config["socket.connection.setup.timeout.ms"] = max(1000, int(self.timeout * 1000 * 0.5))
        # Connect to the bootstrap brokers at once: with sparse connections librdkafka
        # waits ~50 ms before its first connection, a third of a short command's time.
        config["enable.sparse.connections"] = "false"
        config.update(self.settings.properties)
        # kctl's own setting, not librdkafka's: with it true, the bridge logs in for librdkafka.
        config.pop(TOKEN_AUTH, None)
        if self.settings.aws_msk_iam:
            config.setdefault("security.protocol", "SASL_SSL")
            mechanism = config.pop("sasl.mechanisms", None) or config.get("sasl.mechanism", "OAUTHBEARER")
            if mechanism.upper() != "OAUTHBEARER":
                raise ConfigError(action=f"use AWS MSK IAM with sasl.mechanism={mechanism}", cause="MSK IAM authenticates with OAUTHBEARER")
            config["sasl.mechanism"] = "OAUTHBEARER"
            config["oauth_cb"] = self.tokens.librdkafka_callback
        return config

    @cached_property
    def tokens(self) -> Any:
        """The session's OAUTHBEARER token source for the wire client, shared with
        librdkafka for AWS MSK IAM (one signer, one cached token)."""
        from kctl.admin.client.oauth import token_source

        return token_source(self.settings.properties, self.settings.aws_msk_iam)

    def debug_config(self) -> Mapping[str, Any]:
        """The client properties as the user gave them (secrets, and token commands and
        files, masked; not the GSSAPI bridge's)."""
        return mask({k: ("(kctl's token callback)" if callable(v) else str(v)) for k, v in self._librdkafka_properties().items()})

    # -- librdkafka's AdminClient (the admin writes, and `kafka` when it is librdkafka) -------

    @property
    def client(self) -> Any:
        return self.librdkafka.client

    def wait(self, future: concurrent.futures.Future, action: str) -> Any:
        """The result of one admin future, or the KctlError for why there is none."""
        return self.librdkafka.wait(future, action)

    def wait_all(self, futures: Mapping[Any, concurrent.futures.Future], action: str, *,
                 resource_type: str | None = None) -> dict[Any, Any]:
        """Results (or KctlErrors, per key) for a batch of futures sharing one deadline
        (LibrdkafkaAdmin.wait_all)."""
        return self.librdkafka.wait_all(futures, action, resource_type=resource_type)

    @staticmethod
    def check(result: Any) -> Any:
        """Raise a per-item KctlError returned by wait_all; pass results through."""
        if isinstance(result, KctlError):
            raise result
        return result

    # -- the other clients -------------------------------------------------------------------

    @cached_property
    def wire(self) -> Any:
        """kctl's own client (kctl.admin.client.wire): the same settings as librdkafka's,
        and the session's token source."""
        from kctl.admin.client.wire import WireClient

        return WireClient(self.settings, tokens=lambda: self.tokens)

    def wire_available(self) -> bool:
        """Whether the wire client honours every setting of the session (a librdkafka-only
        property, an unknown one: it does not). Asked only inside kctl.admin.client."""
        try:
            self.wire  # noqa: B018 - building it checks every property
        except ConfigError:
            return False
        return True

    @cached_property
    def kafka(self) -> Kafka:
        """The Kafka operations (kctl.admin.client.kafka), served by the client chosen here,
        once: the wire client when it honours every setting, else librdkafka."""
        if self.wire_available():
            from kctl.admin.client.over_wire import WireKafka

            return WireKafka(self.wire, self.timeout)
        from kctl.admin.client.over_librdkafka import LibrdkafkaKafka

        return LibrdkafkaKafka(self.librdkafka)

    def supports(self, api_key: int, version: int = 0) -> bool:
        """Whether the cluster answers API `api_key` at `version` or newer through kctl's wire
        client (False when the session's settings leave it to librdkafka, which speaks
        none of the APIs callers ask this of)."""
        if not self.wire_available():
            return False
        return self.api_versions.get(api_key, (0, -1))[1] >= version

    @cached_property
    def api_versions(self) -> dict[int, tuple[int, int]]:
        """The APIs a broker of the cluster supports ({API key: (min, max) version}), asked
        once: what a Kafka release lacks (share groups before 4.x) is said before asking."""
        wire = self.wire
        return wire.call("describe the cluster's APIs", lambda: wire.bootstrap(wire.deadline()).versions)

    def broker_api_versions(self, brokers: Collection[int]) -> dict[int, dict[int, tuple[int, int]]]:
        """The APIs each of `brokers` supports, as its own connection's ApiVersions said
        ({broker: {API key: (min, max)}}); a broker that cannot be reached is left out
        (it is down: what asks about its replicas says so)."""
        wire = self.wire
        out = {}
        for node in sorted(brokers):
            try:
                out[node] = wire.call("describe a broker's APIs", lambda node=node: wire.node(node, wire.deadline()).versions)
            except UnreachableError:
                continue
        return out

    def close(self) -> None:
        self.__dict__.pop("kafka", None)
        if "bridge" in self.__dict__:
            self.__dict__.pop("bridge")[0].close()
        if "wire" in self.__dict__:
            self.__dict__.pop("wire").close()

    def metadata(self, action: str, topics: Collection[str] = ()) -> ClusterMetadata:
        """The brokers and the layout of `topics` (every topic when none is named), through
        the session's client; while a named one is being created, asked again for up to
        NEW_TOPIC_GRACE. Topic ids are left out where they would cost a request of their
        own (librdkafka)."""
        named = list(dict.fromkeys(topics)) or None
        return self.ask_until_found(lambda: self.kafka.metadata(named, action, topic_ids=False),
                                    lambda metadata: any(metadata.pending(t) for t in named or ()))

    def describe_acls(self, filters: Sequence[AclBindingFilter], action: str) -> set[AclBinding]:
        """Every ACL any of `filters` matches (Kafka.describe_acls); a cluster without an
        authorizer is its SECURITY_DISABLED error whichever client asked. librdkafka answers
        that as no ACLs at all, so an empty answer through it is asked again through kctl's
        wire client, with a filter that matches next to nothing: the broker checks for an
        authorizer before it filters."""
        found = self.kafka.describe_acls(filters, action)
        if found or self.kafka.name != "librdkafka":
            return found
        # Kafka's codes: resource type TOPIC, pattern LITERAL, operation and permission ANY.
        probe: t.DescribeAclsRequest = {"resource_type_filter": 2, "resource_name_filter": "__kctl_authorizer_probe", "pattern_type_filter": 3,
                 "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}
        answer = self.ask(action, apis.DESCRIBE_ACLS, probe, 1, 3)
        if answer.error_code:
            from kctl.admin.client.errors import for_kafka_code

            raise for_kafka_code(answer.error_code, answer.error_message, action)
        return found

    def brokers(self, action: str) -> list[int]:
        """The ids of the cluster's live brokers (a Metadata request for no topic)."""
        return sorted(self.kafka.metadata([], action, topic_ids=False).brokers)

    def await_every_broker(self, action: str, topics: Sequence[str], *, exist: bool) -> None:
        """Return once every live broker answers for `topics` as the controller decided: each
        names them all with partitions (`exist`), or none of them. A topic created or
        deleted reaches each broker a moment after the controller commits it, and the next
        command may ask any broker, which must not say "no such topic" of a topic kctl has
        just created (kctl looks a name up once: issue 68). Every live broker is asked (one
        that cannot be reached is passed over), again every 50 ms within --timeout; a
        session only librdkafka serves settles for SETTLE_SECONDS instead."""
        if not topics:
            return
        if not self.wire_available():
            self.settle()
            return
        wire = self.wire
        fields = {"topics": [{"name": t} for t in topics], "allow_auto_topic_creation": False}

        def agreed() -> bool:
            deadline = wire.deadline()
            for node in wire.brokers(deadline):
                try:
                    answer = wire.fan_out([(node, apis.METADATA, fields, 4, 9)], deadline)[0]
                except (OSError, KctlError):
                    # A broker listed but down (killed, not yet fenced) learns of it when it
                    # is back; the change itself has been made.
                    continue
                present = {t.name for t in answer.topics if t.partitions and not t.error_code}
                if present != (set(topics) if exist else set()):
                    return False
            return True

        poll(lambda: wire.call(action, agreed), bool, timeout=self.timeout, interval=0.05)

    def settle(self, brokers: int | None = None) -> None:
        """Wait SETTLE_SECONDS on a cluster of several brokers (one broker has nothing to
        catch up). `brokers` when the caller has just counted them; otherwise a Metadata
        request for no topic counts them (through the wire client when the settings allow
        it: a listing of every topic costs seconds at 18,000 partitions)."""
        if brokers is None:
            brokers = len(self.brokers("describe cluster"))
        if brokers > 1:
            time.sleep(SETTLE_SECONDS)

    def ask(self, action: str, api: Api[Q, R], fields: Q | Callable[[int], Q], low: int | None = None, high: int | None = None, *,
            node: int | None = None, needs: str | None = None) -> R:
        """The answer of one request through the wire client to broker `node` (None: any).
        `fields` are the request's fields (or a function of the version giving them);
        `needs` names what the request needs of the cluster, for the error of a cluster
        without the API ("unable to <action>: the cluster does not support <needs>")."""
        return self.ask_all(action, [(node, api, fields, low, high)], needs=needs)[0]

    def ask_all(self, action: str, requests: Sequence[tuple[int | None, Api[Any, R], Any, int | None, int | None]], *,
                needs: str | None = None) -> list[R]:
        """The answers of several requests — (node or None, API, fields, lowest and highest
        version) — all sent before any answer is read (WireClient.fan_out). Requests of
        one API have its answers' type; of several, annotate each answer's."""
        wire = self.wire
        try:
            return wire.call(action, lambda: wire.fan_out(requests, wire.deadline()))
        except KctlError as exc:
            if needs and exc.kafka_error == "UNSUPPORTED_VERSION":
                raise InvalidError(action=action, cause=f"the cluster does not support {needs}", kafka_error="UNSUPPORTED_VERSION") from exc
            raise

    def ask_every_broker(self, action: str, api: Api[Q, R], fields: Q, low: int, high: int, loading: str, *,
                         nodes: Callable[[float], list[int] | None] | None = None) -> list[tuple[int, R]]:
        """(broker id, answer) of every broker (or of the brokers `nodes(deadline)` names)
        to `api` through the wire client (wire.ask_every_broker: a coordinator still
        loading is asked again until --timeout)."""
        from kctl.admin.client.wire import ask_every_broker

        return ask_every_broker(self.wire, action, api, fields, low, high, loading, nodes=nodes)

    def ask_until_found(self, ask: Callable[[], T], lacks_one: Callable[[T], bool]) -> T:
        """`ask()`, and again while `lacks_one(answer)` says something is not there yet (a
        topic being created, a quota just set), for up to NEW_TOPIC_GRACE (within
        --timeout): the last answer."""
        answer = ask()
        end = time.monotonic() + min(NEW_TOPIC_GRACE, self.timeout)
        pause = 0.02
        while lacks_one(answer) and time.monotonic() + pause < end:
            time.sleep(pause)
            pause = min(2 * pause, 0.2)
            answer = ask()
        return answer
