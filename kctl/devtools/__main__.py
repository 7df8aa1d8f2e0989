"""python -m kctl.devtools gen-docs [--check] [--root DIR]

Writes completions/kctl.{bash,zsh,fish}, man/*.1 and the `--help` pages kctl serves
without click (kctl/cli/pages/), and the parameters of the reads kctl.cli.direct runs
without click (kctl/cli/_direct_params.py), from the command tree; and the types of Kafka's
messages (kctl/messages/types.py) from their JSON definitions. With
--check nothing is written; the exit status is 1 when any file is stale, missing or
no longer generated.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kctl.devtools.completions import FILENAMES, render_completion
from kctl.devtools.directparams import render_direct_params
from kctl.devtools.helppages import render_help_pages
from kctl.devtools.manpages import render_pages
from kctl.devtools.messagetypes import render_message_types
from kctl.devtools.tree import walk

REPO_ROOT = Path(__file__).resolve().parents[2]


def expected_files() -> dict[str, str]:
    """relative path -> content of every generated file."""
    commands = walk()
    files = {f"completions/{FILENAMES[shell]}": render_completion(shell, commands) for shell in FILENAMES}
    files.update({f"man/{name}": text for name, text in render_pages(commands).items()})
    files.update(render_help_pages(commands))
    files.update(render_direct_params(commands))
    files.update(render_message_types())
    return files


def stale_files(root: Path) -> list[str]:
    """Generated files that differ from, are missing in, or are extra in `root`."""
    expected = expected_files()
    problems = []
    for rel, text in sorted(expected.items()):
        path = root / rel
        if not path.exists():
            problems.append(f"missing: {rel}")
        elif path.read_text() != text:
            problems.append(f"stale: {rel}")
    for path in sorted((root / "man").glob("kctl*.1")):
        if f"man/{path.name}" not in expected:
            problems.append(f"extra: man/{path.name}")
    return problems


def write(root: Path) -> list[str]:
    expected = expected_files()
    written = []
    for rel, text in sorted(expected.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(rel)
    for path in sorted((root / "man").glob("kctl*.1")):
        if f"man/{path.name}" not in expected:
            path.unlink()
            written.append(f"removed {path.relative_to(root)}")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kctl.devtools")
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("gen-docs", help="generate man pages and shell completions")
    gen.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything is stale")
    gen.add_argument("--root", type=Path, default=REPO_ROOT)
    args = parser.parse_args(argv)
    if args.check:
        problems = stale_files(args.root)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print("run: python -m kctl.devtools gen-docs", file=sys.stderr)
            return 1
        return 0
    for rel in write(args.root):
        print(rel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
