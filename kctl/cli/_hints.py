"""Hints in the user's terms: a library hint names a setting as `{name}` (its library
name, kctl.errors.render_hint); the command line says it as the flag of the command that
failed, or the global option."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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


def longest_flags(options: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Each option's longest flag (its long form), from (option name, flag) pairs."""
    flags: dict[str, str] = {}
    for name, flag in options:
        if len(flag) > len(flags.get(name, "")):
            flags[name] = flag
    return flags


def in_flags(error: KctlError, options: Mapping[str, str]) -> KctlError:
    """`error` with its hint's settings named as the failed command's flags (`options`:
    each option's name -> its longest flag), or the global options; a setting the command
    lacks is named `--its-name`."""
    if not error.hint or not settings_in(error.hint):
        return error
    flags = {**options, **GLOBAL_FLAGS}
    named = {name: flags.get(name) or "--" + name.replace("_", "-") for name in settings_in(error.hint)}
    return error.but(hint=render_hint(error.hint, named))
