"""`kctl record copy` (issues 58 and 68): the same records (a source header only when
asked), partitions kept or placed by key, the time and --where bounds, resumable through a
group, exactly-once on one cluster after a kill -9 mid-copy, at-least-once across
clusters, a copy onto itself refused; `record redrive` holding back what it does not send
until a later run sends it, never twice; `topic clone` leaving nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
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
    assert kctl("-b", cluster.bootstrap, "topic", "create", source, "-p", "4", "-c", "retention.ms=-1").exit_code == 0
    assert kctl("-b", cluster.bootstrap, "topic", "create", same, "-p", "4", "-c", "retention.ms=-1").exit_code == 0
    assert kctl("-b", cluster.bootstrap, "topic", "create", other, "-p", "7", "-c", "retention.ms=-1").exit_code == 0
    seed(cluster.bootstrap, source, 500)

    run = kctl("-b", cluster.bootstrap, "record", "copy", source, same, "-o", "json")
    assert run.exit_code == 0, run.stderr
    report = json.loads(run.stdout)
    assert (report["records"], report["placement"], report["guarantee"], report["source_header"]) == (500, "same", "at-least-once", False)
    assert report["seconds"] == round(report["seconds"], 3)
    theirs = sorted(read_all(cluster.bootstrap, source))
    # The copy is the same records: nothing added, not even a header.
    assert sorted(read_all(cluster.bootstrap, same)) == theirs

    run = kctl("-b", cluster.bootstrap, "record", "copy", source, other, "--where", 'value.kind == "odd"', "--from", "@1700000000100")
    assert run.exit_code == 0, run.stderr
    assert "partitions by key" in run.stderr
    from kctl.partitioner import partition_for

    copied = read_all(cluster.bootstrap, other)
    assert sorted(json.loads(v)["n"] for _p, _k, v, _h, _t in copied) == [i for i in range(100, 500) if i % 2]
    assert all(p == partition_for(k, 7) for p, k, *_ in copied)
    # At least once, the summary says how duplicates would be found.
    assert f"kctl spark audit {other} finds them (by content)" in run.stderr, run.stderr


def test_copy_refuses_a_missing_topic_and_a_copy_onto_itself(kctl, cluster, unique_name):
    """A missing SOURCE or TARGET is named in one line (exit 5, the closest name hinted);
    SOURCE and TARGET that are one topic of one cluster are refused (exit 64), whether
    reached by the same bootstrap or through --to-context, and nothing is written."""
    source = unique_name("src")
    assert kctl("-b", cluster.bootstrap, "topic", "create", source, "-c", "retention.ms=-1").exit_code == 0
    assert kctl("-b", cluster.bootstrap, "record", "produce", source, input="a\nb\n").exit_code == 0
    missing = unique_name("missing")
    run = kctl("-b", cluster.bootstrap, "record", "copy", source, missing)
    assert (run.exit_code, run.stderr.splitlines()[0]) == (
        5, f"error: unable to copy {source} to {missing}: UNKNOWN_TOPIC_OR_PARTITION: no such topic {missing}"), run.stderr
    typo = source.replace("src", "srx")
    run = kctl("-b", cluster.bootstrap, "record", "copy", typo, missing)
    assert (run.exit_code, run.stderr) == (
        5, f"error: unable to copy {typo} to {missing}: UNKNOWN_TOPIC_OR_PARTITION: no such topic {typo}\n"
           f"hint: did you mean {source}?\n"), run.stderr
    for args in ((), ("--to-context", cluster.bootstrap), ("--group", unique_name("g"))):
        run = kctl("-b", cluster.bootstrap, "record", "copy", source, source, *args)
        assert run.exit_code == 64 and len(run.stderr.splitlines()) == 1, run.stderr
        assert run.stderr.startswith(f"error: unable to copy {source} to {source}: SOURCE and TARGET are the same topic of the same cluster")
    assert len(read_all(cluster.bootstrap, source)) == 2
    run = kctl("-b", cluster.bootstrap, "record", "copy", source, missing, "--where", "value ==")
    assert run.exit_code == 64 and len(run.stderr.splitlines()) == 1, run.stderr


def test_copy_killed_mid_way_and_rerun_is_exactly_once(kctl, cluster, unique_name, tmp_path):
    """A copy with --group on one cluster, killed with SIGKILL while it writes, then run
    again: a read_committed reader of the target sees every source record exactly once."""
    source, target, group = unique_name("src"), unique_name("dst"), unique_name("copy")
    assert kctl("-b", cluster.bootstrap, "topic", "create", source, "-p", "3", "-c", "retention.ms=-1").exit_code == 0
    assert kctl("-b", cluster.bootstrap, "topic", "create", target, "-p", "3", "-c", "retention.ms=-1").exit_code == 0
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
        assert kctl("-b", cluster.bootstrap, "topic", "create", source, "-p", "2", "-c", "retention.ms=-1").exit_code == 0
        assert kctl("-b", other.bootstrap, "topic", "create", target, "-p", "2", "-c", "retention.ms=-1").exit_code == 0
        seed(cluster.bootstrap, source, 300)
        run = kctl("-b", cluster.bootstrap, "record", "copy", source, target, "--to-context", other.bootstrap, "--group", group,
                   "--source-header")
        assert run.exit_code == 0, run.stderr
        assert "at-least-once" in run.stderr and other.bootstrap in run.stderr, run.stderr
        assert f"kctl spark audit {target} finds them (by their kctl-copy-source headers)" in run.stderr, run.stderr
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


def test_redrive_holds_back_what_it_does_not_send_and_never_sends_twice(kctl, cluster, unique_name):
    """A dead-letter topic written as Kafka Connect and Spring Kafka write them. What a
    run does not send is held back, counted by why: --where left it out, it names no
    topic (until --header names the one it has), a topic that does not exist (until
    --create-topics) or the DLQ itself (never sent: it would loop). Later runs send the
    held-back records and skip what was sent, so every record reaches its topic once."""
    dlq, first, second, missing = unique_name("dlq"), unique_name("a"), unique_name("b"), unique_name("missing")
    for topic in (dlq, first, second):
        assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "2", "-c", "retention.ms=-1").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    expected: dict[str, list[int]] = {first: [], second: [], missing: []}
    for i in range(40):
        if i % 10 == 9:
            headers, goes = [("__connect.errors.topic", missing.encode())], missing
        elif i % 10 == 8:
            headers, goes = [("x-origin", first.encode())], first  # no standard header: only --header x-origin
        elif i % 10 == 7:
            headers, goes = [("__connect.errors.topic", dlq.encode())], None  # the DLQ itself
        elif i % 2:
            headers, goes = [("__connect.errors.topic", first.encode()), ("__connect.errors.exception.message", b"boom")], first
        else:
            headers, goes = [("kafka_dlt-original-topic", second.encode()), ("kafka_dlt-exception-message", b"bang")], second
        if goes:
            expected[goes].append(i)
        producer.produce(dlq, key=f"k{i}".encode(), value=json.dumps({"n": i, "fixed": i < 20}).encode(), headers=headers)
    assert producer.flush(30) == 0

    def redrive(*args: str) -> dict:
        run = kctl("-b", cluster.bootstrap, "record", "redrive", dlq, *args, "-o", "json")
        assert run.exit_code == 0, run.stderr
        return json.loads(run.stdout)

    def sent_to(topic: str) -> list[int]:
        return sorted(json.loads(v)["n"] for _p, _k, v, _h, _ts in read_all(cluster.bootstrap, topic))

    planned = redrive("--where", "value.fixed", "--dry-run")
    assert {t["topic"]: (t["records"], t["filtered"], t["status"]) for t in planned["topics"]} == {
        first: (6, 6, "would-send"), second: (8, 8, "would-send"), missing: (2, 2, "no-such-topic"), dlq: (2, 2, "source-topic")}
    assert (planned["records"], planned["without_topic"], planned["dry_run"]) == (14, 2, True)
    assert sent_to(first) == [] and sent_to(second) == []

    fixed = redrive("--where", "value.fixed")
    assert (fixed["records"], fixed["filtered"], fixed["without_topic"], fixed["held_back"]) == (14, 20, 2, 26), fixed
    assert fixed["guarantee"] == "exactly-once"
    assert sent_to(first) == [i for i in expected[first] if i < 20 and i % 10 != 8]
    assert sent_to(second) == [i for i in expected[second] if i < 20]
    # Error headers kept without --strip-error-headers.
    assert all(any(k.startswith("__connect.errors.") for k, _v in h) for *_, h, _ts in read_all(cluster.bootstrap, first))

    # The records --where left out are sent now; the fixed ones are not sent again.
    rest = redrive("--strip-error-headers")
    # Records sent before and read again (those after the first held back) are skipped.
    assert (rest["records"], rest["held_back"]) == (14, 12) and 0 < rest["already_sent"] <= 14, rest
    assert sent_to(first) == [i for i in expected[first] if i % 10 != 8]
    assert sent_to(second) == expected[second]
    later = [h for _p, _k, v, h, _ts in read_all(cluster.bootstrap, first) if json.loads(v)["n"] >= 20]
    assert later and all(not any(k.startswith("__connect.errors.") for k, _v in h) for h in later)

    # A missing topic and another header: their records go now, once.
    created = redrive("--create-topics")
    assert (created["records"], {t["topic"]: t["status"] for t in created["topics"] if t["records"]}) == (
        4, {missing: "sent", dlq: "source-topic"}), created
    assert sent_to(missing) == expected[missing]
    other = redrive("--header", "x-origin")
    assert other["records"] == 4 and sent_to(first) == expected[first], other

    # Nothing is left but the records naming the DLQ itself, held back on every run; the
    # DLQ does not grow.
    again = kctl("-b", cluster.bootstrap, "record", "redrive", dlq)
    assert again.exit_code == 0, again.stderr
    assert f"sent 0 record(s) of {dlq}" in again.stderr and f"4 naming {dlq} itself" in again.stderr, again.stderr
    assert len(read_all(cluster.bootstrap, dlq)) == 40
    for topic in (first, second, missing):
        counts = Counter(json.loads(v)["n"] for _p, _k, v, _h, _ts in read_all(cluster.bootstrap, topic))
        assert set(counts.values()) == {1}, (topic, counts)


def test_topic_clone_with_records_and_groups(kctl, cluster, unique_name):
    """A clone has SOURCE's partitions and the configs set on it; its records; and each
    group's offset mapped record for record: records deleted from SOURCE's start (so its
    offsets and the clone's differ) still leave the group reading the clone from the same
    record it would read next in SOURCE."""
    source, target, group = unique_name("src"), unique_name("clone"), unique_name("g")
    # A config that leaves the records alone: seed's timestamps are of 2023, and a retention
    # of a day would let the brokers' retention check (every second) delete them mid-test.
    assert kctl("-b", cluster.bootstrap, "topic", "create", source, "-p", "3", "-c", "max.message.bytes=2000000", "-c", "retention.ms=-1").exit_code == 0
    seed(cluster.bootstrap, source, 300)
    deleted = kctl("-b", cluster.bootstrap, "record", "delete", f"{source}:0", "--before", "10", "--yes")
    assert deleted.exit_code == 0, deleted.stderr
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    committed = [TopicPartition(source, 0, 40), TopicPartition(source, 1, 7), TopicPartition(source, 2, 0)]
    consumer.commit(offsets=committed, asynchronous=False)
    consumer.close()

    planned = json.loads(kctl("-b", cluster.bootstrap, "topic", "clone", source, target, "--dry-run", "-o", "json").stdout)
    assert (planned["status"], planned["partitions"], planned["configs"]) == ("planned", 3, {"max.message.bytes": "2000000",
                                                                                            "retention.ms": "-1"})
    refused = kctl("-b", cluster.bootstrap, "topic", "clone", source, target, "--with-groups")
    assert refused.exit_code == 64, refused.stderr
    run = kctl("-b", cluster.bootstrap, "topic", "clone", source, target, "--with-records", "--with-groups", "-o", "json")
    assert run.exit_code == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["status"] == "created" and report["records"] == 290, (run.stdout, run.stderr)
    described = json.loads(kctl("-b", cluster.bootstrap, "config", "describe", "topic", target, "-o", "json").stdout)[0]
    assert {c["name"]: c["value"] for c in described["configs"]}.get("max.message.bytes") == "2000000"

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

    # The clone kept its progress in a group of kctl's own, deleted when it was done: a
    # second clone finds only the user's group to carry over.
    groups = [g["group"] for g in json.loads(kctl("-b", cluster.bootstrap, "group", "list", "-o", "json").stdout)]
    assert group in groups and not any(g.startswith(f"kctl-clone-{source}") for g in groups), groups
    again = json.loads(kctl("-b", cluster.bootstrap, "topic", "clone", target, unique_name("again"), "--dry-run", "--with-records", "--with-groups",
                            "-o", "json").stdout)
    assert [g["group"] for g in again["groups"]] == [group]


def test_a_failed_or_interrupted_clone_says_what_it_left_and_how_to_go_on(kctl, cluster, unique_name):
    """Records bigger than SOURCE's max.message.bytes (set after they were written) are
    refused by the clone, which has SOURCE's configs (exit 65, the transaction aborted):
    one line says the topic it created
    and that the copy committed nothing. A clone stopped after its first batch (its
    `stop` event set) left its bookkeeping group, which the error names with the commands
    that go on or remove it; `group list` shows the group as kctl's."""
    from kctl.admin.client.session import AdminSession
    from kctl.config.model import ClientSettings
    from kctl.errors import KctlError
    from kctl.records.clone import clone, plan_clone

    source, target = unique_name("src"), unique_name("clone")
    assert kctl("-b", cluster.bootstrap, "topic", "create", source, "-c", "retention.ms=-1").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for _ in range(3):
        producer.produce(source, key=b"k", value=b"x" * 4000)
    assert producer.flush(30) == 0
    assert kctl("-b", cluster.bootstrap, "config", "alter", "topic", source, "--set", "max.message.bytes=1000").exit_code == 0
    run = kctl("-b", cluster.bootstrap, "topic", "clone", source, target, "--with-records")
    assert run.exit_code == 65 and "MSG_SIZE_TOO_LARGE" in run.stderr, run.stderr
    error, hint = run.stderr.splitlines()
    assert error.startswith(f"error: unable to clone topic {source} to {target}: "), error
    assert hint == (f"hint: topic {target} was created; the copy committed nothing: 'kctl topic delete {target} --yes' removes it, "
                    "and the clone can run again"), hint

    many, stopped = unique_name("many"), unique_name("stopped")
    assert kctl("-b", cluster.bootstrap, "topic", "create", many, "-c", "retention.ms=-1").exit_code == 0
    seed(cluster.bootstrap, many, 3000)
    session = AdminSession(ClientSettings(bootstrap_servers=cluster.bootstrap, properties={}, timeout=30, context=None))
    stop = threading.Event()
    try:
        with pytest.raises(KctlError) as failed:
            clone(session, None, plan_clone(session, session, many, stopped), with_records=True, stop=stop,
                  on_batch=lambda read, planned: stop.set())
    finally:
        session.close()
    group = f"kctl-clone-{many}-{stopped}"
    assert (failed.value.exit_code, failed.value.cause) == (130, f"interrupted after {failed.value.cause.split()[2]} record(s)")
    assert int(failed.value.cause.split()[2]) < 3000
    assert failed.value.hint == (f"topic {stopped} was created and group {group} keeps how far the copy got: "
                                 f"'kctl record copy {many} {stopped} --group {group}' copies the rest (groups' offsets are not mapped "
                                 f"then), or 'kctl topic delete {stopped} --yes' and 'kctl group delete {group} --yes' remove both")
    listed = kctl("-b", cluster.bootstrap, "group", "list", "--regex", f"kctl-clone-{many}.*")
    assert listed.exit_code == 0 and group in listed.stdout, listed.stdout
    assert f"note: {group} is kctl's own (topic clone)" in listed.stderr, listed.stderr
    # Going on as the hint says copies the rest, each record once.
    rest = kctl("-b", cluster.bootstrap, "record", "copy", many, stopped, "--group", group)
    assert rest.exit_code == 0, rest.stderr
    assert sorted(json.loads(v)["n"] for _p, _k, v, _h, _t in read_all(cluster.bootstrap, stopped)) == list(range(3000))


def test_copy_to_a_target_that_refuses_records_is_one_line_and_commits_nothing(kctl, cluster, unique_name):
    """A target whose max.message.bytes is below the records' size refuses them: one line,
    exit 4, and the group has nothing committed (nothing is reported as copied)."""
    source, target, group = unique_name("src"), unique_name("small"), unique_name("g")
    assert kctl("-b", cluster.bootstrap, "topic", "create", source, "-c", "retention.ms=-1").exit_code == 0
    assert kctl("-b", cluster.bootstrap, "topic", "create", target, "-c", "max.message.bytes=1000", "-c", "retention.ms=-1").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for _ in range(5):
        producer.produce(source, key=b"k", value=b"x" * 4000)
    assert producer.flush(30) == 0
    run = kctl("-b", cluster.bootstrap, "record", "copy", source, target, "--group", group, "--to-context", cluster.bootstrap)
    assert run.exit_code == 4, run.stderr
    assert "MSG_SIZE_TOO_LARGE" in run.stderr and "copied" not in run.stderr, run.stderr
    lag = json.loads(kctl("-b", cluster.bootstrap, "group", "lag", group, "-o", "json").stdout or "[]")
    assert all(p["committed"] is None for g in lag for p in g["partitions"]), lag
