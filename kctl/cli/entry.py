"""The `kctl` console script: a `--help` page straight from the generated pages, the
everyday reads without click (kctl.cli.direct), every other command through click
(kctl.cli.main).

Importing click alone takes ~40 ms here, most of `kctl --help`'s time (issue 37 asks
for 50 ms). The pages in kctl/cli/pages/ are click's own rendering of every command's
help at the two widths click uses most (78 columns when stdout is not a terminal or is
80 wide, 98 on terminals of 100 columns or more), written by `python -m kctl.devtools
gen-docs` and checked for staleness like the man pages. Anything else (another width,
options before --help, an alias, completion) goes to click.
"""

from __future__ import annotations

import os
import sys

PAGES = os.path.join(os.path.dirname(__file__), "pages")
# click's help width: the terminal's columns capped at the root's max_content_width, less 2.
MAX_CONTENT_WIDTH = 100
WIDTHS = (78, 98)
# Starts each page in a pages file, followed by the command's path and a newline.
MARK = "\f"


def main() -> None:
    page = help_page(sys.argv[1:], os.environ)
    if page is None:
        from kctl.cli.direct import run as run_direct

        status = run_direct(sys.argv[1:], os.environ)
        if status is None:
            from kctl.cli.main import main as run

            run()
            return
        from kctl.cli._exit import finish

        finish(status, console_script=True)
        return
    try:
        sys.stdout.buffer.write(page)
        sys.stdout.flush()
    except BrokenPipeError:  # `kctl --help | head -1`: exit 0 quietly, as kctl.cli.main does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def help_page(args: list[str], env) -> bytes | None:
    """The page for `kctl WORDS... --help|-h` as click would print it, or None."""
    if not args or args[-1] not in ("--help", "-h") or "_KCTL_COMPLETE" in env:
        return None
    words = args[:-1]
    if any(not word or word.startswith("-") for word in words):
        return None
    width = help_width(env)
    if width not in WIDTHS:
        return None
    try:
        with open(os.path.join(PAGES, f"help-{width}.txt"), "rb") as file:
            text = file.read()
    except OSError:
        return None
    head = f"{MARK}{' '.join(('kctl', *words))}\n".encode()
    start = text.find(head)
    if start < 0:
        return None
    start += len(head)
    end = text.find(MARK.encode(), start)
    return text[start:] if end < 0 else text[start:end]


def help_width(env) -> int:
    """click's help width (HelpFormatter) from shutil.get_terminal_size's columns,
    without importing shutil."""
    try:
        columns = int(env["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            # sys.__stdout__ is None without a stdout: the AttributeError below.
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return max(min(columns, MAX_CONTENT_WIDTH) - 2, 50)
