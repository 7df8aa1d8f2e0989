"""Consumer groups with real consumers: list, describe, lag (every flag), delete."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kctl.errors import ExitCode

pytestmark = [pytest.mark.integration, pytest.mark.kafka39]


@pytest.fixture
def topic(kctl, cluster, unique_name):
    """Two partitions holding 10 and 20 records."""
    name = unique_name("grp")
    assert kctl("-b", cluster.bootstrap, "topic", "create", name, "-p", "2").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for partition, count in ((0, 10), (1, 20)):
        for i in range(count):
            producer.produce(name, value=str(i).encode(), partition=partition)
    assert producer.flush(30) == 0
    return name


def commit(cluster, group, topic, offsets: dict[int, int]):
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    consumer.close()


def lag(kctl, cluster, *args):
    result = kctl("-b", cluster.bootstrap, "group", "lag", *args, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_empty_group_lag_and_describe(kctl, cluster, topic, unique_name):
    group = unique_name("g")
    commit(cluster, group, topic, {0: 4, 1: 20})
    (g,) = lag(kctl, cluster, group)
    assert (g["group"], g["state"], g["members"], g["lag_sum"], g["lag_max"], g["partitions_without_commit"]) == (group, "Empty", 0, 6, 6, 0)
    assert [(p["partition"], p["committed"], p["log_start"], p["log_end"], p["lag"], p["raw_lag"], p["flags"]) for p in g["partitions"]] == [
        (0, 4, 0, 10, 6, 6, []),
        (1, 20, 0, 20, 0, 0, []),
    ]
    plain = kctl("-b", cluster.bootstrap, "group", "lag", group)
    assert plain.stdout.splitlines() == [
        "GROUP\tTOPIC\tPARTITION\tCOMMITTED\tLOG-START\tLOG-END\tLAG\tCLIENT-ID\tFLAGS",
        f"{group}\t{topic}\t0\t4\t0\t10\t6\t\t",
        f"{group}\t{topic}\t1\t20\t0\t20\t0\t\t",
    ]
    assert plain.stderr == f"{group}: Empty, 0 member(s), lag 6 (max 6), 0 partition(s) without commit\n"

    (d,) = json.loads(kctl("-b", cluster.bootstrap, "group", "describe", group, "-o", "json").stdout)
    assert (d["state"], d["members"]) == ("Empty", [])
    assert d["offsets"] == [
        {"topic": topic, "partition": 0, "offset": 4, "metadata": None},
        {"topic": topic, "partition": 1, "offset": 20, "metadata": None},
    ]
    listed = {g["group"]: g for g in json.loads(kctl("-b", cluster.bootstrap, "group", "list", "-o", "json").stdout)}
    assert listed[group]["state"] == "Empty" and listed[group]["members"] == 0
    assert group in kctl("-b", cluster.bootstrap, "group", "list", "--state", "Empty", "--no-headers").stdout
    assert group not in kctl("-b", cluster.bootstrap, "group", "list", "--state", "Stable", "--no-headers").stdout


def test_active_group_shows_members_and_partitions_without_commit(kctl, cluster, topic, unique_name):
    group = unique_name("g")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "client.id": "kctl-test-client", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        consumer.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
        (g,) = lag(kctl, cluster, group)
        assert (g["state"], g["members"]) == ("Stable", 1)
        rows = {p["partition"]: p for p in g["partitions"]}
        assert (rows[0]["lag"], rows[0]["client_id"], rows[0]["flags"]) == (3, "kctl-test-client", [])
        assert (rows[1]["committed"], rows[1]["lag"], rows[1]["flags"], rows[1]["client_id"]) == (None, None, ["NO_COMMIT"], "kctl-test-client")
        assert g["partitions_without_commit"] == 1 and g["lag_sum"] == 3

        (d,) = json.loads(kctl("-b", cluster.bootstrap, "group", "describe", group, "-o", "json").stdout)
        (member,) = d["members"]
        assert (member["client_id"], member["assignment"]) == ("kctl-test-client", [f"{topic}:0,1"])
        assert d["protocol"] in ("range", "roundrobin", "cooperative-sticky")

        refused = kctl("-b", cluster.bootstrap, "group", "delete", group, "--yes")
        assert refused.exit_code == ExitCode.GROUP_ACTIVE
        assert refused.stderr.startswith(f"error: unable to delete group {group}: NON_EMPTY_GROUP: the group has active members\n")
    finally:
        consumer.close()


def test_commits_below_log_start_and_past_the_end(kctl, cluster, topic, unique_name):
    group = unique_name("g")
    commit(cluster, group, topic, {0: 2, 1: 25})
    assert kctl("-b", cluster.bootstrap, "record", "delete", f"{topic}:0", "--before", "6", "--yes").exit_code == 0
    (g,) = lag(kctl, cluster, group)
    rows = {p["partition"]: p for p in g["partitions"]}
    # Records 2-5 were deleted unconsumed: 4 are left to read, not 8.
    assert (rows[0]["lag"], rows[0]["raw_lag"], rows[0]["flags"]) == (4, 8, ["BELOW_LOG_START"])
    assert (rows[1]["lag"], rows[1]["raw_lag"], rows[1]["flags"]) == (0, -5, ["AHEAD_OF_END"])
    only = lag(kctl, cluster, group, "-t", topic + "-other")
    assert only[0]["partitions"] == []


def test_lag_of_all_groups_and_unknown_groups(kctl, cluster, topic, unique_name):
    first, second, missing = unique_name("a"), unique_name("b"), unique_name("missing")
    commit(cluster, first, topic, {0: 1})
    commit(cluster, second, topic, {1: 1})
    everything = {g["group"]: g for g in lag(kctl, cluster, "--all")}
    assert {first, second} <= set(everything)
    result = kctl("-b", cluster.bootstrap, "group", "lag", missing)
    assert (result.exit_code, result.stderr) == (ExitCode.NOT_FOUND, f"error: unable to compute lag of group {missing}: GROUP_ID_NOT_FOUND: no such group\n")
    partial = kctl("-b", cluster.bootstrap, "group", "lag", first, missing, "-o", "json")
    assert partial.exit_code == ExitCode.PARTIAL_FAILURE
    assert [g["group"] for g in json.loads(partial.stdout)] == [first]
    assert kctl("-b", cluster.bootstrap, "group", "lag").exit_code == ExitCode.USAGE
    assert kctl("-b", cluster.bootstrap, "group", "describe", missing).exit_code == ExitCode.NOT_FOUND


def test_delete_group(kctl, cluster, topic, unique_name):
    group = unique_name("g")
    commit(cluster, group, topic, {0: 1})
    assert kctl("-b", cluster.bootstrap, "group", "delete", group).exit_code == ExitCode.ABORTED
    result = kctl("-b", cluster.bootstrap, "group", "delete", group, "--yes")
    assert (result.exit_code, result.stdout) == (0, f"GROUP\tSTATUS\n{group}\tdeleted\n")
    assert kctl("-b", cluster.bootstrap, "group", "describe", group).exit_code == ExitCode.NOT_FOUND
    again = kctl("-b", cluster.bootstrap, "group", "delete", group, "--yes")
    assert again.exit_code == ExitCode.NOT_FOUND


def test_delete_offsets(kctl, cluster, topic, unique_name):
    group = unique_name("g")
    commit(cluster, group, topic, {0: 3, 1: 4})
    assert kctl("-b", cluster.bootstrap, "group", "delete-offsets", group, "-t", f"{topic}:0").exit_code == ExitCode.ABORTED
    result = kctl("-b", cluster.bootstrap, "group", "delete-offsets", group, "-t", f"{topic}:0", "--yes")
    assert (result.exit_code, result.stdout) == (0, f"GROUP\tTOPIC\tPARTITION\tSTATUS\n{group}\t{topic}\t0\tdeleted\n")
    (d,) = json.loads(kctl("-b", cluster.bootstrap, "group", "describe", group, "-o", "json").stdout)
    assert [(o["partition"], o["offset"]) for o in d["offsets"]] == [(1, 4)]
    again = kctl("-b", cluster.bootstrap, "group", "delete-offsets", group, "-t", topic, "--yes")
    assert again.stdout.splitlines()[1:] == [f"{group}\t{topic}\t0\tnot-committed", f"{group}\t{topic}\t1\tdeleted"]

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        refused = kctl("-b", cluster.bootstrap, "group", "delete-offsets", group, "-t", f"{topic}:0", "--yes")
        assert refused.exit_code == ExitCode.GROUP_ACTIVE, refused.stderr
        assert "GROUP_SUBSCRIBED_TO_TOPIC" in refused.stderr
    finally:
        consumer.close()


def test_time_lag_from_record_timestamps(kctl, cluster, unique_name):
    topic, group = unique_name("tl"), unique_name("g")
    kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "1")
    now_ms = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(10):
        producer.produce(topic, value=b"v", partition=0, timestamp=now_ms - (10 - i) * 60_000)
    assert producer.flush(30) == 0
    commit(cluster, group, topic, {0: 4})
    started = time.time()
    (g,) = lag(kctl, cluster, group, "--time-lag", "record")
    (p,) = g["partitions"]
    # The next record to consume is offset 4, produced 6 minutes before now_ms.
    expected = (started * 1000 - (now_ms - 6 * 60_000)) / 1000
    assert p["lag_seconds_source"] == "record"
    assert expected - 1 <= p["lag_seconds"] <= expected + 30
    assert g["lag_seconds_max"] == p["lag_seconds"]
    plain = kctl("-b", cluster.bootstrap, "group", "lag", group, "--time-lag", "record").stdout.splitlines()
    assert plain[0].split("\t")[7] == "LAG-S"
    (without,) = lag(kctl, cluster, group)
    assert (without["partitions"][0]["lag_seconds"], without["partitions"][0]["lag_seconds_source"], without["lag_seconds_max"]) == (None, "none", None)


def test_prometheus_output(kctl, cluster, topic, unique_name):
    group = unique_name("g")
    commit(cluster, group, topic, {0: 4})
    text = kctl("-b", cluster.bootstrap, "group", "lag", group, "-o", "prom").stdout
    labels = f'cluster_name="{cluster.bootstrap}",group="{group}",topic="{topic}",partition="0",member_host="",consumer_id="",client_id=""'
    assert f"kafka_consumergroup_group_lag{{{labels}}} 6" in text.splitlines()
    assert f"kafka_consumergroup_group_offset{{{labels}}} 4" in text.splitlines()
    assert f'kafka_consumergroup_group_sum_lag{{cluster_name="{cluster.bootstrap}",group="{group}"}} 6' in text.splitlines()
    assert "# TYPE kafka_consumergroup_group_lag gauge" in text.splitlines()
    refused = kctl("-b", cluster.bootstrap, "topic", "list", "-o", "prom")
    assert refused.exit_code == ExitCode.USAGE


def test_until_caught_up_is_a_deploy_gate(kctl, cluster, topic, unique_name):
    import threading

    group = unique_name("g")
    commit(cluster, group, topic, {0: 0, 1: 0})
    stuck = kctl("-b", cluster.bootstrap, "group", "lag", group, "--until-caught-up", "--interval", "0.3", "--for", "1s")
    assert stuck.exit_code == ExitCode.CRITICAL
    assert "error: unable to catch up within 1s: 2 partition(s) still behind" in stuck.stderr

    stop = threading.Event()

    def consume():
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe([topic])
        try:
            while not stop.is_set():
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    consumer.commit(message=message, asynchronous=False)
        finally:
            consumer.close()

    worker = threading.Thread(target=consume, daemon=True)
    worker.start()
    try:
        result = kctl("-b", cluster.bootstrap, "group", "lag", group, "--until-caught-up", "--interval", "0.5", "--for", "60s", "-o", "json")
        assert result.exit_code == 0, result.stderr
        assert "caught up: lag 0" in result.stderr
        assert json.loads(result.stdout)[0]["lag_sum"] == 0
    finally:
        stop.set()
        worker.join(15)


def test_status_from_history_and_interpolated_time_lag(kctl, cluster, topic, unique_name, tmp_path):
    group = unique_name("g")
    commit(cluster, group, topic, {0: 2})
    state = ["--state-file", str(tmp_path / "lag.json")]
    first = kctl("-b", cluster.bootstrap, "group", "status", group, *state)
    assert first.exit_code == 0, first.stderr
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for _ in range(10):
        producer.produce(topic, value=b"more", partition=0)
    assert producer.flush(30) == 0
    # Two samples are not the default window of 10: no verdict yet.
    early = kctl("-b", cluster.bootstrap, "group", "status", group, *state, "-o", "json")
    assert early.exit_code == 0, early.stdout
    assert [(p["status"], p["samples"]) for p in json.loads(early.stdout)[0]["partitions"]][0] == ("OK", 2)
    second = kctl("-b", cluster.bootstrap, "group", "status", group, *state, "--window", "3", "-o", "json")
    assert second.exit_code == ExitCode.CRITICAL
    (verdict,) = json.loads(second.stdout)
    assert verdict["status"] == "STOP"
    assert verdict["partitions"][0]["reason"] == "no progress and no members"
    assert kctl("-b", cluster.bootstrap, "group", "status", group, *state, "--window", "2", "--crit-lag", "1000").exit_code == ExitCode.CRITICAL

    # The log end moved from 10 to 20 between the samples and the commit (2) is older than
    # both: interp does not know when offset 2 was written (it never extrapolates).
    (g,) = lag(kctl, cluster, group, *state, "--time-lag", "interp")
    (p,) = [p for p in g["partitions"] if p["partition"] == 0]
    assert (p["lag_seconds_source"], p["lag_seconds"]) == ("none", None)

    consumer_group = unique_name("ok")
    commit(cluster, consumer_group, topic, {0: 20, 1: 20})
    for _ in range(2):
        ok = kctl("-b", cluster.bootstrap, "group", "status", consumer_group, *state)
    assert ok.exit_code == 0, ok.stdout + ok.stderr


def test_status_judges_partitions_without_commit_by_their_backlog(kctl, cluster, topic, unique_name, tmp_path):
    """A live member that never commits, with 10 and 20 records waiting: once the window
    is full the partitions are STALL, and lag thresholds apply to the backlog."""
    group = unique_name("g")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "latest"})
    consumer.subscribe([topic])
    state = ["--state-file", str(tmp_path / "lag.json")]
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        first = kctl("-b", cluster.bootstrap, "group", "status", group, *state, "--window", "2", "-o", "json")
        assert first.exit_code == 0, first.stdout  # one sample: no verdict yet
        second = kctl("-b", cluster.bootstrap, "group", "status", group, *state, "--window", "2", "-o", "json")
        assert second.exit_code == ExitCode.CRITICAL
        (verdict,) = json.loads(second.stdout)
        assert [(p["partition"], p["status"], p["reason"]) for p in verdict["partitions"]] == [
            (0, "STALL", "no committed offset while 10 record(s) wait"),
            (1, "STALL", "no committed offset while 20 record(s) wait"),
        ]
        warned = kctl("-b", cluster.bootstrap, "group", "status", group, *state, "--warn-lag", "15", "-o", "json")
        assert warned.exit_code == 1
        assert [(p["status"], p["reason"]) for p in json.loads(warned.stdout)[0]["partitions"]] == [
            ("OK", None), ("WARN", "lag 20 >= 15")]
    finally:
        consumer.close()


def test_watch_streams_rates_as_jsonl(kctl, cluster, topic, unique_name):
    group = unique_name("g")
    commit(cluster, group, topic, {0: 0})
    result = kctl("-b", cluster.bootstrap, "group", "lag", group, "--watch", "--interval", "0.5", "--for", "5s")  # >= 2 samples even on a busy machine (3 s gave 1 on kafka3 in CI)
    assert result.exit_code == 0, result.stderr
    samples = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(samples) >= 2
    first, last = samples[0], samples[-1]
    assert (first["consume_rate"], first["eta_seconds"], first["falling_behind"]) == (None, None, False)
    # Nothing consumes and nothing is produced: the lag cannot shrink.
    assert (last["consume_rate"], last["produce_rate"], last["lag_delta"], last["falling_behind"]) == (0.0, 0.0, 0, True)
    assert "Infinity" not in result.stdout
    assert kctl("-b", cluster.bootstrap, "group", "lag", group, "--watch", "--until-caught-up").exit_code == ExitCode.USAGE


@pytest.mark.min_nodes(3)
def test_committed_offsets_are_fetched_once_per_coordinator(kctl, cluster, topic, unique_name, caplog):
    """KIP-709: lag asks each coordinator once for all the groups it owns (librdkafka asks
    once per group, which is what made lag of thousands of groups slow)."""
    import logging

    groups = [unique_name(f"batch{i}") for i in range(24)]
    for i, group in enumerate(groups):
        commit(cluster, group, topic, {0: i % 10, 1: i % 20})
    listed = {g["group"]: g for g in json.loads(kctl("-b", cluster.bootstrap, "group", "list", "-o", "json").stdout)}
    coordinators = {listed[g]["coordinator"] for g in groups}
    assert len(coordinators) > 1  # Kafka spreads 24 groups over the brokers
    caplog.set_level(logging.DEBUG, logger="kctl.wire")
    found = lag(kctl, cluster, *groups)
    fetches = [r for r in caplog.records if r.getMessage().startswith("send OffsetFetch ")]
    # One per coordinator; a coordinator still loading a new group answers with a retriable
    # error and is asked again (seen in CI), so at most twice. Unbatched would be 24.
    assert len(coordinators) <= len(fetches) <= 2 * len(coordinators), [r.getMessage()[:120] for r in fetches]
    committed = {g["group"]: {p["partition"]: p["committed"] for p in g["partitions"]} for g in found}
    assert committed == {g: {0: i % 10, 1: i % 20} for i, g in enumerate(groups)}
