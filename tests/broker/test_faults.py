"""Resource faults a laptop or CI machine really has: few file descriptors, a second broker
on the same directory, a pid reused after kill -9, a full disk. After each, every record
that was acknowledged is there exactly once, in order, across clean and unclean restarts."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections import Counter

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kctl.broker.process import BrokerProcess, BrokerProcessError
from kctl.broker.storage.lock import holder
from kctl.errors import ExitCode
from tests.support.eventually import within


def _limit_open_files(limit: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    return apply


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions)], request_timeout=60)[topic].result(90)


def _produce(bootstrap: str, topic: str, records, **extra) -> tuple[list[bytes], Counter]:
    """Produce (partition, value) pairs; returns the acknowledged values and the errors."""
    acked, failed = [], Counter()

    def report(err, msg):
        if err is None:
            acked.append(msg.value())
        else:
            failed[err.name()] += 1

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 20, **extra})
    for partition, value in records:
        while True:
            try:
                producer.produce(topic, value=value, partition=partition, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    producer.flush(120)
    return acked, failed


def _read_all(bootstrap: str, topic: str, partitions: int, expected: int, timeout: float = 120) -> list[bytes]:
    """Every record of every partition from the beginning (no group), in partition order."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while len(values) < expected and time.monotonic() < deadline:
            for message in consumer.consume(10_000, 0.5):
                if not message.error():
                    values.append(message.value())
        # Anything past the expected count would be a duplicate: give it a moment to show.
        values += [m.value() for m in consumer.consume(10_000, 1.0) if not m.error()]
    finally:
        consumer.close()
    return values


def _exactly_once(acked: list[bytes], stored: list[bytes]) -> None:
    counts = Counter(stored)
    assert [v for v, n in counts.items() if n > 1] == []
    assert sorted(set(acked) - set(stored)) == []


def test_ten_thousand_partitions_under_ulimit_1024(tmp_path):
    """Open files are pooled, not held per segment: 10,000 partitions under `ulimit -n
    1024` take writes to every partition, and every acknowledged record is read back
    once, after a clean restart and after kill -9."""
    partitions = 10_000
    process = BrokerProcess(tmp_path / "data", preexec_fn=_limit_open_files(1024))
    process.start()
    try:
        _create(process.bootstrap, "wide", partitions)
        records = [(p, b"p%05d" % p) for p in range(partitions)]
        records += [(0, b"extra%d" % i) for i in range(5)]
        acked, failed = _produce(process.bootstrap, "wide", records)
        assert (len(acked), failed) == (len(records), Counter())

        # Loading (and, after kill -9, recovering) 10,000 partitions takes a few seconds
        # alone and several times that beside the rest of the suite: a start that is slow
        # is not what this test is about (CI failed at the default 15 s once).
        process.restart(timeout=120)
        more, failed = _produce(process.bootstrap, "wide", [(p, b"q%05d" % p) for p in range(0, partitions, 7)])
        assert failed == Counter()
        acked += more
        process.kill()
        process.start(timeout=120)
        # One read of all 10,000 partitions at the end (each took ~15 s here): a record
        # lost or doubled by the clean restart would still be missing or doubled now.
        stored = _read_all(process.bootstrap, "wide", partitions, len(acked))
        _exactly_once(acked, stored)
        assert "Too many open files" not in process.log_path.read_text()
    finally:
        process.stop()


def test_running_out_of_descriptors_is_retriable_and_loses_nothing(tmp_path):
    """Under `ulimit -n 64` idle client sockets take every descriptor the pool left free:
    accept() and log files fail with EMFILE, the broker says so in one line (no traceback),
    produce requests get a retriable error, and once the sockets go every record the
    producer retried is stored exactly once."""
    process = BrokerProcess(tmp_path / "data", preexec_fn=_limit_open_files(64))
    process.start()
    hogs = []
    try:
        _create(process.bootstrap, "few", 40)
        producer = Producer({"bootstrap.servers": process.bootstrap, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5, "message.timeout.ms": 60000})
        acked = []
        def report(err, msg):
            if err is None:
                acked.append(msg.value())

        producer.produce("few", b"first", partition=0, on_delivery=report)
        assert producer.flush(10) == 0  # connected before the descriptors run out
        host, port = process.bootstrap.rsplit(":", 1)
        for _ in range(80):
            hogs.append(socket.create_connection((host, int(port)), timeout=5))
        for i in range(400):
            producer.produce("few", b"r%03d" % i, partition=i % 40, on_delivery=report)
        producer.poll(2.0)
        for hog in hogs:
            hog.close()
        hogs.clear()
        assert producer.flush(60) == 0
        assert len(acked) == 401
        _exactly_once(acked, _read_all(process.bootstrap, "few", 40, len(acked)))
        log = process.log_path.read_text()
        assert "out of file descriptors" in log or "Too many open files" in log
        assert "Traceback" not in log
    finally:
        for hog in hogs:
            hog.close()
        process.stop()


