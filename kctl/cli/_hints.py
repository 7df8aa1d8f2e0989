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
    """`error` with the settings its hint and cause name as the failed command's flags
    (`options`: each option's name -> its longest flag), or the global options. In a hint,
    a setting the command lacks is named `--its-name`; in a cause (a usage error says
    `give {ip} without {user}`) and an action (`use {json_schema} ...`), only the command's
    own options and the global ones are replaced: they may quote text that has braces of
    its own."""
    flags = {**options, **GLOBAL_FLAGS}
    in_cause = {name: flags[name] for name in settings_in(error.cause) if name in flags}
    in_action = {name: flags[name] for name in settings_in(error.action or "") if name in flags}
    if not in_cause and not in_action and not (error.hint and settings_in(error.hint)):
        return error
    hint = None
    if error.hint:
        hint = render_hint(error.hint, {name: flags.get(name) or "--" + name.replace("_", "-") for name in settings_in(error.hint)})
    cause = _named(error.cause, in_cause) if in_cause else None
    action = _named(error.action, in_action) if error.action and in_action else None
    return error.but(action=action, cause=cause, hint=hint)


def _named(text: str, names: Mapping[str, str]) -> str:
    """`text` with each `{name}` of `names` said as its flag, other braces as they are."""
    for name, flag in names.items():
        text = text.replace("{" + name + "}", flag)
    return text
