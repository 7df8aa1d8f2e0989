"""The Kafka operations (kctl.admin.client.kafka) through confluent-kafka's AdminClient:
the path for settings only librdkafka honours. Its waiting (timeouts, connection errors)
is LibrdkafkaAdmin's."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from kctl.admin.client.errors import kafka_name
from kctl.admin.client.kafka import (
    AUTO_CREATE_SECONDS,
    BROKER,
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    INTERNAL_TOPICS,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    TOPIC,
    AclBinding,
    AclBindingFilter,
    Broker,
    ClusterMetadata,
    ConfigValue,
    DeliveryFailure,
    OffsetAnswer,
    PartitionLayout,
    TopicLayout,
    TopicPartition,
    settled,
)
from kctl.admin.client.librdkafka import LibrdkafkaAdmin, binding_filter
from kctl.admin.client.over_wire import RETRIABLE_OFFSETS, RETRY_BACKOFF, leaderless
from kctl.errors import InvalidError, KctlError, Partial, Resource
from kctl.polling import poll

if TYPE_CHECKING:
    from concurrent.futures import Future
    from typing import Protocol

    # What kctl reads of confluent-kafka's answers, which reach here as Any (the session's
    # AdminClient and wait_all); its own annotations leave several of these fields None.

    class _PartitionMetadata(Protocol):
        id: int
        leader: int  # -1 without one
        replicas: list[int]
        isrs: list[int]

    class _TopicMetadata(Protocol):
        partitions: dict[int, _PartitionMetadata]
        error: object  # a KafkaError, or None

    class _BrokerMetadata(Protocol):
        id: int
        host: str
        port: int

    class _ClusterMetadata(Protocol):
        topics: dict[str, _TopicMetadata]
        brokers: dict[int, _BrokerMetadata]

    class _TopicDescription(Protocol):
        topic_id: object  # a Uuid
        is_internal: bool

    class _ConfluentPartition(Protocol):
        topic: str
        partition: int

    class _OffsetResult(Protocol):
        offset: int
        timestamp: int

    class _ConfigResource(Protocol):
        name: str
        restype: object  # a ResourceType

    class _ConfigEntry(Protocol):
        name: str
        value: str | None
        source: object  # a ConfigSource
        is_sensitive: bool
        is_read_only: bool

    class _AclBinding(Protocol):
        # enum members (ResourceType, ResourcePatternType, AclOperation, AclPermissionType)
        restype: object
        resource_pattern_type: object
        operation: object
        permission_type: object
        name: str
        principal: str
        host: str

    class _Producer(Protocol):
        def list_topics(self, topic: str, *, timeout: float) -> _ClusterMetadata: ...


class LibrdkafkaKafka:
    name = "librdkafka"

    def __init__(self, admin: LibrdkafkaAdmin):
        self.session = admin

    def metadata(self, topics: Sequence[str] | None, action: str, *, topic_ids: bool = True) -> ClusterMetadata:
        """Every topic is listed (librdkafka's Metadata for one topic may create it on a
        broker that auto-creates), then `topics` kept; ids and the internal flag come from
        DescribeTopics, asked only with `topic_ids`."""
        raw: _ClusterMetadata = self.session.list_all_topics(action)
        names = list(raw.topics) if topics is None else list(dict.fromkeys(topics))
        present = [n for n in names if n in raw.topics and raw.topics[n].error is None]
        # A named topic the listing lacks: DescribeTopics says whether it is missing or
        # not for this user to see (a listing leaves out what one may not describe).
        absent = [n for n in names if n not in raw.topics]
        described = self._described(present if topic_ids else [], action)
        refused = {n: getattr(r, "kafka_error", None) for n, r in self._described(absent, action, keep_errors=True).items()}
        found: dict[str, TopicLayout] = {}
        for name in names:
            topic = raw.topics.get(name)
            if topic is None:
                error = refused.get(name) if refused.get(name) == "TOPIC_AUTHORIZATION_FAILED" else "UNKNOWN_TOPIC_OR_PARTITION"
                found[name] = TopicLayout(name, None, False, {}, error)
                continue
            partitions = {p.id: PartitionLayout(p.id, p.leader if p.leader >= 0 else None, tuple(p.replicas), tuple(p.isrs))
                          for p in sorted(topic.partitions.values(), key=lambda p: p.id)}
            about = described.get(name)
            topic_id = kafka_uuid(about.topic_id) if about is not None else None
            internal = bool(about.is_internal) if about is not None else name in INTERNAL_TOPICS
            found[name] = TopicLayout(name, topic_id, internal, partitions, kafka_name(topic.error) if topic.error is not None else None)
        controller = getattr(raw, "controller_id", -1)
        return ClusterMetadata(
            cluster_id=getattr(raw, "cluster_id", None),
            controller_id=controller if controller is not None and controller >= 0 else None,
            brokers={b.id: Broker(b.id, b.host, b.port, None) for b in raw.brokers.values()},
            topics=found,
        )

    @overload
    def _described(self, names: list[str], action: str) -> dict[str, _TopicDescription]: ...

    @overload
    def _described(self, names: list[str], action: str, *, keep_errors: bool) -> dict[str, _TopicDescription | KctlError]: ...

    def _described(self, names: list[str], action: str, *, keep_errors: bool = False) -> Mapping[str, _TopicDescription | KctlError]:
        """DescribeTopics' answer per topic (its KctlError too, with `keep_errors`)."""
        if not names:
            return {}
        from confluent_kafka import TopicCollection

        futures = self.session.client.describe_topics(TopicCollection(names), request_timeout=self.session.timeout)
        return {n: r for n, r in self.session.wait_all(futures, action).items() if keep_errors or not isinstance(r, KctlError)}

    def list_offsets(self, partitions: Sequence[TopicPartition], timestamps: Sequence[int], isolation: str, action: str,
                     leaders: Mapping[TopicPartition, int] | None = None,
                     ) -> Partial[dict[TopicPartition, list[OffsetAnswer | None]]]:
        """librdkafka sends one ListOffsets request per leader for the whole batch. A
        partition answered with a retriable error is asked again, after a metadata refresh,
        while that metadata names a leader for it and until --timeout."""
        from confluent_kafka import IsolationLevel
        from confluent_kafka import TopicPartition as Confluent

        if EARLIEST_LOCAL_TIMESTAMP in timestamps or LATEST_TIERED_TIMESTAMP in timestamps:
            # librdkafka sends ListOffsets at a version that takes neither spec.
            raise InvalidError(action=action, cause="tiered storage offsets are asked through kctl's own client, "
                               "which these client settings rule out (a property only librdkafka knows)")
        session = self.session
        level = IsolationLevel.READ_COMMITTED if isolation == "read_committed" else IsolationLevel.READ_UNCOMMITTED
        values: dict[TopicPartition, list[OffsetAnswer | None]] = {p: [None] * len(timestamps) for p in partitions}
        errors: dict[TopicPartition, KctlError] = {}
        todo = [set(values) for _ in timestamps]
        asked_before = False

        def ask() -> list[set[TopicPartition]]:
            nonlocal todo, asked_before
            if asked_before:
                # Asked again only where the refreshed metadata names a leader: an offline
                # partition (or a topic deleted meanwhile) keeps its error now.
                layout = self.metadata(sorted({t for keys in todo for t, _ in keys}), action, topic_ids=False)
                todo = [{key for key in keys if _has_leader(layout, key)} for keys in todo]
            asked_before = True
            asked: list[Mapping[_ConfluentPartition, Future[_OffsetResult]]] = [
                session.client.list_offsets({Confluent(t, p): _spec(timestamp) for t, p in keys}, isolation_level=level,
                                            request_timeout=session.timeout) if keys else {}
                for keys, timestamp in zip(todo, timestamps)]
            for index, futures in enumerate(asked):
                answers: dict[TopicPartition, _OffsetResult | KctlError] = session.wait_all(
                    {(tp.topic, tp.partition): f for tp, f in futures.items()}, action)
                retry = set()
                for key, answer in answers.items():
                    if isinstance(answer, KctlError):
                        # librdkafka fails a whole request with _NOENT ("No leaders found")
                        # when none of its partitions has a leader.
                        errors[key] = leaderless(action, key) if answer.kafka_error == "_NOENT" else answer
                        if answer.kafka_error in RETRIABLE_OFFSETS:
                            retry.add(key)
                    else:
                        epoch = getattr(answer, "leader_epoch", None)
                        values[key][index] = OffsetAnswer(answer.offset, answer.timestamp, epoch if epoch is not None and epoch >= 0 else None)
                todo[index] = retry
            return todo

        if partitions:
            poll(ask, lambda todo: not any(todo), timeout=session.timeout, interval=RETRY_BACKOFF, stop_before=True)
        for key in list(errors):
            if all(found is not None for found in values[key]):
                del errors[key]
        return Partial(values, errors)

    def describe_configs(self, resources: Sequence[tuple[str, str]], action: str, keys: Sequence[str] | None = None,
                         ) -> Partial[dict[tuple[str, str], dict[str, ConfigValue]]]:
        from confluent_kafka.admin import ConfigResource, ResourceType

        session = self.session
        kinds: dict[str, ResourceType] = {TOPIC: ResourceType.TOPIC, BROKER: ResourceType.BROKER}
        wanted = list(dict.fromkeys(resources))
        if not wanted:
            return Partial({}, {})
        futures = session.client.describe_configs([ConfigResource(kinds[kind], name) for kind, name in wanted], request_timeout=session.timeout)
        by_resource: dict[_ConfigResource, dict[str, _ConfigEntry] | KctlError] = session.wait_all(futures, action)
        found: dict[tuple[str, str], dict[str, ConfigValue]] = {}
        errors: dict[tuple[str, str], KctlError] = {}
        for (kind, name) in wanted:
            result = next((r for resource, r in by_resource.items() if resource.name == name and resource.restype == kinds[kind]), None)
            if result is None:
                continue
            if isinstance(result, KctlError):
                errors[(kind, name)] = result.but(action=f"{action} of {kind} {name}", resource=Resource(kind, name))
                continue
            found[(kind, name)] = {e.name: ConfigValue(e.name, e.value, _source_name(e.source), bool(e.is_sensitive), bool(e.is_read_only))
                                   for e in result.values() if keys is None or e.name in keys}
        return Partial(found, errors)

    def describe_acls(self, filters: Sequence[AclBindingFilter], action: str) -> set[AclBinding]:
        from confluent_kafka.admin import AclOperation, AclPermissionType, ResourcePatternType, ResourceType

        session = self.session
        futures = {i: session.client.describe_acls(binding_filter(f), request_timeout=session.timeout) for i, f in enumerate(filters)}
        # Kafka's name of each of confluent-kafka's enum members: Enum.name is a property,
        # and 10,000 ACLs made it a measurable part of `acl list`.
        names: dict[object, str] = {m: m.name for kind in (AclOperation, AclPermissionType, ResourcePatternType, ResourceType)
                                    for m in kind}
        names[ResourceType.BROKER] = "CLUSTER"
        found: set[AclBinding] = set()
        result: list[_AclBinding] | KctlError
        for result in session.wait_all(futures, action).values():
            if isinstance(result, KctlError):
                raise result
            found.update((names[b.restype], b.name, names[b.resource_pattern_type], b.principal, b.host, names[b.operation],
                          names[b.permission_type]) for b in result)
        return found

    def auto_create(self, topic: str, action: str) -> TopicLayout | None:
        """Through a producer that may create topics (librdkafka's admin client never does).
        Its first answer may predate the creation (librdkafka's first Metadata request, sent
        as the connection opens, does not ask for it), and leaders follow the creation."""
        from confluent_kafka import Producer

        from kctl.admin.client.librdkafka import build_client

        producer: _Producer = build_client(Producer, {**self.session.config(), "allow.auto.create.topics": "true"}, "producer")
        timeout = min(self.session.timeout, AUTO_CREATE_SECONDS)
        started = time.monotonic()

        def ask() -> TopicLayout | None:
            found = producer.list_topics(topic, timeout=max(0.1, timeout - (time.monotonic() - started))).topics.get(topic)
            if found is None:
                return None
            partitions = {p.id: PartitionLayout(p.id, p.leader if p.leader >= 0 else None, tuple(p.replicas), tuple(p.isrs))
                          for p in sorted(found.partitions.values(), key=lambda p: p.id)}
            return TopicLayout(topic, None, False, partitions, kafka_name(found.error) if found.error is not None else None)

        return poll(ask, settled, timeout=timeout, interval=0.1)

    def small_input_producer(self, topic: TopicLayout, on_failure: Callable[[DeliveryFailure], None],
                             timeout: float, partitioner: str = "murmur2") -> None:
        return None  # librdkafka's own producer serves every input on this path

    def close(self) -> None:
        pass  # the AdminClient is the session's


def _spec(timestamp: int) -> object:
    from confluent_kafka.admin import OffsetSpec

    if timestamp == EARLIEST_TIMESTAMP:
        return OffsetSpec.earliest()
    if timestamp == LATEST_TIMESTAMP:
        return OffsetSpec.latest()
    if timestamp == MAX_TIMESTAMP:
        return OffsetSpec.max_timestamp()
    return OffsetSpec.for_timestamp(timestamp)


def _has_leader(metadata: ClusterMetadata, key: TopicPartition) -> bool:
    topic = metadata.topics.get(key[0])
    partition = topic.partitions.get(key[1]) if topic is not None else None
    return partition is not None and partition.leader is not None


def _source_name(source: Any) -> str:
    """Kafka's ConfigSource name of a librdkafka ConfigSource (an enum, or its code)."""
    from kctl.admin.client.kafka import CONFIG_SOURCES

    return CONFIG_SOURCES.get(int(getattr(source, "value", source)), "UNKNOWN")


def kafka_uuid(uuid: object) -> str | None:
    """A topic id as Kafka's tools print it (URL-safe base64); librdkafka uses '+' and '/'."""
    if uuid is None:
        return None
    return str(uuid).replace("+", "-").replace("/", "_")
