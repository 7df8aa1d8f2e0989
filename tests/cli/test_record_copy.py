"""`kctl record copy` (issue 58): records kept whole, partitions kept or placed by key, the
time and --where bounds, resumable through a group, exactly-once on one cluster after a
kill -9 mid-copy, and at-least-once with a source header across clusters."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.support.eventually import eventually

pytestmark = pytest.mark.integration


def seed(bootstrap: str, topic: str, count: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 20})
    for i in range(start, start + count):
        while True:
            try:
                producer.produce(topic, key=f"k-{i % 97}".encode(), value=json.dumps({"n": i, "kind": "odd" if i % 2 else "even"}).encode(),
                                 headers=[("origin", f"h-{i}".encode())], timestamp=1_700_000_000_000 + i)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0


def read_all(bootstrap: str, topic: str, *, committed: bool = True) -> list:
    """Every record of `topic` (read_committed unless told), as (partition, key, value, headers, timestamp)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kctl-test-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed" if committed else "read_uncommitted", "enable.partition.eof": True})
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        partitions = [TopicPartition(topic, p, 0) for p in metadata.partitions]
        consumer.assign(partitions)
        out, ended = [], set()
        deadline = time.monotonic() + 60
        while len(ended) < len(partitions) and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error():
                ended.add(m.partition())
                continue
            out.append((m.partition(), m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1]))
        return out
    finally:
        consumer.close()


