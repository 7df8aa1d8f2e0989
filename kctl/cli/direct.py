"""The everyday reads run without click: `kctl topic list`, `group lag G`, ... parsed from
the parameters click's tree declares (kctl/cli/_direct_params.py, written by `python -m
kctl.devtools gen-docs`) and handed to the same bodies the click commands call
(kctl.cli.reads, kctl.cli.writes, kctl.cli._options.runs).

Why: importing click costs ~20 ms of a read that Go CLIs answer in 20-50 ms in all
(issue 59). Only the command lines click would take without a word are parsed here;
anything else (another command, an option or a value this parser does not know, a
missing argument, --help, --debug, -X help, a combined short flag, `--`) is handed to
click, which parses it or says what is wrong. A usage error is thus always click's,
and a command's output is the same on both paths (tests/cli/test_direct.py runs both).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    import re
    from typing import Any, Literal, TypeAlias

    from kctl.cli._app import App

    # A value type, as kctl/cli/_direct_params.py's docstring describes it (None: text).
    _Kind: TypeAlias = (
        tuple[Literal["int", "float"], float | None, float | None, bool, bool]
        | tuple[Literal["choice"], tuple[str, ...], bool]
        | tuple[Literal["regex"]]
        | tuple[Literal["other"], str]
        | None
    )
    # A value as _convert gives it.
    _Value: TypeAlias = str | int | float | re.Pattern[str] | None
    # GLOBALS: flag -> (App attribute, takes a value, value type).
    _GlobalSpec: TypeAlias = tuple[str, bool, _Kind]
    # An option: (name, takes a value, value when given as a flag, repeatable, value type).
    _OptionSpec: TypeAlias = tuple[str, bool, bool | str | None, bool, _Kind]
    # An argument: (name, nargs, required, value type).
    _ArgumentSpec: TypeAlias = tuple[str, int, bool, _Kind]
    # COMMANDS: "noun verb" -> (body, options, arguments, defaults).
    _Command: TypeAlias = tuple[str, Mapping[str, _OptionSpec], tuple[_ArgumentSpec, ...], Mapping[str, object]]


class _ToClick(Exception):
    """This command line is click's to parse."""


def run(args: Sequence[str], env: Mapping[str, str]) -> int | None:
    """Run `kctl ARGS` without click and return its exit status, or None (having done
    nothing) when click must run it."""
    from kctl.cli._exit import truthy

    if "--debug" in args or truthy(env.get("KCTL_DEBUG")) or "_KCTL_COMPLETE" in env:
        return None  # --debug's logging and tracebacks, and completion, are kctl.cli.main's
    try:
        command, root, given, values = _parse(args)
    except _ToClick:
        return None
    from kctl.cli import _direct_params as params
    from kctl.cli._app import App

    body, options, _arguments, _defaults = params.COMMANDS[command]
    app = App(
        env=dict(env),
        output_format=given.get("output_format") or root.get("output_format") or env.get("KCTL_OUTPUT") or "auto",
        no_headers=bool(root.get("no_headers") or given.get("no_headers")),
        quiet=bool(root.get("quiet") or given.get("quiet")),
        bootstrap=given.get("bootstrap") or root.get("bootstrap"),
        context=given.get("context") or root.get("context"),
        properties=(*root.get("properties", ()), *given.get("properties", ())),
        timeout=given.get("timeout") or root.get("timeout"),
    )
    try:
        try:
            module, name = body.split(":")
            __import__(module)
            status: int | None = getattr(sys.modules[module], name)(app, **values)
        finally:
            app.close()
    except SystemExit:
        raise
    except:  # noqa: E722 - as kctl.cli.main: every failure ends in one line
        return _failure_status(app, options)
    return status or 0


def _failure_status(app: App, options: Mapping[str, _OptionSpec]) -> int:
    """As kctl.cli.main's tree renders a failure: a hint's settings as the command's
    flags (kctl.cli._lazy), a missing name with the closest one and a stopped bundled
    broker with its start (kctl.cli._suggest)."""
    from kctl.cli._exit import failure_status
    from kctl.errors import KctlError, NotFoundError, UnreachableError

    failure = sys.exc_info()[1]
    if isinstance(failure, KctlError):
        from kctl.cli._hints import in_flags, longest_flags

        rendered = in_flags(failure, longest_flags((name, opt) for opt, (name, *_rest) in options.items()))
        if isinstance(rendered, NotFoundError | UnreachableError):
            from kctl.cli._suggest import for_app

            rendered = for_app(app, rendered)
        return failure_status(rendered, False)
    return failure_status(failure, False)  # type: ignore[arg-type]


