"""Start-up stays fast: help and completion import none of the heavy modules."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("confluent_kafka", "kafka", "rich", "tabulate", "pyspark", "pyarrow", "kctl.admin", "kctl.devtools", "kctl.spark")

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


def test_every_command_has_help(kctl):
    from kctl.cli.main import cli

    import click

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
