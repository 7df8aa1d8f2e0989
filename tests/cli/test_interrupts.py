"""One rule for Ctrl-C (README, "Exit status"): a --follow or --watch run ends as it would on
its own (0, or cluster health's last status); any other interrupted command exits 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from kctl.errors import ExitCode
from tests.support.eventually import commit_offsets, within

pytestmark = pytest.mark.integration


def interrupted(args: list[str], *, ready: str, timeout: float = 30, on_stdout: bool = False) -> tuple[int, str, str]:
    """Run `kctl ARGS`, send SIGINT once `ready` shows on its stdout or stderr (stdout
    alone with on_stdout), and return (status, stdout, stderr)."""
    process = subprocess.Popen([sys.executable, "-m", "kctl", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda s=stream, into=into: into.extend(iter(s.readline, "")), daemon=True)
               for stream, into in ((process.stdout, out), (process.stderr, err))]
    for reader in readers:
        reader.start()
    try:
        def printed() -> bool:
            if any(ready in line for line in (out if on_stdout else out + err)):
                return True
            assert process.poll() is None, f"ended before being interrupted: {''.join(out + err)}"
            return False

        assert within(printed, timeout, interval=0.05), f"never printed {ready!r}: {''.join(out + err)}"
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
        for reader in readers:
            reader.join(10)
    finally:
        process.kill()
    return process.returncode, "".join(out), "".join(err)


def test_watch_and_follow_end_normally(cluster, config_home, unique_name, tmp_path):
    group = unique_name("watch")
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = unique_name("watched")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    commit_offsets(admin, group, [TopicPartition(topic, 0, 0)])

    # A sample on stdout: an error about the group, on stderr, names it too.
    status, out, err = interrupted(["-b", cluster.bootstrap, "group", "lag", group, "--watch", "--interval", "0.2"], ready=group, on_stdout=True)
    assert status == ExitCode.OK and group in out, err

    status, out, _err = interrupted(["-b", cluster.bootstrap, "cluster", "health", "--watch", "--interval", "0.2"], ready="STATUS")
    assert status in (ExitCode.OK, ExitCode.ERROR, ExitCode.CRITICAL) and status != ExitCode.INTERRUPTED

    data = tmp_path / "local"
    started = subprocess.run([sys.executable, "-m", "kctl", "local", "start", "--port", "0", "--data-dir", str(data), "--no-context"],
                             capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    try:
        status, out, _err = interrupted(["local", "logs", "-f", "--data-dir", str(data)], ready="listening on")
        assert status == ExitCode.OK
    finally:
        subprocess.run([sys.executable, "-m", "kctl", "local", "stop", "--data-dir", str(data)], capture_output=True, timeout=60)


def test_other_commands_interrupted_exit_130(cluster, config_home, unique_name):
    topic = unique_name("int")
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    # produce waiting for more input on a pipe that stays open
    reader, writer = os.pipe()
    try:
        os.write(writer, b"one\ntwo\n")
        process_args = ["-b", cluster.bootstrap, "record", "produce", topic]
        status, _out, err = interrupted_after(process_args, stdin=reader, seconds=2)
    finally:
        os.close(writer)
        os.close(reader)
    assert status == ExitCode.INTERRUPTED
    assert err.splitlines()[-2:] == [f"error: unable to produce to {topic}: interrupted", "hint: 2 record(s) were written"]

    # waiting for a goal that is not reached
    group = unique_name("behind")
    from confluent_kafka import Producer, TopicPartition

    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    producer.produce(topic, b"x")
    producer.flush(10)
    commit_offsets(admin, group, [TopicPartition(topic, 0, 0)])
    # (Off a terminal it prints nothing until it ends: interrupt it after a while.)
    status, _out, err = interrupted_after(["-b", cluster.bootstrap, "group", "lag", group, "--until-caught-up", "--interval", "0.2"],
                                          stdin=subprocess.DEVNULL, seconds=3)
    assert status == ExitCode.INTERRUPTED and err.splitlines()[-1] == "error: interrupted"


def interrupted_after(args: list[str], *, stdin, seconds: float) -> tuple[int, str, str]:
    process = subprocess.Popen([sys.executable, "-m", "kctl", *args], stdin=stdin, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(seconds)  # the point: it has run a while (off a terminal it prints nothing to wait for)
        assert process.poll() is None
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    return process.returncode, out, err
