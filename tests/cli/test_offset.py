"""kctl offset get and kctl record delete against real brokers, with records produced by
a real client at known timestamps."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kctl.errors import ExitCode

pytestmark = [pytest.mark.integration, pytest.mark.kafka39]

BASE_MS = 1_790_000_000_000  # 2026-09-21T14:13:20Z


@pytest.fixture
def filled(kctl, cluster, unique_name):
    """A 3-partition topic; partition p holds 10 * (p + 1) records, record i at BASE_MS + i minutes."""
    topic = unique_name("off")
    # Months-old timestamps: keep the records from time-based retention.
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "3", "-c", "retention.ms=-1").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    for partition in range(3):
        for i in range(10 * (partition + 1)):
            producer.produce(topic, value=f"{partition}-{i}".encode(), partition=partition, timestamp=BASE_MS + i * 60_000)
    assert producer.flush(30) == 0
    return topic


def offsets(kctl, cluster, *args):
    result = kctl("-b", cluster.bootstrap, "offset", "get", *args, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_earliest_latest_and_partition_syntax(kctl, cluster, filled):
    rows = offsets(kctl, cluster, filled)
    assert [(r["partition"], r["earliest"], r["latest"], r["span"]) for r in rows] == [(0, 0, 10, 10), (1, 0, 20, 20), (2, 0, 30, 30)]
    assert [r["partition"] for r in offsets(kctl, cluster, f"{filled}:1-")] == [1, 2]
    assert [r["partition"] for r in offsets(kctl, cluster, f"{filled}:0,2")] == [0, 2]
    plain = kctl("-b", cluster.bootstrap, "offset", "get", f"{filled}:2").stdout
    assert plain == f"TOPIC\tPARTITION\tEARLIEST\tLATEST\tSPAN\n{filled}\t2\t0\t30\t30\n"


def test_offsets_of_topics_created_a_moment_ago(kctl, cluster, unique_name):
    """A KRaft broker learns of a new partition a moment after the controller names it the
    leader, and answers ListOffsets in between with NOT_LEADER_OR_FOLLOWER: kctl asks
    again rather than fail (a Spark dump of a topic just created failed on it). Of three
    brokers, the one asked may not know the topic at all yet (10-30 ms here): the others
    are asked before kctl says "no such topic" (once each: a name no broker knows is said
    at once, so a command started while another client's CreateTopics is still under way
    may say it, as Kafka's own tools do)."""
    from kctl.admin.client.session import AdminSession
    from kctl.config.model import ClientSettings
    from tests.support.eventually import until

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    session = AdminSession(ClientSettings(bootstrap_servers=cluster.bootstrap, properties={}, timeout=10, context=None))
    try:
        for attempt in range(5):
            topic = unique_name(f"fresh{attempt}")
            admin.create_topics([NewTopic(topic, 4, 1)])[topic].result()
            # Once one broker knows it (not necessarily the one kctl asks first).
            until(lambda: session.kafka.metadata([topic], "test").has(topic), timeout=10, interval=0.01)  # noqa: B023
            rows = offsets(kctl, cluster, topic)
            assert [(r["partition"], r["earliest"], r["latest"]) for r in rows] == [(p, 0, 0) for p in range(4)]
    finally:
        session.close()


def test_offsets_by_timestamp_and_max_timestamp(kctl, cluster, filled):
    at = BASE_MS + 15 * 60_000  # the 16th record's timestamp
    result = kctl("-b", cluster.bootstrap, "offset", "get", filled, "--at", str(at), "--max-timestamp", "-o", "json")
    assert result.exit_code == 0
    assert result.stderr == f"--at {at} is 2026-09-21T14:28:20.000Z ({at})\n"
    rows = json.loads(result.stdout)
    # Partition 0 has only 10 records (all older): a consumer seeking there starts at the end.
    assert [(r["offset_at"], r["timestamp_at"]) for r in rows] == [(10, None), (15, at), (15, at)]
    assert [(r["max_timestamp_offset"], r["max_timestamp"]) for r in rows] == [
        (9, BASE_MS + 9 * 60_000),
        (19, BASE_MS + 19 * 60_000),
        (29, BASE_MS + 29 * 60_000),
    ]
    iso = offsets(kctl, cluster, f"{filled}:2", "--at", "2026-09-21T14:28:20Z")
    assert iso[0]["offset_at"] == 15
    text = kctl("-b", cluster.bootstrap, "offset", "get", f"{filled}:2", "--at", str(at), "--no-headers").stdout
    assert text == f"{filled}\t2\t0\t30\t30\t15\t2026-09-21T14:28:20.000Z\n"


def test_bad_selectors_and_times(kctl, cluster, filled, unique_name):
    missing = unique_name("missing")
    result = kctl("-b", cluster.bootstrap, "offset", "get", missing)
    assert (result.exit_code, result.stderr) == (
        ExitCode.NOT_FOUND,
        f"error: unable to list offsets of topic {missing}: UNKNOWN_TOPIC_OR_PARTITION: no such topic\n",
    )
    result = kctl("-b", cluster.bootstrap, "offset", "get", f"{filled}:5")
    assert (result.exit_code, result.stderr) == (
        ExitCode.NOT_FOUND,
        f"error: unable to list offsets of {filled}: partition 5 does not exist (the topic has 3)\n",
    )
    assert kctl("-b", cluster.bootstrap, "offset", "get", f"{filled}:a-b").exit_code == ExitCode.USAGE
    result = kctl("-b", cluster.bootstrap, "offset", "get", filled, "--at", "yesterday-ish")
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.startswith("error: unable to parse time 'yesterday-ish': expected ISO-8601")


def test_record_delete_plan_then_delete(kctl, cluster, filled):
    dry = kctl("-b", cluster.bootstrap, "record", "delete", filled, "--before", "12", "--dry-run", "-o", "json")
    assert dry.exit_code == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert [(p["partition"], p["delete_before"], p["records_deleted"], p["status"]) for p in plan] == [
        (0, 10, 10, "planned"),
        (1, 12, 12, "planned"),
        (2, 12, 12, "planned"),
    ]
    assert dry.stderr == "would delete 34 record(s) in 3 partition(s)\n"
    assert [r["earliest"] for r in offsets(kctl, cluster, filled)] == [0, 0, 0]

    refused = kctl("-b", cluster.bootstrap, "record", "delete", filled, "--before", "12")
    assert refused.exit_code == ExitCode.ABORTED
    assert [r["earliest"] for r in offsets(kctl, cluster, filled)] == [0, 0, 0]

    done = kctl("-b", cluster.bootstrap, "record", "delete", filled, "--before", "12", "--yes", "-o", "json")
    assert done.exit_code == 0, done.stderr
    assert [(r["status"], r["low_watermark"]) for r in json.loads(done.stdout)] == [("deleted", 10), ("deleted", 12), ("deleted", 12)]
    assert [r["earliest"] for r in offsets(kctl, cluster, filled)] == [10, 12, 12]

    again = kctl("-b", cluster.bootstrap, "record", "delete", filled, "--before", "5", "--yes")
    assert again.exit_code == 0
    assert again.stderr == "nothing to delete: 0 record(s) in 0 partition(s)\n"


def test_record_delete_by_time_and_to_end(kctl, cluster, filled):
    cutoff = BASE_MS + 5 * 60_000
    result = kctl("-b", cluster.bootstrap, "record", "delete", f"{filled}:1", "--before", f"@{cutoff}", "--yes")
    assert result.exit_code == 0, result.stderr
    assert offsets(kctl, cluster, f"{filled}:1")[0]["earliest"] == 5
    result = kctl("-b", cluster.bootstrap, "record", "delete", f"{filled}:2", "--before", "end", "--yes")
    assert result.exit_code == 0
    assert offsets(kctl, cluster, f"{filled}:2")[0]["earliest"] == 30
    assert kctl("-b", cluster.bootstrap, "record", "delete", filled, "--before", "soon").exit_code == ExitCode.USAGE
