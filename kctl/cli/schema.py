"""kctl schema: subjects and schemas of a Schema Registry (Confluent's API)."""

from __future__ import annotations

from pathlib import Path

import click

from kctl.admin.registry.schemas import COMPATIBILITY_LEVELS, MODES
from kctl.cli._app import App
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options, pass_app, yes_option
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from kctl.admin.registry.schemas import Reference, SchemaVersion

    _F = TypeVar("_F", bound=Callable[..., Any])

SUBJECT_TABLE = TableSpec((Column("subject", "SUBJECT"),))
REFERENCE_TABLE = TableSpec((Column("name", "NAME"), Column("subject", "SUBJECT"), Column("version", "VERSION", align="right")))
VERSION_TABLE = TableSpec((
    Column("subject", "SUBJECT"),
    Column("version", "VERSION", align="right"),
    Column("id", "ID", align="right"),
    Column("type", "TYPE"),
    Column("references", "REFERENCES", get=lambda v: ", ".join(f"{r.name}={r.subject}:{r.version}" for r in v.references) or "-"),
))
SCHEMA_DOCUMENT = DocumentSpec(
    fields=(Field("subject", "SUBJECT"), Field("version", "VERSION"), Field("id", "ID"), Field("type", "TYPE")),
    sections=(Section("references", "REFERENCES", REFERENCE_TABLE),),
)
CHECK_DOCUMENT = DocumentSpec(
    fields=(Field("subject", "SUBJECT"), Field("compatible", "COMPATIBLE")),
    sections=(Section("messages", "MESSAGES", TableSpec((Column("message", "MESSAGE", get=lambda m: m),))),),
)
TYPE_CHOICE = click.Choice(["avro", "protobuf", "json"])


def registry_option(command: _F) -> _F:
    return click.option(
        "--registry-url", "registry_url", metavar="URL",
        help="The schema registry (Confluent's REST API); default: the context's. [env: KCTL_SCHEMA_REGISTRY_URL; credentials: KCTL_SCHEMA_REGISTRY_BASIC_AUTH=user:password]",
    )(command)


def _version(text: str) -> int | str:
    if text == "latest" or (text.isdigit() and int(text) > 0):
        return text if text == "latest" else int(text)
    from kctl.errors import UsageError

    raise UsageError(action=f"parse --version {text!r}", cause="expected a version number (1, 2, ...) or latest")


def _schema_input(file: Path, schema_type: str | None, references: tuple[str, ...]) -> tuple[str, str, list[Reference]]:
    from kctl.admin.registry.schemas import parse_reference, read_schema_file

    text, registry_type = read_schema_file(file, schema_type)
    return text, registry_type, [parse_reference(r) for r in references]


