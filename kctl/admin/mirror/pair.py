"""The two clusters MM2 replicates between, found from their own topics, and the reading
of MM2's internal topics.

MM2 (in dedicated mode or as connectors) leaves on the target a `<source alias>.
checkpoints.internal` topic per source cluster, and on the source (offset-syncs.topic.
location=source, the default) or the target a `mm2-offset-syncs.<target alias>.internal`
topic. Those names give the aliases, so kctl needs no MM2 configuration and no Connect
REST API: a failover still works when the source cluster is gone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from kctl.admin.client.session import AdminSession
from kctl.admin.mirror.policy import HEARTBEATS, ReplicationPolicy
from kctl.admin.mirror.records import (
    Checkpoint,
    Heartbeat,
    MalformedRecord,
    OffsetSync,
    decode_checkpoint,
    decode_heartbeat,
    decode_offset_sync,
)
from kctl.errors import NotFoundError, TimeoutError_, UsageError

T = TypeVar("T")


class NotMirrored(NotFoundError):
    """The target holds no MM2 checkpoints (for the alias asked)."""


@dataclass(frozen=True, kw_only=True)
class Stamped:
    """A decoded record with where and when it was written."""

    record: Any
    partition: int
    offset: int
    timestamp: int


@dataclass
class MirrorPair:
    """The source (None when it was not given or cannot be reached: translations then rest
    on the checkpoints alone) and the target, and the aliases MM2 knows them by."""

    target: AdminSession
    source: AdminSession | None
    source_alias: str
    target_alias: str | None
    policy: ReplicationPolicy
    target_topics: frozenset[str]
    source_topics: frozenset[str] | None
    # Where the offset syncs are: "source" or "target" (offset-syncs.topic.location), or None.
    offset_syncs_on: str | None = None
    target_cluster_id: str | None = None
    source_cluster_id: str | None = None

    @property
    def checkpoints_topic(self) -> str:
        return self.policy.checkpoints_topic(self.source_alias)

    def remote_topic(self, topic: str) -> str:
        return self.policy.remote_topic(topic, self.source_alias, self.target_alias or "")


def _topics_and_id(session: AdminSession, action: str) -> tuple[frozenset[str], str | None]:
    metadata = session.metadata(action)
    return frozenset(metadata.topics), metadata.cluster_id


# MM2's default replication policy (a frozen dataclass: one instance serves every call).
DEFAULT_POLICY = ReplicationPolicy()


def find_pair(target: AdminSession, source: AdminSession | None, *, source_alias: str | None = None,
              target_alias: str | None = None, policy: ReplicationPolicy = DEFAULT_POLICY,
              target_name: str = "the target", source_name: str = "the source") -> MirrorPair:
    """The pair, with the aliases taken from the topics (or checked against them)."""
    target_topics, target_id = _topics_and_id(target, "list topics of the target cluster")
    source_topics, source_id = _topics_and_id(source, "list topics of the source cluster") if source is not None else (None, None)
    aliases = sorted(a for t in target_topics if (a := policy.checkpoints_alias(t)) is not None)
    if not aliases:
        raise NotMirrored(
            action=f"find MirrorMaker 2 on {target_name}", cause=f"it has no *{policy.separator}checkpoints{policy.separator}internal "
            f"topic, so MM2 does not seem to replicate into it",
            hint="MM2's checkpoint connector writes <source alias>.checkpoints.internal on the target; check {target} and MM2's flows")
    if source_alias is None:
        if len(aliases) > 1:
            raise UsageError(action="choose the source alias", cause=f"{target_name} has checkpoints from {', '.join(aliases)}",
                             hint="pass {source_alias} NAME")
        source_alias = aliases[0]
    elif source_alias not in aliases:
        raise NotMirrored(action=f"find MM2 checkpoints from alias {source_alias!r} on {target_name}", cause="it has checkpoints from "
                          f"{', '.join(aliases)}", hint="{source_alias} is MM2's name of the source cluster (its `clusters` list)")
    if target_alias is None:
        target_alias = _target_alias(target, source_topics, target_topics, source_alias, policy)
    offset_syncs_on = None
    if target_alias is not None:
        syncs = policy.offset_syncs_topic(target_alias)
        offset_syncs_on = "source" if syncs in (source_topics or ()) else "target" if syncs in target_topics else None
    if target_alias is not None and target_alias == source_alias:
        raise UsageError(f"unable to use alias {source_alias!r} for both clusters", hint="the source and target aliases differ in MM2")
    return MirrorPair(target=target, source=source, source_alias=source_alias, target_alias=target_alias, policy=policy,
                      target_topics=target_topics, source_topics=source_topics, offset_syncs_on=offset_syncs_on,
                      target_cluster_id=target_id, source_cluster_id=source_id)


def _target_alias(target: AdminSession, source_topics: frozenset[str] | None, target_topics: frozenset[str],
                  source_alias: str, policy: ReplicationPolicy) -> str | None:
    """MM2's name of the target: from the one offset-syncs topic on the source, else from
    the heartbeats the flow writes to the target (keyed source alias, target alias)."""
    on_source = sorted(a for t in (source_topics or ()) if (a := policy.offset_syncs_alias(t)) is not None)
    if len(on_source) == 1:
        return on_source[0]
    if HEARTBEATS in target_topics:
        found = {t for (s, t) in newest_heartbeats(target, HEARTBEATS) if s == source_alias}
        if len(found) == 1:
            return found.pop()
    return None


# -- reading MM2's topics ----------------------------------------------------------------


def read_topic(session: AdminSession, topic: str, decode: Callable[[bytes | None, bytes | None], T]) -> tuple[list[Stamped], int]:
    """Every record of `topic` from its start to its end as this call began, decoded, in
    offset order per partition; and how many did not decode (skipped, as MirrorClient
    skips them). A consumer assigned the partitions directly: it joins no group."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    from kctl.admin.groups.lag import session_logger
    from kctl.admin.topics.offsets import log_offsets

    meta = session.metadata(f"read {topic}", [topic]).topics.get(topic)
    if meta is None or meta.error is not None:
        raise NotFoundError(action=f"read {topic}", cause="no such topic")
    ends = {p: end for (_t, p), (start, end, _e) in log_offsets(session, [(topic, p) for p in meta.partitions]).items()
            if end is not None and start is not None and end > start}
    if not ends:
        return [], 0
    config = session.client_config()
    config.update({"group.id": "kctl-mirror-reader", "enable.auto.commit": False, "enable.partition.eof": True,
                   "auto.offset.reset": "earliest"})
    consumer = Consumer(config, logger=session_logger())
    records: list[Stamped] = []
    skipped = 0
    deadline = time.monotonic() + session.timeout
    pending = dict(ends)
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in pending])
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError_(action=f"read {topic}", cause=f"timed out after {session.timeout:g} s with "
                                    f"{len(pending)} partition(s) unread", hint="raise {timeout}")
            for message in consumer.consume(10_000, 0.2):
                error = message.error()
                partition, offset = message.partition(), message.offset()
                if partition is None or offset is None:
                    continue  # an error of the whole consumer, not of a partition: the deadline judges
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF and partition in pending and offset >= pending[partition]:
                        del pending[partition]
                    continue
                end = pending.get(partition)
                if end is None or offset >= end:
                    continue
                try:
                    decoded = decode(message.key(), message.value())
                except MalformedRecord:
                    skipped += 1
                else:
                    records.append(Stamped(record=decoded, partition=partition, offset=offset, timestamp=message.timestamp()[1]))
                if offset + 1 >= end:
                    del pending[partition]
    finally:
        consumer.close()
    records.sort(key=lambda r: (r.partition, r.offset))
    return records, skipped


