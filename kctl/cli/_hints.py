"""Hints in the user's terms: a library hint names a setting as `{name}` (its library
name, kctl.errors.render_hint); the command line says it as the flag of the command that
failed, or the global option."""

from __future__ import annotations

import click

from kctl.errors import KctlError, render_hint, settings_in

# The global options (kctl.cli._options), as the hints have always spelled them.
GLOBAL_FLAGS = {
    "bootstrap": "-b/--bootstrap-server",
    "bootstrap_servers": "-b/--bootstrap-server",
    "context": "--context",
    "properties": "-X",
    "output": "-o/--output",
    "timeout": "--timeout",
    "debug": "--debug",
    "quiet": "-q/--quiet",
}


def flags_of(command: click.Command | None) -> dict[str, str]:
    """Setting name -> flag: the command's own options (the long form), then the globals."""
    flags: dict[str, str] = {}
    for param in command.params if command is not None else ():
        if isinstance(param, click.Option) and param.name:
            flags[param.name] = max(param.opts, key=len)
    flags.update(GLOBAL_FLAGS)
    return flags


def in_flags(error: KctlError, command: click.Command | None) -> KctlError:
    """`error` with its hint's settings named as `command`'s flags (a setting the command
    lacks as `--its-name`)."""
    if not error.hint or not settings_in(error.hint):
        return error
    flags = flags_of(command)
    named = {name: flags.get(name) or "--" + name.replace("_", "-") for name in settings_in(error.hint)}
    return error.but(hint=render_hint(error.hint, named))
