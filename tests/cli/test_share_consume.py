"""`kctl record consume --share-group`: kctl as a member of a share group (KIP-932) on
Kafka 4.x and the bundled broker, two kctl processes splitting a topic's records, a
released record delivered again, a rejected one never."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from confluent_kafka import Producer

from kctl.errors import ExitCode
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration


@pytest.fixture
def queue(kctl, cluster, unique_name):
    """(topic, share group) of a 3-partition topic the group reads from the start."""
    if cluster.kafka is not None and cluster.kafka.version.startswith("3."):
        pytest.skip("share groups are Kafka 4.x (3.9: test_share_groups_on_kafka_3_9)")
    topic, group = unique_name("queue"), unique_name("workers")
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "3").exit_code == 0
    altered = kctl("-b", cluster.bootstrap, "config", "alter", "group", group, "--set", "share.auto.offset.reset=earliest")
    assert altered.exit_code == 0, altered.stderr
    return topic, group


def _produce(cluster, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(count):
        producer.produce(topic, value=b"%d" % i, partition=i % 3)
    assert producer.flush(30) == 0


def _kctl(cluster, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kctl", "-b", cluster.bootstrap, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ})


def test_two_kctl_members_split_the_records(cluster, queue):
    topic, group = queue
    _produce(cluster, topic, 300)
    members = [_kctl(cluster, "record", "consume", topic, "--share-group", group, "--follow", "-n", "150", "-o", "jsonl") for _ in range(2)]
    outputs = [member.communicate(timeout=120) for member in members]
    for member, (_out, err) in zip(members, outputs):
        assert member.returncode == 0, err
        assert err.strip().endswith("consumed 150 record(s) from share group " + group + " (150 accepted)"), err
    rows = [[json.loads(line) for line in out.splitlines()] for out, _err in outputs]
    first, second = ({(r["partition"], r["offset"]) for r in member} for member in rows)
    assert len(first) == len(second) == 150 and not first & second  # none delivered to both
    assert first | second == {(p, o) for p in range(3) for o in range(100)}  # none missing
    assert all(r["acknowledgement"] == "accept" and r["delivery_count"] >= 1 for member in rows for r in member)


def test_a_released_record_comes_back_and_a_rejected_one_does_not(kctl, cluster, queue):
    topic, group = queue
    _produce(cluster, topic, 1)
    b = ("-b", cluster.bootstrap, "record", "consume", topic, "--share-group", group, "-o", "jsonl")
    released = kctl(*b, "-n", "1", "--ack", "release")
    assert released.exit_code == 0, released.stderr
    (row,) = map(json.loads, released.stdout.splitlines())
    assert (row["value"], row["delivery_count"], row["acknowledgement"]) == ("0", 1, "release")
    rejected = kctl(*b, "-n", "1", "--reject-where", "value == 0")
    assert rejected.exit_code == 0, rejected.stderr
    (row,) = map(json.loads, rejected.stdout.splitlines())
    assert (row["value"], row["delivery_count"], row["acknowledgement"]) == ("0", 2, "reject")
    assert "(1 rejected)" in rejected.stderr
    drained = kctl(*b)  # without --follow: stops once nothing more comes
    assert (drained.exit_code, drained.stdout) == (0, ""), drained.stderr
    assert f"consumed 0 record(s) from share group {group}" in drained.stderr


def test_share_group_bad_input(kctl, cluster, queue):
    topic, group = queue
    b = ("-b", cluster.bootstrap, "record", "consume")
    for args, message in (
        ((topic, "--share-group", group, "--group", "other"), "--group is not for --share-group"),
        ((f"{topic}:0", "--share-group", group), "--share-group reads whole topics"),
        ((topic, "--ack", "reject"), "--ack is for --share-group"),
        ((topic, "--share-group", group, "--reject-where", "value =="), "--where"),
    ):
        result = kctl(*b, *args)
        assert result.exit_code == ExitCode.USAGE, (args, result.stderr)
        assert message in result.stderr, (args, result.stderr)


def test_kctl_and_kafkas_console_share_consumer_split_the_records(cluster, queue, kafka_tools):
    """kctl beside Kafka's own kafka-console-share-consumer on one group: 200 records,
    100 each, none written by both, none missing (what either acquired beyond its 100 is
    released when it leaves, and the other takes it)."""
    topic, group = queue
    _produce(cluster, topic, 200)
    console = subprocess.Popen(kafka_tools.tool_command(
        "org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server", cluster.bootstrap, "--topic", topic,
        "--group", group, "--max-messages", "100", "--timeout-ms", "90000"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ours = _kctl(cluster, "record", "consume", topic, "--share-group", group, "--follow", "-n", "100", "-o", "jsonl")
    theirs_out, theirs_err = console.communicate(timeout=150)
    our_out, our_err = ours.communicate(timeout=150)
    assert ours.returncode == 0, our_err
    assert console.returncode == 0, theirs_err
    mine = [json.loads(line)["value"] for line in our_out.splitlines()]
    theirs = theirs_out.split()
    assert len(mine) == len(theirs) == 100
    assert not set(mine) & set(theirs) and set(mine) | set(theirs) == {str(i) for i in range(200)}


def test_ctrl_c_acknowledges_what_was_written_and_releases_the_rest(cluster, queue):
    """Ctrl-C while kctl is blocked writing (a reader that does not read): it leaves the
    group acknowledging the records it wrote and releasing the ones it had not; a second
    member then gets the rest, so none is missing."""
    topic, group = queue
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 50})
    for i in range(2000):
        producer.produce(topic, key=b"%d" % i, value=b"x" * 1000, partition=i % 3)
    assert producer.flush(30) == 0
    blocked = _kctl(cluster, "record", "consume", topic, "--share-group", group, "--follow", "-o", "jsonl")
    # Its first line is out: it holds a batch of acquired records (~0.5 MB) that the pipe's
    # 64 KiB cannot take while nobody reads, so it cannot have written all 2,000.
    head = blocked.stdout.readline()
    assert head and blocked.poll() is None, blocked.stderr.read()
    blocked.send_signal(signal.SIGINT)
    out = head + blocked.stdout.read()  # through the stream readline() read ahead on, to its end
    assert blocked.wait(60) == 0, blocked.stderr.read()
    lines = out.split("\n")[:-1]  # the last, unended, was cut by the signal
    first = {json.loads(line)["key"] for line in lines}  # the ones before it whole: no gap
    assert 0 < len(first) < 2000
    rest = _kctl(cluster, "record", "consume", topic, "--share-group", group, "-o", "jsonl")
    out, err = rest.communicate(timeout=120)
    assert rest.returncode == 0, err
    second = {json.loads(line)["key"] for line in out.splitlines()}
    assert first | second == {str(i) for i in range(2000)}


def test_a_rejected_record_goes_to_the_groups_dead_letter_topic_and_back(kctl, cluster, queue, unique_name):
    """Kafka 4.4's share-group dead-letter topics (KIP-1191): a record kctl rejects is
    written by the broker to the group's errors.deadletterqueue.topic.name with the
    __dlq.errors.* headers, and `record redrive` sends it back to its topic; one of a group
    that does not copy records lands there without its copy, and is held back."""
    if cluster.kafka is None:
        pytest.skip("the bundled broker has no share-group dead-letter topics (KIP-1191)")
    topic, group = queue
    dlq = "dlq." + unique_name("jobs")  # errors.deadletterqueue.topic.name.prefix: "dlq."
    b = ("-b", cluster.bootstrap)
    assert kctl(*b, "topic", "create", dlq, "-c", "errors.deadletterqueue.group.enable=true").exit_code == 0
    altered = kctl(*b, "config", "alter", "group", group, "--set", f"errors.deadletterqueue.topic.name={dlq}",
                   "--set", "errors.deadletterqueue.copy.record.enable=true")
    assert altered.exit_code == 0, altered.stderr
    _on_every_broker(kctl, cluster, group, {"errors.deadletterqueue.topic.name": dlq})
    _produce(cluster, topic, 3)
    consumed = kctl(*b, "record", "consume", topic, "--share-group", group, "--reject-where", "value == 1", "-o", "jsonl")
    assert "(2 accepted, 1 rejected)" in consumed.stderr, consumed.stderr

    def dead_lettered() -> dict:
        (row,) = [json.loads(line) for line in kctl(*b, "record", "consume", dlq, "-o", "jsonl").stdout.splitlines()]
        return row
    row = eventually(dead_lettered, timeout=30)
    headers = {h["key"]: h["value"] for h in row["headers"]}
    assert (row["value"], headers["__dlq.errors.topic"], headers["__dlq.errors.group"]) == ("1", topic, group), row
    sent = kctl(*b, "record", "redrive", dlq, "--strip-error-headers", "-o", "json")
    assert sent.exit_code == 0, sent.stderr
    assert [(t["topic"], t["records"], t["status"]) for t in json.loads(sent.stdout)["topics"]] == [(topic, 1, "sent")], sent.stdout
    rows = [json.loads(line) for line in kctl(*b, "record", "consume", topic, "-o", "jsonl").stdout.splitlines()]
    assert sorted(r["value"] for r in rows) == ["0", "1", "1", "2"] and all(r["headers"] == [] for r in rows), rows  # sent back once

    # Another group's dead letters without the copy (errors.deadletterqueue.copy.record.enable
    # left false): only where the record was, and redrive holds it back rather than send an
    # empty record. (A record released past the delivery limit lands there the same way;
    # checked by hand on one node, not here: twice in CI on kafka3 none had come in 30 s.)
    bare, once = unique_name("bare"), unique_name("once")
    assert kctl(*b, "topic", "create", once).exit_code == 0
    assert kctl(*b, "config", "alter", "group", bare, "--set", "share.auto.offset.reset=earliest",
                "--set", f"errors.deadletterqueue.topic.name={dlq}").exit_code == 0
    _on_every_broker(kctl, cluster, bare, {"errors.deadletterqueue.topic.name": dlq})
    assert kctl(*b, "record", "produce", once, input="x\n").exit_code == 0
    rejected = kctl(*b, "record", "consume", once, "--share-group", bare, "--ack", "reject", "-o", "jsonl")
    assert "(1 rejected)" in rejected.stderr, rejected.stderr

    def bare_letter() -> dict:
        (row,) = [r for r in map(json.loads, kctl(*b, "record", "consume", dlq, "-o", "jsonl").stdout.splitlines())
                  if {"key": "__dlq.errors.group", "value": bare, "value_encoding": "text"} in r["headers"]]
        return row
    row = eventually(bare_letter, timeout=30)
    headers = {h["key"]: h["value"] for h in row["headers"]}
    assert (row["value"], headers["__dlq.errors.topic"]) == (None, once), row
    held = kctl(*b, "record", "redrive", dlq, "-o", "json")
    report = json.loads(held.stdout)
    assert (held.exit_code, report["records"], report["without_copy"]) == (0, 0, 1), held.stdout
    assert "1 holding no copy of their record" in held.stderr, held.stderr


def test_a_group_of_another_type_and_share_groups_disabled_are_one_line(kctl, cluster, queue, unique_name):
    topic, _group = queue
    b = ("-b", cluster.bootstrap)
    _produce(cluster, topic, 1)
    classic = unique_name("classic")
    assert kctl(*b, "record", "consume", topic, "-g", classic, "-n", "1").exit_code == 0
    result = kctl(*b, "record", "consume", topic, "--share-group", classic)
    assert (result.exit_code, result.stdout, result.stderr) == (ExitCode.INVALID, "", (
        f"error: unable to join share group {classic}: {classic} is a group of another type, not a share group\n"
        "hint: kctl group list shows each group's type\n"))
    if cluster.kafka is None:
        return  # the bundled broker has no feature flags: its share groups cannot be turned off
    (share,) = [f for f in json.loads(kctl(*b, "feature", "list", "-o", "json").stdout) if f["name"] == "share.version"]
    level = share["finalized_level"]
    assert kctl(*b, "feature", "downgrade", "--feature", "share.version=0", "--yes").exit_code == 0
    try:
        off = kctl(*b, "record", "consume", topic, "--share-group", unique_name("off"))
        assert (off.exit_code, off.stdout) == (ExitCode.INVALID, ""), off.stderr
        assert off.stderr.splitlines()[0].endswith("share groups are not enabled on the cluster (share.version is 0)"), off.stderr
    finally:
        assert kctl(*b, "feature", "upgrade", "--feature", f"share.version={level}", "--yes").exit_code == 0


def test_a_principal_without_access_is_one_line(kctl, secured, unique_name):
    """alice has no ACLs on the secured clusters (bundled and Kafka's): refused in one line."""
    from tests.security.flags import sasl_flags

    topic = unique_name("queue")
    assert kctl(*sasl_flags(secured), "topic", "create", topic).exit_code == 0
    result = kctl(*sasl_flags(secured, "alice"), "record", "consume", topic, "--share-group", unique_name("workers"))
    assert (result.exit_code, result.stdout) == (ExitCode.NOT_AUTHORIZED, ""), result.stderr
    assert len(result.stderr.splitlines()) <= 2 and "AUTHORIZATION_FAILED" in result.stderr, result.stderr


def _on_every_broker(kctl, cluster, group: str, configs: dict[str, str]) -> None:
    """Wait until every broker has the group's new configs: each applies the metadata log
    on its own, and a share partition led by one that has not yet would use the defaults
    (a CI run on kafka3 archived no record at a delivery limit set a moment before)."""
    def applied() -> None:
        for address in cluster.bootstrap.split(","):
            (described,) = json.loads(kctl("-b", address, "config", "describe", "group", group, "-o", "json").stdout)
            values = {c["name"]: c["value"] for c in described["configs"]}
            assert all(values.get(k) == v for k, v in configs.items()), (address, values)
    eventually(applied, timeout=30)
