"""Partition layout: add-partitions, explicit replica assignments, log dir sizes."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from kctl.errors import ExitCode
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration


def _assert(condition: bool) -> None:
    assert condition


def layout(kctl, cluster, topic, bootstrap=None):
    result = kctl("-b", bootstrap or cluster.bootstrap, "partition", "list", topic, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return [p["replicas"] for p in json.loads(result.stdout)]


def test_add_partitions(kctl, cluster, unique_name):
    topic = unique_name("grow")
    kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "2")
    result = kctl("-b", cluster.bootstrap, "topic", "add-partitions", topic, "--to", "5")
    assert (result.exit_code, result.stdout) == (0, f"NAME\tSTATUS\tBEFORE\tAFTER\n{topic}\tadded\t2\t5\n")
    # Every broker's metadata, not just one's: kctl counts from whichever broker answers,
    # and a loaded CI run's next command met a broker still saying 2 (--add 2 asked for 4).
    for broker in cluster.bootstrap.split(","):
        eventually(lambda broker=broker: _assert(len(layout(kctl, cluster, topic, broker)) == 5))
    dry = kctl("-b", cluster.bootstrap, "topic", "add-partitions", topic, "--add", "2", "--dry-run")
    assert (dry.exit_code, dry.stdout.splitlines()[1:]) == (0, [f"{topic}\tvalidated\t5\t7"]), dry.stderr
    assert len(layout(kctl, cluster, topic)) == 5
    same = kctl("-b", cluster.bootstrap, "topic", "add-partitions", topic, "--to", "5")
    assert same.stdout.splitlines()[1] == f"{topic}\tunchanged\t5\t5"
    shrink = kctl("-b", cluster.bootstrap, "topic", "add-partitions", topic, "--to", "3")
    assert shrink.exit_code == ExitCode.INVALID
    # kctl refuses itself when its metadata is current; a broker whose metadata lags
    # lets the request through and the controller refuses it.
    assert shrink.stderr in (
        f"error: unable to add partitions to {topic}: it has 5 partitions; Kafka cannot remove partitions\n",
        f"error: unable to add partitions to {topic}: INVALID_PARTITIONS: The topic {topic} currently has 5 partition(s); 3 would not be an increase.\n",
    )
    assert kctl("-b", cluster.bootstrap, "topic", "add-partitions", topic).exit_code == ExitCode.USAGE
    assert kctl("-b", cluster.bootstrap, "topic", "add-partitions", topic, "--to", "6", "--add", "1").exit_code == ExitCode.USAGE


def test_add_partitions_partial_failure(kctl, cluster, unique_name):
    topic, missing = unique_name("grow"), unique_name("missing")
    kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "1")
    result = kctl("-b", cluster.bootstrap, "topic", "add-partitions", topic, missing, "--add", "1")
    assert result.exit_code == ExitCode.PARTIAL_FAILURE
    assert result.stderr.splitlines() == [
        f"error: unable to add partitions to {missing}: UNKNOWN_TOPIC_OR_PARTITION: no such topic",
        "error: unable to add partitions: 1 of 2 failed",
    ]
    eventually(lambda: _assert(len(layout(kctl, cluster, topic)) == 2))


def test_replica_assignment(kctl, cluster, unique_name):
    brokers = sorted(b["id"] for b in json.loads(kctl("-b", cluster.bootstrap, "broker", "list", "-o", "json").stdout))
    first, last = brokers[0], brokers[-1]
    topic = unique_name("placed")
    assignment = f"{first},{last},{first}" if cluster.nodes == 1 else f"{first}:{last},{last}:{first},{first}:{last}"
    result = kctl("-b", cluster.bootstrap, "topic", "create", topic, "--replica-assignment", assignment)
    assert result.exit_code == 0, result.stderr
    expected = [[int(b) for b in part.split(":")] for part in assignment.split(",")]
    assert layout(kctl, cluster, topic) == expected

    grown = kctl("-b", cluster.bootstrap, "topic", "add-partitions", topic, "--add", "1", "--replica-assignment", assignment.split(",")[1])
    assert grown.exit_code == 0, grown.stderr
    eventually(lambda: _assert(layout(kctl, cluster, topic) == expected + [expected[1]]))

    unknown = kctl("-b", cluster.bootstrap, "topic", "create", unique_name("bad"), "--replica-assignment", "4242")
    assert unknown.exit_code == ExitCode.INVALID
    assert unknown.stderr.startswith("error: unable to create topic: INVALID_REPLICA_ASSIGNMENT: ")
    for bad in ("1:x", "1:1", "1,1:2"):
        assert kctl("-b", cluster.bootstrap, "topic", "create", unique_name("bad"), "--replica-assignment", bad).exit_code == ExitCode.USAGE
    assert kctl("-b", cluster.bootstrap, "topic", "create", unique_name("bad"), "--replica-assignment", "1", "-p", "1").exit_code == ExitCode.USAGE


def test_log_dirs_and_sizes(kctl, cluster, unique_name):
    topic = unique_name("size")
    kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "2", "--rf", "1")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "compression.type": "none"})
    for _ in range(50):
        producer.produce(topic, value=b"v" * 1000, partition=0)
    assert producer.flush(30) == 0

    result = kctl("-b", cluster.bootstrap, "broker", "log-dirs", "-t", topic, "--replicas", "-o", "json")
    assert result.exit_code == 0, result.stderr
    replicas = {r["partition"]: r for r in json.loads(result.stdout)}
    assert set(replicas) == {0, 1}
    assert replicas[0]["size_bytes"] > 50_000 and replicas[1]["size_bytes"] == 0
    assert all(r["is_future"] is False and r["offset_lag"] == 0 for r in replicas.values())

    dirs = json.loads(kctl("-b", cluster.bootstrap, "broker", "log-dirs", "-t", topic, "-o", "json").stdout)
    assert sum(d["size_bytes"] for d in dirs) == replicas[0]["size_bytes"]
    assert all(d["total_bytes"] >= d["usable_bytes"] > 0 for d in dirs)
    assert len({d["broker"] for d in json.loads(kctl("-b", cluster.bootstrap, "broker", "log-dirs", "-o", "json").stdout)}) == cluster.nodes

    described = json.loads(kctl("-b", cluster.bootstrap, "topic", "describe", topic, "--detail", "-o", "json").stdout)[0]
    assert [p["size_bytes"] for p in described["partitions"]] == [replicas[0]["size_bytes"], 0]
    assert [p["latest_offset"] for p in described["partitions"]] == [50, 0]

    table = kctl("-b", cluster.bootstrap, "broker", "log-dirs", "-t", topic, "--replicas", "--no-headers").stdout.splitlines()
    (row,) = [line.split("\t") for line in table if line.split("\t")[3] == "0"]
    assert row[2] == topic and row[4].endswith("KiB")

    assert kctl("-b", cluster.bootstrap, "broker", "log-dirs", "--broker", "4242").exit_code == ExitCode.NOT_FOUND
    assert kctl("-b", cluster.bootstrap, "broker", "log-dirs", "-t", unique_name("missing")).exit_code == ExitCode.NOT_FOUND
