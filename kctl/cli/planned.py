"""Nouns whose verbs arrive in later releases: each shows its purpose and nothing else.

No verb is registered until it works, so nothing here pretends to do anything.
"""

from __future__ import annotations

import click

from kctl.cli._lazy import LazyGroup


def _planned(name: str, summary: str, verbs: str) -> click.Group:
    return LazyGroup(
        name=name,
        help=f"{summary}.\n\nNot available yet: {verbs} arrive in a later kctl release.",
        short_help=summary,
    )


spark = _planned("spark", "Dump, replay and audit topics with PySpark", "dump, replay and audit")
