"""kctl mirror against a real MirrorMaker 2 (tests/backends/mirror.py) between two clusters
(tests/mirror/conftest.py): Kafka's own RemoteClusterUtils.translateOffsets is the oracle
of every translation, and consumers on the target count, record by record, what a
failover skips (nothing) and redelivers."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.backends.mirror import java_translate
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration


def bundled_pair_only(mirrored) -> None:
    """The tests of kctl's own logic (fallbacks, refusals, undo, bad input) run on the
    bundled pair; the Apache Kafka source adds nothing to them but a minute of CI."""
    if mirrored.backend != "bundled":
        pytest.skip("kctl's logic, run on the bundled pair; with a Kafka source: translation, failover, failback, status")


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def produce(bootstrap: str, topic: str, values: list[str], partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, value in enumerate(values):
        producer.produce(topic, value=value.encode(), key=value.encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def consume(bootstrap: str, group: str, topic: str | list[str], count: int | None, *, commit: bool = True, timeout: float = 60) -> list[str]:
    """Values read by `group` (KIP-848's consumer protocol): `count` of them, or all until
    the topic is idle; committed at the end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic] if isinstance(topic, str) else topic)
    values: list[str] = []
    import time

    deadline = time.monotonic() + timeout
    idle_since = None
    try:
        while time.monotonic() < deadline and (count is None or len(values) < count):
            batch = consumer.consume(num_messages=count - len(values) if count else 500, timeout=0.5)
            good = [m for m in batch if m.error() is None]
            values += [m.value().decode() for m in good]
            if count is None:
                if good:
                    idle_since = None
                elif values or idle_since is not None:
                    idle_since = idle_since or time.monotonic()
                    if time.monotonic() - idle_since > 3:
                        break
        if commit and values:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found if tp.offset >= 0}


