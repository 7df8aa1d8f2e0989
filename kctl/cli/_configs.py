"""Altering configs, shared by `config alter` and `topic alter-config`."""

from __future__ import annotations

import click

from kctl.cli._app import App
from kctl.cli._batch import report
from kctl.cli._options import KeyValueType
from kctl.output.spec import Column, TableSpec

ALTER_TABLE = TableSpec(
    (
        Column("entity_type", "ENTITY-TYPE"),
        Column("entity_name", "ENTITY-NAME", get=lambda r: r.entity_name or "(cluster default)"),
        Column("status", "STATUS"),
        Column("changes", "CHANGES", get=lambda r: " ".join(r.changes)),
        Column("error", "ERROR", wide=True),
    )
)


def change_options(command):
    """--set/--delete/--append/--subtract, shared by `config alter` and `topic alter-config`."""
    decorators = [
        click.option("--set", "sets", type=KeyValueType(), multiple=True, metavar="KEY=VALUE", help="Set a config (repeatable)."),
        click.option("--delete", "deletes", multiple=True, metavar="KEY", help="Remove an override, back to the default (repeatable)."),
        click.option("--append", "appends", type=KeyValueType(), multiple=True, metavar="KEY=VALUE", help="Add a value to a list config (repeatable)."),
        click.option("--subtract", "subtracts", type=KeyValueType(), multiple=True, metavar="KEY=VALUE", help="Remove a value from a list config (repeatable)."),
        click.option("--dry-run", is_flag=True, help="Ask the brokers to validate the change without applying it."),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def run_alter(app: App, entity_type: str, names, sets, deletes, appends, subtracts, dry_run) -> None:
    from kctl.admin.topics.configs import alter_configs, parse_changes

    changes = parse_changes(sets, deletes, appends, subtracts)
    results, errors = alter_configs(app.session, entity_type, names, changes, validate_only=dry_run)
    report(app, results, errors, ALTER_TABLE, f"alter {entity_type} configs")
