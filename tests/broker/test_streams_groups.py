"""Streams groups (KIP-1071) on the bundled broker: Kafka's WordCountDemo (Kafka Streams
4.x, group.protocol=streams, exactly-once) counts the same words as on Apache Kafka, across
a kill -9 of the broker; the topology's internal topics are created by the broker; and
the topology configuration and task assignment on their own."""

from __future__ import annotations

import struct
import subprocess
import time
from types import SimpleNamespace

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kctl.broker.coordinator.streams import MISSING_INTERNAL_TOPICS, MISSING_SOURCE_TOPICS, StreamsMember, Topology, configure, sticky_assignment

pytestmark = pytest.mark.integration

INPUT, OUTPUT = "streams-plaintext-input", "streams-wordcount-output"  # WordCountDemo's fixed topics
LINES = ["all streams lead to kafka", "hello kafka streams", "join kafka summit"]
MORE = ["kafka streams again", "summit of streams"]


def _topology(**subtopologies):
    def info(name):
        return SimpleNamespace(name=name, partitions=0, replication_factor=-1, topic_configs=[])

    subs = [SimpleNamespace(subtopology_id=sid, source_topics=spec.get("sources", []),
                            repartition_sink_topics=spec.get("sinks", []),
                            state_changelog_topics=[info(n) for n in spec.get("changelogs", [])],
                            repartition_source_topics=[info(n) for n in spec.get("repartition_sources", [])])
            for sid, spec in subtopologies.items()]
    return Topology.from_request(SimpleNamespace(epoch=0, subtopologies=subs))


def test_internal_topics_take_their_partitions_from_the_sources():
    wordcount = _topology(**{"0": {"sources": ["in"], "sinks": ["rep"]},
                             "1": {"repartition_sources": ["rep"], "changelogs": ["log"]}})
    missing = configure(wordcount, {})
    assert missing.status[0] == MISSING_SOURCE_TOPICS and "in" in missing.status[1]
    creating = configure(wordcount, {"in": 3})
    assert creating.status[0] == MISSING_INTERNAL_TOPICS
    assert sorted((t.name, t.partitions) for t in creating.create) == [("log", 3), ("rep", 3)]
    ready = configure(wordcount, {"in": 3, "rep": 3, "log": 3})
    assert ready.ready and ready.tasks == {"0": 3, "1": 3}
    assert configure(wordcount, {"in": 3, "rep": 2, "log": 3}).status[0] == 2  # INCORRECTLY_PARTITIONED_TOPICS


def test_tasks_are_balanced_and_sticky():
    members = {m: StreamsMember(m, "p", "c", "h", 1000) for m in ("a", "b")}
    first = sticky_assignment({"a": members["a"]}, {"0": 2, "1": 2}, {})
    assert first["a"] == {("0", 0), ("0", 1), ("1", 0), ("1", 1)}
    second = sticky_assignment(members, {"0": 2, "1": 2}, first)
    assert len(second["a"]) == len(second["b"]) == 2 and second["a"] <= first["a"]


# -- WordCountDemo ---------------------------------------------------------------------------------

def _produce(bootstrap, lines):
    producer = Producer({"bootstrap.servers": bootstrap})
    for line in lines:
        producer.produce(INPUT, line.encode())
    assert producer.flush(30) == 0


def _expected(lines) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in lines:
        for word in line.split():
            counts[word] = counts.get(word, 0) + 1
    return counts


def _counts(bootstrap, expected, timeout=90) -> dict[str, int]:
    """The newest count of each word in WordCountDemo's output (read_committed), once they
    are the expected ones or the time is up."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.time_ns()}",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([OUTPUT])
    counts: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    try:
        while counts != expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                counts[message.key().decode()] = struct.unpack(">q", message.value())[0]
    finally:
        consumer.close()
    return counts


def _run_wordcount(tools, bootstrap, tmp_path, app_id, between=None) -> dict[str, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(INPUT, 2), NewTopic(OUTPUT, 1)]).values():
        future.result(30)
    _produce(bootstrap, LINES)
    config = tmp_path / f"{app_id}.properties"
    config.write_text(f"application.id={app_id}\nbootstrap.servers={bootstrap}\ngroup.protocol=streams\n"
                      f"processing.guarantee=exactly_once_v2\ncommit.interval.ms=200\nstate.dir={tmp_path / app_id}\n")
    app = subprocess.Popen(tools.tool_command("org.apache.kafka.streams.examples.wordcount.WordCountDemo", str(config)),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert _counts(bootstrap, _expected(LINES)) == _expected(LINES)
        if between is not None:
            between()
        _produce(bootstrap, MORE)
        return _counts(bootstrap, _expected(LINES + MORE))
    finally:
        app.kill()
        app.wait()


def test_wordcount_on_the_bundled_broker_across_kill_9(broker, kafka_tools, tmp_path):
    counts = _run_wordcount(kafka_tools, broker.bootstrap, tmp_path, "wordcount-kill",
                            between=lambda: (broker.kill(), broker.restart()))
    assert counts == _expected(LINES + MORE)
    topics = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics
    internal = sorted(t for t in topics if t.startswith("wordcount-kill-"))
    assert [t.rsplit("-", 1)[1] for t in internal] == ["changelog", "repartition"]  # made by the broker
    assert all(len(topics[t].partitions) == 2 for t in internal)


def test_wordcount_on_apache_kafka_counts_the_same(kafka_cluster, tmp_path):
    if kafka_cluster.backend != "kafka":
        pytest.skip("the single Apache Kafka node is the reference")
    assert _run_wordcount(kafka_cluster.kafka, kafka_cluster.bootstrap, tmp_path, "wordcount-ref") == _expected(LINES + MORE)
