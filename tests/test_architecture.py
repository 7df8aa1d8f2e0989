"""ARCHITECTURE.md's invariants, checked on the source: the import graph between kctl's
modules has no cycle (function-level imports count: they hide a cycle, they do not break
it), each layer imports only the layers below it, and the heavy third-party packages
stay in the one package that owns them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kctl"

# What each part of kctl may import from kctl (besides itself). A part is the longest
# prefix listed here; the order of ARCHITECTURE.md, from the bottom up.
ALLOWED = {
    "kctl.errors": set(),
    # Value, the slotted result types of the everyday paths (no dataclasses: issue 59).
    "kctl.values": set(),
    "kctl.timespec": {"kctl.errors"},
    "kctl.sizes": {"kctl.errors"},
    # A record batch's header and records are Values (kctl.values has no kctl imports).
    "kctl.messages": {"kctl.values"},
    # Where keyed records go (murmur2, CRC-32): kctl's producer, consume --key, copy, replay.
    "kctl.partitioner": set(),
    "kctl.config": {"kctl.errors"},
    "kctl.broker": {"kctl.errors", "kctl.sizes", "kctl.messages"},
    "kctl.admin.client": {"kctl.errors", "kctl.config", "kctl.messages", "kctl.partitioner"},
    # Cluster and topics are concerns, not layers: a topic's --detail asks for log dirs and
    # reassignments, replication throttles are configs (no module cycle all the same).
    "kctl.admin.cluster": {"kctl.errors", "kctl.config", "kctl.messages", "kctl.admin.client", "kctl.admin.topics"},
    "kctl.admin.topics": {"kctl.errors", "kctl.config", "kctl.messages", "kctl.admin.client", "kctl.admin.cluster", "kctl.sizes",
                          "kctl.timespec"},
    "kctl.admin.groups": {"kctl.errors", "kctl.config", "kctl.messages", "kctl.timespec", "kctl.admin.client", "kctl.admin.topics"},
    "kctl.admin.security": {"kctl.errors", "kctl.config", "kctl.messages", "kctl.sizes", "kctl.admin.client"},
    "kctl.admin.registry": {"kctl.errors", "kctl.config", "kctl.admin.client"},
    # Kafka Connect's REST API; a sink connector's lag is the groups' lag code.
    "kctl.admin.connect": {"kctl.errors", "kctl.config", "kctl.admin.client", "kctl.admin.groups"},
    # MirrorMaker 2 from its topics; a failover is a group offset reset (groups.resets).
    "kctl.admin.mirror": {"kctl.errors", "kctl.config", "kctl.admin.client", "kctl.admin.groups", "kctl.admin.topics"},
    "kctl.admin.declarative": {"kctl.errors", "kctl.config", "kctl.admin.client", "kctl.admin.cluster", "kctl.admin.topics",
                               "kctl.admin.security", "kctl.admin.connect"},
    # kctl doctor reads what the other concerns read and judges it (API names from
    # kctl.messages, for brokers answering different versions; client quotas).
    "kctl.admin.doctor": {"kctl.errors", "kctl.config", "kctl.messages", "kctl.admin.client", "kctl.admin.cluster",
                          "kctl.admin.topics", "kctl.admin.groups", "kctl.admin.security"},
    "kctl.admin": set(),  # the package's own __init__: a docstring
    # topic clone (records/clone.py) maps the groups' offsets onto the records it copies.
    "kctl.records": {"kctl.errors", "kctl.timespec", "kctl.config", "kctl.messages", "kctl.admin.client", "kctl.admin.topics",
                     "kctl.admin.registry", "kctl.admin.groups", "kctl.partitioner"},
    "kctl.output": {"kctl.errors", "kctl.timespec", "kctl.sizes"},
    "kctl.sampling": {"kctl.errors"},
    "kctl.lag_exporter": {"kctl.errors", "kctl.admin.client", "kctl.admin.groups", "kctl.output", "kctl.sampling"},
    # The live view only reads: the library, the shared sampler, the record decoding.
    "kctl.top": {"kctl.errors", "kctl.sizes", "kctl.timespec", "kctl.config", "kctl.admin.client", "kctl.admin.cluster",
                 "kctl.admin.topics", "kctl.admin.groups", "kctl.admin.registry", "kctl.admin.connect", "kctl.records",
                 "kctl.sampling"},
    "kctl.local": {"kctl.errors", "kctl.broker"},
    "kctl.spark": {"kctl.errors", "kctl.timespec", "kctl.sizes", "kctl.config", "kctl.admin.client", "kctl.admin.topics",
                   "kctl.admin.registry", "kctl.records", "kctl.output", "kctl.partitioner"},
    "kctl.testing": {"kctl.errors", "kctl.broker"},
    "kctl.polling": set(),
    "kctl.journal": {"kctl.errors"},
    "kctl.cli": {"kctl"},  # the top: parses, calls the library, renders
    "kctl.spark.submit": {"kctl.cli"},  # spark-submit's entry point runs the CLI in the driver
    "kctl.devtools": {"kctl"},  # generates completions and man pages from the whole tree
    "kctl": set(),  # kctl/__init__.py and __main__.py
}
# Third-party packages that only one part of kctl may import.
OWNED = {
    "click": ("kctl.cli", "kctl.devtools"),
    # kafka-python: the bundled broker's codec of the APIs kctl/messages does not define;
    # no client of kctl's goes through it.
    "kafka": ("kctl.broker",),
    "pyspark": ("kctl.spark",),
    # CEL (common-expression-language) evaluates --where; loaded only when one is given.
    "cel": ("kctl.records.where",),
    "rich": ("kctl.output", "kctl.cli", "kctl.top"),
    "textual": ("kctl.top",),
    "tabulate": ("kctl.output",),
}


# Utilities every part above the broker may use.
for _part in ALLOWED:
    if _part.startswith(("kctl.admin", "kctl.records", "kctl.spark", "kctl.local", "kctl.lag_exporter", "kctl.top")):
        ALLOWED[_part] = ALLOWED[_part] | {"kctl.polling", "kctl.journal"}
    if _part not in ("kctl.values", "kctl.errors", "kctl.partitioner", "kctl.broker"):
        ALLOWED[_part] = ALLOWED[_part] | {"kctl.values"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _nodes(tree: ast.AST, *, types: bool) -> Iterator[ast.AST]:
    """ast.walk, leaving out the bodies of `if TYPE_CHECKING:` unless `types`."""
    for node in ast.iter_child_nodes(tree):
        if not types and isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            yield from (n for child in node.orelse for n in (child, *_nodes(child, types=types)))
            continue
        yield node
        yield from _nodes(node, types=types)


@cache
def imports_of(name: str, *, types: bool = True) -> tuple[str, ...]:
    """Every module `name` imports, at any depth of its code (kctl's modules by their own
    name; `from kctl.x import y` is kctl.x.y when y is a module); with `types=False`, only
    those imported at run time (not for annotations under `if TYPE_CHECKING:`)."""
    path = modules()[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in _nodes(ast.parse(path.read_text(), str(path)), types=types):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                found.append(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules() else base)
    return tuple(dict.fromkeys(found))


def part_of(name: str) -> str:
    return max((p for p in ALLOWED if name == p or name.startswith(p + ".")), key=len)


def kctl_edges(*, types: bool = True) -> dict[str, set[str]]:
    return {m: {i for i in imports_of(m, types=types) if i in modules() and i != m} for m in modules()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    """At run time: modules that name each other's types in annotations (under
    `if TYPE_CHECKING:`) never import each other."""
    assert cycles(kctl_edges(types=False)) == []


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def layer_violations(edges: dict[str, set[str]]) -> list[str]:
    wrong = []
    for name, targets in sorted(edges.items()):
        allowed = ALLOWED[part_of(name)] | {part_of(name)}
        for target in sorted(targets):
            # Any module may read kctl.__version__.
            if target != "kctl" and not any(part_of(target) == a or part_of(target).startswith(a + ".") for a in allowed):
                wrong.append(f"{name} imports {target}")
    return wrong


def test_each_layer_imports_only_the_layers_below():
    assert layer_violations(kctl_edges()) == []


def test_the_layer_check_finds_an_import_against_the_layers():
    edges = {"kctl.admin.groups.lag": {"kctl.admin.topics.offsets", "kctl.cli.group"}, "kctl.broker.server": {"kctl.admin.client.session"}}
    assert layer_violations(edges) == ["kctl.admin.groups.lag imports kctl.cli.group", "kctl.broker.server imports kctl.admin.client.session"]


@pytest.mark.parametrize("package", sorted(OWNED))
def test_heavy_packages_stay_where_they_belong(package):
    users = sorted(m for m in modules() if any(i == package or i.startswith(package + ".") for i in imports_of(m)))
    assert [m for m in users if not m.startswith(OWNED[package])] == []


def test_every_module_has_a_part():
    assert all(part_of(m) for m in modules())


def command_module_imports(edges: dict[str, set[str]]) -> list[str]:
    """A command module (kctl.cli.<noun>) importing another one: shared CLI code belongs
    in kctl.cli._* (the root, kctl.cli.main, loads the nouns by name)."""
    def command(name: str) -> bool:
        parts = name.split(".")
        return len(parts) == 3 and parts[:2] == ["kctl", "cli"] and not parts[2].startswith("_") and parts[2] not in ("main", "entry")

    return [f"{name} imports {target}" for name, targets in sorted(edges.items()) if command(name)
            for target in sorted(targets) if command(target)]


def test_command_modules_do_not_import_each_other():
    assert command_module_imports(kctl_edges()) == []


def test_the_command_module_check_finds_one():
    edges = {"kctl.cli.topic": {"kctl.cli.config", "kctl.cli._configs"}, "kctl.cli.main": {"kctl.cli.topic"}}
    assert command_module_imports(edges) == ["kctl.cli.topic imports kctl.cli.config"]


# -- ARCHITECTURE.md names only what exists ------------------------------------------------

ROOT = PACKAGE.parent
DOC = ROOT / "ARCHITECTURE.md"


def named_in_doc() -> list[str]:
    """Every `backticked` text of ARCHITECTURE.md."""
    import re

    return re.findall(r"`([^`\n]+)`", DOC.read_text())


def missing_paths(texts: list[str]) -> list[str]:
    """The texts that name a file or directory (a/b/, x.py, kctl.x.y) that does not exist,
    under the repository or kctl/ (a glob must match something)."""
    import re

    missing = []
    for text in texts:
        for word in text.split():
            word = word.strip("(),;:")
            if re.fullmatch(r"kctl(\.[a-z_0-9]+)+", word):
                path = ROOT / word.replace(".", "/")
                if not (path.with_suffix(".py").exists() or path.is_dir()):
                    missing.append(word)
            elif re.fullmatch(r"[\w.*/-]+(/|\.py|\.md|\.json|\.toml)", word) and ("/" in word or word.endswith(".py")):
                # From the repository, or (a path in its package's row: groups/resets.py,
                # handlers/access.py) anywhere below kctl/ or tests/.
                name = word.rstrip("/")
                found = bool(list(ROOT.glob(name))) or any(PACKAGE.rglob(name)) or any((ROOT / "tests").rglob(name))
                if not found:
                    missing.append(word)
    return missing


def missing_commands(texts: list[str], tree: dict[str, set[str]]) -> list[str]:
    """The texts that name a kctl command (`kctl topic list`, `group reset-offsets`,
    `mirror failover|failback`) whose noun or verb the click tree lacks."""
    missing = []
    for text in texts:
        words = text.split()
        if words[:1] == ["kctl"]:
            words = words[1:]
        if not words or words[0] not in tree:
            continue
        verbs = words[1].split("|") if len(words) > 1 and not words[1].startswith("-") and not words[1].isupper() else []
        if tree[words[0]] and any(v not in tree[words[0]] for v in verbs):
            missing.append(text)
    return missing


def command_tree() -> dict[str, set[str]]:
    import click

    from kctl.cli.main import cli

    context = click.Context(cli)
    tree: dict[str, set[str]] = {}
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        if command is None:
            continue
        tree[name] = set(command.list_commands(context)) if isinstance(command, click.Group) else set()
    return tree


def test_every_path_and_command_architecture_md_names_exists():
    texts = named_in_doc()
    assert len(texts) > 100  # the scan reads the page
    assert missing_paths(texts) == []
    assert missing_commands(texts, command_tree()) == []


def test_the_page_checks_find_what_is_gone():
    assert missing_paths(["admin/client/nowhere.py", "cli/_*.py", "kctl.admin.nothing", "admin/client/", "session.py", "gone.py"]) == [
        "admin/client/nowhere.py", "kctl.admin.nothing", "gone.py"]
    tree = {"offset": {"get", "delete"}, "mirror": {"failover", "failback"}, "top": set()}
    assert missing_commands(["offset list", "kctl offset get -o json", "mirror failover|failback", "top", "kafka-acls --list"], tree) == [
        "offset list"]


# -- one place chooses the client (issue 69) --------------------------------------------------

CLIENT_CHOICE = ("wire_available", "kafka.name", "AdminClient(", "over_wire", "over_librdkafka")


def choices_outside_the_client_package() -> list[str]:
    """Where code outside kctl.admin.client asks which client serves the session, or
    builds a client of its own: `wire_available()`, `kafka.name`, an adapter module
    (`over_*`), librdkafka's `AdminClient(`."""
    found = []
    for name, path in modules().items():
        if name.startswith(("kctl.admin.client", "kctl.broker")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "wire_available":
                found.append(f"{name}:{node.lineno}: wire_available")
            elif isinstance(node, ast.Attribute) and node.attr == "name" and isinstance(node.value, ast.Attribute) and node.value.attr == "kafka":
                found.append(f"{name}:{node.lineno}: kafka.name")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "AdminClient":
                found.append(f"{name}:{node.lineno}: AdminClient(")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("kctl.admin.client.over_",)):
                found.append(f"{name}:{node.lineno}: import of {node.module}")
    return found


