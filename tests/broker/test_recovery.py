"""Durability: restarts keep data and committed offsets; kill -9 loses no acknowledged
record; torn tails, missing indexes and stale checkpoints are repaired on start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from kctl.broker.process import BrokerProcess, BrokerProcessError
from tests.broker.clients import _consume_all, _create, _produce
from tests.support.eventually import until


def test_restart_keeps_records_and_committed_offsets(broker):
    _create(broker.bootstrap, "durable", 2)
    _produce(broker.bootstrap, "durable", [b"a%d" % i for i in range(50)])
    assert len(_consume_all(broker.bootstrap, "durable", 50, group="g")) == 50
    broker.restart()
    _produce(broker.bootstrap, "durable", [b"b%d" % i for i in range(10)])
    # The group resumes from its committed offsets: only the new records.
    assert sorted(_consume_all(broker.bootstrap, "durable", 10, group="g")) == sorted(b"b%d" % i for i in range(10))
    assert (broker.data_dir / ".kafka_cleanshutdown").exists() is False  # removed while running
    assert (broker.data_dir / "durable-0" / "00000000000000000000.log").exists()


KILL_PRODUCER = r"""
import sys
from confluent_kafka import Producer
bootstrap, start = sys.argv[1], int(sys.argv[2])
acked = open(sys.argv[3], "a", buffering=1)
def report(err, msg):
    if err is None:
        acked.write(msg.value().decode() + "\n")
p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
              "linger.ms": 2, "message.timeout.ms": 60000, "reconnect.backoff.max.ms": 100})
i = start
while True:
    p.produce("crash", value=b"%08d" % i, on_delivery=report)
    i += 1
    p.poll(0)
    if i % 200 == 0:
        p.flush(0.05)
"""


def test_kill_9_loses_no_acknowledged_record(tmp_path):
    """Kill -9 the broker 25 times under an idempotent acks=all producer: afterwards
    every acknowledged record is present exactly once, in order."""
    process = BrokerProcess(tmp_path / "data")
    process.start()
    try:
        _create(process.bootstrap, "crash")
        acked_file = tmp_path / "acked"
        script = tmp_path / "producer.py"
        script.write_text(KILL_PRODUCER)
        producer = subprocess.Popen([sys.executable, str(script), process.bootstrap, "0", str(acked_file)])
        try:
            # Each kill comes once the producer has had records acknowledged since the last
            # restart (the first once it has its producer id): every kill cuts acknowledged
            # traffic, however slowly a loaded machine lets the producer resume.
            # How far into the traffic each kill comes varies: 1 to 301 records after the last.
            for kill in range(25):
                wanted = _acks(acked_file) + 1 + 100 * (kill % 4)
                until(lambda wanted=wanted: _acks(acked_file) >= wanted, timeout=30, interval=0.05)
                process.kill()
                process.restart()
            before = _acks(acked_file)
            until(lambda: _acks(acked_file) > before, timeout=30, interval=0.05)
        finally:
            producer.send_signal(signal.SIGKILL)
            producer.wait()
        acked = acked_file.read_text().split()
        assert len(acked) > 100
        stored = [v.decode() for v in _consume_all(process.bootstrap, "crash", len(acked), timeout=30)]
        # Every acknowledged record is stored; nothing is stored twice; order is kept.
        duplicated = len(stored) - len(set(stored))
        lost = sorted(set(acked) - set(stored))
        assert (duplicated, lost) == (0, [])
        assert stored == sorted(stored)
    finally:
        process.stop()


def test_torn_tail_is_truncated_at_the_last_valid_batch(tmp_path):
    process = BrokerProcess(tmp_path / "data")
    process.start()
    _create(process.bootstrap, "torn")
    _produce(process.bootstrap, "torn", [b"r%d" % i for i in range(20)], **{"batch.num.messages": 1})
    process.kill()
    segment = tmp_path / "data" / "torn-0" / "00000000000000000000.log"
    good = segment.stat().st_size
    with open(segment, "ab") as handle:  # half a batch: a write cut short by a crash
        handle.write(bytes(segment.read_bytes()[:40]))
    (tmp_path / "data" / "torn-0" / "00000000000000000000.index").unlink()  # a missing index
    (tmp_path / "data" / "recovery-point-offset-checkpoint").write_text("0\n1\ntorn 0 999\n")  # stale
    process.restart()
    try:
        assert segment.stat().st_size == good
        assert [v for v in _consume_all(process.bootstrap, "torn", 20)] == [b"r%d" % i for i in range(20)]
        _produce(process.bootstrap, "torn", [b"after"])
        assert len(_consume_all(process.bootstrap, "torn", 21)) == 21
        assert "truncated 40 invalid bytes" in process.log_path.read_text()
    finally:
        process.stop()


def test_corrupted_batch_in_the_middle_cuts_the_log_there(tmp_path):
    process = BrokerProcess(tmp_path / "data")
    process.start()
    _create(process.bootstrap, "flip")
    for i in range(3):
        _produce(process.bootstrap, "flip", [b"x%d" % i])
    process.kill()
    segment = tmp_path / "data" / "flip-0" / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    first = 12 + int.from_bytes(data[8:12], "big")
    data[first + 40] ^= 0xFF  # flip a byte inside the second batch: its CRC no longer matches
    segment.write_bytes(bytes(data))
    process.restart()
    try:
        assert _consume_all(process.bootstrap, "flip", 1, timeout=5) == [b"x0"]
        assert segment.stat().st_size == first
    finally:
        process.stop()


def test_unusable_data_dirs_fail_with_one_clear_line(tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("not kafka")
    with pytest.raises(BrokerProcessError, match="not empty and has no meta.properties"):
        BrokerProcess(foreign).start()
    assert (foreign / "precious.txt").read_text() == "not kafka"

    corrupt = tmp_path / "corrupt"
    process = BrokerProcess(corrupt)
    process.start()
    process.stop()
    (corrupt / "kctl-metadata.json").write_text("{not json")
    with pytest.raises(BrokerProcessError, match="kctl-metadata.json is corrupt"):
        BrokerProcess(corrupt).start()

    if os.geteuid() != 0:  # root ignores permissions
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(BrokerProcessError, match="not writable"):
            BrokerProcess(locked / "data").start()


def test_port_in_use_is_reported(broker, tmp_path):
    port = int(broker.bootstrap.rsplit(":", 1)[1])
    with pytest.raises(BrokerProcessError, match=f"cannot listen on 127.0.0.1:{port}"):
        BrokerProcess(tmp_path / "other", port=port).start()


def _acks(path) -> int:
    """How many records the producer has had acknowledged."""
    return len(path.read_text().split()) if path.exists() else 0