def translate(kctl, mirrored, *args: str) -> list[dict]:
    result = kctl("mirror", "translate", *args, "--source", mirrored.source, "--target", mirrored.target, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def checkpointed(kctl, mirrored, group: str, topic: str, partitions: int, *args: str) -> list[dict]:
    """The group's translation once MM2 has checkpointed every partition it committed on
    the source, at its committed offset."""
    positions = committed(mirrored.source, group, topic, partitions)
    assert positions

    def caught_up():
        rows = translate(kctl, mirrored, group, *args)
        mine = {r["partition"]: r for r in rows if r["topic"] == topic}
        assert set(mine) == set(positions), rows
        assert all(r["method"] == "checkpoint" and r["note"] is None and r["committed"] == positions[p] for p, r in mine.items()), rows
        return rows
    return eventually(caught_up, timeout=90, interval=1)


@pytest.fixture
def world(mirrored):
    """A topic replicated by MM2 with 200 records, read 120 of by a group on the source."""
    topic, group = name("mm-orders"), name("billing")
    create(mirrored.source, topic, 2)
    values = [f"r{i:03d}" for i in range(200)]
    produce(mirrored.source, topic, values, 2)
    read = consume(mirrored.source, group, topic, 120)
    assert len(read) == 120
    return topic, group, values, read


def test_translation_equals_kafkas_own(kctl, mirrored, world):
    topic, group, _values, _read = world
    # A second group, on two topics.
    other, second = name("audit"), name("mm-payments")
    create(mirrored.source, second, 3)
    produce(mirrored.source, second, [f"p{i:03d}" for i in range(60)], 3)
    # One topic after the other: a consumer of both may read only one in a first batch (a
    # CI run committed nothing on the second).
    consume(mirrored.source, other, topic, 30)
    consume(mirrored.source, other, second, 30)
    checkpointed(kctl, mirrored, group, topic, 2)
    checkpointed(kctl, mirrored, other, topic, 2)
    checkpointed(kctl, mirrored, other, second, 3)
    pattern = f"({group}|{other})"

    def offsets(rows: list[dict]) -> dict:
        return {(r["group"], r["remote_topic"], r["partition"]): r["translated"] for r in rows}

    def agree():
        # MM2 emits a new checkpoint for the same committed offset when a newer offset sync
        # maps it more closely (a CI run saw 1 become 100 between two reads): the answers
        # are compared between two readings of kctl's that agree with each other.
        before = translate(kctl, mirrored, group, other)
        by_java = java_translate(mirrored.target, "primary", [group, other])
        # The Pattern overload (KIP-1239) over the same groups, and kctl's --group-regex.
        by_pattern = java_translate(mirrored.target, "primary", pattern=pattern)
        by_regex = translate(kctl, mirrored, "--group-regex", pattern)
        # Without the source (down, or not given): the same offsets, from the target alone.
        alone = kctl("mirror", "translate", group, "--target", mirrored.target, "-o", "json")
        assert alone.exit_code == 0, alone.stderr
        after = translate(kctl, mirrored, group, other)
        assert offsets(before) == offsets(after) == by_java == by_pattern == offsets(by_regex)
        assert offsets(json.loads(alone.stdout)) == {k: v for k, v in by_java.items() if k[0] == group}
        assert all(r["committed"] is None for r in json.loads(alone.stdout))
        return after
    rows = eventually(agree, timeout=120, interval=1)
    assert {r["remote_topic"] for r in rows if r["group"] == other} == {f"primary.{topic}", f"primary.{second}"}


def test_failover_skips_nothing_and_redelivers_what_the_checkpoint_says(kctl, mirrored, world):
    topic, group, values, read = world
    remote = f"primary.{topic}"
    rows = checkpointed(kctl, mirrored, group, topic, 2)
    dry = kctl("mirror", "failover", group, "--source", mirrored.source, "--target", mirrored.target, "--require-idle-source")
    assert dry.exit_code == 0 and "dry run" in dry.stderr, dry.stderr
    assert committed(mirrored.target, group, remote, 2) == {}
    done = kctl("mirror", "failover", group, "--source", mirrored.source, "--target", mirrored.target,
                "--require-idle-source", "--execute", "--yes")
    assert done.exit_code == 0, done.stderr
    assert "undo journal" in done.stderr and "applied and verified" in done.stderr
    translated = committed(mirrored.target, group, remote, 2)
    # The newest checkpoint as the failover read it: the one before it, or one MM2 wrote
    # since (a newer offset sync can map the same committed offset more closely).
    since = {r["partition"]: r["translated"] for r in translate(kctl, mirrored, group)}
    assert all(translated[p] in (r["translated"], since[p]) for p, r in ((r["partition"], r) for r in rows)), (translated, rows, since)
    # The group reads on, on the target, until the copy is exhausted.
    after = consume(mirrored.target, group, remote, None)
    assert set(values) == set(read) | set(after), "a record was skipped"
    duplicates = len(read) + len(after) - len(values)
    # What MM2's checkpoints say: each partition resumes at its translated offset, the
    # copy of the source's record there (the topic was created under MM2: one for one).
    source_position = {r["partition"]: r["committed"] for r in rows}
    assert duplicates == sum(source_position[p] - translated[p] for p in translated)
    assert all(translated[p] <= source_position[p] for p in translated)


def test_fallbacks_for_a_group_mm2_never_checkpointed(kctl, mirrored):
    bundled_pair_only(mirrored)
    topic, group = name("mm-quiet"), name("nocp")
    create(mirrored.source, topic, 2)
    produce(mirrored.source, topic, [f"q{i:03d}" for i in range(40)], 2)
    consume(mirrored.source, group, topic, 10)
    source_offsets = committed(mirrored.source, group, topic, 2)
    remote = f"primary.{topic}"
    eventually(lambda: _copied(mirrored.target, remote, 40), timeout=60)

    def rows(fallback: str) -> dict[int, dict]:
        return {r["partition"]: r for r in translate(kctl, mirrored, group, "--fallback", fallback)}
    none = rows("none")
    assert all(r["translated"] is None and r["note"] == "no_checkpoint" for r in none.values())
    assert {p: r["committed"] for p, r in none.items()} == source_offsets
    assert all(r["translated"] == 0 and r["note"] == "may_redeliver" for r in rows("earliest").values())
    assert all(r["translated"] == 20 and r["note"] == "may_skip" for r in rows("latest").values())
    by_time = rows("timestamp")
    for p, r in by_time.items():
        # The first target record at or after the time of the source's next record: never
        # after it (no skip); before it only by records with the same timestamp.
        assert r["method"] == "timestamp" and r["translated"] <= source_offsets[p]
        assert r["translated"] == _first_at_time(mirrored.source, topic, p, source_offsets[p])
    nothing = kctl("mirror", "failover", group, "--source", mirrored.source, "--target", mirrored.target, "--execute", "--yes")
    assert nothing.exit_code == 5 and "nothing to commit" in nothing.stderr
    moved = kctl("mirror", "failover", group, "--source", mirrored.source, "--target", mirrored.target, "--fallback", "timestamp",
                 "--execute", "--yes")
    assert moved.exit_code == 0, moved.stderr
    assert committed(mirrored.target, group, remote, 2) == {p: r["translated"] for p, r in by_time.items()}
    # status names the group MM2 never checkpointed, unless told MM2 excludes it.
    warned = kctl("mirror", "status", "--source", mirrored.source, "--target", mirrored.target, "-o", "json")
    assert warned.exit_code == 1 and group in json.loads(warned.stdout)["reasons"][-1], warned.stdout


def _copied(bootstrap: str, topic: str, count: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        assert meta.error is None, meta.error
        total = sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in meta.partitions)
    finally:
        consumer.close()
    assert total == count


def _first_at_time(bootstrap: str, topic: str, partition: int, offset: int) -> int:
    """The source's first offset with the timestamp of its record at `offset`: where the
    copy's first such record is (MM2 copies one for one and keeps timestamps)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        message = eventually(lambda: _one(consumer), timeout=30)
        at = consumer.offsets_for_times([TopicPartition(topic, partition, message.timestamp()[1])], timeout=10)[0]
    finally:
        consumer.close()
    return at.offset


def _one(consumer):
    message = consumer.poll(1)
    assert message is not None and message.error() is None
    return message


def test_an_active_group_on_the_target_is_refused_and_undo_restores(kctl, mirrored, world):
    bundled_pair_only(mirrored)
    topic, group, _values, _read = world
    remote = f"primary.{topic}"
    checkpointed(kctl, mirrored, group, topic, 2)
    member = Consumer({"bootstrap.servers": mirrored.target, "group.id": group, "group.protocol": "consumer",
                       "client.id": "still-running", "auto.offset.reset": "latest", "enable.auto.commit": False})
    member.subscribe([remote])
    try:
        eventually(lambda: (member.poll(0.2), member.assignment())[1] or pytest.fail("no assignment yet"), timeout=30)
        refused = kctl("mirror", "failover", group, "--source", mirrored.source, "--target", mirrored.target, "--execute", "--yes")
        assert refused.exit_code == 10 and "still-running" in refused.stderr, refused.stderr
    finally:
        member.close()
    assert committed(mirrored.target, group, remote, 2) == {}
    done = kctl("mirror", "failover", group, "--source", mirrored.source, "--target", mirrored.target, "--execute", "--yes")
    assert done.exit_code == 0, done.stderr
    assert committed(mirrored.target, group, remote, 2) != {}
    undo = kctl("mirror", "failover", "--undo", "last", "--target", mirrored.target, "--execute", "--yes")
    assert undo.exit_code == 0, undo.stderr
    assert committed(mirrored.target, group, remote, 2) == {}
    # The source must be idle with --require-idle-source.
    member = Consumer({"bootstrap.servers": mirrored.source, "group.id": group, "group.protocol": "consumer",
                       "client.id": "on-the-source", "auto.offset.reset": "latest", "enable.auto.commit": False})
    member.subscribe([topic])
    try:
        eventually(lambda: (member.poll(0.2), member.assignment())[1] or pytest.fail("no assignment yet"), timeout=30)
        busy = kctl("mirror", "failover", group, "--source", mirrored.source, "--target", mirrored.target, "--require-idle-source")
        assert busy.exit_code == 10 and "on-the-source" in busy.stderr, busy.stderr
    finally:
        member.close()


def test_failback_commits_on_the_source(kctl, mirrored, world):
    topic, group, values, _read = world
    remote = f"primary.{topic}"
    checkpointed(kctl, mirrored, group, topic, 2)
    assert kctl("mirror", "failover", group, "--source", mirrored.source, "--target", mirrored.target, "--execute", "--yes").exit_code == 0
    # The group runs on the target for a while, then goes back.
    on_target = consume(mirrored.target, group, remote, 20)
    position = committed(mirrored.target, group, remote, 2)
    back = kctl("mirror", "failback", group, "--source", mirrored.source, "--target", mirrored.target, "--fallback", "timestamp",
                "--require-idle-source", "-o", "json")
    assert back.exit_code == 0, back.stderr
    assert "dry run" in back.stderr
    rows = kctl("mirror", "failback", group, "--source", mirrored.source, "--target", mirrored.target, "--fallback", "timestamp",
                "--execute", "--yes")
    assert rows.exit_code == 0, rows.stderr
    home = committed(mirrored.source, group, topic, 2)
    # `primary.orders` on the target is `orders` again on the source, at or before where
    # the group had got to on the target (the copy is one for one): nothing skipped.
    assert set(home) == set(position) and all(home[p] <= position[p] for p in position)
    rest = consume(mirrored.source, group, topic, None)
    assert set(values) <= set(_read_before(values, position)) | set(on_target) | set(rest)
    undo = kctl("mirror", "failback", "--undo", "last", "--source", mirrored.source, "--execute", "--yes")
    assert undo.exit_code == 0, undo.stderr


def _read_before(values: list[str], position: dict[int, int]) -> list[str]:
    """The values below each partition's position (produced round-robin over two partitions)."""
    return [v for i, v in enumerate(values) if i // 2 < position.get(i % 2, 0)]


def last_document(text: str) -> dict:
    """The last of the JSON documents --watch printed one after another."""
    decoder, at, found = json.JSONDecoder(), 0, None
    while (at := len(text) - len(text[at:].lstrip())) < len(text):
        found, at = decoder.raw_decode(text, at)
    return found


def test_status_judges_the_pair(kctl, mirrored, world):
    topic, group, _values, _read = world
    checkpointed(kctl, mirrored, group, topic, 2)

    # --watch --exit-when-healthy waits until MM2 has caught up with the group.
    waited = kctl("mirror", "status", "--source", mirrored.source, "--target", mirrored.target, "--exclude-groups", "nocp-.*",
                  "-g", group, "--max-lag", "0", "--watch", "--exit-when-healthy", "--interval", "0.5", "--max-wait", "60", "-o", "json")
    assert waited.exit_code == 0, waited.stdout[-2000:]
    document = last_document(waited.stdout)
    assert document["source_alias"] == "primary" and document["target_alias"] == "backup"
    mine = [p for p in document["partitions"] if p["topic"] == topic]
    assert [(p["remote_topic"], p["lag"]) for p in mine] == [(f"primary.{topic}", 0)] * 2
    assert any(g["group"] == group and g["state"] == "current" for g in document["groups"])
    assert document["heartbeat_age_seconds"] < 30
    # A group MM2 never checkpoints (groups.exclude) named with -g: WARNING until --max-wait.
    never = name("nocp")
    consume(mirrored.source, never, topic, 10)
    waiting = kctl("mirror", "status", "--source", mirrored.source, "--target", mirrored.target, "--exclude-groups", "nocp-.*",
                   "-g", never, "--watch", "--exit-when-healthy", "--interval", "0.5", "--max-wait", "2", "-o", "json")
    assert waiting.exit_code == 1 and f"not yet checkpointed at their committed offsets: {never}" in last_document(waiting.stdout)["reasons"][-1]
    critical = kctl("mirror", "status", "--source", mirrored.source, "--target", mirrored.target, "--max-heartbeat-age", "0.001")
    assert critical.exit_code == 2 and "CRITICAL" in critical.stdout, critical.stdout


def test_bad_input(kctl, mirrored, tmp_path):
    bundled_pair_only(mirrored)
    from kctl.broker.process import BrokerProcess

    pair = ("--source", mirrored.source, "--target", mirrored.target)
    alias = kctl("mirror", "translate", "g", *pair, "--source-alias", "nope")
    assert alias.exit_code == 5 and "nope" in alias.stderr and "primary" in alias.stderr and "\n" == alias.stderr[-1:]
    same = kctl("mirror", "status", "--source", mirrored.target, "--target", mirrored.target)
    assert same.exit_code == 64 and "both the source and the target" in same.stderr
    context = kctl("mirror", "status", "--source", "prod", "--target", mirrored.target)
    assert context.exit_code == 5 and "no such context" in context.stderr
    unknown = kctl("mirror", "translate", name("ghost"), *pair)
    assert unknown.exit_code == 5 and "no checkpoints" in unknown.stderr
    regex = kctl("mirror", "translate", "--group-regex", "(", *pair)
    assert regex.exit_code == 64
    plain = BrokerProcess(tmp_path / "plain")
    bootstrap = plain.start()
    try:
        nothing = kctl("mirror", "status", "--source", mirrored.source, "--target", bootstrap)
        assert nothing.exit_code == 5 and "does not seem to replicate" in nothing.stderr, nothing.stderr
    finally:
        plain.stop()
    for result in (alias, same, context, unknown, nothing):
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) <= 2


def test_a_share_group_is_refused_in_one_line(kctl, mirrored):
    """Share groups (KIP-932) have no committed offsets for MM2 to checkpoint."""
    import subprocess

    if mirrored.kafka is None:
        pytest.skip("runs on the Apache Kafka source pair, whose node has Kafka's console share consumer")
    topic, group = name("mm-shared"), name("sharing")
    create(mirrored.source, topic, 1)
    consumer = subprocess.Popen(
        mirrored.kafka.tool_command("org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server",
                                    mirrored.source, "--topic", topic, "--group", group),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def listed():
            result = kctl("-b", mirrored.source, "group", "list", "--type", "share", "-o", "json")
            assert group in {g["group"] for g in json.loads(result.stdout)}
        eventually(listed, timeout=60, interval=0.5)
        refused = kctl("mirror", "translate", group, "--source", mirrored.source, "--target", mirrored.target)
        assert refused.exit_code == 64 and "share group" in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 2  # the error and its hint
    finally:
        consumer.terminate()
        consumer.wait(30)
