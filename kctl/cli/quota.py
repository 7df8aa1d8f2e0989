"""kctl quota: client quotas of users, client ids and IPs (list, describe, set, delete)."""

from __future__ import annotations

import click

from kctl.cli._app import App
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import KeyValueType, global_options, pass_app, yes_option
from kctl.errors import NotFoundError, UsageError
from kctl.output.spec import Column, TableSpec

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeVar

    from kctl.admin.security.quotas import Entity

    _F = TypeVar("_F", bound=Callable[..., Any])


def _number(value: float | None) -> str | None:
    """1048576.0 as 1048576: quota values are doubles on the wire, whole numbers in use."""
    if value is None:
        return None
    return str(int(value)) if float(value).is_integer() else f"{value}"


QUOTA_TABLE = TableSpec(
    (
        Column("user", "USER"),
        Column("client_id", "CLIENT-ID"),
        Column("ip", "IP"),
        Column("quota", "QUOTA"),
        Column("value", "VALUE", get=lambda q: _number(q.value), align="right"),
    )
)
EFFECTIVE_TABLE = TableSpec(
    (
        Column("quota", "QUOTA"),
        Column("value", "VALUE", get=lambda q: _number(q.value), align="right"),
        Column("source", "SOURCE"),
    )
)

QUOTA_NAMES = "producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate (users, client ids); connection_creation_rate (IPs)"