def test_only_the_client_package_chooses_the_client():
    assert choices_outside_the_client_package() == []


# -- Values take keywords (kctl.values) --------------------------------------------------------


def test_values_take_keywords_but_where_their_docstring_says():
    """kctl.values' docstring: every Value's __init__ takes keywords only, but in the
    POSITIONAL modules, whose types are built by the thousand per answer."""
    from kctl.values import POSITIONAL

    wrong = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef) or not any(isinstance(b, ast.Name) and b.id == "Value" for b in node.bases):
                continue
            init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            positional = init is not None and len(init.args.args) > 1
            if positional != (name in POSITIONAL):
                wrong.append(f"{name}.{node.name}: {'positional' if positional else 'keywords only'}")
    assert wrong == []


# -- tests wait on events (issue 69) -----------------------------------------------------------

WAIT = ROOT / "tests" / "support" / "eventually.py"  # within(): the one poll under tests/
MOST_FIXED_SLEEPS = 12


def fixed_sleeps(root: Path) -> tuple[list[str], list[str]]:
    """Every `sleep(...)` call under `root` but the one in `within()`, and those of them
    whose line does not say why time itself must pass (`# the point: ...`)."""
    found, unexplained = [], []
    for path in sorted(root.rglob("*.py")):
        if path == WAIT:
            continue
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "sleep":
                where = f"{path.relative_to(root.parent)}:{node.lineno}"
                found.append(where)
                if "# the point" not in lines[node.lineno - 1]:
                    unexplained.append(where)
    return found, unexplained


