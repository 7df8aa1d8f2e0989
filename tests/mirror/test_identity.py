"""MM2 with IdentityReplicationPolicy (topics keep their names on the target) between two
bundled brokers: the translation still equals RemoteClusterUtils', status finds the
replicated topics from the offset syncs, and a failover commits under the same name."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from tests.backends.mirror import java_translate
from tests.backends.plugin import start_mirror
from tests.mirror.test_mirror import committed, consume, create, produce
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def identity(tmp_path_factory):
    from kctl.broker.process import BrokerProcess

    primary = BrokerProcess(tmp_path_factory.mktemp("identity-primary"))
    backup = BrokerProcess(tmp_path_factory.mktemp("identity-backup"))
    try:
        source, target = primary.start(), backup.start()
        mm2 = start_mirror(tmp_path_factory.mktemp("mm2-identity"), {"east": source, "west": target}, flows=[("east", "west")],
                           topics="id-.*", policy="identity")
        yield source, target
        mm2.stop()
    finally:
        backup.stop()
        primary.stop()


def test_identity_policy(kctl, identity):
    source, target = identity
    create(source, "id-orders", 2)
    produce(source, "id-orders", [f"i{n:03d}" for n in range(60)], 2)
    consume(source, "shipping", "id-orders", 25)
    positions = committed(source, "shipping", "id-orders", 2)
    pair = ("--source", source, "--target", target, "--policy", "identity")

    def translated():
        result = kctl("mirror", "translate", "shipping", *pair, "-o", "json")
        assert result.exit_code == 0, result.stderr
        rows = json.loads(result.stdout)
        assert {r["partition"]: r["committed"] for r in rows if r["method"] == "checkpoint"} == positions, rows
        return rows
    eventually(translated, timeout=90, interval=1)

    def agree():
        # Compared between two readings of kctl's that agree: MM2 may write a closer
        # checkpoint for the same offset meanwhile (test_mirror.py).
        before = translated()
        by_java = java_translate(target, "east", ["shipping"], policy="identity")
        after = translated()
        assert before == after
        assert {(r["group"], r["remote_topic"], r["partition"]): r["translated"] for r in after} == by_java
        return after
    rows = eventually(agree, timeout=90, interval=1)
    assert {r["remote_topic"] for r in rows} == {"id-orders"}
    status = kctl("mirror", "status", *pair, "-o", "json")
    document = json.loads(status.stdout)
    assert (document["source_alias"], document["target_alias"], document["policy"]) == ("east", "west", "identity")
    assert {(p["topic"], p["remote_topic"]) for p in document["partitions"]} == {("id-orders", "id-orders")}
    done = kctl("mirror", "failover", "shipping", *pair, "--execute", "--yes")
    assert done.exit_code == 0, done.stderr
    since = {r["partition"]: r["translated"] for r in translated()}
    now = committed(target, "shipping", "id-orders", 2)
    assert all(now[r["partition"]] in (r["translated"], since[r["partition"]]) for r in rows), (now, rows, since)
    # A record in the checkpoints topic that is not a checkpoint: skipped and counted, as
    # MirrorClient skips it; the translation is unchanged.
    producer = Producer({"bootstrap.servers": target})
    producer.produce("east.checkpoints.internal", key=b"\x00", value=b"not a checkpoint")
    assert producer.flush(30) == 0
    again = kctl("mirror", "translate", "shipping", *pair, "-o", "json")
    assert again.exit_code == 0 and "1 record(s) of east.checkpoints.internal did not decode" in again.stderr, again.stderr
    assert {(r["partition"], r["method"]) for r in json.loads(again.stdout)} == {(r["partition"], "checkpoint") for r in rows}