def _parse(args: Sequence[str]) -> tuple[str, dict[str, Any], dict[str, Any], dict[str, object]]:
    """(command, root's global options, the command's global options, its parameters by
    name), or _ToClick."""
    from kctl.cli import _direct_params as params

    root: dict[str, Any] = {}
    rest = list(args)
    while rest and rest[0].startswith("-"):
        _global(rest, params.GLOBALS, root)
    if len(rest) < 2:
        raise _ToClick
    noun = params.NOUNS.get(rest.pop(0))
    verb = params.VERBS.get(noun or "", {}).get(rest.pop(0))
    if noun is None or verb is None:
        raise _ToClick
    command = f"{noun} {verb}"
    _body, options, arguments, defaults = params.COMMANDS[command]
    given: dict[str, Any] = {}
    values: dict[str, Any] = {}
    positional: list[str] = []
    while rest:
        token = rest[0]
        if not token.startswith("-") or token == "-":
            positional.append(rest.pop(0))
        elif _option(rest, options, values) is None:
            _global(rest, params.GLOBALS, given)
    for name, nargs, required, kind in arguments:
        if nargs == -1:
            taken, positional = positional, []
            values[name] = tuple(_convert(v, kind) for v in taken)
        elif positional:
            values[name] = _convert(positional.pop(0), kind)
        if required and not values.get(name):
            raise _ToClick
    if positional:
        raise _ToClick
    if "help" in root.get("properties", ()) or "help" in given.get("properties", ()):
        raise _ToClick
    return command, root, given, {**defaults, **{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}}


def _option(rest: list[str], options: Mapping[str, _OptionSpec], values: dict[str, Any]) -> bool | None:
    """Take the command's own option at the head of `rest` into `values`; None when it
    is not one of them."""
    spec, value = _match(rest, options)
    if spec is None:
        return None
    name, takes_value, flag_value, multiple, kind = spec
    converted = _convert(value, kind) if takes_value else flag_value
    if multiple:
        values.setdefault(name, []).append(converted)
    else:
        values[name] = converted
    return True


def _global(rest: list[str], globals_: Mapping[str, _GlobalSpec], into: dict[str, Any]) -> None:
    spec, value = _match(rest, {opt: (name, takes_value, True, name == "properties", kind)
                                for opt, (name, takes_value, kind) in globals_.items()})
    if spec is None:
        raise _ToClick
    name, takes_value, _flag_value, multiple, kind = spec
    converted = _convert(value, kind) if takes_value else True
    if multiple:
        into[name] = (*into.get(name, ()), converted)
    else:
        into[name] = converted


def _match(rest: list[str], options: Mapping[str, _OptionSpec]) -> tuple[_OptionSpec | None, str | None]:
    """The option spec at the head of `rest` and its value (both taken off `rest`), as
    click's parser reads `--name value`, `--name=value`, `-n value` and `-nvalue`."""
    token = rest[0]
    if token == "--":
        raise _ToClick
    name, equals, attached = token.partition("=") if token.startswith("--") else (token, "", "")
    spec = options.get(name)
    if spec is None and not token.startswith("--") and len(token) > 2:
        name, attached, equals = token[:2], token[2:], "attached"
        spec = options.get(name)
        if spec is not None and not spec[1]:
            raise _ToClick  # -abc: combined short flags
    if spec is None:
        return None, None
    rest.pop(0)
    if not spec[1]:
        if equals:
            raise _ToClick  # --flag=value: click's error
        return spec, None
    if equals:
        return spec, attached
    if not rest:
        raise _ToClick  # a value is missing: click's error
    return spec, rest.pop(0)


def _convert(value: str | None, kind: _Kind) -> _Value:
    """`value` as click's type `kind` converts it, or _ToClick for what click would
    refuse (its message) or a type this parser leaves to it."""
    if kind is None or value is None:
        return value
    if kind[0] == "choice":
        choices, case_sensitive = kind[1], kind[2]
        if value in choices:
            return value
        if not case_sensitive:
            for choice in choices:
                if choice.casefold() == value.casefold():
                    return choice
        raise _ToClick
    if kind[0] in ("int", "float"):
        try:
            number: int | float = int(value) if kind[0] == "int" else float(value)
        except ValueError:
            raise _ToClick from None
        low, high, low_open, high_open = kind[1:]
        if low is not None and (number < low or low_open and number == low):
            raise _ToClick
        if high is not None and (number > high or high_open and number == high):
            raise _ToClick
        return number
    if kind[0] == "regex":
        import re

        try:
            return re.compile(value)
        except re.error:
            raise _ToClick from None
    raise _ToClick