def test_tests_wait_on_events_and_each_sleep_says_why():
    found, unexplained = fixed_sleeps(ROOT / "tests")
    assert unexplained == [], "wait for an event (tests/support/eventually.py) or say `# the point: ...`"
    assert len(found) <= MOST_FIXED_SLEEPS, found


def test_the_sleep_check_finds_one(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("import time\ntime.sleep(1)\nsleep(2)  # the point: a time lag\n")
    assert fixed_sleeps(tmp_path / "tests") == (["tests/test_x.py:2", "tests/test_x.py:3"], ["tests/test_x.py:2"])


# -- one declaration per command (issue 69) ----------------------------------------------------


def stubs_that_declare_parameters() -> list[str]:
    """The click commands whose body lives elsewhere (`@runs(...)`) but whose own function
    takes parameters: a second declaration of what click's decorators declare, never called."""
    found = []
    for name, path in modules().items():
        if not name.startswith("kctl.cli."):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            runs = any(isinstance(d, ast.Call) and getattr(d.func, "id", None) == "runs" for d in node.decorator_list)
            arguments = node.args
            if runs and (arguments.args or arguments.kwonlyargs or arguments.vararg or arguments.kwarg):
                found.append(f"{name}.{node.name}")
    return found


def test_a_command_whose_body_runs_elsewhere_declares_its_parameters_once():
    assert stubs_that_declare_parameters() == []


WRITING_VERBS = {"produce", "create", "delete", "alter", "add", "remove", "reset-offsets", "move", "elect", "copy", "redrive"}


def test_the_bodies_of_the_commands_run_without_click_are_reads_and_writes_by_name():
    """A body under cli/reads/ only reads: a command that writes has its body under cli/writes/."""
    from kctl.cli import _direct_params as params

    for command, (body, *_rest) in params.COMMANDS.items():
        writes = command.split()[1] in WRITING_VERBS
        assert body.startswith("kctl.cli.writes." if writes else "kctl.cli.reads."), (command, body)
