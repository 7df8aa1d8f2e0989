"""Frozen dataclasses of topics and partitions; their field names are the JSON keys."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicSummary:
    name: str
    topic_id: str | None
    partitions: int
    replication_factor: int
    internal: bool
    # Configs set on the topic itself (DYNAMIC_TOPIC_CONFIG); None unless counted
    # (topic list --overrides, --with-overrides or -o wide).
    config_overrides: int | None
    under_replicated_partitions: int
    offline_partitions: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionInfo:
    partition: int
    leader: int | None
    leader_epoch: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    # Replicas on brokers that are not alive.
    offline_replicas: tuple[int, ...]
    # Derived from the above so scripts need not recompute them.
    offline: bool
    under_replicated: bool
    # The log start offset and log end offset (high watermark).
    earliest_offset: int | None
    latest_offset: int | None
    # With --detail (two more requests): the leader replica's size on disk and an
    # in-progress reassignment's replicas; null otherwise.
    size_bytes: int | None = None
    adding_replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    # Eligible leader replicas and the last known ELR (KIP-966); null where the cluster
    # does not report them (DescribeTopicPartitions, Kafka 3.8+).
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    # Tiered storage (topics with remote.storage.enable=true, else null): the first offset
    # on the leader's disk, the last offset uploaded to remote storage (null: none yet).
    earliest_local_offset: int | None = None
    latest_tiered_offset: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicDescription:
    name: str
    topic_id: str | None
    internal: bool
    replication_factor: int
    partitions: tuple[PartitionInfo, ...]
    # Tiered storage: remote.storage.enable, and the retention in all and on local disk
    # (retention.ms/.bytes, local.retention.ms/.bytes; -1 unlimited, -2 as retention);
    # null where the topic's configs could not be read.
    remote_storage: bool | None = None
    retention_ms: int | None = None
    retention_bytes: int | None = None
    local_retention_ms: int | None = None
    local_retention_bytes: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicResult:
    """The outcome of creating or deleting one topic of a batch."""

    name: str
    # created | validated | exists | deleted | absent | failed
    status: str
    partitions: int | None = None
    replication_factor: int | None = None
    error: str | None = None
