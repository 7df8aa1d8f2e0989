"""Checking that an installed client still has the private attributes an adapter
(confluent.py) relies on: each adapter lists them as (owner, dotted
attribute) pairs, an owner being a module, a module's class, or "instance" (an object of
the adapter's choosing)."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any


def missing(api: Iterable[tuple[str, str]], instance: Any | None = None) -> list[str]:
    """The pairs of `api` that cannot be found, as "owner.attribute" (instance pairs are
    skipped without an `instance`)."""
    found_missing = []
    for owner, attribute in api:
        try:
            target = instance if owner == "instance" else _resolve(owner)
        except (ImportError, AttributeError):
            found_missing.append(f"{owner}.{attribute}")
            continue
        if target is None:
            continue
        for part in attribute.split("."):
            if not hasattr(target, part):
                found_missing.append(f"{owner}.{attribute}")
                break
            target = getattr(target, part)
    return found_missing


def _resolve(owner: str) -> Any:
    """A module by its dotted name, or a module's attribute (a class) when no module has it."""
    try:
        return importlib.import_module(owner)
    except ImportError:
        module, _, name = owner.rpartition(".")
        return getattr(importlib.import_module(module), name)
