"""The config read, `config describe`: its body and document, free of click so the console
script runs it without it (kctl.cli.direct); kctl.cli.config declares its options and help."""

from __future__ import annotations

from kctl.cli._app import App
from kctl.cli._batch import report_documents
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec

CONFIG_TABLE = TableSpec(
    (
        Column("name", "NAME"),
        Column("value", "VALUE"),
        Column("source", "SOURCE"),
        Column("read_only", "READ-ONLY", wide=True),
        Column("sensitive", "SENSITIVE", wide=True),
        Column("is_default", "DEFAULT", wide=True),
    )
)
CONFIG_DOCUMENT = DocumentSpec(
    fields=(Field("entity_type", "ENTITY-TYPE"), Field("entity_name", "ENTITY-NAME", get=lambda r: r.entity_name or "(cluster default)")),
    sections=(Section("configs", "CONFIGS", CONFIG_TABLE),),
)


def describe(app: App, entity_type, names, include_defaults, keys) -> None:
    from kctl.admin.topics.configs import describe_configs

    targets = list(names) or [None]
    found, errors = describe_configs(app.session, entity_type, targets, include_defaults=include_defaults, keys=keys)
    report_documents(app, found, errors, CONFIG_DOCUMENT, "describe configs", len(found) + len(errors))
    if entity_type == "client-metrics" and not names and not found:
        app.note("no client-metrics subscriptions")
