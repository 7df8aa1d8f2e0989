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


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicDescription:
    name: str
    topic_id: str | None
    internal: bool
    replication_factor: int
    partitions: tuple[PartitionInfo, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicResult:
    """The outcome of creating or deleting one topic of a batch."""

    name: str
    # created | validated | exists | deleted | absent | failed
    status: str
    partitions: int | None = None
    replication_factor: int | None = None
    error: str | None = None
