"""kctl/cli/pages/help-<width>.txt: every command's `--help` as click prints it, at the
widths kctl.cli.entry serves without importing click."""

from __future__ import annotations

from click.testing import CliRunner

from kctl.cli.entry import MARK, WIDTHS
from kctl.devtools.tree import CommandInfo


def render_help_pages(commands: list[CommandInfo]) -> dict[str, str]:
    """relative path -> content of each width's pages file."""
    from kctl.cli.main import cli

    files = {}
    for width in WIDTHS:
        runner = CliRunner()
        pages = []
        for info in commands:
            # terminal_width reaches every sub-context, as the terminal's columns would.
            result = runner.invoke(cli, [*info.path, "--help"], prog_name="kctl", terminal_width=width)
            if result.exit_code != 0 or MARK in result.stdout:
                raise RuntimeError(f"{info.name} --help: exit {result.exit_code}, {result.output[-200:]!r}")
            pages.append(f"{MARK}{info.name}\n{result.stdout}")
        files[f"kctl/cli/pages/help-{width}.txt"] = "".join(pages)
    return files
