"""The everyday reads the console script runs without click (kctl/cli/direct.py) answer
exactly as the click tree does: the same stdout, stderr and exit status for the same
command line, whether it is served directly or handed back to click (issue 59)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.integration

# The console script (kctl/cli/entry.py), telling on stderr's last line whether click was
# imported: kctl ends with os._exit.
ENTRY = """
import os, sys
def loaded(code=0, exit=os._exit):
    sys.stderr.write("CLICK=%s\\n" % ("click" in sys.modules))
    sys.stderr.flush()
    exit(code)
os._exit = loaded
from kctl.cli.entry import main
main()
loaded()
"""
CLICK = "from kctl.cli.main import main; main()"

# (command line, served without click); {b} is the broker, {t} a topic with records, {g}
# a group with offsets committed on it.
LINES = [
    ("-b {b} topic list", True),
    ("topic list -b {b} -o json --regex {t}", True),
    ("-b {b} topics ls -r {t} --no-headers", True),
    ("-b {b} topic describe {t}", True),
    ("-b {b} topic describe {t} -o json --detail", True),
    ("-b {b} topic describe {t}x", True),  # unknown, with the closest name as a hint
    ("-b {b} topic describe {t} nosuch-topic", True),  # exit 4, both reported
    ("-b {b} partition list {t} -o wide", True),
    ("-b {b} partition list --under-replicated --leader 1", True),
    ("-b {b} partition list {t} --leader one", False),  # click's usage error
    ("-b {b} cluster info", True),
    ("-b {b} cluster describe -o json", True),
    ("-b {b} broker list", True),
    ("-b {b} group list -o json --type classic", True),
    ("-b {b} group list --state empty", True),  # case-insensitive choice
    ("-b {b} group list --state bogus", False),
    ("-b {b} group describe {g}", True),
    ("-b {b} group describe nosuch-group", True),
    ("-b {b} group lag {g}", True),
    ("-b {b} -o jsonl group lag {g} -t {t} --isolation read_committed", True),
    ("-b {b} group lag", True),  # the body's own usage error
    ("-b {b} group lag {g} --max-lag=-1", False),
    ("-b {b} offset get {t}:0-1", True),
    ("-b {b} offset get {t} --at 2023-11-14T22:13:20.005Z --max-timestamp -o csv", True),
    ("-b {b} offset get {t} --at never", True),
    ("-b {b} config describe topic {t} -k retention.ms -a", True),
    ("-b {b} config describe topic nosuch-topic", True),
    ("-b {b} config describe bogus", False),
    ("-b {b} topic list -qo json", False),  # combined short flags: click's to parse
    ("-b {b} topic list -ojson --timeout=5 -X client.id=direct", True),
    ("-b {b} topic list --", False),
    ("-b {b} topic list -X help", False),
    ("-b {b} topic list --help", False),
    ("-b 127.0.0.1:1 --timeout 0.5 topic list", True),  # unreachable: exit 69
    ("-b {b} topic list --timeout 0", False),
    ("-b {b} topic create x --help", False),
    ("--context direct-ctx topic list -r {t}", True),  # the context's cluster, from the config file
    ("topic describe {t} --context direct-ctz", True),  # an unknown context, with the closest name
    ("-b {b} acl list", True),  # no authorizer on the cluster: SECURITY_DISABLED, exit 65
    ("-b {b} acl list --principal alice --operation read", True),  # a principal without its type
]


@pytest.fixture
def seeded(cluster, unique_name, config_home):
    from confluent_kafka import Consumer, Producer, TopicPartition

    if cluster.backend != "bundled":
        # What is compared is kctl's parsing and dispatch, the same whatever answers.
        pytest.skip("compared on the bundled broker: the two paths differ only before the first request")
    topic, group = unique_name("direct"), unique_name("direct-group")
    # Kept forever: the records' timestamps are of 2023, which the broker's retention would
    # delete at its next check, between two runs of a line (a CI run met it).
    subprocess.run([sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "topic", "create", topic, "-p", "2", "-c", "retention.ms=-1",
                    "-q"], check=True, capture_output=True)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(10):
        producer.produce(topic, value=b"%d" % i, partition=i % 2, timestamp=1_700_000_000_000 + i)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 5)], asynchronous=False)
    consumer.close()
    subprocess.run([sys.executable, "-m", "kctl", "context", "set", "direct-ctx", "-b", cluster.bootstrap], check=True, capture_output=True)
    return {"b": cluster.bootstrap, "t": topic, "g": group}


def test_the_direct_reads_answer_as_click_does(seeded):
    env = {**os.environ, "COLUMNS": "80"}
    differences, routed = [], []
    for line, direct in LINES:
        args = line.format(**seeded).split()
        served = subprocess.run([sys.executable, "-c", ENTRY, *args], capture_output=True, env=env)
        rendered = subprocess.run([sys.executable, "-c", CLICK, *args], capture_output=True, env=env)
        stderr, _, flag = served.stderr.rstrip(b"\n").rpartition(b"\n")
        stderr = stderr + b"\n" if stderr else b""
        if (served.returncode, served.stdout, stderr) != (rendered.returncode, rendered.stdout, rendered.stderr):
            differences.append((line, served.returncode, rendered.returncode, stderr[-300:], rendered.stderr[-300:],
                                served.stdout[-300:], rendered.stdout[-300:]))
        if flag != f"CLICK={not direct}".encode():
            routed.append((line, flag))
    assert differences == []
    assert routed == []


def test_the_direct_reads_import_no_click(seeded):
    """The probe of tests/test_startup.py on the console script: a direct read imports
    neither click nor a client library, nor what the reads were freed of for issue 59
    (logging, pathlib, typing, dataclasses: 20 ms between them; socket: 2 ms, a plain
    connection is opened over _socket)."""
    heavy = ("click", "confluent_kafka", "rich", "tabulate", "logging", "pathlib", "typing", "dataclasses", "kafka", "socket")
    # What the interpreter loaded before kctl (an editable install's finder imports
    # pathlib) is not kctl's.
    probe = ("import sys\nbefore = set(sys.modules)\n" + ENTRY).replace(
        '"CLICK=%s\\n" % ("click" in sys.modules)',
        f'"LOADED=%s\\n" % sorted(m for m in set(sys.modules) - before if m.split(".")[0] in {heavy!r})')
    for line in ("-b {b} topic list", "-b {b} group lag {g}", "-b {b} group describe {g}", "-b {b} group list", "-b {b} broker list", "-b {b} topic describe {t}", "-b {b} offset get {t}",
                 "-b {b} config describe topic {t}", "-b {b} cluster info", "-b {b} partition list --under-replicated",
                 "-b {b} record produce {t}"):
        proc = subprocess.run([sys.executable, "-c", probe, *line.format(**seeded).split()], capture_output=True, text=True, input="x\n")
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.splitlines()[-1] == "LOADED=[]", (line, proc.stderr)


# (command line, stdin, served without click, records expected as (key, value, partition,
# headers)); {b} is the broker, {t} the topic produced to (two partitions).
PRODUCE_LINES = [
    ("-b {b} record produce {t}", b"x\n", True, [(None, b"x", None, [])]),
    ("-b {b} record produce {t} -k k1 -p 1 -H a=1 -H b=", b"y\nz\n", True, [(b"k1", b"y", 1, [("a", b"1"), ("b", b"")]),
                                                                             (b"k1", b"z", 1, [("a", b"1"), ("b", b"")])]),
    ("-b {b} -o json records produce {t} --null-marker -", b"-\n", True, [(None, None, None, [])]),
    ("-b {b} record produce {t} -H novalue", b"x\n", True, []),  # the body's usage error
    ("-b {b} record produce {t}x", b"x\n", True, []),  # unknown topic, with the closest name
    ("-b {b} record produce {t} -K :", b"k:v\n", False, [(b"k", b"v", None, [])]),  # a callback's option: click's
    ("-b {b} record produce {t} -p -1", b"x\n", False, []),  # click's usage error
]


def test_a_one_line_produce_runs_without_click_as_click_runs_it(cluster, unique_name, config_home):
    """`echo x | kctl record produce T` is served without click (issue 59's one-line
    produce): the same records written, the same output and status as through click
    (the summary's seconds aside), and a line direct.py cannot parse handed to click."""
    from confluent_kafka import Consumer

    if cluster.backend != "bundled":
        pytest.skip("compared on the bundled broker: the two paths differ only before the first request")
    topic = unique_name("direct-produce")
    # Kept forever: the records' timestamps are of 2023, which the broker's retention would
    # delete at its next check, between two runs of a line (a CI run met it).
    subprocess.run([sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "topic", "create", topic, "-p", "2", "-c", "retention.ms=-1",
                    "-q"], check=True, capture_output=True)
    env = {**os.environ, "COLUMNS": "80"}
    differences, routed, expected = [], [], []
    for line, stdin, direct, records in PRODUCE_LINES:
        args = line.format(b=cluster.bootstrap, t=topic).split()
        served = subprocess.run([sys.executable, "-c", ENTRY, *args], input=stdin, capture_output=True, env=env)
        rendered = subprocess.run([sys.executable, "-c", CLICK, *args], input=stdin, capture_output=True, env=env)
        stderr, _, flag = served.stderr.rstrip(b"\n").rpartition(b"\n")

        def timeless(text: bytes) -> bytes:
            return re.sub(rb" in \d+\.\d\ds", b"", re.sub(rb'"seconds": ?[0-9.e-]+', b"", text))

        ours = (served.returncode, timeless(served.stdout), timeless(stderr + b"\n" if stderr else b""))
        theirs = (rendered.returncode, timeless(rendered.stdout), timeless(rendered.stderr))
        if ours != theirs:
            differences.append((line, ours, theirs))
        if flag != f"CLICK={not direct}".encode():
            routed.append((line, flag))
        expected += records * 2  # each line ran twice
    assert differences == []
    assert routed == []
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": unique_name("g"), "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < len(expected) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append((message.key(), message.value(), message.partition(), message.headers() or []))
    consumer.close()

    def order(record):
        key, value, _partition, headers = record
        return (key is None, key or b"", value is None, value or b"", headers)

    # Where a record without a key goes is the partitioner's to choose.
    assert [(k, v, h) for k, v, _p, h in sorted(got, key=order)] == [(k, v, h) for k, v, _p, h in sorted(expected, key=order)]
    assert all(record[2] == wanted[2] for record, wanted in zip(sorted(got, key=order), sorted(expected, key=order)) if wanted[2] is not None)
