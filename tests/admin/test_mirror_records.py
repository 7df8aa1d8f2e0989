"""MM2's record formats and replication policies, as connect-mirror-client 4.3.1 defines
them (kctl.admin.mirror.records, .policy): fixed bytes, round trips, malformed input."""

from __future__ import annotations

import pytest

from kctl.admin.mirror.policy import ReplicationPolicy
from kctl.admin.mirror.records import (
    Checkpoint,
    Heartbeat,
    MalformedRecord,
    OffsetSync,
    decode_checkpoint,
    decode_heartbeat,
    decode_offset_sync,
    encode_checkpoint,
    encode_heartbeat,
    encode_offset_sync,
)

# Kafka's Struct serialisation: int16-length strings, big-endian integers.
CHECKPOINT_KEY = b"\x00\x02g1" + b"\x00\x0eprimary.orders" + b"\x00\x00\x00\x03"
CHECKPOINT_VALUE = b"\x00\x00" + (75).to_bytes(8, "big") + (1).to_bytes(8, "big") + b"\x00\x02md"


def test_a_checkpoint_decodes_field_by_field():
    c = decode_checkpoint(CHECKPOINT_KEY, CHECKPOINT_VALUE)
    assert c == Checkpoint(group="g1", topic="primary.orders", partition=3, upstream_offset=75, downstream_offset=1, metadata="md")
    assert encode_checkpoint(c) == (CHECKPOINT_KEY, CHECKPOINT_VALUE)


def test_offset_syncs_and_heartbeats_round_trip():
    sync = OffsetSync(topic="orders", partition=0, upstream_offset=2**40, downstream_offset=7)
    assert decode_offset_sync(*encode_offset_sync(sync)) == sync
    beat = Heartbeat(source_alias="primary", target_alias="backup", timestamp=1_795_856_786_045)
    key, value = encode_heartbeat(beat)
    assert value[:2] == b"\x00\x00" and decode_heartbeat(key, value) == beat


@pytest.mark.parametrize("key, value", [
    (None, CHECKPOINT_VALUE),
    (CHECKPOINT_KEY, None),
    (CHECKPOINT_KEY[:-1], CHECKPOINT_VALUE),
    (b"\x7f\xff" + b"x" * 4, CHECKPOINT_VALUE),
    (CHECKPOINT_KEY, CHECKPOINT_VALUE[:10]),
    (CHECKPOINT_KEY, b"\x00\x01" + CHECKPOINT_VALUE[2:]),
    (b"\x00\x02\xff\xfe" + CHECKPOINT_KEY[4:], CHECKPOINT_VALUE),
])
def test_a_malformed_checkpoint_is_refused(key, value):
    with pytest.raises(MalformedRecord):
        decode_checkpoint(key, value)


def test_bytes_after_the_layout_are_ignored_as_kafka_ignores_them():
    assert decode_checkpoint(CHECKPOINT_KEY + b"\x00", CHECKPOINT_VALUE + b"\x00").partition == 3


def test_the_default_policy_prefixes_and_the_identity_policy_keeps_names():
    default = ReplicationPolicy()
    assert default.format_remote_topic("primary", "orders") == "primary.orders"
    assert default.topic_source("primary.orders") == "primary" and default.upstream_topic("primary.orders") == "orders"
    assert default.topic_source("orders") is None and default.topic_source("orders.") is None
    assert default.original_topic("backup.primary.orders") == "orders"
    # A topic that came from the target goes back to its name there (a failback).
    assert default.remote_topic("primary.orders", "backup", "primary") == "orders"
    assert default.remote_topic("orders", "backup", "primary") == "backup.orders"
    assert default.checkpoints_topic("primary") == "primary.checkpoints.internal"
    assert default.checkpoints_alias("primary.checkpoints.internal") == "primary"
    assert default.offset_syncs_alias("mm2-offset-syncs.backup.internal") == "backup"
    assert default.checkpoints_alias("orders") is None
    identity = ReplicationPolicy("identity")
    assert identity.format_remote_topic("primary", "orders") == "orders"
    assert identity.format_remote_topic("primary", "heartbeats") == "primary.heartbeats"
    assert identity.topic_source("orders") is None and identity.upstream_topic("orders") == "orders"
    dashed = ReplicationPolicy("default", "_")
    assert dashed.format_remote_topic("dc1", "orders") == "dc1_orders"
    assert dashed.checkpoints_topic("dc1") == "dc1_checkpoints_internal"
