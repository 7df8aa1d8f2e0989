"""Reporting batch operations: every item's outcome on stdout, every failure on stderr,
and one exit status for the whole batch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kctl.cli._app import App
from kctl.errors import KctlError, PartialFailure
from kctl.output.spec import TableSpec

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any


def report(app: App, results: Sequence[Any], errors: Mapping[str, KctlError], spec: TableSpec, action: str) -> None:
    """Render results, then fail as the batch deserves.

    One item that failed is that item's error (and its exit status). When every item
    failed for the same kind of reason, the batch exits with that status; otherwise
    some work was done and the status is PARTIAL_FAILURE.
    """
    if len(results) == 1 and errors:
        raise next(iter(errors.values()))
    app.out.table(results, spec)
    for error in errors.values():
        app.error_line(error.message)
    if not errors:
        return
    kinds = {type(e) for e in errors.values()}
    if len(errors) == len(results) and len(kinds) == 1:
        error = next(iter(errors.values()))
        raise error.but(action=action, cause=f"all {len(errors)} failed")
    raise PartialFailure(action=action, cause=f"{len(errors)} of {len(results)} failed")


def report_documents(app: App, found: Sequence[Any], errors: Mapping[str, KctlError], spec, action: str, asked: int) -> None:
    """Render what could be described; fail like a batch for what could not.

    Nothing found is the (first) error itself, with its own exit status; some found is
    the documents plus one line per failure and PARTIAL_FAILURE.
    """
    if errors and not found:
        raise next(iter(errors.values()))
    app.out.documents(found, spec)
    for error in errors.values():
        app.error_line(error.message)
    if errors:
        raise PartialFailure(action=action, cause=f"{len(errors)} of {asked} failed")
