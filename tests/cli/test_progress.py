"""Progress of long work: a live display on stderr when it is a terminal (done/total, rate,
time left), one summary line when it is not, nothing with -q, and never anything on stdout.

The commands run as real processes with stderr on a pseudo-terminal, as on a user's
screen, and on a pipe, as in a script."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import tempfile
import termios
import uuid

import pytest

pytestmark = pytest.mark.integration

ANSI = re.compile(rb"\x1b\[[0-9;?]*[a-zA-Z]")


def run(args: list[str], env: dict[str, str], *, stderr_tty: bool, stdin: bytes | None = None, cwd=None):
    """(exit status, stdout, stderr as text without terminal escapes)."""
    command = [sys.executable, "-m", "kctl", *args]
    if not stderr_tty:
        done = subprocess.run(command, env=env, input=stdin or b"", capture_output=True, timeout=120, cwd=cwd)
        return done.returncode, done.stdout.decode(), done.stderr.decode()
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))  # rows, columns
    # stdout to a file, not a pipe: nobody reads a pipe while the terminal is read.
    out_file = tempfile.TemporaryFile()
    process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=out_file, stderr=terminal, cwd=cwd)
    os.close(terminal)
    if stdin is not None:
        process.stdin.write(stdin)
    process.stdin.close()
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: every writer of the terminal has closed it
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    process.wait(timeout=120)
    out_file.seek(0)
    out = out_file.read()
    return process.returncode, out.decode(), ANSI.sub(b"", shown).replace(b"\r", b"\n").decode(errors="replace")


@pytest.fixture
def env(cluster, config_home, monkeypatch):
    monkeypatch.setenv("KCTL_BOOTSTRAP_SERVERS", cluster.bootstrap)  # for the in-process kctl too
    return dict(os.environ, TERM="xterm")


@pytest.fixture
def loaded_topic(env, kctl, unique_name, tmp_path):
    topic = f"progress-{uuid.uuid4().hex[:6]}"  # short: the display's first column is its name
    assert kctl("topic", "create", topic, "-p", "2").exit_code == 0
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"record {n}\n" for n in range(200_000)))
    return topic, lines


def test_produce_from_a_file_shows_bytes_of_the_file_then_one_summary(env, loaded_topic):
    topic, lines = loaded_topic
    size_mib = f"{lines.stat().st_size / 1048576:.1f} MiB"
    status, out, shown = run(["record", "produce", topic, "--file", str(lines)], env, stderr_tty=True)
    assert (status, out) == (0, "")
    live = [line for line in shown.splitlines() if line.startswith(f"produce {topic}")]
    assert live, shown
    # done/total in bytes of the file, a rate and the time left (rich's h:mm:ss).
    assert re.search(rf"/{re.escape(size_mib)} .*/s .*\d:\d\d:\d\d|/{re.escape(size_mib)} .*/s .*-:--:--", live[0]), live
    assert shown.strip().splitlines()[-1].startswith(f"produced 200000 record(s) ({lines.stat().st_size - 200_000} bytes) to {topic}")

    status, out, piped = run(["record", "produce", topic, "--file", str(lines)], env, stderr_tty=False)
    assert (status, out) == (0, "")
    assert len(piped.splitlines()) == 1 and piped.startswith("produced 200000 record(s)"), piped

    status, out, quiet = run(["record", "produce", topic, "--file", str(lines), "-q"], env, stderr_tty=True)
    assert (status, out, quiet.strip()) == (0, "", "")


def test_consume_to_a_file_shows_records_read_of_the_total(env, loaded_topic):
    topic, lines = loaded_topic
    assert run(["record", "produce", topic, "--file", str(lines)], env, stderr_tty=False)[0] == 0
    status, _, shown = run(["record", "consume", topic, "-o", "plain"], env, stderr_tty=True)
    assert status == 0
    # stdout is a file here: the live display counts records read to the total.
    assert re.search(r"^consume .*/200,000 records", shown, re.M), shown
    assert shown.strip().splitlines()[-1] == "consumed 200000 record(s) from 2 partition(s)"
    # With stderr not a terminal: the summary line alone.
    status, _, piped = run(["record", "consume", topic, "-o", "plain"], env, stderr_tty=False)
    assert (status, piped) == (0, "consumed 200000 record(s) from 2 partition(s)\n")


def test_until_caught_up_shows_the_lag_consumed(env, kctl, unique_name):
    topic, group = unique_name("progress"), unique_name("g")
    assert kctl("topic", "create", topic).exit_code == 0
    assert kctl("record", "produce", topic, input="a\nb\nc\n").exit_code == 0
    assert kctl("record", "consume", topic, "--group", group, "-q").exit_code == 0
    status, out, shown = run(["group", "lag", group, "--until-caught-up", "-o", "json"], env, stderr_tty=True)
    assert status == 0 and '"lag_sum":0' in out
    assert "catching up" in shown and shown.strip().splitlines()[-1].startswith("caught up: lag 0 after "), shown
    status, out, piped = run(["group", "lag", group, "--until-caught-up", "-o", "json"], env, stderr_tty=False)
    assert status == 0 and piped.startswith("caught up: lag 0") and len(piped.splitlines()) == 1
