"""Start-up stays fast: help and completion import none of the heavy modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("confluent_kafka", "kafka", "rich", "tabulate", "pyspark", "pyarrow", "textual", "kctl.admin", "kctl.devtools", "kctl.spark", "kctl.top")

PROBE = """
import json, sys
from kctl.cli.main import main
heavy = json.loads(sys.argv[2])
try:
    main(json.loads(sys.argv[1]))
except SystemExit:
    pass
loaded = sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))
sys.stderr.write("LOADED=" + json.dumps(loaded) + "\\n")
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["topic", "--help"],
        ["topic", "list", "--help"],
        ["context", "--help"],
        ["group", "--help"],
        ["spark", "--help"],
        ["spark", "replay", "--help"],
        ["top", "--help"],
        ["--version"],
    ],
    ids=lambda a: " ".join(a),
)
def test_help_imports_nothing_heavy(args):
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded_line = [line for line in proc.stderr.splitlines() if line.startswith("LOADED=")][-1]
    assert json.loads(loaded_line.removeprefix("LOADED=")) == []
    assert proc.stdout


ENTRY = """
import os, sys
def loaded(code=0, exit=os._exit):  # kctl.cli.main ends with os._exit
    sys.stderr.write("CLICK=%s\\n" % ("click" in sys.modules))
    sys.stderr.flush()
    exit(code)
os._exit = loaded
from kctl.cli.entry import main
main()
loaded()
"""
CLICK = "from kctl.cli.main import main; main()"


@pytest.mark.parametrize("columns", [None, "80", "120", "60"])
@pytest.mark.parametrize("args", [["--help"], ["topic", "-h"], ["record", "consume", "--help"], ["topics", "--help"],
                                  ["-o", "json", "group", "--help"], ["topic", "nosuch", "--help"]], ids=" ".join)
def test_the_console_script_prints_clicks_help_without_click(args, columns):
    """kctl --help from the generated pages (kctl/cli/entry.py) is what click prints, at
    every width; what the pages do not hold (an alias, an option first, another width)
    is click's."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | ({"COLUMNS": columns} if columns else {})
    served = subprocess.run([sys.executable, "-c", ENTRY, *args], capture_output=True, env=env)
    rendered = subprocess.run([sys.executable, "-c", CLICK, *args], capture_output=True, env=env)
    assert (served.returncode, served.stdout) == (rendered.returncode, rendered.stdout)
    from_pages = columns in (None, "80", "120") and args[0] not in ("topics", "-o") and "nosuch" not in args
    assert f"CLICK={not from_pages}".encode() in served.stderr


def test_every_command_has_help(kctl):
    import click

    from kctl.cli.main import cli

    def visit(command: click.Command, path: tuple[str, ...], parent: click.Context | None) -> None:
        ctx = click.Context(command, info_name=path[-1] if path else "kctl", parent=parent)
        result = kctl(*path, "--help")
        assert result.exit_code == 0, (path, result.stderr)
        assert result.stdout.startswith("Usage: " + " ".join(("kctl", *path))), path
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                visit(command.get_command(ctx, name), (*path, name), ctx)
        else:
            assert "Examples:" in result.stdout, path

    visit(cli, (), None)


def test_version(kctl):
    from kctl import __version__

    result = kctl("--version")
    assert (result.exit_code, result.stdout) == (0, f"kctl {__version__}\n")


# What the everyday group reads may not import (issue 37): neither client library — they
# talk to Kafka through kctl's own wire client — nor the renderers' heavy half, nor asyncio
# or ssl on a plaintext connection, nor the Kerberos binding and bridge when GSSAPI is not
# configured.
NOT_FOR_GROUP_READS = ("confluent_kafka", "kafka", "rich", "tabulate", "pyspark", "asyncio", "ssl", "kctl.spark", "gssapi",
                       "kctl.admin.client.kerberos", "kctl.admin.client.bridge")


@pytest.mark.integration
@pytest.mark.parametrize("args", [["group", "list"], ["group", "describe", "{group}"], ["group", "lag", "{group}"],
                                  ["group", "lag", "{group}", "-o", "json"]], ids=lambda a: " ".join(a))
def test_group_reads_import_no_client_library(cluster, unique_name, args):
    from confluent_kafka import Consumer, TopicPartition

    topic, group = unique_name("startup"), unique_name("startup-group")
    subprocess.run([sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "topic", "create", topic, "-q"], check=True, capture_output=True)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    consumer.close()
    argv = ["-b", cluster.bootstrap, *(a.format(group=group) for a in args)]
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(NOT_FOR_GROUP_READS)],
                          capture_output=True, text=True, check=True)
    assert group in proc.stdout, proc.stderr
    loaded_line = [line for line in proc.stderr.splitlines() if line.startswith("LOADED=")][-1]
    assert json.loads(loaded_line.removeprefix("LOADED=")) == []


@pytest.mark.integration
@pytest.mark.parametrize("args", [["partition", "list", "--under-replicated"], ["partition", "list", "{topic}"], ["cluster", "health"],
                                  ["offset", "list", "{topic}"], ["topic", "describe", "{topic}"]], ids=lambda a: " ".join(a))
def test_metadata_reads_import_no_client_library(cluster, unique_name, args):
    """The partition and offset reads go through kctl's own client too (issue 37)."""
    topic = unique_name("startup")
    subprocess.run([sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "topic", "create", topic, "-p", "2", "-q"], check=True,
                   capture_output=True)
    argv = ["-b", cluster.bootstrap, *(a.format(topic=topic) for a in args)]
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(NOT_FOR_GROUP_READS)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    loaded_line = [line for line in proc.stderr.splitlines() if line.startswith("LOADED=")][-1]
    assert json.loads(loaded_line.removeprefix("LOADED=")) == []
