"""`__consumer_offsets` on the bundled broker: Kafka's record format (Kafka's own
OffsetsMessageFormatter and GroupMetadataMessageFormatter read it), an internal topic
(listed as one, never written or deleted by clients), the offsets read back from it on
start, and a data directory of an earlier kctl (offsets in a JSON-lines journal) moved
into it."""

from __future__ import annotations

import json
import re

import pytest
from confluent_kafka import KafkaError, Producer

from kctl.broker.process import BrokerProcess
from kctl.errors import ExitCode
from tests.broker.clients import _consume_all, _create, _produce

pytestmark = pytest.mark.integration


def formatted(kafka_tools, bootstrap: str, formatter: str) -> list[dict]:
    proc = kafka_tools.run_tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", bootstrap, "--topic", "__consumer_offsets",
        "--formatter", f"org.apache.kafka.tools.consumer.{formatter}", "--from-beginning", "--timeout-ms", "5000",
        timeout=90)
    # The formatters print one JSON object per record, not always a line each.
    return [json.loads(text) for text in re.findall(r'\{"key":.*?\}\}(?=\{"key"|\s|$)', proc.stdout)] or \
        pytest.fail(f"nothing formatted: {proc.stdout[-500:]} {proc.stderr[-500:]}")


def test_kafkas_formatters_read_commits_and_group_metadata(broker, kafka_tools):
    _create(broker.bootstrap, "fmt", 2)
    _produce(broker.bootstrap, "fmt", [b"r%d" % i for i in range(10)])
    assert len(_consume_all(broker.bootstrap, "fmt", 10, group="billing")) == 10

    commits = [r for r in formatted(kafka_tools, broker.bootstrap, "OffsetsMessageFormatter")
               if r["key"]["data"].get("group") == "billing"]
    latest = {r["key"]["data"]["partition"]: r["value"]["data"]["offset"] for r in commits if r["value"]}
    assert {r["key"]["type"] for r in commits} == {1}
    assert sum(latest.values()) == 10
    groups = [r for r in formatted(kafka_tools, broker.bootstrap, "GroupMetadataMessageFormatter")
              if r["key"]["data"].get("group") == "billing"]
    assert groups and groups[0]["value"]["data"]["protocolType"] == "consumer"
    assert groups[-1]["value"]["data"]["members"] == []  # the consumer closed: an empty group


def test_an_internal_topic_clients_cannot_write_or_delete(kctl, broker):
    b = broker.bootstrap
    assert "__consumer_offsets" not in kctl("-b", b, "topic", "list", "--internal").stdout  # until a group needs it
    _create(b, "first", 1)
    _produce(b, "first", [b"x"])
    assert len(_consume_all(b, "first", 1, group="first-group")) == 1
    listed = {t["name"]: t for t in json.loads(kctl("-b", b, "topic", "list", "--internal", "-o", "json").stdout)}
    assert (listed["__consumer_offsets"]["partitions"], listed["__consumer_offsets"]["internal"]) == (50, True)
    assert "__consumer_offsets" not in kctl("-b", b, "topic", "list").stdout
    errors = []
    producer = Producer({"bootstrap.servers": b})
    producer.produce("__consumer_offsets", key=b"k", value=b"v", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(15)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_EXCEPTION]
    deleted = kctl("-b", b, "topic", "delete", "__consumer_offsets", "--yes")
    assert (deleted.exit_code, deleted.stderr) == (ExitCode.INVALID, "error: unable to delete topic: INVALID_REQUEST: Invalid request\n")
    assert "__consumer_offsets" in kctl("-b", b, "topic", "list", "--internal").stdout


def test_offsets_come_back_from_the_topic_and_from_an_old_journal(tmp_path, kctl):
    process = BrokerProcess(tmp_path / "data")
    process.start()
    try:
        _create(process.bootstrap, "kept", 1)
        _produce(process.bootstrap, "kept", [b"a", b"b", b"c"])
        assert len(_consume_all(process.bootstrap, "kept", 3, group="reader")) == 3
        process.kill()
        # What an earlier kctl kept in its journal, for a group the topic does not know.
        (tmp_path / "data" / "consumer-offsets.jsonl").write_text(
            json.dumps({"commit": "old-group", "offsets": [["kept", 0, 2, -1, "from the journal", 1700000000000]]}) + "\n")
        process.restart()
        assert not (tmp_path / "data" / "consumer-offsets.jsonl").exists()
        for group, offset in (("reader", 3), ("old-group", 2)):
            described = kctl("-b", process.bootstrap, "group", "describe", group, "-o", "json")
            assert described.exit_code == 0, described.stderr
            assert [(o["topic"], o["partition"], o["offset"]) for o in json.loads(described.stdout)[0]["offsets"]] == [("kept", 0, offset)]
        process.restart()  # and once more, now from the topic alone
        described = json.loads(kctl("-b", process.bootstrap, "group", "describe", "old-group", "-o", "json").stdout)
        assert described[0]["offsets"][0]["offset"] == 2
        gone = kctl("-b", process.bootstrap, "group", "delete", "old-group", "--yes")
        assert gone.exit_code == 0, gone.stderr
        process.restart()
        assert kctl("-b", process.bootstrap, "group", "describe", "old-group").exit_code == ExitCode.NOT_FOUND
    finally:
        process.stop()
