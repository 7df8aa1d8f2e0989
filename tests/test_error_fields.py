"""Errors are built from their fields and judged by them (issue 69), checked over kctl's
source: every KctlError is constructed with `action=` and `cause=` (or `cause=` alone,
for a caller to name the action with `but`), a ready-made line only for a UsageError;
and no code reads an error's text to decide or to reword (`.message` or `str(error)`
under a string method, `in`, a comparison or an f-string handed to another error)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import kctl.errors

KCTL = Path(kctl.errors.__file__).parent
# The bundled broker answers in Kafka's words on the wire: it raises no KctlError.
OUTSIDE = ("broker",)
STRING_METHODS = {"startswith", "endswith", "replace", "split", "rsplit", "partition", "rpartition", "find", "index", "strip",
                  "lstrip", "rstrip", "lower", "upper", "removeprefix", "removesuffix", "splitlines", "count", "format"}


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


@cache
def _error_classes() -> frozenset[str]:
    """The names of KctlError and every subclass defined in kctl."""
    names = {"KctlError"}
    grown = True
    trees = [_tree(p) for p in _sources()]
    while grown:
        grown = False
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in names and any(
                        isinstance(b, ast.Name) and b.id in names or isinstance(b, ast.Attribute) and b.attr in names for b in node.bases):
                    names.add(node.name)
                    grown = True
    return frozenset(names)


def _sources() -> list[Path]:
    return [p for p in sorted(KCTL.rglob("*.py")) if p.relative_to(KCTL).parts[0] not in OUTSIDE]


def _usage_classes(classes: set[str]) -> set[str]:
    usage = {"UsageError"}
    for path in _sources():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id in usage for b in node.bases):
                usage.add(node.name)
    return usage & classes


def _called(node: ast.Call) -> str | None:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def test_every_error_is_built_from_its_fields():
    classes = _error_classes()
    usage = _usage_classes(classes)
    wrong = []
    for path in _sources():
        for node in ast.walk(_tree(path)):
            if not isinstance(node, ast.Call) or _called(node) not in classes:
                continue
            if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id == "click":
                continue  # click's own UsageError
            keywords = {k.arg for k in node.keywords}
            if "cause" in keywords or (_called(node) in usage and node.args and not keywords & {"action", "cause"}):
                continue
            wrong.append(f"{path.relative_to(KCTL)}:{node.lineno}: {_called(node)}(...) without cause=")
    assert not wrong, "\n".join(wrong)


def _handlers(tree: ast.AST, classes: set[str]) -> list[tuple[str, list[ast.stmt]]]:
    """(name, body) of every `except <KctlError class> as name:`, and of every function
    parameter annotated as one."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found += [(a.arg, node.body) for a in node.args.args + node.args.kwonlyargs
                      if isinstance(a.annotation, ast.Name) and a.annotation.id in classes]
        if isinstance(node, ast.ExceptHandler) and node.name and node.type is not None:
            types = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            if any((t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else None) in classes for t in types):
                found.append((node.name, node.body))
    return found


def _is_error_text(node: ast.AST, error: str, texts: set[str]) -> bool:
    """`error.message` or `str(error)`, or a name that holds its text."""
    if isinstance(node, ast.Attribute) and node.attr == "message" and isinstance(node.value, ast.Name) and node.value.id == error:
        return True
    if isinstance(node, ast.Name) and node.id in texts:
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and len(node.args) == 1
            and isinstance(node.args[0], ast.Name) and node.args[0].id == error)


def _judged(body: list[ast.stmt], error: str, classes: set[str]) -> list[tuple[int, str]]:
    """Where `body` decides on, cuts or embeds the text of the error `error`."""
    nodes = [n for statement in body for n in ast.walk(statement)]
    texts = {t.id for n in nodes if isinstance(n, ast.Assign) and _is_error_text(n.value, error, set())
             for t in n.targets if isinstance(t, ast.Name)}
    found = []
    for node in nodes:
        if isinstance(node, ast.Attribute) and node.attr in STRING_METHODS and _is_error_text(node.value, error, texts):
            found.append((node.lineno, f".{node.attr}() of an error's text"))
        elif isinstance(node, ast.Compare) and any(_is_error_text(n, error, texts) for n in (node.left, *node.comparators)):
            found.append((node.lineno, "a comparison with an error's text"))
        elif isinstance(node, ast.Call) and (_called(node) in classes or _called(node) == "but") and any(
                _is_error_text(a, error, texts) or isinstance(a, ast.JoinedStr) and any(
                    isinstance(v, ast.FormattedValue) and _is_error_text(v.value, error, texts) for v in a.values)
                for a in [*node.args, *(k.value for k in node.keywords)]):
            found.append((node.lineno, "an error's text inside another error"))
    return found


def test_no_code_judges_or_rewords_an_error_by_its_text():
    """Within `except KctlError as e:` (and its subclasses): nothing decides by e's text,
    cuts it, or builds another error around it; `but()` says it again with other fields.
    Errors from elsewhere (Spark's, a parser's) are theirs to read."""
    classes = _error_classes()
    wrong = []
    for path in _sources():
        tree = _tree(path)
        for name, body in _handlers(tree, classes):
            wrong += [f"{path.relative_to(KCTL)}:{line}: {what}" for line, what in _judged(body, name, classes)]
    assert not wrong, "\n".join(sorted(set(wrong)))


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")


def _literal(node: ast.AST) -> str:
    """The literal text of a str or f-string expression (its placeholders dropped)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return ""


def test_the_library_names_settings_not_flags():
    """Below the CLI an error names a setting the user can change as `{setting}`, and the
    CLI says it as the failed command's flag (kctl.cli._hints.in_flags): the library
    serves other callers too. Only a whole command line it suggests (`kctl topic create
    ...`) spells flags out."""
    classes = _error_classes()
    wrong = []
    for path in _sources():
        if path.relative_to(KCTL).parts[0] in ("cli", "devtools"):
            continue
        for node in ast.walk(_tree(path)):
            if not isinstance(node, ast.Call) or _called(node) not in classes:
                continue
            for keyword in node.keywords:
                text = _literal(keyword.value) if keyword.arg in ("cause", "hint") else ""
                flag = FLAG.search(text)
                if flag and "kctl " not in text[:flag.start()]:
                    wrong.append(f"{path.relative_to(KCTL)}:{node.lineno}: {keyword.arg} names {flag.group(0)}")
    assert not wrong, "\n".join(wrong)
