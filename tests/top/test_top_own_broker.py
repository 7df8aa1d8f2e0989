"""`kctl top` on a bundled broker of its own: stopped mid-run and started again, the
overview's layout at 120x40 (and README's screenshot), and a run as a process in a real
pseudo-terminal."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kctl.admin.client.session import AdminSession
from kctl.config.model import ClientSettings
from kctl.errors import KctlError
from kctl.top.model import RECENT, STUCK_SAMPLES
from kctl.top.run import build, run_app
from tests.support.terminal import run_in_terminal
from tests.top.pilot import drive, screen_text, until

pytestmark = pytest.mark.integration
HERE = Path(__file__).resolve().parent
SNAPSHOT = HERE / "overview-120x40.txt"
SCREENSHOT = HERE.parent.parent / "docs" / "kctl-top.svg"
UPDATE = os.environ.get("KCTL_UPDATE_SNAPSHOTS") == "1"


@pytest.fixture
def broker(kctl, tmp_path):
    """A bundled broker on a port of its own: (bootstrap, start, stop)."""
    data = tmp_path / "broker"

    def start(port: str = "0") -> str:
        result = kctl("local", "start", "--port", port, "--data-dir", str(data), "--no-context")
        assert result.exit_code == 0, result.stderr
        return result.stdout.strip()

    def stop() -> None:
        assert kctl("local", "stop", "--data-dir", str(data)).exit_code == 0

    bootstrap = start()
    yield bootstrap, start, stop
    kctl("local", "stop", "--data-dir", str(data))


def _world(bootstrap: str) -> None:
    """orders (3 partitions, 10 records each) and payments (1, 5 records); billing 2
    behind on each orders partition."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 60000})
    for partition in range(3):
        for i in range(10):
            producer.produce("orders", value=b"o%d" % i, partition=partition)
    for i in range(5):
        producer.produce("payments", value=b"p%d" % i)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing", "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition("orders", p, 8) for p in range(3)], asynchronous=False)
    consumer.close()


def test_a_stopped_broker_shows_the_stale_banner_until_it_returns(broker):
    bootstrap, start, stop = broker
    port = bootstrap.rsplit(":", 1)[1]

    async def scenario(app, pilot):
        banner = app.query_one("#banner")
        first = await until(pilot, lambda: app.frame, what="a first sample")
        assert not banner.has_class("shown")
        stop()
        await until(pilot, lambda: banner.has_class("shown"), what="the stale banner")
        text = str(banner.render())
        assert re.search(r"cluster unreachable, data shown is \d+s old; sampling again every 0\.3s: ", text), text
        assert app.frame is first or app.frame.cluster_id == first.cluster_id  # the last good data stays
        assert start(port) == bootstrap
        await until(pilot, lambda: not banner.has_class("shown") and app.frame is not first, what="sampling to resume", timeout=40)
        await pilot.press("q")

    assert drive(bootstrap, scenario).return_code == 0


def _masked(text: str, bootstrap: str, cluster_id: str) -> str:
    text = text.replace(bootstrap, "<bootstrap>").replace(cluster_id, "<cluster-id>")
    text = re.sub(r"sample \d\d:\d\d:\d\d \(\d+\.\d\ds\)", "sample <time> (<took>)", text)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def test_the_overview_at_120x40_and_readmes_screenshot(kctl, broker):
    """The overview's layout, whole; KCTL_UPDATE_SNAPSHOTS=1 records it and README's
    screenshot (docs/kctl-top.svg, Textual's own SVG) anew."""
    bootstrap = broker[0]
    for topic, partitions in (("orders", "3"), ("payments", "1")):
        assert kctl("-b", bootstrap, "topic", "create", topic, "-p", partitions).exit_code == 0
    _world(bootstrap)
    shown = {}

    async def scenario(app, pilot):
        # Nothing moves on this broker: from the fifth sample on (directions and stuck
        # partitions judged, a produce rate measured) every frame is the same.
        await until(pilot, lambda: app.sampler.samples_total >= max(RECENT, STUCK_SAMPLES) and app.frame is app.sampler.latest.value,
                    what="five samples")
        shown["text"] = _masked(screen_text(app), bootstrap, app.frame.cluster_id)
        if UPDATE:
            await pilot.press("g")
            await until(pilot, lambda: app.query_one("#groups").rows_shown, what="the groups")
            SCREENSHOT.parent.mkdir(exist_ok=True)
            SCREENSHOT.write_text(app.export_screenshot(title="kctl top").replace(bootstrap, "localhost:9092"))
        await pilot.press("q")

    drive(bootstrap, scenario, size=(120, 40))
    if UPDATE:
        SNAPSHOT.write_text(shown["text"])
    assert shown["text"] == SNAPSHOT.read_text(), "the overview changed: KCTL_UPDATE_SNAPSHOTS=1 records it (and README's screenshot)"
    assert "billing" in SCREENSHOT.read_text()