def schema_file_options(command: _F) -> _F:
    options: list[Callable[[_F], _F]] = [
        click.option("-f", "--file", "file", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The schema: Avro (.avsc), Protobuf (.proto) or JSON Schema (.json)."),
        click.option("--type", "schema_type", type=TYPE_CHOICE, help="The schema's type; default: from the file's extension (.proto, .json), else avro."),
        click.option("--reference", "references", multiple=True, metavar="NAME=SUBJECT:VERSION", help="A schema it imports or names, registered under SUBJECT (repeatable); e.g. common.proto=common-value:1."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.group(cls=LazyGroup, aliases={"ls": "list", "rm": "delete"})
def schema() -> None:
    """Subjects and schemas of a Schema Registry: list, describe, register, check, delete.

    Any registry with Confluent's REST API (Confluent Schema Registry, Apicurio's
    /apis/ccompat/v7, Redpanda, Karapace). Say which with the context's settings
    (kctl context set NAME --schema-registry-url URL ...), KCTL_SCHEMA_REGISTRY_URL or
    --registry-url; basic authentication from the context's basic-auth-file or
    KCTL_SCHEMA_REGISTRY_BASIC_AUTH (user:password).
    """


@schema.command("list")
@click.option("--prefix", metavar="TEXT", help="Only subjects whose names start with TEXT.")
@click.option("--deleted", is_flag=True, help="Also subjects deleted softly (their versions can still be read, or deleted for good).")
@registry_option
@global_options
@pass_app
def list_(app: App, prefix: str | None, deleted: bool, registry_url: str | None) -> None:
    """List subjects, sorted by name.

    \b
    Examples:
      kctl schema list
      kctl schema list --prefix orders
      kctl schema list --deleted -o json
    """
    app.out.table(app.registry(registry_url).subjects(prefix=prefix, deleted=deleted), SUBJECT_TABLE)


@schema.command("versions")
@click.argument("subject")
@click.option("--deleted", is_flag=True, help="Also versions deleted softly.")
@registry_option
@global_options
@pass_app
def versions(app: App, subject: str, deleted: bool, registry_url: str | None) -> None:
    """List a subject's versions: number, schema id, type, references.

    \b
    Examples:
      kctl schema versions orders-value
      kctl schema versions orders-value -o json
    """
    app.out.table(app.registry(registry_url).versions(subject, deleted=deleted), VERSION_TABLE)


@schema.command("describe")
@click.argument("subject")
@click.option("--version", "version", default="latest", show_default=True, metavar="N|latest", help="Which version.")
@registry_option
@global_options
@pass_app
def describe(app: App, subject: str, version: str, registry_url: str | None) -> None:
    """Show one version of a subject: id, type, references and the schema itself.

    The schema is printed after the summary, JSON indented; with -o json it is the
    `schema` key, as registered.

    \b
    Examples:
      kctl schema describe orders-value
      kctl schema describe orders-value --version 1
      kctl schema describe orders-value -o json | jq -r .schema > orders.avsc
    """
    found = app.registry(registry_url).version(subject, _version(version))
    _show_schema(app, found)


@schema.command("get-by-id")
@click.argument("schema_id", metavar="ID", type=click.IntRange(min=1))
@registry_option
@global_options
@pass_app
def get_by_id(app: App, schema_id: int, registry_url: str | None) -> None:
    """Show the schema with this id (the 4 bytes after a record's magic byte).

    \b
    Examples:
      kctl schema get-by-id 1
      kctl schema get-by-id 1 -o json
    """
    _show_schema(app, app.registry(registry_url).by_id(schema_id))


def _show_schema(app: App, found: SchemaVersion) -> None:
    from kctl.admin.registry.schemas import pretty

    app.out.document(found, SCHEMA_DOCUMENT)
    if app.out.format not in ("json", "jsonl", "csv"):  # those carry it as the `schema` key
        app.out.raw("\nSCHEMA\n" + pretty(found))


@schema.command("register")
@click.argument("subject")
@schema_file_options
@registry_option
@global_options
@pass_app
def register(app: App, subject: str, file: Path, schema_type: str | None, references: tuple[str, ...], registry_url: str | None) -> None:
    """Register a schema under a subject (a new version, unless the subject already has
    this schema, whose version is then shown). The registry checks it against the
    subject's compatibility level and refuses an incompatible one (exit 65).

    \b
    Examples:
      kctl schema register orders-value --file order.avsc
      kctl schema register money.proto --file money.proto
      kctl schema register payments-value --file payment.proto \\
        --reference money.proto=money.proto:1
    """
    text, registry_type, refs = _schema_input(file, schema_type, references)
    _show_schema(app, app.registry(registry_url).register(subject, text, registry_type, refs))


@schema.command("check")
@click.argument("subject")
@schema_file_options
@registry_option
@global_options
@pass_app
def check(app: App, subject: str, file: Path, schema_type: str | None, references: tuple[str, ...], registry_url: str | None) -> None:
    """Check whether a schema could be registered under a subject, by the subject's
    compatibility level: exit 0 when compatible, 2 when not (with the registry's
    reasons), so it can gate a deploy.

    \b
    Examples:
      kctl schema check orders-value --file order.avsc
      kctl schema check orders-value --file order-v2.avsc -o json
      kctl schema check orders-value --file broken.avsc    # exit 2
    """
    from kctl.errors import ExitCode

    text, registry_type, refs = _schema_input(file, schema_type, references)
    verdict = app.registry(registry_url).check(subject, text, registry_type, refs)
    app.out.document(verdict, CHECK_DOCUMENT)
    if not verdict.compatible:
        click.get_current_context().exit(ExitCode.CRITICAL)


@schema.command("delete")
@click.argument("subject")
@click.option("--version", "version", type=click.IntRange(min=1), metavar="N", help="Only this version (default: every version of the subject).")
@click.option("--permanent", is_flag=True, help="Delete for good what was deleted softly before (the registry requires the soft delete first).")
@yes_option
@registry_option
@global_options
@pass_app
def delete(app: App, subject: str, version: int | None, permanent: bool, yes: bool, registry_url: str | None) -> None:
    """Delete a subject (or one version): softly by default, so its versions stay
    readable with --deleted and its ids keep decoding records; --permanent afterwards
    removes them for good. Asks first (--yes without a terminal).

    \b
    Examples:
      kctl schema delete old-orders-value --version 2 --yes
      kctl schema delete old-orders-value --yes
      kctl schema delete old-orders-value --permanent --yes
    """
    registry = app.registry(registry_url)
    what = f"{subject}" + (f" version {version}" if version is not None else "")
    kind = "permanently delete" if permanent else "delete"
    app.confirm(f"{kind.capitalize()} {what}?", yes=yes, action=f"{kind} {what}")
    deleted = registry.delete(subject, version=version, permanent=permanent)
    app.note(f"{'permanently deleted' if permanent else 'deleted'} {subject} version(s) {', '.join(str(v) for v in deleted)}")


SETTING_TABLE_COMPATIBILITY = TableSpec((
    Column("subject", "SUBJECT", get=lambda s: s.subject or "(global)"),
    Column("compatibility", "COMPATIBILITY"),
    Column("source", "SOURCE"),
))
SETTING_TABLE_MODE = TableSpec((
    Column("subject", "SUBJECT", get=lambda s: s.subject or "(global)"),
    Column("mode", "MODE"),
    Column("source", "SOURCE"),
))


@schema.group("config", cls=LazyGroup)
def config() -> None:
    """The compatibility level the registry checks new schemas against: global, or a
    subject's own."""


@config.command("get")
@click.argument("subject", required=False)
@registry_option
@global_options
@pass_app
def config_get(app: App, subject: str | None, registry_url: str | None) -> None:
    """Show the compatibility level of a subject (its own, or the global one it follows:
    SOURCE says which), or without SUBJECT the global one.

    \b
    Examples:
      kctl schema config get
      kctl schema config get orders-value -o json
    """
    app.out.table([app.registry(registry_url).compatibility(subject)], SETTING_TABLE_COMPATIBILITY)


@config.command("set")
@click.argument("subject", required=False)
@click.option("--compatibility", "level", required=True, type=click.Choice([level.lower() for level in COMPATIBILITY_LEVELS], case_sensitive=False),
              help="The level: BACKWARD (new schemas read old data), FORWARD (old schemas read new data), FULL (both); _TRANSITIVE against every version, not only the latest; NONE.")
@registry_option
@global_options
@pass_app
def config_set(app: App, subject: str | None, level: str, registry_url: str | None) -> None:
    """Set the compatibility level of a subject, or without SUBJECT the global one.

    \b
    Examples:
      kctl schema config set orders-value --compatibility full
      kctl schema config set --compatibility backward
    """
    app.out.table([app.registry(registry_url).set_compatibility(subject, level.upper())], SETTING_TABLE_COMPATIBILITY)


@config.command("delete")
@click.argument("subject")
@registry_option
@global_options
@pass_app
def config_delete(app: App, subject: str, registry_url: str | None) -> None:
    """Remove a subject's own compatibility level: it follows the global one again.

    \b
    Examples:
      kctl schema config delete orders-value
    """
    app.out.table([app.registry(registry_url).delete_compatibility(subject)], SETTING_TABLE_COMPATIBILITY)


@schema.group("mode", cls=LazyGroup)
def mode() -> None:
    """The registry's mode: READWRITE, READONLY (no new schemas), IMPORT (schemas keep
    the ids they are given, for migrating a registry)."""


@mode.command("get")
@click.argument("subject", required=False)
@registry_option
@global_options
@pass_app
def mode_get(app: App, subject: str | None, registry_url: str | None) -> None:
    """Show the mode of a subject (SOURCE: its own, or the global one), or without
    SUBJECT the global one.

    \b
    Examples:
      kctl schema mode get
      kctl schema mode get orders-value -o json
    """
    app.out.table([app.registry(registry_url).mode(subject)], SETTING_TABLE_MODE)


@mode.command("set")
@click.argument("subject", required=False)
@click.option("--mode", "mode_", required=True, type=click.Choice([mode.lower() for mode in MODES], case_sensitive=False), help="The mode.")
@click.option("--force", is_flag=True, help="IMPORT even where schemas exist already (the registry refuses otherwise).")
@registry_option
@global_options
@pass_app
def mode_set(app: App, subject: str | None, mode_: str, force: bool, registry_url: str | None) -> None:
    """Set the mode of a subject, or without SUBJECT the registry's.

    \b
    Examples:
      kctl schema mode set orders-value --mode readonly
      kctl schema mode set orders-value --mode readwrite
    """
    app.out.table([app.registry(registry_url).set_mode(subject, mode_.upper(), force=force)], SETTING_TABLE_MODE)
