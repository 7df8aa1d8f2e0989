"""kctl's use of confluent-kafka's private API: all of it in one adapter module, every
piece of it present in the installed version, and that version (and kafka-python's, the
bundled broker's codec) within the pins of pyproject.toml. An upgrade that drops a
private attribute fails here, naming the adapter, rather than for a user."""

from __future__ import annotations

import ast
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from kctl.admin.client import confluent

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = {"confluent_kafka": "kctl/admin/client/confluent.py"}
PRIVATE_NAMES = {a.split(".")[i] for _owner, a in confluent.PRIVATE_API
                 for i in range(len(a.split("."))) if a.split(".")[i].startswith("_")}


def private_uses(path: Path) -> list[str]:
    """Private names of the clients a module uses: an import path through a `_module`, an
    imported `_name`, or an attribute the adapters list as private."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ADAPTERS:
            names = [*node.module.split("."), *(a.name for a in node.names)]
            found += [f"{node.lineno}: from {node.module} import {n}" for n in names if n.startswith("_")][:1]
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names
                      if a.name.split(".")[0] in ADAPTERS and any(p.startswith("_") for p in a.name.split("."))]
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE_NAMES:
            found.append(f"{node.lineno}: .{node.attr}")
    return found


def test_only_the_adapters_touch_the_clients_private_api():
    adapters = {ROOT / p for p in ADAPTERS.values()}
    uses = {str(p.relative_to(ROOT)): private_uses(p) for p in sorted((ROOT / "kctl").rglob("*.py"))
            if p not in adapters and not p.is_relative_to(ROOT / "kctl/broker")}
    assert {path: found for path, found in uses.items() if found} == {}


def test_the_scan_finds_a_private_use(tmp_path):
    module = tmp_path / "m.py"
    attribute = next(n for n in sorted(PRIVATE_NAMES))
    module.write_text("from confluent_kafka.schema_registry.common._httpx_compat import httpx\n"
                      f"def f(client):\n    return client.{attribute}\n")
    assert private_uses(module) == ["1: from confluent_kafka.schema_registry.common._httpx_compat import _httpx_compat",
                                    f"3: .{attribute}"]


def test_confluent_kafka_has_what_the_adapter_needs():
    missing = confluent.missing_private_api()
    assert not missing, f"{ADAPTERS['confluent_kafka']} relies on {', '.join(missing)}, which confluent-kafka {version('confluent-kafka')} lacks"


def test_a_missing_private_attribute_is_reported(monkeypatch):
    monkeypatch.setattr(confluent, "PRIVATE_API", (("confluent_kafka.admin.AdminClient", "_gone_in_a_new_release"),))
    assert confluent.missing_private_api() == ["confluent_kafka.admin.AdminClient._gone_in_a_new_release"]
    monkeypatch.setattr(confluent, "PRIVATE_API", (("instance", "_rest_client.gone"),))
    assert confluent.missing_private_api() == ["instance._rest_client.gone"]


@pytest.mark.parametrize("distribution", ["confluent-kafka", "kafka-python"])
def test_the_clients_are_pinned_below_the_next_untested_release(distribution):
    """Both have an upper bound (a release may change what the adapter or the broker's
    codec uses), and the installed version, the one this suite passes with, is inside the
    pins."""
    from packaging.specifiers import SpecifierSet

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [re.sub(r"^[A-Za-z0-9_.-]+(\[[^]]*\])?", "", d) for d in dependencies if re.match(re.escape(distribution) + r"\b", d)]
    specifiers = SpecifierSet(spec)
    assert any(s.operator == "<" for s in specifiers), f"{distribution} needs an upper bound: {spec}"
    assert version(distribution) in specifiers, f"{distribution} {version(distribution)} is outside pyproject's {spec}"
