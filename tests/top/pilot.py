"""Driving `kctl top` headless (Textual's pilot, `App.run_test()`) against a real cluster,
with the application and sampler `kctl top` itself builds (kctl.top.run.build)."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Awaitable, Callable
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from rich.console import Console

from kctl.admin.client.session import AdminSession
from kctl.config.model import ClientSettings
from kctl.top.run import build


def drive(bootstrap: str, scenario: Callable[[Any, Any], Awaitable[None]], *, interval: float = 0.3, window: float = 10.0,
          size: tuple[int, int] = (120, 40), connect: Any = None, properties: dict[str, str] | None = None) -> Any:
    """Run `scenario(app, pilot)` in a headless `kctl top` on `bootstrap` (with client
    `properties`, and `connect`, a Kafka Connect client); the app after it."""
    session = AdminSession(ClientSettings(bootstrap_servers=bootstrap, properties=dict(properties or {}), timeout=5, context=None))
    app, sampler = build(session, target=bootstrap, interval=interval, window=window, connect=connect)

    async def main() -> None:
        sampler.start()
        try:
            async with app.run_test(size=size) as pilot:
                await scenario(app, pilot)
        finally:
            sampler.stop(timeout=10)

    try:
        asyncio.run(main())
    finally:
        session.close()
    return app


async def until(pilot: Any, check: Callable[[], Any], *, timeout: float = 30, what: str = "") -> Any:
    """check()'s first truthy answer, asked every 0.1 s while the app runs (an
    AssertionError counts as not yet); fails with the last reason after `timeout`."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            answer = check()
            if answer:
                return answer
            last = answer
        except AssertionError as exc:
            last = exc
        await pilot.pause(0.1)
    raise AssertionError(f"{what or 'condition'} not met within {timeout:g}s: {last}")


def rows(table: Any) -> dict[str, dict[str, str]]:
    """A view's table as shown: row key -> {header: cell text}, in the order shown."""
    headers = [c.header for c in table.shown]
    return {table.key_of(row): dict(zip(headers, table.cells(row))) for row in table.rows_shown}


def ordered_keys(table: Any) -> list[str]:
    return [table.key_of(row) for row in table.rows_shown]


def screen_text(app: Any) -> str:
    """The screen as plain text, what a terminal shows (the rendering Textual's own
    screenshot takes, exported as text instead of SVG)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None, record=True,
                      legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


def groups_shown(bootstrap: str, groups: list[str], *, timeout: float = 30,
                 properties: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
    """The groups view's rows of `groups`, once every one is shown."""
    found: dict[str, dict[str, str]] = {}

    async def scenario(app: Any, pilot: Any) -> None:
        await pilot.press("g")
        table = app.query_one("#groups")
        shown = await until(pilot, lambda: all(g in rows(table) for g in groups) and rows(table), timeout=timeout,
                            what=f"{groups} in the groups view")
        found.update({g: shown[g] for g in groups})
        await pilot.press("q")

    drive(bootstrap, scenario, properties=properties)
    return found


def commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit `offsets` for `group` as a consumer of the classic protocol does (the group
    then exists, empty, with these commits)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    finally:
        consumer.close()
