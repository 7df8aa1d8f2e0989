"""Log compaction with the same assertions on the bundled broker and on Apache Kafka: the
latest value of every key survives, tombstones go after delete.retention.ms, records of
aborted transactions go, keys are required. Then the bundled broker's cleaner under kill -9:
a crash mid-clean leaves each segment as it was or as cleaned, never a mix."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker.reading import read_partition
from tests.support.eventually import eventually, within

# Compared with Apache Kafka on its single node (tests/backends/plugin.py).
pytestmark = [pytest.mark.integration, pytest.mark.single_node]

FAST = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "0"}


@pytest.fixture
def compacting(cluster, kctl):
    """A single node whose log cleaner looks for work every second (the test Kafka's
    configuration; a dynamic broker config on the bundled broker)."""
    if cluster.nodes != 1:
        pytest.skip("compaction is compared on single nodes")
    bundled = cluster.backend == "bundled"
    if bundled:
        set_backoff(kctl, cluster.bootstrap, 1000)
    yield cluster
    if bundled:
        # The session's broker is shared: a cluster default left behind showed in another
        # module's `config` test when both ran on one worker.
        result = kctl("-b", cluster.bootstrap, "config", "alter", "broker-default", "--delete", "log.cleaner.backoff.ms")
        assert result.exit_code == 0, result.stderr


def set_backoff(kctl, bootstrap: str, ms: int) -> None:
    result = kctl("-b", bootstrap, "config", "alter", "broker-default", "--set", f"log.cleaner.backoff.ms={ms}")
    assert result.exit_code == 0, result.stderr


def create(bootstrap: str, topic: str, configs: dict) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(15)


read = read_partition


def roll(producer: Producer, topic: str) -> None:
    """Write to the active segment after segment.ms, so the segment before it rolls and
    becomes cleanable (the active segment never is)."""
    time.sleep(0.2)  # the point: segment.ms (100 ms) passes
    producer.produce(topic, key=b"roll", value=b"x", partition=0)
    producer.flush(15)


def test_the_latest_value_of_each_key_survives_and_tombstones_go(compacting, unique_name):
    b, topic = compacting.bootstrap, unique_name("compact")
    create(b, topic, FAST)
    producer = Producer({"bootstrap.servers": b, "linger.ms": 5, "compression.type": "lz4"})
    for round_ in range(3):
        for i in range(5):
            producer.produce(topic, key=f"k{i}".encode(), value=f"v{round_}-{i}".encode(), partition=0)
        producer.flush(15)
        roll(producer, topic)
    producer.produce(topic, key=b"k1", value=None, partition=0)  # a tombstone
    producer.flush(15)

    expected = [(f"k{i}".encode(), f"v2-{i}".encode()) for i in (0, 2, 3, 4)]

    def compacted():
        roll(producer, topic)
        kept = [(k, v) for k, v in read(b, topic) if k != b"roll"]
        assert kept == expected, kept

    eventually(compacted, timeout=60, interval=1)


def test_keyless_records_are_refused_by_a_compacted_topic(compacting, unique_name):
    b, topic = compacting.bootstrap, unique_name("nokey")
    create(b, topic, {"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": b})
    errors = []
    producer.produce(topic, key=b"k", value=b"kept", partition=0)
    producer.flush(15)  # a batch with one keyless record is refused whole, by Kafka too
    producer.produce(topic, value=b"no key", partition=0, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(15)
    assert [e.code() for e in errors] == [KafkaError.INVALID_RECORD]
    assert read(b, topic) == [(b"k", b"kept")]


def test_aborted_transactions_are_cleaned_away(compacting, unique_name):
    b, topic = compacting.bootstrap, unique_name("txn-compact")
    create(b, topic, FAST)
    producer = Producer({"bootstrap.servers": b, "transactional.id": unique_name("tx"), "linger.ms": 5})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, key=b"a", value=b"committed", partition=0)
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, key=b"a", value=b"aborted", partition=0)
    producer.produce(topic, key=b"b", value=b"aborted", partition=0)
    producer.flush(30)
    producer.abort_transaction(30)
    plain = Producer({"bootstrap.servers": b, "linger.ms": 5})

    def cleaned():
        roll(plain, topic)
        # read_uncommitted sees what the log holds: the aborted records are gone from it.
        assert [(k, v) for k, v in read(b, topic) if k != b"roll"] == [(b"a", b"committed")]

    eventually(cleaned, timeout=60, interval=1)
    assert [(k, v) for k, v in read(b, topic, "read_committed") if k != b"roll"] == [(b"a", b"committed")]


# -- the bundled broker's cleaner under kill -9 ------------------------------------------------------

WRITER = r"""
import os, sys
from confluent_kafka import Producer
bootstrap, rounds = sys.argv[1], int(sys.argv[2])
p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1000000, "compression.type": "zstd"})
for r in range(rounds):
    for k in range(8000):  # values that do not compress: 2 MiB segments fill up
        p.produce("crash-compact", key=b"key-%05d" % k, value=b"%04d" % r + os.urandom(400), partition=0)
    p.flush(60)
"""


def test_kill_9_while_cleaning_leaves_old_or_new_segments(tmp_path, kctl, monkeypatch):
    from kctl.broker.process import BrokerProcess

    # The cleaner's worker pauses 150 ms after each of the ~24 segments it writes, so the
    # kills below land at different points of a clean, not after it.
    monkeypatch.setenv("KCTL_CLEANER_SEGMENT_PAUSE_MS", "150")
    process = BrokerProcess(tmp_path / "data")
    b = process.start()
    try:
        create(b, "crash-compact", {"cleanup.policy": "compact", "segment.bytes": str(2 * 1024 * 1024),
                                    "min.cleanable.dirty.ratio": "0.01"})
        set_backoff(kctl, b, 600_000)  # nothing is cleaned while the log is written
        subprocess.run([sys.executable, "-c", WRITER, b, "12"], check=True, timeout=300)
        set_backoff(kctl, b, 200)
        directory = tmp_path / "data" / "crash-compact-0"
        expected = {b"key-%05d" % k: b"0011" for k in range(8000)}
        mid_clean = 0
        for attempt in range(8):
            # Kill at a different moment each time; count the kills that caught the
            # cleaner's output half written.
            within(lambda: list(directory.glob("*.cleaned")), timeout=5 + attempt * 0.1, interval=0.02)
            time.sleep(0.3 * attempt)  # the point: each kill a little later into the cleaning
            mid_clean += bool(list(directory.glob("*.cleaned")))
            process.kill()
            process.restart()
            assert not list(directory.glob("*.cleaned"))
            latest = {key: value[:4] for key, value in read(b, "crash-compact")}
            # Nothing lost, nothing mixed: every key still ends with its last value.
            assert latest == expected
        assert mid_clean >= 6

        def cleaned():
            assert "cleaned crash-compact-0" in process.log_path.read_text()

        eventually(cleaned, timeout=60, interval=0.5)
        records = read(b, "crash-compact")
        assert {key: value[:4] for key, value in records} == expected
        assert len(records) < 12 * 8000
    finally:
        process.stop()