def read_from(bootstrap: str, topic: str, partition: int, offset: int) -> list[tuple]:
    """(key, value) of the records of one partition from `offset` on (read_committed)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kctl-test-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        out = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error():
                break
            out.append((m.key(), m.value()))
        return out
    finally:
        consumer.close()


def test_copy_keeps_records_and_partitions_or_places_by_key(kctl, cluster, unique_name):
    source, same, other = unique_name("src"), unique_name("same"), unique_name("other")
    assert kctl("-b", cluster.bootstrap, "topic", "create", source, "-p", "4").exit_code == 0
    assert kctl("-b", cluster.bootstrap, "topic", "create", same, "-p", "4").exit_code == 0
    assert kctl("-b", cluster.bootstrap, "topic", "create", other, "-p", "7").exit_code == 0
    seed(cluster.bootstrap, source, 500)

    run = kctl("-b", cluster.bootstrap, "record", "copy", source, same, "-o", "json")
    assert run.exit_code == 0, run.stderr
    report = json.loads(run.stdout)
    assert (report["records"], report["placement"], report["guarantee"]) == (500, "same", "at-least-once")
    theirs = sorted(read_all(cluster.bootstrap, source))
    ours = read_all(cluster.bootstrap, same)
    # Without a group the copy is at least once and marks each record's source position.
    assert sorted((p, k, v, h[:-1], t) for p, k, v, h, t in ours) == theirs
    assert all(h[-1][0] == "kctl-copy-source" for *_, h, _t in ours)

    run = kctl("-b", cluster.bootstrap, "record", "copy", source, other, "--where", 'value.kind == "odd"', "--from", "@1700000000100")
    assert run.exit_code == 0, run.stderr
    assert "partitions by key" in run.stderr
    from kctl.partitioner import partition_for

    copied = read_all(cluster.bootstrap, other)
    assert sorted(json.loads(v)["n"] for _p, _k, v, _h, _t in copied) == [i for i in range(100, 500) if i % 2]
    assert all(p == partition_for(k, 7) for p, k, *_ in copied)


def test_copy_to_a_topic_that_does_not_exist_is_one_line(kctl, cluster, unique_name):
    source = unique_name("src")
    assert kctl("-b", cluster.bootstrap, "topic", "create", source).exit_code == 0
    run = kctl("-b", cluster.bootstrap, "record", "copy", source, unique_name("missing"))
    assert run.exit_code == 5 and "no such topic" in run.stderr, run.stderr
    run = kctl("-b", cluster.bootstrap, "record", "copy", source, source, "--where", "value ==")
    assert run.exit_code == 64 and len(run.stderr.splitlines()) == 1, run.stderr


def test_copy_killed_mid_way_and_rerun_is_exactly_once(kctl, cluster, unique_name, tmp_path):
    """A copy with --group on one cluster, killed with SIGKILL while it writes, then run
    again: a read_committed reader of the target sees every source record exactly once."""
    source, target, group = unique_name("src"), unique_name("dst"), unique_name("copy")
    assert kctl("-b", cluster.bootstrap, "topic", "create", source, "-p", "3").exit_code == 0
    assert kctl("-b", cluster.bootstrap, "topic", "create", target, "-p", "3").exit_code == 0
    total = 20_000
    seed(cluster.bootstrap, source, total)
    argv = [sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "record", "copy", source, target, "--group", group]
    env = {**os.environ, "HOME": str(tmp_path)}
    slow = subprocess.Popen([*argv, "--rate", "4000"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        def some_committed() -> int:
            found = len(read_all(cluster.bootstrap, target))
            assert 2_000 <= found < total, found
            return found
        eventually(some_committed, timeout=60, interval=0.3)
    finally:
        slow.send_signal(signal.SIGKILL)
        slow.wait(10)
    assert len(read_all(cluster.bootstrap, target)) < total
    rerun = subprocess.run([*argv, "-o", "json"], env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["guarantee"] == "exactly-once"
    values = Counter(json.loads(v)["n"] for _p, _k, v, _h, _t in read_all(cluster.bootstrap, target))
    assert len(values) == total and set(values.values()) == {1}, [n for n, c in values.items() if c != 1][:10]
    # A third run finds nothing left.
    again = subprocess.run([*argv, "-o", "json"], env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and json.loads(again.stdout)["records"] == 0, again.stderr


def test_copy_across_clusters_is_at_least_once_with_source_positions(kctl, cluster, kafka_tools, unique_name, tmp_path):
    """From the test's cluster to another broker (a bundled one of its own): at least once,
    said plainly, each record marked with its source position; a rerun with the group
    copies nothing more."""
    from kctl.broker.process import BrokerProcess

    other = BrokerProcess(tmp_path / "other")
    other.start()
    try:
        source, target, group = unique_name("src"), unique_name("dst"), unique_name("copy")
        assert kctl("-b", cluster.bootstrap, "topic", "create", source, "-p", "2").exit_code == 0
        assert kctl("-b", other.bootstrap, "topic", "create", target, "-p", "2").exit_code == 0
        seed(cluster.bootstrap, source, 300)
        run = kctl("-b", cluster.bootstrap, "record", "copy", source, target, "--to-context", other.bootstrap, "--group", group)
        assert run.exit_code == 0, run.stderr
        assert "at-least-once" in run.stderr and other.bootstrap in run.stderr, run.stderr
        copied = read_all(other.bootstrap, target)
        positions = sorted(dict(h)["kctl-copy-source"].decode() for *_, h, _t in copied)
        expected = sorted(f"{source}/{p}/{o}" for p, count in Counter(p for p, *_ in read_all(cluster.bootstrap, source)).items()
                          for o in range(count))
        assert positions == expected
        seed(cluster.bootstrap, source, 10, start=300)
        more = kctl("-b", cluster.bootstrap, "record", "copy", source, target, "--to-context", other.bootstrap, "--group", group)
        assert more.exit_code == 0 and "copied 10 record(s)" in more.stderr, more.stderr
    finally:
        other.stop()


def test_redrive_sends_each_record_back_once(kctl, cluster, unique_name):
    """A dead-letter topic written as Kafka Connect and Spring Kafka write them: each
    record goes back to the topic its header names (--where: only those a fix covers;
    --strip-error-headers: without the error context); a record without the header or
    naming a topic that does not exist is counted, not sent; a second run sends nothing,
    and --create-topics creates the missing topic."""
    dlq, first, second = unique_name("dlq"), unique_name("a"), unique_name("b")
    missing = unique_name("missing")
    for topic in (dlq, first, second):
        assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "2").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(40):
        if i % 10 == 9:
            headers = [("__connect.errors.topic", missing.encode())]
        elif i % 10 == 8:
            headers = []
        elif i % 2:
            headers = [("__connect.errors.topic", first.encode()), ("__connect.errors.exception.message", b"boom")]
        else:
            headers = [("kafka_dlt-original-topic", second.encode()), ("kafka_dlt-exception-message", b"bang")]
        producer.produce(dlq, key=f"k{i}".encode(), value=json.dumps({"n": i, "fixed": i < 30}).encode(), headers=headers)
    assert producer.flush(30) == 0

    dry = kctl("-b", cluster.bootstrap, "record", "redrive", dlq, "--where", "value.fixed", "-o", "json")
    assert dry.exit_code == 0, dry.stderr
    dry = kctl("-b", cluster.bootstrap, "record", "redrive", dlq, "--where", "value.fixed", "--dry-run", "-o", "json")
    planned = json.loads(dry.stdout)
    # The first run (not a dry run) sent the fixed ones already: the dry run after it has nothing left.
    assert planned["topics"] == [] and planned["dry_run"], planned
    sent = {t: sorted(json.loads(v)["n"] for _p, _k, v, _h, _ts in read_all(cluster.bootstrap, t)) for t in (first, second)}
    assert sent == {first: [i for i in range(30) if i % 2 and i % 10 not in (9, 8)],
                    second: [i for i in range(30) if not i % 2 and i % 10 != 8]}
    # Error headers kept without --strip-error-headers.
    assert all(any(k.startswith("__connect.errors.") for k, _v in h) for *_, h, _ts in read_all(cluster.bootstrap, first))

    # The rest (not fixed before) with another group from the start: counted per topic first.
    counted = json.loads(kctl("-b", cluster.bootstrap, "record", "redrive", dlq, "--group", unique_name("g"), "--from", "earliest",
                              "--dry-run", "-o", "json").stdout)
    assert {t["topic"]: (t["records"], t["status"]) for t in counted["topics"]} == {
        first: (16, "would-send"), second: (16, "would-send"), missing: (4, "no-such-topic")}
    assert counted["without_topic"] == 4
    assert read_all(cluster.bootstrap, first) and len(read_all(cluster.bootstrap, first)) == 12  # the dry run sent nothing

    rest = kctl("-b", cluster.bootstrap, "record", "redrive", dlq, "--from", "earliest", "--where", "!value.fixed", "--strip-error-headers",
                "--create-topics", "--group", unique_name("g2"))
    assert rest.exit_code == 0, rest.stderr
    copied = read_all(cluster.bootstrap, missing)
    assert sorted(json.loads(v)["n"] for _p, _k, v, _h, _ts in copied) == [39]
    later = [r for r in read_all(cluster.bootstrap, first) if json.loads(r[2])["n"] >= 30]
    assert later and all(not any(k.startswith("__connect.errors.") for k, _v in h) for *_, h, _ts in later)


def test_topic_clone_with_records_and_groups(kctl, cluster, unique_name):
    """A clone has SOURCE's partitions and the configs set on it; its records; and each
    group's offset mapped record for record: records deleted from SOURCE's start (so its
    offsets and the clone's differ) still leave the group reading the clone from the same
    record it would read next in SOURCE."""
    source, target, group = unique_name("src"), unique_name("clone"), unique_name("g")
    assert kctl("-b", cluster.bootstrap, "topic", "create", source, "-p", "3", "-c", "retention.ms=86400000").exit_code == 0
    seed(cluster.bootstrap, source, 300)
    deleted = kctl("-b", cluster.bootstrap, "record", "delete", f"{source}:0", "--before", "10", "--yes")
    assert deleted.exit_code == 0, deleted.stderr
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    committed = [TopicPartition(source, 0, 40), TopicPartition(source, 1, 7), TopicPartition(source, 2, 0)]
    consumer.commit(offsets=committed, asynchronous=False)
    consumer.close()

    planned = json.loads(kctl("-b", cluster.bootstrap, "topic", "clone", source, target, "--dry-run", "-o", "json").stdout)
    assert (planned["status"], planned["partitions"], planned["configs"]) == ("planned", 3, {"retention.ms": "86400000"})
    refused = kctl("-b", cluster.bootstrap, "topic", "clone", source, target, "--with-groups")
    assert refused.exit_code == 64, refused.stderr
    run = kctl("-b", cluster.bootstrap, "topic", "clone", source, target, "--with-records", "--with-groups", "-o", "json")
    assert run.exit_code == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["status"] == "created" and report["records"] == 290
    described = json.loads(kctl("-b", cluster.bootstrap, "config", "describe", "topic", target, "-o", "json").stdout)[0]
    assert {c["name"]: c["value"] for c in described["configs"]}.get("retention.ms") == "86400000"

    mapped = next(g for g in report["groups"] if g["group"] == group)
    assert mapped["status"] == "committed", mapped
    offsets = {int(p): o for p, o in mapped["offsets"].items()}
    for tp in committed:
        # What the group reads next on each side: the same records, from the same one on.
        reader = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
        assert reader.committed([TopicPartition(target, tp.partition)], timeout=10)[0].offset == offsets[tp.partition]
        reader.close()
        theirs = read_from(cluster.bootstrap, source, tp.partition, tp.offset)
        mine = read_from(cluster.bootstrap, target, tp.partition, offsets[tp.partition])
        assert mine == theirs and theirs, (tp, len(mine), len(theirs))
    exists = kctl("-b", cluster.bootstrap, "topic", "clone", source, target)
    assert exists.exit_code == 6, exists.stderr


def test_copy_to_a_target_that_refuses_records_is_one_line_and_commits_nothing(kctl, cluster, unique_name):
    """A target whose max.message.bytes is below the records' size refuses them: one line,
    exit 4, and the group has nothing committed (nothing is reported as copied)."""
    source, target, group = unique_name("src"), unique_name("small"), unique_name("g")
    assert kctl("-b", cluster.bootstrap, "topic", "create", source).exit_code == 0
    assert kctl("-b", cluster.bootstrap, "topic", "create", target, "-c", "max.message.bytes=1000").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for _ in range(5):
        producer.produce(source, key=b"k", value=b"x" * 4000)
    assert producer.flush(30) == 0
    run = kctl("-b", cluster.bootstrap, "record", "copy", source, target, "--group", group, "--to-context", cluster.bootstrap)
    assert run.exit_code == 4, run.stderr
    assert "MSG_SIZE_TOO_LARGE" in run.stderr and "copied" not in run.stderr, run.stderr
    lag = json.loads(kctl("-b", cluster.bootstrap, "group", "lag", group, "-o", "json").stdout or "[]")
    assert all(p["committed"] is None for g in lag for p in g["partitions"]), lag
