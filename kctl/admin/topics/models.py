"""Frozen dataclasses of topics and partitions; their field names are the JSON keys."""

from __future__ import annotations

from kctl.values import Value


class TopicSummary(Value):
    __slots__ = ("name", "topic_id", "partitions", "replication_factor", "internal", "config_overrides", "under_replicated_partitions", "offline_partitions")

    def __init__(
        self, *,
        name: str, topic_id: str | None, partitions: int, replication_factor: int, internal: bool, config_overrides: int | None,
        under_replicated_partitions: int, offline_partitions: int,
    ):
        self.name = name
        self.topic_id = topic_id
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.internal = internal
        # Configs set on the topic itself (DYNAMIC_TOPIC_CONFIG); None unless counted
        # (topic list --overrides, --with-overrides or -o wide).
        self.config_overrides = config_overrides
        self.under_replicated_partitions = under_replicated_partitions
        self.offline_partitions = offline_partitions


class PartitionInfo(Value):
    __slots__ = ("partition", "leader", "leader_epoch", "replicas", "isr", "offline_replicas", "offline", "under_replicated", "earliest_offset", "latest_offset", "size_bytes", "adding_replicas", "removing_replicas", "elr", "last_known_elr", "earliest_local_offset", "latest_tiered_offset")

    def __init__(
        self, *,
        partition: int, leader: int | None, leader_epoch: int | None, replicas: tuple[int, ...], isr: tuple[int, ...],
        offline_replicas: tuple[int, ...], offline: bool, under_replicated: bool, earliest_offset: int | None, latest_offset: int | None,
        size_bytes: int | None = None, adding_replicas: tuple[int, ...] | None = None, removing_replicas: tuple[int, ...] | None = None,
        elr: tuple[int, ...] | None = None, last_known_elr: tuple[int, ...] | None = None, earliest_local_offset: int | None = None,
        latest_tiered_offset: int | None = None,
    ):
        self.partition = partition
        self.leader = leader
        self.leader_epoch = leader_epoch
        self.replicas = replicas
        self.isr = isr
        # Replicas on brokers that are not alive.
        self.offline_replicas = offline_replicas
        # Derived from the above so scripts need not recompute them.
        self.offline = offline
        self.under_replicated = under_replicated
        # The log start offset and log end offset (high watermark).
        self.earliest_offset = earliest_offset
        self.latest_offset = latest_offset
        # With --detail (two more requests): the leader replica's size on disk and an
        # in-progress reassignment's replicas; null otherwise.
        self.size_bytes = size_bytes
        self.adding_replicas = adding_replicas
        self.removing_replicas = removing_replicas
        # Eligible leader replicas and the last known ELR (KIP-966); null where the cluster
        # does not report them (DescribeTopicPartitions, Kafka 3.8+).
        self.elr = elr
        self.last_known_elr = last_known_elr
        # Tiered storage (topics with remote.storage.enable=true, else null): the first offset
        # on the leader's disk, the last offset uploaded to remote storage (null: none yet).
        self.earliest_local_offset = earliest_local_offset
        self.latest_tiered_offset = latest_tiered_offset


class TopicDescription(Value):
    __slots__ = ("name", "topic_id", "internal", "replication_factor", "partitions", "remote_storage", "retention_ms", "retention_bytes",
                 "local_retention_ms", "local_retention_bytes", "cleanup_policy")

    def __init__(
        self, *,
        name: str, topic_id: str | None, internal: bool, replication_factor: int, partitions: tuple[PartitionInfo, ...],
        remote_storage: bool | None = None, retention_ms: int | None = None, retention_bytes: int | None = None,
        local_retention_ms: int | None = None, local_retention_bytes: int | None = None, cleanup_policy: str | None = None,
    ):
        self.name = name
        self.topic_id = topic_id
        self.internal = internal
        self.replication_factor = replication_factor
        self.partitions = partitions
        # Tiered storage: remote.storage.enable, and the retention in all and on local disk
        # (retention.ms/.bytes, local.retention.ms/.bytes; -1 unlimited, -2 as retention);
        # null where the topic's configs could not be read.
        self.remote_storage = remote_storage
        self.retention_ms = retention_ms
        self.retention_bytes = retention_bytes
        self.local_retention_ms = local_retention_ms
        self.local_retention_bytes = local_retention_bytes
        # cleanup.policy (delete, compact or both), read with the retention configs.
        self.cleanup_policy = cleanup_policy


class TopicResult(Value):
    """The outcome of creating or deleting one topic of a batch."""

    __slots__ = ("name", "status", "partitions", "replication_factor", "error")

    def __init__(self, *, name: str, status: str, partitions: int | None = None, replication_factor: int | None = None, error: str | None = None):
        self.name = name
        # created | validated | exists | deleted | absent | failed
        self.status = status
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.error = error