def newest_checkpoints(pair: MirrorPair) -> tuple[dict[tuple[str, str, int], Stamped], int]:
    """The newest checkpoint of every (group, target topic, partition): the last one in
    the topic, as MirrorClient.remoteConsumerOffsets keeps it; and the records skipped."""
    records, skipped = read_topic(pair.target, pair.checkpoints_topic, decode_checkpoint)
    newest: dict[tuple[str, str, int], Stamped] = {}
    for stamped in records:
        c: Checkpoint = stamped.record
        newest[(c.group, c.topic, c.partition)] = stamped
    return newest, skipped


def newest_offset_syncs(pair: MirrorPair) -> dict[tuple[str, int], Stamped]:
    """The newest offset sync of every source partition, {} when kctl cannot find them."""
    if pair.target_alias is None or pair.offset_syncs_on is None:
        return {}
    session = pair.source if pair.offset_syncs_on == "source" else pair.target
    if session is None:
        return {}
    records, _skipped = read_topic(session, pair.policy.offset_syncs_topic(pair.target_alias), decode_offset_sync)
    newest: dict[tuple[str, int], Stamped] = {}
    for stamped in records:
        s: OffsetSync = stamped.record
        newest[(s.topic, s.partition)] = stamped
    return newest


def newest_heartbeats(session: AdminSession, topic: str) -> dict[tuple[str, str], Heartbeat]:
    """The newest heartbeat of every (source alias, target alias) in `topic`."""
    records, _skipped = read_topic(session, topic, decode_heartbeat)
    newest: dict[tuple[str, str], Heartbeat] = {}
    for stamped in records:
        h: Heartbeat = stamped.record
        if h.timestamp >= newest.get((h.source_alias, h.target_alias), h).timestamp:
            newest[(h.source_alias, h.target_alias)] = h
    return newest
