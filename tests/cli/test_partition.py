"""ISR inspection: partition list filters, broker balance and cluster health, checked
against real brokers; on three nodes, a stopped node makes the filters and health
verdicts change for real."""

from __future__ import annotations

import json
import time

import pytest

from kctl.errors import ExitCode
from tests.support.eventually import until

pytestmark = [pytest.mark.integration, pytest.mark.kafka39]


def rows(kctl, cluster, *args):
    result = kctl("-b", cluster.bootstrap, *args, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_partition_list_single_topic(kctl, cluster, unique_name):
    topic = unique_name("p")
    kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "3", "--rf", "1")
    listed = rows(kctl, cluster, "partition", "list", topic)
    assert [(r["topic"], r["partition"]) for r in listed] == [(topic, 0), (topic, 1), (topic, 2)]
    for r in listed:
        assert r["isr"] == r["replicas"] == [r["leader"]]
        assert r["min_isr"] == 1
        assert (r["under_replicated"], r["under_min_isr"], r["unavailable"], r["offline"]) == (False, False, False, False)
        # Kafka's own definition: ISR size equal to min.insync.replicas.
        assert r["at_min_isr"] is True
    plain = kctl("-b", cluster.bootstrap, "partition", "list", topic, "--no-headers").stdout.splitlines()
    # Kafka 3.8+ reports eligible leader replicas (none here); the bundled broker does not.
    elr = ["", ""] if cluster.kafka is not None else []
    assert plain[0].split("\t") == [topic, "0", str(listed[0]["leader"]), str(listed[0]["leader"]), str(listed[0]["leader"]), "1", "at-min-isr", *elr]
    table = kctl("-b", cluster.bootstrap, "partition", "list", topic, tty=True, env={"NO_COLOR": "1"}).stdout.splitlines()
    assert table[0].split() == ["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "MIN-ISR", "STATUS"] + (["ELR", "LAST-KNOWN-ELR"] if elr else [])
    assert len(table) == 4


def test_partition_list_filters_on_a_healthy_cluster(kctl, cluster, unique_name):
    topic = unique_name("p")
    kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "2")
    for flag in ("--under-replicated", "--under-min-isr", "--unavailable", "--offline"):
        assert rows(kctl, cluster, "partition", "list", topic, flag) == []
    leader = rows(kctl, cluster, "partition", "list", topic)[0]["leader"]
    assert all(r["leader"] == leader for r in rows(kctl, cluster, "partition", "list", topic, "--leader", str(leader)))


def test_partition_list_unknown_topic(kctl, cluster, unique_name):
    missing = unique_name("missing")
    result = kctl("-b", cluster.bootstrap, "partition", "list", missing)
    assert (result.exit_code, result.stderr) == (
        ExitCode.NOT_FOUND,
        f"error: unable to list partitions of {missing}: UNKNOWN_TOPIC_OR_PARTITION: no such topic\n",
    )


def test_health_ok_and_balance(kctl, cluster, unique_name):
    kctl("-b", cluster.bootstrap, "topic", "create", unique_name("h"), "-p", "3")
    result = kctl("-b", cluster.bootstrap, "cluster", "health", "-o", "json")
    verdict = json.loads(result.stdout)
    assert (result.exit_code, verdict["status"], verdict["reasons"]) == (0, "OK", [])
    assert len(verdict["brokers"]) == cluster.nodes
    balance = rows(kctl, cluster, "broker", "balance")
    assert [b["broker"] for b in balance] == sorted(verdict["brokers"])
    listed = rows(kctl, cluster, "partition", "list")
    assert sum(b["leaders"] for b in balance) == len(listed)
    assert sum(b["replicas"] for b in balance) == sum(len(p["replicas"]) for p in listed)


def test_health_of_unreachable_cluster_is_critical(kctl):
    result = kctl("-b", "127.0.0.1:1", "--timeout", "2", "cluster", "health")
    assert result.exit_code == ExitCode.CRITICAL
    assert result.stderr.startswith("error: unable to describe cluster: cluster unreachable at 127.0.0.1:1")




