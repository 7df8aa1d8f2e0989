"""Searching records (issue 58): `record consume --where` (CEL over key, value, headers,
timestamp, partition, offset, topic) and `--key`, which reads only the partition the key
maps to; keys are placed by murmur2 as Kafka's Java producer places them (its
ConsoleProducer is the oracle)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from confluent_kafka import Producer

pytestmark = pytest.mark.integration


def seed(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for i in range(60):
        kind = "refund" if i % 3 == 0 else "sale"
        producer.produce(topic, key=f"k-{i}".encode(), value=json.dumps({"type": kind, "amount": i * 10, "id": i}).encode(),
                         headers=[("source", b"web" if i % 2 else b"app")], timestamp=1_700_000_000_000 + i * 1000)
    producer.produce(topic, key=b"plain", value=b"not json at all")
    producer.produce(topic, key=None, value=None)
    producer.flush(30)


def consumed(kctl, bootstrap: str, *args: str) -> tuple[list[dict], str]:
    run = kctl("-b", bootstrap, "record", "consume", *args, "-o", "jsonl")
    assert run.exit_code == 0, run.stderr
    return [json.loads(line) for line in run.stdout.splitlines()], run.stderr


def test_where_selects_by_json_fields_headers_keys_and_times(kctl, cluster, unique_name):
    topic = unique_name("search")
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "3", "-c", "retention.ms=-1").exit_code == 0
    seed(cluster.bootstrap, topic)

    rows, _ = consumed(kctl, cluster.bootstrap, topic, "--where", 'value.type == "refund" && value.amount > 400')
    assert sorted(json.loads(r["value"])["id"] for r in rows) == [i for i in range(60) if i % 3 == 0 and i * 10 > 400]
    rows, _ = consumed(kctl, cluster.bootstrap, topic, "--where", 'headers["source"] == "web" && key.endsWith("7")')
    assert sorted(r["key"] for r in rows) == sorted(f"k-{i}" for i in range(60) if i % 2 and str(i).endswith("7"))
    rows, _ = consumed(kctl, cluster.bootstrap, topic, "--where", "timestamp >= 1700000055000 && partition >= 0 && offset >= 0")
    assert sorted(r["key"] for r in rows if (r["key"] or "").startswith("k-")) == sorted(f"k-{i}" for i in range(55, 60))
    # A value that is not JSON is its text; a null value is null.
    rows, _ = consumed(kctl, cluster.bootstrap, topic, "--where", 'value == "not json at all" || value == null')
    assert sorted((r["key"] or "", r["value"] or "") for r in rows) == [("", ""), ("plain", "not json at all")]
    rows, _ = consumed(kctl, cluster.bootstrap, topic, "--where", f'topic == "{topic}" && size(key) > 3 && key.matches("^k-5[0-9]$")')
    assert sorted(r["key"] for r in rows) == [f"k-{i}" for i in range(50, 60)]

    # Records the expression fails on (no such field, a text value) do not match, and are counted.
    rows, err = consumed(kctl, cluster.bootstrap, topic, "--where", "value.missing > 1")
    assert rows == [] and "--where failed on 62 record(s), which did not match" in err, err
    # The first failure is said in CEL's words, with the record it failed on.
    assert re.search(rf"the first: (no such key: missing|no such overload: [a-z ]+) \({topic} partition \d+ offset \d+\)\n", err), err


def test_where_that_does_not_parse_is_one_line(kctl, cluster, unique_name):
    topic = unique_name("search")
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-c", "retention.ms=-1").exit_code == 0
    for expression, says in (('value.type == "refund" &&', "column 26: Syntax error"),
                             ("vlaue.amount > 1", "unknown variable 'vlaue'"),
                             ("value.amount + 1", None)):
        run = kctl("-b", cluster.bootstrap, "record", "consume", topic, "--where", expression)
        if says is None:  # no record to evaluate it on: nothing to say
            assert run.exit_code == 0, run.stderr
            continue
        assert run.exit_code == 64 and len(run.stderr.splitlines()) == 1 and says in run.stderr, run.stderr


def test_key_reads_the_partition_javas_producer_puts_it_in(kctl, cluster, kafka_tools, unique_name, tmp_path):
    """Keys written by Kafka's Java ConsoleProducer (murmur2) are found by `--key` reading one
    partition, and kctl's own produce puts every key where the Java producer did."""
    java, ours = unique_name("java"), unique_name("kctl")
    for topic in (java, ours):
        assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "7", "-c", "retention.ms=-1").exit_code == 0
    lines = "".join(f"user-{i}:{i}\n" for i in range(200))
    proc = subprocess.run(kafka_tools.tool_command("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", cluster.bootstrap,
                                                   "--topic", java, "--property", "parse.key=true", "--property", "key.separator=:"),
                          input=lines, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr
    produced = kctl("-b", cluster.bootstrap, "record", "produce", ours, "-K", ":", input=lines)
    assert produced.exit_code == 0, produced.stderr
    theirs = {r["key"]: r["partition"] for r in consumed(kctl, cluster.bootstrap, java)[0]}
    mine = {r["key"]: r["partition"] for r in consumed(kctl, cluster.bootstrap, ours)[0]}
    assert len(theirs) == 200 and mine == theirs

    for key in ("user-3", "user-150"):
        rows, err = consumed(kctl, cluster.bootstrap, java, "--key", key)
        assert [(r["key"], r["partition"]) for r in rows] == [(key, theirs[key])]
        assert f"reading only {java}:{theirs[key]}, where murmur2 puts key '{key}'" in err, err
    # librdkafka's default partitioner puts keys elsewhere: --partitioner names it, all reads everything.
    consistent = unique_name("crc")
    assert kctl("-b", cluster.bootstrap, "topic", "create", consistent, "-p", "7", "-c", "retention.ms=-1").exit_code == 0
    assert kctl("-b", cluster.bootstrap, "record", "produce", consistent, "-K", ":", "--partitioner", "consistent", input=lines).exit_code == 0
    placed = {r["key"]: r["partition"] for r in consumed(kctl, cluster.bootstrap, consistent)[0]}
    moved = next(k for k in placed if placed[k] != theirs[k])
    assert consumed(kctl, cluster.bootstrap, consistent, "--key", moved)[0] == []
    assert len(consumed(kctl, cluster.bootstrap, consistent, "--key", moved, "--partitioner", "consistent")[0]) == 1
    assert len(consumed(kctl, cluster.bootstrap, consistent, "--key", moved, "--partitioner", "all")[0]) == 1
