"""Library hints name settings as `{setting}` (kctl.errors.render_hint); the command line
says each as the flag of the command that failed. Every setting a hint names is a flag
some command has, so no hint points at a flag that does not exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click
import pytest

from kctl.cli._hints import GLOBAL_FLAGS
from kctl.devtools.tree import walk
from kctl.errors import ExitCode, NotFoundError, render_hint, settings_in

PACKAGE = Path(__file__).resolve().parents[2] / "kctl"


def _text(node: ast.expr) -> str | None:
    """A hint's text: a string literal, an f-string with each value as X, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)
    return None


def library_hints() -> list[tuple[str, str]]:
    """(where, text) of every hint given outside the CLI: each string or f-string in the
    value of a `hint=` argument."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(PACKAGE / "cli") or path.is_relative_to(PACKAGE / "broker"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "hint":
                texts, todo = [], [node.value]
                while todo:  # strings and f-strings, not the strings inside an f-string
                    n = todo.pop()
                    if isinstance(n, (ast.Constant, ast.JoinedStr)):
                        texts.append(_text(n))
                    else:
                        todo += ast.iter_child_nodes(n)
                where = f"{path.relative_to(PACKAGE.parent)}:{node.value.lineno}"
                found += [(where, t) for t in texts if t]
    return found


def test_every_setting_a_library_hint_names_is_a_flag():
    flags = set(GLOBAL_FLAGS) | {param.name for info in walk() for param in info.command.params if isinstance(param, click.Option)}
    longs = {opt for info in walk() for param in info.command.params if isinstance(param, click.Option) for opt in param.opts}
    hints = library_hints()
    named = [(where, name) for where, text in hints for name in settings_in(text)]
    assert len(named) > 30  # the scan sees them
    unknown = [(where, name) for where, name in named if name not in flags and "--" + name.replace("_", "-") not in longs]
    assert unknown == []


def test_library_hints_name_no_flag_outside_a_command_line():
    """A flag in a library hint is a `{setting}`, unless it is part of a command the hint
    quotes (`kctl ...`, `pip install ...`, `python -m ...`)."""
    bare = []
    for where, text in library_hints():
        outside = re.sub(r"(kctl|pip|python) [^,;()]*", "", text)
        if re.search(r"(^|[\s(])--?[a-zA-Z]", outside.replace("-- ", "")):
            bare.append((where, text))
    assert bare == []


def test_render_hint_names_settings_as_flags_or_words():
    assert render_hint("raise {timeout} or leave out {allow_new_group}", {"timeout": "--timeout"}) == \
        "raise --timeout or leave out allow new group"
    assert render_hint("{ not a setting } {Upper}") == "{ not a setting } {Upper}"


def test_an_error_names_settings_in_its_action_cause_and_hint_as_flags():
    from kctl.cli._hints import in_flags
    from kctl.errors import UsageError

    error = UsageError(action="use {json_schema} 'a {b}'", cause="{json_schema} types JSON values ({value_format} json)",
                       hint="or raise {timeout}")
    said = in_flags(error, {"json_schema": "--schema", "value_format": "--value-format"})
    assert (said.action, said.cause, said.hint) == ("use --schema 'a {b}'", "--schema types JSON values (--value-format json)",
                                                   "or raise --timeout")


@pytest.mark.integration
def test_the_command_line_says_the_failed_commands_flag(kctl, cluster, unique_name, topic_for_hints):
    missing = unique_name("nogroup")
    result = kctl("-b", cluster.bootstrap, "group", "reset-offsets", missing, "-t", topic_for_hints, "--to-earliest")
    assert result.exit_code == ExitCode.NOT_FOUND
    assert result.stderr.splitlines()[-1] == "hint: --allow-new-group creates it with these offsets"
    error = NotFoundError(action="x", cause="y", hint="{allow_new_group} creates it")
    assert render_hint(error.hint) == "allow new group creates it"  # what a library caller sees


@pytest.fixture
def topic_for_hints(kctl, cluster, unique_name):
    topic = unique_name("hints")
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic).exit_code == 0
    return topic