@pytest.mark.min_nodes(3)
def test_a_stopped_node_shows_in_every_filter_and_in_health(kctl, cluster, unique_name):
    replicated, strict, single = unique_name("rf3"), unique_name("min3"), unique_name("rf1")
    kctl("-b", cluster.bootstrap, "topic", "create", replicated, "-p", "3", "--rf", "3", "-c", "min.insync.replicas=2")
    kctl("-b", cluster.bootstrap, "topic", "create", strict, "-p", "1", "--rf", "3", "-c", "min.insync.replicas=3")
    kctl("-b", cluster.bootstrap, "topic", "create", single, "-p", "3", "--rf", "1")
    # Kafka places a 3-partition, RF 1 topic on three different brokers: one is on node 3.
    (victim_partition,) = [r["partition"] for r in rows(kctl, cluster, "partition", "list", single) if r["leader"] == 3]

    cluster.kafka.stop_node(3)
    try:
        def shrunk():
            under = rows(kctl, cluster, "partition", "list", replicated, strict, "--under-replicated")
            return under if len(under) == 4 else None

        under = until(shrunk)
        assert all(3 not in r["isr"] and 3 in r["replicas"] for r in under)
        # Only the matching partitions' topics have their configs read, and they are read.
        assert {(r["topic"], r["min_isr"]) for r in under} == {(replicated, 2), (strict, 3)}

        assert [r["partition"] for r in rows(kctl, cluster, "partition", "list", replicated, "--at-min-isr")] == [0, 1, 2]
        assert [r["topic"] for r in rows(kctl, cluster, "partition", "list", strict, replicated, "--under-min-isr")] == [strict]
        offline = rows(kctl, cluster, "partition", "list", single, "--offline")
        assert [(r["partition"], r["leader"]) for r in offline] == [(victim_partition, None)]
        assert rows(kctl, cluster, "partition", "list", single, "--unavailable") == offline
        # kctl asks again only where the metadata names a leader: an offline partition keeps
        # Kafka's own error, at once (asked alone, librdkafka would say only _NOENT).
        started = time.monotonic()
        refused = kctl("-b", cluster.bootstrap, "--timeout", "20", "offset", "get", single)
        assert refused.exit_code != 0 and "LEADER_NOT_AVAILABLE" in refused.stderr, refused.stderr
        assert time.monotonic() - started < 10
        # Asked alone, the offline partition fails librdkafka's whole request (_NOENT, "No
        # leaders found"): kctl names the partition and Kafka's error instead.
        alone = kctl("-b", cluster.bootstrap, "--timeout", "20", "offset", "get", f"{single}:{victim_partition}")
        assert (alone.exit_code, alone.stderr) == (1, f"error: unable to list earliest offsets of {single}-{victim_partition}: "
                                                      "LEADER_NOT_AVAILABLE: the partition has no leader (no broker holding a replica is up)\n")
        assert all(r["leader"] != 3 for r in rows(kctl, cluster, "partition", "list", replicated))
        listed = {t["name"]: t for t in rows(kctl, cluster, "topic", "list", "-r", ".*-test_a_stopped_node.*", "--under-replicated")}
        assert {replicated, strict} <= set(listed)
        assert (listed[replicated]["under_replicated_partitions"], listed[replicated]["offline_partitions"]) == (3, 0)
        assert [t["name"] for t in rows(kctl, cluster, "topic", "list", "-r", ".*-test_a_stopped_node.*", "--offline")] == [single]

        result = kctl("-b", cluster.bootstrap, "cluster", "health", "-o", "json")
        verdict = json.loads(result.stdout)
        assert (result.exit_code, verdict["status"]) == (ExitCode.CRITICAL, "CRITICAL")
        assert verdict["brokers"] == [1, 2]
        assert verdict["offline_brokers"] == [3]
        assert {"topic": single, "partition": victim_partition} in verdict["offline_partitions"]
        assert {"topic": strict, "partition": 0} in verdict["under_min_isr_partitions"]
        assert verdict["reasons"][0].endswith("offline partition(s) (no leader)")

        text = kctl("-b", cluster.bootstrap, "cluster", "health")
        assert text.stdout.splitlines()[0] == "STATUS\tCRITICAL"

        balance = {b["broker"]: b for b in rows(kctl, cluster, "broker", "balance")}
        assert balance[3]["alive"] is False
        assert balance[3]["leaders"] == 0
        assert balance[3]["out_of_sync"] >= 4
    finally:
        cluster.kafka.start_node(3)

    # min.insync.replicas equal to the replication factor is one failure from refusing
    # writes even with every replica in sync: a WARNING for as long as the topic exists.
    assert kctl("-b", cluster.bootstrap, "topic", "delete", strict, "--yes").exit_code == 0
    result = kctl("-b", cluster.bootstrap, "cluster", "health", "--watch", "--interval", "1", "--exit-when-healthy", "--max-wait", "90", "-o", "jsonl")
    samples = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 0, result.stderr
    assert samples[-1]["status"] == "OK"
    assert rows(kctl, cluster, "partition", "list", replicated, single, "--under-replicated", "--offline") == []


def test_health_watch_gives_up_after_max_wait(kctl, cluster):
    started = time.monotonic()
    result = kctl("-b", cluster.bootstrap, "cluster", "health", "--watch", "--interval", "0.5", "--max-wait", "1.2", "-o", "jsonl")
    assert time.monotonic() - started < 10
    statuses = [json.loads(line)["status"] for line in result.stdout.splitlines()]
    assert len(statuses) >= 2
    assert result.exit_code == {"OK": 0, "WARNING": 1, "CRITICAL": 2}[statuses[-1]]


@pytest.mark.single_node
def test_health_watch_recovers_after_a_full_outage(tmp_path, cluster):
    """A watch loop keeps one client: an outage must not poison the checks after it."""
    import select
    import subprocess
    import sys

    if cluster.backend != "kafka":
        pytest.skip("runs once, on its own single node")
    from tests.backends.kafka import KafkaCluster

    own = KafkaCluster(nodes=1, workdir=tmp_path / "own")
    own.start()
    try:
        own.stop_node(1)
        watch = subprocess.Popen(
            [sys.executable, "-m", "kctl", "-b", own.bootstrap, "--timeout", "2", "cluster", "health",
             "--watch", "--interval", "0.5", "--exit-when-healthy", "--max-wait", "90", "-o", "jsonl"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        # The node comes back once the watch has told of the outage (its first line on stderr).
        assert select.select([watch.stderr], [], [], 60)[0], "the watch said nothing of the outage within 60 s"
        first = watch.stderr.readline()
        own.start_node(1)
        out, err = watch.communicate(timeout=120)
        err = first + err
        assert watch.returncode == 0, err
        assert "cluster unreachable" in err
        assert json.loads(out.splitlines()[-1])["status"] == "OK"
    finally:
        own.stop()
