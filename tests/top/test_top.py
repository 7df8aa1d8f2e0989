"""`kctl top` against real brokers, driven headless by Textual's pilot: the numbers it shows
are `group lag`'s, a group that stops committing falls behind, the keys work; and one run
as a process in a real pseudo-terminal."""

from __future__ import annotations

import json
import threading

import pytest
from confluent_kafka import Producer

from kctl.top.app import GroupScreen, PeekScreen
from tests.top.pilot import commit, drive, ordered_keys, rows, until

pytestmark = pytest.mark.integration


@pytest.fixture
def lagging(kctl, cluster, unique_name):
    """A topic with 10, 20 and 30 records in its partitions and a group 4, 8 and 12 behind."""
    topic, group = unique_name("top"), unique_name("gtop")
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "3").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for partition, count in enumerate((10, 20, 30)):
        for i in range(count):
            producer.produce(topic, value=b"%d" % i, partition=partition)
    assert producer.flush(30) == 0
    commit(cluster.bootstrap, group, {(topic, 0): 6, (topic, 1): 12, (topic, 2): 18})
    return topic, group


@pytest.mark.kafka39
def test_the_views_show_group_lags_numbers_and_their_keys_work(kctl, cluster, lagging):
    """The groups view and the drill-down show `group lag -o json`'s numbers; / filters,
    s sorts, enter drills in and escape comes back, q leaves with exit status 0."""
    topic, group = lagging
    result = kctl("-b", cluster.bootstrap, "group", "lag", group, "-o", "json")
    assert result.exit_code == 0, result.stderr
    (expected,) = json.loads(result.stdout)

    async def scenario(app, pilot):
        await pilot.press("g")
        groups = app.query_one("#groups")
        row = await until(pilot, lambda: rows(groups).get(group), what=f"{group} in the groups view")
        assert (row["GROUP"], row["TYPE"], row["STATE"], row["LAG"]) == (group, "classic", "Empty", f"{expected['lag_sum']:,}")

        await pilot.press("slash", *group[-6:], "enter")  # its unique tail (a key press costs ~0.1 s in the pilot)
        assert list(rows(groups)) == [group]
        await pilot.press("enter")
        screen = await until(pilot, lambda: isinstance(app.screen, GroupScreen) and app.screen, what="the drill-down")
        shown = await until(pilot, lambda: rows(screen.table), what="the group's partitions")
        samples = app.sampler.samples_total
        await until(pilot, lambda: app.sampler.samples_total >= samples + 3, what="refreshes under the drill-down")
        await pilot.pause(1.1)  # and the status line's tick
        assert app.screen is screen and app.return_code is None
        assert [(r["TOPIC"], r["PARTITION"], r["COMMITTED"], r["LOG-END"], r["LAG"]) for r in shown.values()] == [
            (p["topic"], str(p["partition"]), str(p["committed"]), str(p["log_end"]), str(p["lag"])) for p in expected["partitions"]]
        await pilot.press("escape")
        assert not isinstance(app.screen, GroupScreen) and app.view == "groups"

        await pilot.press("p", "slash", *topic[-6:], "enter")
        partitions = app.query_one("#partitions")
        await until(pilot, lambda: len(rows(partitions)) == 3, what="the topic's three partitions")
        headers = [c.key for c in partitions.shown]
        for _ in range(headers.index("log_end") + 1):  # s: the next column, from the first
            await pilot.press("s")
        assert (partitions.sort_column, ordered_keys(partitions)) == ("log_end", [f"{topic}:0", f"{topic}:1", f"{topic}:2"])
        await pilot.press("S")
        assert ordered_keys(partitions) == [f"{topic}:2", f"{topic}:1", f"{topic}:0"]
        at = 1 + sum(width + 2 for width in partitions.widths[:headers.index("partition")])
        await pilot.click(partitions, offset=(at, 0))  # a header: sort by it
        assert (partitions.sort_column, partitions.reverse) == ("partition", False)
        await pilot.click(partitions, offset=(at, 0))  # again: reversed
        assert (partitions.sort_column, ordered_keys(partitions)) == ("partition", [f"{topic}:2", f"{topic}:1", f"{topic}:0"])
        await pilot.press("end", "enter")  # the peek: partition 0's ten records
        peek = await until(pilot, lambda: isinstance(app.screen, PeekScreen) and app.screen, what="the record peek")
        assert (peek.topic, peek.partition) == (topic, 0)
        table = peek.query_one("#peek")
        await until(pilot, lambda: table.row_count == 10, what=f"ten records ({peek.query_one('#peek-status').render()})")
        assert [str(table.get_row_at(i)[0]) for i in range(10)] == [str(i) for i in range(10)]
        assert [str(table.get_row_at(i)[3]) for i in range(10)] == [str(i) for i in range(10)]
        await pilot.press("escape")
        await pilot.press("escape")  # clears the filter
        await until(pilot, lambda: len(rows(partitions)) > 3, what="every partition again")
        await pilot.press("q")

    app = drive(cluster.bootstrap, scenario)
    assert app.return_code == 0


def test_a_group_that_stops_committing_falls_behind_and_its_trend_rises(cluster, lagging):
    topic, group = lagging
    stop = threading.Event()

    def produce() -> None:
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
        while not stop.wait(0.1):
            for partition in range(3):
                producer.produce(topic, value=b"more", partition=partition)
            producer.flush(10)

    async def scenario(app, pilot):
        groups = app.query_one("#groups")
        await pilot.press("g")

        def behind():
            row = rows(groups).get(group)
            assert row and row["DIRECTION"] == "falling behind", row
            bars = row["TREND"].strip()
            assert len(bars) >= 3 and bars[-1] > bars[0], bars  # the sparkline rises
            # Its commits stand still with lag: every partition is stuck.
            assert row["STUCK"] == f"{topic}:0, {topic}:1, {topic}:2", row
            return row

        await until(pilot, lambda: rows(groups).get(group), what=f"{group} in the groups view")
        writer.start()
        await until(pilot, behind, what=f"{group} falling behind", timeout=40)
        await pilot.press("q")

    writer = threading.Thread(target=produce, daemon=True)
    try:
        app = drive(cluster.bootstrap, scenario)
    finally:
        stop.set()
        writer.join(15)
    assert app.return_code == 0


def test_kctls_own_groups_are_shown_as_such_never_stalled_or_stuck(cluster, lagging):
    """A redrive holding records back keeps its group's offsets where they are, with lag:
    the groups view says whose the group is, and never counts it stalled or stuck."""
    from kctl.top.model import STUCK_SAMPLES

    if cluster.backend != "bundled":
        pytest.skip("one backend is enough: how top judges a group is its own, whatever the cluster")
    topic, _group = lagging
    own = f"kctl-redrive-{topic}"
    commit(cluster.bootstrap, own, {(topic, 0): 1, (topic, 1): 2, (topic, 2): 3})

    async def scenario(app, pilot):
        groups = app.query_one("#groups")
        await pilot.press("g")
        await until(pilot, lambda: rows(groups).get(own) and app.sampler.samples_total > STUCK_SAMPLES, what=f"{own} sampled")
        row = rows(groups)[own]
        assert (row["DIRECTION"], row["STUCK"].strip()) == ("kctl's (record redrive)", ""), row
        await pilot.press("q")

    assert drive(cluster.bootstrap, scenario).return_code == 0
