"""Undo journals: what a change is about to replace, written before the change, one JSON
file per change in a state directory (offset resets of groups, offset changes of
connectors). Ids sort by time: the UTC second and a random suffix."""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
from pathlib import Path

from kctl.errors import InvalidError, NotFoundError


def write(directory: Path, entry: dict) -> str:
    """Record `entry` (with an id and its time added) atomically; returns the id."""
    now = dt.datetime.now(dt.UTC)
    journal_id = now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{journal_id}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"id": journal_id, "created": now.isoformat(), **entry}, indent=2) + "\n")
    os.replace(tmp, path)
    return journal_id


def read(directory: Path, journal_id: str, what: str = "reset") -> dict:
    """The entry `journal_id`, or the newest with "last"."""
    entries = list(directory.glob("*.json")) if directory.exists() else []
    if not entries:
        raise NotFoundError(action="undo", cause=f"no {what} journal in {directory}")
    # The newest by when it was written: ids name the second, and two changes in one
    # second (a script's) would otherwise be ordered by their random suffixes.
    newest = max(entries, key=lambda entry: (entry.stat().st_mtime_ns, entry.name))
    chosen = newest if journal_id == "last" else directory / f"{journal_id}.json"
    if not chosen.exists():
        raise NotFoundError(action="undo", cause=f"no {what} {journal_id!r} in {directory}")
    try:
        return json.loads(chosen.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidError(action="undo", cause=f"journal {chosen} is unreadable: {exc}") from exc
