"""kctl top's connectors view and overview lines, on a real Connect cluster: a sink whose
task failed shows it (the connector itself runs on), and the overview says so."""

from __future__ import annotations

import pytest

from kctl.admin.connect.rest import ConnectClient, ConnectSettings
from tests.connect.test_connect import SINK, rest
from tests.top.pilot import drive, rows, screen_text, until

pytestmark = [pytest.mark.integration, pytest.mark.single_node]


def test_the_connectors_view_shows_states_and_failed_tasks(connect, cluster, unique_name, tmp_path):
    failing, working = unique_name("failing"), unique_name("working")
    topic = unique_name("t")
    for name, target in ((failing, tmp_path / "missing" / "out.txt"), (working, tmp_path / "out.txt")):
        config = {"connector.class": SINK, "topics": topic, "file": str(target)}
        assert rest(connect, "POST", "/connectors", {"name": name, "config": config})[0] == 201
    user = next(iter(connect.basic_auth.items()), None)
    client = ConnectClient(ConnectSettings(name=None, url=connect.url, basic_auth=f"{user[0]}:{user[1]}" if user else None))

    async def scenario(app, pilot):
        await pilot.press("c")
        shown = await until(pilot, lambda: (r := rows(app.tables["connectors"])) and r.get(failing, {}).get("FAILED") == "1"
                            and r.get(working, {}).get("TASKS") == "1/1" and r, timeout=60, what="both connectors")
        assert shown[failing]["STATE"] == "RUNNING" and shown[failing]["TASKS"] == "0/1"
        assert shown[working]["FAILED"] == "0" and shown[working]["TASKS"] == "1/1"
        await pilot.press("o")
        text = await until(pilot, lambda: "connector tasks failed" in (t := screen_text(app)) and t, what="the overview's lines")
        line = next(line for line in text.splitlines() if "connector tasks failed" in line)
        assert line.split()[-1] != "0"

    try:
        drive(cluster.bootstrap, scenario, connect=client)
    finally:
        client.close()
        for name in (failing, working):
            rest(connect, "DELETE", f"/connectors/{name}")