def test_one_broker_per_data_directory(broker, tmp_path):
    data = broker.data_dir
    pid = broker.process.pid
    _create(broker.bootstrap, "mine", 1)
    acked, _ = _produce(broker.bootstrap, "mine", [(0, b"r%d" % i) for i in range(100)])

    with pytest.raises(BrokerProcessError, match=f"data directory {data} is in use by another broker \\(pid {pid}\\)"):
        BrokerProcess(data).start()

    foreground = subprocess.run(
        [sys.executable, "-m", "kctl", "local", "start", "--foreground", "--data-dir", str(data),
         "--port", "0", "--no-context"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert foreground.returncode == ExitCode.ERROR
    assert foreground.stderr == (f"error: unable to start the local broker: data directory {data} is in use "
                                 f"by another broker (pid {pid})\n")
    assert foreground.stdout == ""

    # The running broker lost nothing and still owns its directory.
    assert holder(data) == pid
    assert _read_all(broker.bootstrap, "mine", 1, 100) == acked


def test_a_stale_pid_is_never_taken_for_the_broker(kctl, tmp_path):
    """After kill -9 the broker's pid may belong to another process: status and start go by
    the directory's lock, and stop never signals a process that does not hold it."""
    data = tmp_path / "data"
    local = ("--data-dir", str(data))
    started = kctl("local", "start", "--port", "0", "--no-context", *local, "-o", "json")
    assert started.exit_code == 0, started.stderr
    first = json.loads(started.stdout)
    os.kill(first["pid"], signal.SIGKILL)  # our child: it stays a zombie, holding nothing
    within(lambda: holder(data) is None, timeout=10, interval=0.02)

    unrelated = subprocess.Popen(["sleep", "120"])
    try:
        # What a reused pid looks like: the leftovers name a live process that is no broker.
        (data / ".lock").write_text(f"{unrelated.pid}\n")
        (data / "broker.ready").write_text(f"{first['bootstrap']}\n{unrelated.pid}\n")

        status = kctl("local", "status", *local, "-o", "json")
        assert status.exit_code == ExitCode.UNKNOWN
        assert json.loads(status.stdout)["state"] == "stopped"
        assert "no local broker runs" in kctl("local", "stop", *local).stderr
        assert unrelated.poll() is None

        again = kctl("local", "start", "--port", "0", "--no-context", *local, "-o", "json")
        assert again.exit_code == 0, again.stderr
        second = json.loads(again.stdout)
        assert second["state"] == "running" and second["pid"] not in (first["pid"], unrelated.pid)
        assert kctl("-b", second["bootstrap"], "topic", "list").exit_code == 0

        assert kctl("local", "stop", *local).exit_code == 0
        assert holder(data) is None and (data / ".kafka_cleanshutdown").exists()
        assert unrelated.poll() is None
    finally:
        unrelated.kill()
        unrelated.wait()
        kctl("local", "stop", *local)


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs: a disk that fills up (mounting needs root, as CI runs)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(path, leave: int = 0) -> None:
    """Write `path` until the disk has at most `leave` bytes free."""
    chunk = b"\0" * 4096
    with open(path, "wb", buffering=0) as handle:
        while os.statvfs(path).f_bavail * os.statvfs(path).f_frsize > leave:
            try:
                handle.write(chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                break


def test_a_full_disk_is_reported_and_loses_nothing(small_disk):
    process = BrokerProcess(small_disk / "data")
    process.start()
    try:
        bootstrap = process.bootstrap
        _create(bootstrap, "t", 1)
        filler = small_disk / "filler"
        _fill(filler, leave=256 * 1024)

        # An idempotent acks=all producer runs into the full disk mid-stream.
        acked, failed = _produce(bootstrap, "t", [(0, b"%06d" % i + b"x" * 1000) for i in range(600)],
                                 **{"message.timeout.ms": 4000, "batch.num.messages": 20})
        assert acked and failed, (len(acked), failed)
        _fill(small_disk / "filler2")  # 100% full from here on

        # The broker says why: with retries off the producer sees it at once.
        started = time.monotonic()
        _, refused = _produce(bootstrap, "t", [(0, b"y" * 20_000)], **{
            "enable.idempotence": False, "retries": 0, "message.timeout.ms": 30000, "request.timeout.ms": 5000})
        assert refused == Counter({"KAFKA_STORAGE_ERROR": 1})
        assert time.monotonic() - started < 5

        # Creating a topic fails cleanly and leaves nothing behind.
        admin = AdminClient({"bootstrap.servers": bootstrap})
        with pytest.raises(KafkaException, match="KAFKA_STORAGE_ERROR"):
            admin.create_topics([NewTopic("t2", 3)])["t2"].result(10)
        assert "t2" not in admin.list_topics(timeout=10).topics
        assert sorted(p.name for p in (small_disk / "data").iterdir() if p.name.startswith("t2") or p.name.endswith(".tmp")) == []

        # kill -9 at 100% full; the broker restarts on the full disk and has everything.
        process.kill()
        process.start()
        stored = _read_all(process.bootstrap, "t", 1, len(acked))
        _exactly_once(acked, stored)
        assert stored == sorted(stored)  # in order

        # Space freed: writes resume and the topic can be created.
        filler.unlink()
        (small_disk / "filler2").unlink()
        more, failed = _produce(process.bootstrap, "t", [(0, b"z%05d" % i) for i in range(50)])
        assert (len(more), failed) == (50, Counter())
        _create(process.bootstrap, "t2", 3)
        _exactly_once(acked + more, _read_all(process.bootstrap, "t", 1, len(acked) + 50))
        assert "Traceback" not in process.log_path.read_text()
    finally:
        process.stop()