def test_kctl_top_in_a_real_terminal_starts_restores_it_and_ctrl_c_exits_0(broker, tmp_path):
    bootstrap = broker[0]
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path)}
    code, output = run_in_terminal([sys.executable, "-m", "kctl", "-b", bootstrap, "top", "--interval", "0.5"], env=env,
                                   ready=b"produce rate", keys=b"\x03", timeout=60)  # Ctrl-C
    assert code == 0, output[-2000:]
    # The alternate screen was entered and left, the cursor shown again, and nothing
    # (a traceback) printed after.
    assert b"\x1b[?1049h" in output
    tail = output[output.rindex(b"\x1b[?1049l"):]
    assert b"\x1b[?25h" in tail and b"Traceback" not in output and b"error" not in tail.lower(), tail


def test_a_narrow_terminal_drops_columns_rather_than_wrapping(kctl, broker):
    bootstrap = broker[0]
    assert kctl("-b", bootstrap, "topic", "create", "orders", "-p", "3").exit_code == 0
    _world(bootstrap)

    async def scenario(app, pilot):
        await pilot.press("g")
        groups = app.query_one("#groups")
        await until(pilot, lambda: groups.rows_shown, what="the groups")
        wide = [c.header for c in groups.shown]
        await pilot.resize_terminal(50, 20)
        await until(pilot, lambda: len(groups.shown) < len(wide), what="columns to drop")
        narrow = [c.header for c in groups.shown]
        assert narrow[:1] == ["GROUP"] and "LAG" in narrow and set(narrow) < set(wide), narrow
        lines = screen_text(app).splitlines()
        assert len(lines) == 20 and all(len(line) <= 50 for line in lines)
        assert any(line.lstrip().startswith("billing") for line in lines), lines
        await pilot.press("q")

    drive(bootstrap, scenario, size=(120, 30))


def test_an_unexpected_error_ends_it_in_one_line_without_a_traceback(broker, capsys):
    """Whatever fails inside the application (here a broken refresh), the terminal is
    given back and kctl says one line (cli/main prints the KctlError); --debug keeps
    Textual's traceback."""
    session = AdminSession(ClientSettings(bootstrap_servers=broker[0], properties={}, timeout=5, context=None))
    app, sampler = build(session, target=broker[0], interval=0.3, window=10)

    def broken(frame):
        raise ValueError("broken on purpose")

    app.show_frame = broken
    with pytest.raises(KctlError, match=r"^kctl top stopped on an unexpected error: ValueError: broken on purpose$"):
        run_app(app, sampler, headless=True)
    session.close()
    assert "Traceback" not in capsys.readouterr().err


def test_without_a_terminal_it_exits_64_pointing_at_the_forms_for_scripts(kctl):
    result = kctl("-b", "127.0.0.1:1", "top")
    assert (result.exit_code, result.stdout) == (64, "")
    assert result.stderr == ("error: kctl top needs a terminal; in scripts use `kctl group lag --watch -o jsonl` "
                             "or `kctl group lag --serve`\n")