def entity_options(command: _F) -> _F:
    options: list[Callable[[_F], _F]] = [
        click.option("--user", metavar="NAME", help="A user principal's name (alice for User:alice)."),
        click.option("--default-user", is_flag=True, help="The default for users without their own quota."),
        click.option("--client-id", metavar="ID", help="A client id."),
        click.option("--default-client-id", is_flag=True, help="The default for client ids without their own quota."),
        click.option("--ip", metavar="IP", help="A client IP address (connection_creation_rate only)."),
        click.option("--default-ip", is_flag=True, help="The default for IPs without their own quota."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _name(value: str | None, default: bool, option: str) -> str | None:
    from kctl.admin.security.quotas import DEFAULT

    if value is not None and default:
        raise UsageError(f"--{option} and --default-{option} name different entities; give one")
    return DEFAULT if default else value


def _entity(user: str | None, default_user: bool, client_id: str | None, default_client_id: bool, ip: str | None,
            default_ip: bool) -> Entity:
    from kctl.admin.security.quotas import entity_of

    return entity_of(_name(user, default_user, "user"), _name(client_id, default_client_id, "client-id"), _name(ip, default_ip, "ip"))


@click.group(cls=LazyGroup, aliases={"ls": "list", "rm": "delete"})
def quota() -> None:
    """Client quotas: byte rates, request and mutation rates of users, client ids and IPs."""


@quota.command("list")
@entity_options
@global_options
@pass_app
def list_(app: App, user: str | None, default_user: bool, client_id: str | None, default_client_id: bool, ip: str | None,
          default_ip: bool) -> None:
    """List quotas: every one, or those of entities matching the options.

    --user alice lists alice's quotas and those of alice with any client id; <default>
    marks a default entity. Values are per second: bytes for the byte rates, percent of
    a thread for request_percentage, partitions for controller_mutation_rate,
    connections for connection_creation_rate.

    \b
    Examples:
      kctl quota list
      kctl quota list --user alice
      kctl quota list --default-client-id -o json
    """
    from kctl.admin.security.quotas import list_quotas

    quotas = list_quotas(
        app.session,
        user=_name(user, default_user, "user"),
        client_id=_name(client_id, default_client_id, "client-id"),
        ip=_name(ip, default_ip, "ip"),
    )
    app.out.table(quotas, QUOTA_TABLE)


@quota.command("describe")
@entity_options
@global_options
@pass_app
def describe(app: App, user: str | None, default_user: bool, client_id: str | None, default_client_id: bool, ip: str | None,
             default_ip: bool) -> None:
    """Show the quotas that apply to a client, and the entity each comes from.

    Kafka takes each quota from the most specific entity that sets it: user and client
    id, user and default client id, user, default user and client id, ..., default
    client id. SOURCE names that entity; '-' is no quota (unlimited).

    \b
    Examples:
      kctl quota describe --user alice --client-id billing-app
      kctl quota describe --client-id billing-app -o json
      kctl quota describe --ip 10.0.0.7
    """
    from kctl.admin.security.quotas import effective_quotas

    entity = _entity(user, default_user, client_id, default_client_id, ip, default_ip)
    app.out.table(effective_quotas(app.session, entity), EFFECTIVE_TABLE)


@quota.command("set")
@entity_options
@click.option("-s", "--set", "settings", multiple=True, type=KeyValueType(), metavar="QUOTA=VALUE", help=f"A quota to set (repeatable): {QUOTA_NAMES}. Byte rates take units: 1MiB, 500KB.")
@click.option("--dry-run", is_flag=True, help="Have the broker validate the change and apply nothing.")
@global_options
@pass_app
def set_(app: App, user: str | None, default_user: bool, client_id: str | None, default_client_id: bool, ip: str | None, default_ip: bool,
         settings: tuple[tuple[str, str], ...], dry_run: bool) -> None:
    """Set quotas of one entity; its other quotas stay as they are.

    \b
    Examples:
      kctl quota set --user alice --set producer_byte_rate=1MiB --set consumer_byte_rate=2MiB
      kctl quota set --user alice --client-id billing-app --set request_percentage=50
      kctl quota set --default-client-id --set producer_byte_rate=10MB --dry-run
      kctl quota set --ip 10.0.0.7 --set connection_creation_rate=20
    """
    from kctl.admin.security.quotas import alter_quotas, parse_key, parse_value, quotas_after

    entity = _entity(user, default_user, client_id, default_client_id, ip, default_ip)
    if not settings:
        raise UsageError(f"give at least one --set QUOTA=VALUE; quotas: {QUOTA_NAMES}")
    values: dict[str, float] = {}
    for key, text in settings:
        name = parse_key(key, entity)
        values[name] = parse_value(name, text)
    alter_quotas(app.session, entity, values, (), dry_run)
    if dry_run:
        app.note(f"dry run: the broker accepted the change to {entity}; nothing was applied")
        return
    _show(app, entity, quotas_after(app.session, entity, values, ()))


@quota.command("delete")
@entity_options
@click.option("-k", "--quota", "keys", multiple=True, metavar="QUOTA", help="Remove only this quota (repeatable); default every quota of the entity.")
@click.option("--dry-run", is_flag=True, help="Show what would be removed and stop.")
@yes_option
@global_options
@pass_app
def delete(app: App, user: str | None, default_user: bool, client_id: str | None, default_client_id: bool, ip: str | None,
           default_ip: bool, keys: tuple[str, ...], dry_run: bool, yes: bool) -> None:
    """Remove quotas of one entity (all of them, or those of --quota).

    \b
    Examples:
      kctl quota delete --user alice --quota producer_byte_rate --yes
      kctl quota delete --user alice --client-id billing-app --dry-run
      kctl quota delete --ip 10.0.0.7 --yes
    """
    from kctl.admin.security.quotas import Quota, alter_quotas, parse_key, quotas_after, quotas_of

    entity = _entity(user, default_user, client_id, default_client_id, ip, default_ip)
    asked = [parse_key(k, entity) for k in keys]

    def lacks(current: dict[str, float]) -> bool:
        return not current or any(k not in current for k in asked)

    # A quota set a moment ago may not have reached the broker answering yet (quota set
    # waited on another one): asked again for a moment before "no quotas set on it".
    current = app.session.ask_until_found(lambda: quotas_of(app.session, entity), lacks)
    wanted = asked or sorted(current)
    missing = [k for k in wanted if k not in current]
    if not current or missing:
        raise NotFoundError(action=f"delete quotas of {entity}", cause=f"no {', '.join(missing) if missing else 'quotas'} set on it")
    doomed = [Quota(entity.user, entity.client_id, entity.ip, k, current[k]) for k in wanted]
    if dry_run:
        app.out.table(doomed, QUOTA_TABLE)
        app.note(f"dry run: {len(doomed)} quota(s) of {entity} would be removed")
        return
    app.confirm(f"Remove {', '.join(wanted)} of {entity}?", yes=yes, action=f"delete quotas of {entity}")
    alter_quotas(app.session, entity, {}, wanted, dry_run=False)
    _show(app, entity, quotas_after(app.session, entity, {}, wanted))


def _show(app: App, entity: Entity, values: Mapping[str, float]) -> None:
    """The entity's quotas after a change, read back from the cluster."""
    from kctl.admin.security.quotas import Quota

    app.out.table([Quota(entity.user, entity.client_id, entity.ip, k, v) for k, v in sorted(values.items())], QUOTA_TABLE)
