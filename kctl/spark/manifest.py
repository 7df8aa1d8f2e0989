"""Manifests: what a dump holds and what a replay delivered, as JSON files.

A dump directory is complete when its `_kctl_manifest.json` says `"status": "complete"`
and `_SUCCESS` exists; both are written last, after the data files were read back and
counted. Anything else (a crash, a failed job) leaves `"status": "running"` or
`"partial"`, which replay and audit refuse to treat as a full copy.

Pure Python: no pyspark.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from kctl import __version__
from kctl.errors import InvalidError

DUMP_MANIFEST = "_kctl_manifest.json"
SUCCESS = "_SUCCESS"
FORMAT_VERSION = 1


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_json(path: Path, document: dict[str, Any]) -> None:
    """Replace path atomically: a reader sees the old or the new manifest, never half."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def new_dump_manifest(**fields: Any) -> dict[str, Any]:
    return {"kind": "kctl-dump", "format_version": FORMAT_VERSION, "kctl_version": __version__, "created_at": now_iso(), "status": "running", **fields}


def read_dump_manifest(directory: Path, *, require_complete: bool = True) -> dict[str, Any]:
    """The manifest of a kctl dump; an InvalidError for anything else."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InvalidError(action=f"read dump {directory}", cause="no such directory")
    path = directory / DUMP_MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidError(action=f"read dump {directory}", cause=f"not a kctl dump (no {DUMP_MANIFEST})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidError(action=f"read dump {directory}", cause=f"{DUMP_MANIFEST} is corrupt ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != "kctl-dump" or not isinstance(manifest.get("partitions"), list):
        raise InvalidError(action=f"read dump {directory}", cause=f"{DUMP_MANIFEST} is not a kctl dump manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise InvalidError(action=f"read dump {directory}", cause=f"format version {manifest.get('format_version')} (this kctl reads {FORMAT_VERSION})")
    if manifest.get("format") not in ("parquet", "jsonl"):
        raise InvalidError(action=f"read dump {directory}", cause=f"unknown format {manifest.get('format')!r}")
    if require_complete and (manifest.get("status") != "complete" or not (directory / SUCCESS).exists()):
        raise InvalidError(
            action=f"read dump {directory}", cause=f"the dump is incomplete (status {manifest.get('status')!r})",
            hint="the dump that wrote it failed or is still running; dump again with {overwrite}",
        )
    return manifest
