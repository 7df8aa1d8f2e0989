"""MirrorMaker 2's internal records, decoded (and encoded, for tests and benchmarks).

MM2 writes them with Kafka's own Struct serialisation (org.apache.kafka.common.protocol.
types): big-endian integers, and STRING as an int16 byte length then UTF-8 bytes. The
layouts, as connect-mirror-client 4.3.1 defines them:

checkpoint (topic `<source alias>.checkpoints.internal` on the target cluster, emitted by
MirrorCheckpointConnector for each consumer group of the source):
    key:   group STRING, topic STRING (the name on the target, e.g. `primary.orders`),
           partition INT32
    value: version INT16 (0), upstreamOffset INT64 (the group's committed offset on the
           source), offset INT64 (the offset it maps to on the target), metadata STRING
offset sync (topic `mm2-offset-syncs.<target alias>.internal`, on the source cluster by
default; emitted by MirrorSourceTask as it replicates):
    key:   topic STRING (the source topic), partition INT32
    value: upstreamOffset INT64, offset INT64 (downstream); no version
heartbeat (topic `heartbeats` on the target, emitted by MirrorHeartbeatConnector every
emit.heartbeats.interval.seconds; replicated onward as `<alias>.heartbeats`):
    key:   sourceClusterAlias STRING, targetClusterAlias STRING
    value: version INT16 (0), timestamp INT64 (ms since the epoch)

A record too short for its layout raises MalformedRecord; the readers skip it and count it,
as MirrorClient skips a record it cannot deserialise. Bytes after the layout are ignored,
as Kafka's Schema.read ignores them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_TWO_I64 = struct.Struct(">qq")
_CHECKPOINT_VALUE = struct.Struct(">hqq")
_HEARTBEAT_VALUE = struct.Struct(">hq")


class MalformedRecord(ValueError):
    pass


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str


@dataclass(frozen=True, kw_only=True)
class OffsetSync:
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int


@dataclass(frozen=True, kw_only=True)
class Heartbeat:
    source_alias: str
    target_alias: str
    timestamp: int


def _string(data: bytes, at: int) -> tuple[str, int]:
    (size,) = _I16.unpack_from(data, at)
    at += 2
    if size < 0 or at + size > len(data):
        raise MalformedRecord(f"a string of {size} bytes does not fit at byte {at - 2} of {len(data)}")
    return data[at:at + size].decode("utf-8"), at + size


def _encode_string(text: str) -> bytes:
    data = text.encode("utf-8")
    return _I16.pack(len(data)) + data


def decode_checkpoint(key: bytes | None, value: bytes | None) -> Checkpoint:
    if key is None or value is None:
        raise MalformedRecord("a checkpoint needs a key and a value")
    try:
        group, at = _string(key, 0)
        topic, at = _string(key, at)
        (partition,) = _I32.unpack_from(key, at)
        version, upstream, downstream = _CHECKPOINT_VALUE.unpack_from(value, 0)
        if version != 0:
            raise MalformedRecord(f"checkpoint version {version} (kctl reads version 0)")
        metadata, _ = _string(value, _CHECKPOINT_VALUE.size)
    except (struct.error, UnicodeDecodeError) as exc:
        raise MalformedRecord(str(exc)) from None
    return Checkpoint(group=group, topic=topic, partition=partition, upstream_offset=upstream,
                      downstream_offset=downstream, metadata=metadata)


def encode_checkpoint(checkpoint: Checkpoint) -> tuple[bytes, bytes]:
    key = _encode_string(checkpoint.group) + _encode_string(checkpoint.topic) + _I32.pack(checkpoint.partition)
    value = _CHECKPOINT_VALUE.pack(0, checkpoint.upstream_offset, checkpoint.downstream_offset) + _encode_string(checkpoint.metadata)
    return key, value


def decode_offset_sync(key: bytes | None, value: bytes | None) -> OffsetSync:
    if key is None or value is None:
        raise MalformedRecord("an offset sync needs a key and a value")
    try:
        topic, at = _string(key, 0)
        (partition,) = _I32.unpack_from(key, at)
        upstream, downstream = _TWO_I64.unpack_from(value, 0)
    except (struct.error, UnicodeDecodeError) as exc:
        raise MalformedRecord(str(exc)) from None
    return OffsetSync(topic=topic, partition=partition, upstream_offset=upstream, downstream_offset=downstream)


def encode_offset_sync(sync: OffsetSync) -> tuple[bytes, bytes]:
    return _encode_string(sync.topic) + _I32.pack(sync.partition), _TWO_I64.pack(sync.upstream_offset, sync.downstream_offset)


def decode_heartbeat(key: bytes | None, value: bytes | None) -> Heartbeat:
    if key is None or value is None:
        raise MalformedRecord("a heartbeat needs a key and a value")
    try:
        source, at = _string(key, 0)
        target, _ = _string(key, at)
        version, timestamp = _HEARTBEAT_VALUE.unpack_from(value, 0)
        if version != 0:
            raise MalformedRecord(f"heartbeat version {version} (kctl reads version 0)")
    except (struct.error, UnicodeDecodeError) as exc:
        raise MalformedRecord(str(exc)) from None
    return Heartbeat(source_alias=source, target_alias=target, timestamp=timestamp)


def encode_heartbeat(heartbeat: Heartbeat) -> tuple[bytes, bytes]:
    return (_encode_string(heartbeat.source_alias) + _encode_string(heartbeat.target_alias),
            _HEARTBEAT_VALUE.pack(0, heartbeat.timestamp))