def _colours(output: bytes) -> set[bytes]:
    """The SGR parameters that set a colour: the palette's 30-37, 40-47, 90-97, 100-107, or
    38/48 (256 colours and truecolor)."""
    found = set()
    for params in re.findall(rb"\x1b\[([0-9;]*)m", output):
        for part in params.split(b";"):
            if part in (b"38", b"48") or (part.isdigit() and any(lo <= int(part) <= lo + 7 for lo in (30, 40, 90, 100))):
                found.add(params)
                break
    return found


def test_colours_are_the_terminals_own_and_none_with_no_color(broker, tmp_path):
    bootstrap = broker[0]
    argv = [sys.executable, "-m", "kctl", "-b", bootstrap, "top", "--interval", "0.5"]
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"XDG_CONFIG_HOME": str(tmp_path)}
    code, output = run_in_terminal(argv, env=env, ready=b"produce rate")
    coloured = _colours(output)
    # The health in the title at least (OK: green), in the terminal's palette, not RGB.
    assert code == 0 and coloured and not any(b"38;" in c or b"48;" in c for c in coloured), coloured
    code, output = run_in_terminal(argv, env={**env, "NO_COLOR": "1"}, ready=b"produce rate")
    assert (code, _colours(output)) == (0, set())


# Text only one view shows (its widest columns fit at 160 columns).
ONLY_IN = {
    "o": "groups falling behind",
    "g": "DIRECTION",
    "t": "OF-GROUP",
    "b": "OUT-OF-ISR",
    "p": "LOG-START",
    "c": "no Kafka Connect cluster configured",
}


def test_every_view_redraws_whole_on_switching_and_after_the_banner_clears(kctl, broker, tmp_path):
    """In a real terminal (its screen kept by a VT100 emulator, stale cells included):
    after each switch the screen holds no text of another view, and once the unreachable
    banner clears nothing of it stays; without a Connect cluster the connectors view says
    how to configure one."""
    from tests.support.terminal import Terminal

    bootstrap, start, stop = broker
    assert kctl("-b", bootstrap, "topic", "create", "orders", "-p", "3").exit_code == 0
    _world(bootstrap)
    env = {k: v for k, v in os.environ.items() if k not in ("KCTL_CONNECT_URL",)} | {"XDG_CONFIG_HOME": str(tmp_path)}
    terminal = Terminal([sys.executable, "-m", "kctl", "-b", bootstrap, "top", "--interval", "0.5"], env=env, size=(160, 40))
    try:
        terminal.wait_for("produce rate", what="the overview")
        for key in "gtbpcogb":  # every view, and back from each kind of table
            terminal.press(key)
            terminal.wait_for(ONLY_IN[key], what=f"the view of {key!r}")
            shown = terminal.settle(1.2)  # two samples redrawn over it
            assert ONLY_IN[key] in shown
            others = [text for k, text in ONLY_IN.items() if k != key and text in shown]
            assert not others, f"after {key!r} the screen still shows {others}:\n{shown}"

        terminal.press("t")
        terminal.wait_for("OF-GROUP")
        port = bootstrap.rsplit(":", 1)[1]
        stop()
        terminal.wait_for("cluster unreachable", what="the stale banner")
        assert start(port) == bootstrap
        shown = terminal.wait_for(lambda text: "cluster unreachable" not in text, timeout=40, what="the banner to clear")
        shown = terminal.settle(1.2)
        assert "OF-GROUP" in shown and not any(word in shown for word in ("unreachable", "sampling again", "unable to")), shown
        # Every line the table drew is whole: the header's row has nothing after its columns.
        header = next(line for line in shown.splitlines() if "OF-GROUP" in line)
        assert header.split() == ["TOPIC", "PARTITIONS", "RATE", "TREND", "UNDER-REPLICATED", "GROUPS", "WORST-LAG", "OF-GROUP"], header
    finally:
        assert terminal.close() == 0
