"""`__consumer_offsets` records in Kafka's format (group coordinator records, as
kafka-console-consumer's OffsetsMessageFormatter reads them).

Each record's key and value start with an int16 version, then the fields (Kafka's
strings: int16 length + UTF-8; nullable strings: -1 for null; bytes: int32 length):

    key version 0/1  OffsetCommitKey      group, topic, partition int32
    value version 3  OffsetCommitValue    offset int64, leader_epoch int32, metadata,
                                          commit_timestamp int64
    key version 2    GroupMetadataKey     group
    value version 3  GroupMetadataValue   protocol_type, generation int32, protocol?, leader?,
                                          current_state_timestamp int64, members [member_id,
                                          group_instance_id?, client_id, client_host,
                                          rebalance_timeout int32, session_timeout int32,
                                          subscription bytes, assignment bytes]

A null value is a tombstone: the offset, or the group, is gone. A group's records go to
partition abs(hashCode(group)) % partitions, Java's String.hashCode, as Kafka places them.
(Kafka 4.3 writes offset values as version 4, the flexible form of the same fields; version
3 is what every Kafka version reads.)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

TOPIC = "__consumer_offsets"
PARTITIONS = 50  # offsets.topic.num.partitions
CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600", "compression.type": "producer"}
OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3

_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


def partition_for(group: str, partitions: int = PARTITIONS) -> int:
    """Kafka's Utils.abs(groupId.hashCode()) % partitions."""
    h = 0
    units = group.encode("utf-16-be")  # Java strings hash their UTF-16 code units
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    if h >= 0x80000000:
        h -= 0x100000000
    return (0 if h == -0x80000000 else abs(h)) % partitions


# -- encoding ---------------------------------------------------------------------------------


def _string(value: str) -> bytes:
    data = value.encode()
    return _I16.pack(len(data)) + data


def _nullable(value: str | None) -> bytes:
    return _I16.pack(-1) if value is None else _string(value)


def _bytes(value: bytes) -> bytes:
    return _I32.pack(len(value)) + value


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return _I16.pack(OFFSET_KEY_VERSION) + _string(group) + _string(topic) + _I32.pack(partition)


def offset_value(offset: int, leader_epoch: int, metadata: str | None, commit_timestamp: int) -> bytes:
    return (_I16.pack(OFFSET_VALUE_VERSION) + _I64.pack(offset) + _I32.pack(leader_epoch)
            + _string(metadata or "") + _I64.pack(commit_timestamp))


def group_key(group: str) -> bytes:
    return _I16.pack(GROUP_KEY_VERSION) + _string(group)


@dataclass(frozen=True)
class GroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


def group_value(protocol_type: str, generation: int, protocol: str | None, leader: str | None,
                timestamp: int, members: list[GroupMember]) -> bytes:
    out = [_I16.pack(GROUP_VALUE_VERSION), _string(protocol_type), _I32.pack(generation), _nullable(protocol),
           _nullable(leader), _I64.pack(timestamp), _I32.pack(len(members))]
    for m in members:
        out += [_string(m.member_id), _nullable(m.group_instance_id), _string(m.client_id), _string(m.client_host),
                _I32.pack(m.rebalance_timeout), _I32.pack(m.session_timeout), _bytes(m.subscription),
                _bytes(m.assignment)]
    return b"".join(out)


# -- decoding ---------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def i16(self) -> int:
        (value,) = _I16.unpack_from(self.data, self.pos)
        self.pos += 2
        return value

    def i32(self) -> int:
        (value,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return value

    def i64(self) -> int:
        (value,) = _I64.unpack_from(self.data, self.pos)
        self.pos += 8
        return value

    def string(self) -> str | None:
        length = self.i16()
        if length < 0:
            return None
        value = self.data[self.pos:self.pos + length].decode()
        self.pos += length
        return value

    def compact_string(self) -> str | None:
        length, shift = 0, 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            length |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        if length == 0:
            return None
        value = self.data[self.pos:self.pos + length - 1].decode()
        self.pos += length - 1
        return value


def parse_key(key: bytes):
    """("offset", group, topic, partition), ("group", group), or None for a key of
    another kind (consumer group records of KIP-848, which kctl does not write)."""
    reader = _Reader(key)
    version = reader.i16()
    if version in (0, 1):
        return "offset", reader.string(), reader.string(), reader.i32()
    if version == 2:
        return "group", reader.string()
    return None


def parse_offset_value(value: bytes) -> tuple[int, int, str | None, int]:
    """(offset, leader_epoch, metadata, commit_timestamp) of any OffsetCommitValue version."""
    reader = _Reader(value)
    version = reader.i16()
    offset = reader.i64()
    epoch = reader.i32() if version >= 3 else -1
    metadata = reader.compact_string() if version >= 4 else reader.string()
    timestamp = reader.i64()
    return offset, epoch, metadata, timestamp
