"""`kctl top`'s LAG-TIME against `kctl group lag --time-lag record` for the same group, on
an idle topic, a steadily written one and a bursty one: within one sampling interval, the
method each case needs (the record's timestamp for a commit older than what top saw,
interpolation for one it saw written), and never 0 for a lagging partition."""

from __future__ import annotations

import json
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.top.pilot import commit, drive, until

pytestmark = pytest.mark.integration
INTERVAL = 0.3


def _log_end(bootstrap: str, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kctl-test-ends"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
    finally:
        consumer.close()


def _agrees(kctl, app, bootstrap: str, group: str, source: str) -> None:
    """top's latest frame and `group lag --time-lag record`, asked right after it, agree
    within a sampling interval (the time between the two answers accounted for)."""
    sample = app.sampler.latest
    frame = sample.value
    row = next(g for g in frame.groups if g.group == group)
    (lagging,) = [p for g in frame._sample.groups if g.group == group for p in g.partitions if p.lag]
    assert row.lag_seconds is not None and row.lag_seconds > 0, row
    assert (lagging.lag_seconds_source, lagging.lag_seconds) == (source, row.lag_seconds), lagging
    before = time.time()
    result = kctl("-b", bootstrap, "group", "lag", group, "--time-lag", "record", "-o", "json")
    after = time.time()
    assert result.exit_code == 0, result.stderr
    (expected,) = json.loads(result.stdout)
    # The record-time answer was computed between `before` and `after`: moved back to when
    # top's sample was taken, it is top's answer give or take the time between two of top's
    # samples (when the log end passed the commit is known to that).
    tolerance = 2 * max(app.sampler.period, INTERVAL) + 0.25
    late, early = expected["lag_seconds_max"] - (before - frame.taken_at), expected["lag_seconds_max"] - (after - frame.taken_at)
    assert early - tolerance <= row.lag_seconds <= late + tolerance, (row.lag_seconds, early, late, tolerance)


@pytest.fixture
def two_partitions(kctl, cluster, unique_name):
    topic, group = unique_name("tl"), unique_name("gtl")
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "2").exit_code == 0
    return topic, group


def test_an_idle_topic_dates_the_commit_by_its_record(kctl, cluster, two_partitions):
    """Records written 90 s ago and nothing since: no log end point says when the commit was
    passed, so top reads the record's timestamp, as `group lag --time-lag record` does. The
    other partition is caught up: its 0 s is not the group's LAG-TIME."""
    topic, group = two_partitions
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    written = int(time.time() * 1000) - 90_000
    for i in range(50):
        producer.produce(topic, value=b"%d" % i, partition=0, timestamp=written + i)
    for i in range(5):
        producer.produce(topic, value=b"%d" % i, partition=1)
    assert producer.flush(30) == 0
    commit(cluster.bootstrap, group, {(topic, 0): 10, (topic, 1): 5})

    async def scenario(app, pilot):
        await until(pilot, lambda: app.frame and any(g.group == group for g in app.frame.groups), what=f"{group} sampled")
        _agrees(kctl, app, cluster.bootstrap, group, "record")
        row = next(g for g in app.sampler.latest.value.groups if g.group == group)
        assert 85 < row.lag_seconds < 120, row
        await pilot.press("q")

    drive(cluster.bootstrap, scenario, interval=INTERVAL)


def _writer(bootstrap: str, topic: str, pause: float, burst: int) -> tuple[threading.Event, threading.Thread]:
    stop = threading.Event()

    def write() -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        while not stop.wait(pause):
            for _ in range(burst):
                producer.produce(topic, value=b"x", partition=0)
            producer.flush(10)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return stop, thread


@pytest.mark.parametrize(("pause", "burst"), [(0.05, 1), (1.5, 200)], ids=["steady", "bursty"])
def test_a_written_topic_interpolates_the_commit_top_saw_written(kctl, cluster, two_partitions, pause, burst):
    """While records keep coming (one every 50 ms, or 200 at once every 1.5 s), a group
    stops at an offset written after top started: top interpolates when the log end passed
    it, and agrees with the record's own timestamp."""
    topic, group = two_partitions
    commit(cluster.bootstrap, group, {(topic, 1): 0})
    stop, thread = _writer(cluster.bootstrap, topic, pause, burst)

    async def scenario(app, pilot):
        await until(pilot, lambda: app.sampler.samples_total >= 2, what="two samples")
        seen = _log_end(cluster.bootstrap, topic, 0)
        # An offset written after top's first samples, while it watched.
        await until(pilot, lambda: _log_end(cluster.bootstrap, topic, 0) > seen + burst, what="more records", timeout=20)
        commit(cluster.bootstrap, group, {(topic, 0): seen + 1})
        await until(pilot, lambda: any(g.group == group and g.lag_seconds for g in app.sampler.latest.value.groups),
                    what=f"{group}'s LAG-TIME")
        await pilot.pause(3 * INTERVAL)
        _agrees(kctl, app, cluster.bootstrap, group, "interp")
        await pilot.press("q")

    try:
        drive(cluster.bootstrap, scenario, interval=INTERVAL)
    finally:
        stop.set()
        thread.join(15)
