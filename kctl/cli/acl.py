"""kctl acl: list, create and delete ACLs."""

from __future__ import annotations

import itertools
from pathlib import Path

import click

from kctl.cli._app import App
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options, pass_app, runs, yes_option
from kctl.cli.reads.acl import ACL_COLUMNS, ACL_TABLE, OPERATION_NAMES, filters_of, resources_of, split
from kctl.errors import PartialFailure, UsageError
from kctl.output.spec import Column, TableSpec

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TypeVar

    from kctl.admin.security.acls import Acl, AclResult

    _F = TypeVar("_F", bound=Callable[..., Any])

RESULT_TABLE = TableSpec((*ACL_COLUMNS, Column("status", "STATUS"), Column("error", "ERROR")))



def resource_options(command: _F) -> _F:
    options: list[Callable[[_F], _F]] = [
        click.option("--topic", "topics", multiple=True, metavar="NAME", help="A topic (repeatable; '*' is every topic)."),
        click.option("--group", "groups", multiple=True, metavar="NAME", help="A group (repeatable; '*' is every group)."),
        click.option("--transactional-id", "transactional_ids", multiple=True, metavar="ID", help="A transactional id (repeatable)."),
        click.option("--cluster", "cluster", is_flag=True, help="The cluster resource (kafka-cluster)."),
        click.option("--principal", "principals", multiple=True, metavar="TYPE:NAME", help="A principal such as User:alice or User:* (repeatable)."),
        click.option("--host", "hosts", multiple=True, metavar="HOST", help="A client host (repeatable; '*' is any host)."),
        click.option("--operation", "operations", multiple=True, metavar="OP[,OP...]", help=f"Operations (repeatable): {OPERATION_NAMES}."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.group(cls=LazyGroup, aliases={"ls": "list", "rm": "delete"})
def acl() -> None:
    """List, create and delete ACLs (the cluster's authorizer must be enabled)."""


@acl.command("list")
@resource_options
@click.option("--pattern", default="any", show_default=True, metavar="TYPE", help="Resource pattern filter: literal, prefixed, match (every pattern that applies to the name), any (any pattern type, this exact name).")
@click.option("--permission", metavar="allow|deny", help="Only ALLOW or only DENY ACLs.")
@global_options
@runs("kctl.cli.reads.acl:list_")
def list_() -> None:
    """List ACLs; with no filter, every ACL on the cluster.

    Each option narrows the list; repeated values (or comma lists for --operation) match
    any of them. --pattern match shows every ACL that applies to a topic or group name,
    including prefixed and '*' ones, as the authorizer would see them. `-o json` prints
    the rows `kctl acl create --file` reads, so ACLs can be copied between clusters.

    \b
    Examples:
      kctl acl list
      kctl acl list --principal User:alice
      kctl acl list --topic orders --pattern match
      kctl acl list --operation write,create --permission allow -o json
      kctl acl list -o json > acls.json
    """


@acl.command("create")
@resource_options
@click.option("--pattern", default="literal", show_default=True, metavar="TYPE", help="Resource pattern: literal (this name, or '*') or prefixed (every name starting with it).")
@click.option("--deny", is_flag=True, help="DENY instead of ALLOW.")
@click.option("--producer", is_flag=True, help="What a producer needs: WRITE, DESCRIBE, CREATE on the topics (and WRITE, DESCRIBE on --transactional-id).")
@click.option("--idempotent", is_flag=True, help="With --producer: also IDEMPOTENT_WRITE on the cluster (for brokers before Kafka 2.8).")
@click.option("--consumer", is_flag=True, help="What a consumer needs: READ, DESCRIBE on the topics and READ on the groups.")
@click.option("-f", "--file", "file", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path), help="Create the ACLs in this file: the JSON (or JSON lines) that `acl list -o json` prints; - reads stdin.")
@global_options
@pass_app
def create(app: App, topics: tuple[str, ...], groups: tuple[str, ...], transactional_ids: tuple[str, ...], cluster: bool, principals: tuple[str, ...], hosts: tuple[str, ...], operations: tuple[str, ...], pattern: str, deny: bool, producer: bool, idempotent: bool, consumer: bool, file: Path | None) -> None:
    """Create ACLs: every combination of principals, hosts, operations and resources.

    Creating an ACL that exists already changes nothing. --producer and --consumer
    grant what kafka-acls grants with the same flags. Prints one row per ACL with its
    status; exit 4 when some failed.

    \b
    Examples:
      kctl acl create --principal User:alice --operation read,describe --topic orders
      kctl acl create --principal User:alice --operation read --topic logs. --pattern prefixed
      kctl acl create --producer --principal User:alice --topic orders
      kctl acl create --consumer --principal User:bob --topic orders --group billing
      kctl acl create --deny --principal User:mallory --operation all --topic '*'
      kctl acl create --file acls.json
    """
    from kctl.admin.security.acls import create_acls

    acls = _wanted(app, topics, groups, transactional_ids, cluster, principals, hosts, operations, pattern, deny, producer, idempotent, consumer, file)
    results = create_acls(app.session, acls)
    _report(app, results, "create ACLs")


def _wanted(app: App, topics: tuple[str, ...], groups: tuple[str, ...], transactional_ids: tuple[str, ...], cluster: bool,
            principals: Sequence[str], hosts: Sequence[str], operations: tuple[str, ...], pattern: str, deny: bool, producer: bool,
            idempotent: bool, consumer: bool, file: Path | None) -> list[Acl]:
    from kctl.admin.security.acls import OPERATIONS, PATTERN_TYPES, Acl, consumer_acls, parse_choice, parse_principal, producer_acls

    if file is not None:
        if any((topics, groups, transactional_ids, cluster, principals, hosts, operations, deny, producer, consumer, idempotent)):
            raise UsageError("--file takes the ACLs from the file; give no other ACL options with it")
        return _read_file(app, file)
    if not principals:
        raise UsageError("--principal is required (e.g. --principal User:alice)")
    principals = [parse_principal(p) for p in principals]
    pattern_type = parse_choice(pattern, PATTERN_TYPES, "pattern type")
    hosts = list(hosts) or ["*"]
    if idempotent and not producer:
        raise UsageError("--idempotent goes with --producer")
    if producer or consumer:
        if operations or deny:
            raise UsageError("--producer and --consumer choose the operations; drop --operation and --deny")
        if not topics:
            raise UsageError("--producer and --consumer need --topic")
        if consumer and not groups:
            raise UsageError("--consumer needs --group (the consumer group that reads the topics)")
        acls: list[Acl] = []
        for principal, host in itertools.product(principals, hosts):
            if producer:
                acls += producer_acls(principal, host, topics, pattern_type, transactional_ids, idempotent)
            if consumer:
                acls += consumer_acls(principal, host, topics, pattern_type, groups)
        return acls
    resources = resources_of(topics, groups, transactional_ids, cluster)
    if not resources:
        raise UsageError("name a resource: --topic, --group, --transactional-id or --cluster")
    if not operations:
        raise UsageError(f"--operation is required; accepted: {OPERATION_NAMES}")
    ops = [parse_choice(o, OPERATIONS, "operation") for o in split(operations)]
    permission = "DENY" if deny else "ALLOW"
    return [
        Acl(resource_type, name, "LITERAL" if resource_type == "CLUSTER" else pattern_type, principal, host, op, permission)
        for (resource_type, name), principal, host, op in itertools.product(resources, principals, hosts, ops)
    ]


def _read_file(app: App, path: Path) -> list[Acl]:
    from kctl.admin.security.acls import read_acl_file
    from kctl.errors import InvalidError

    if str(path) == "-":
        return read_acl_file(Path("<stdin>"), app.stdin.read())
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidError(action=f"read {path}", cause=f"{getattr(exc, 'strerror', None) or exc}") from exc
    return read_acl_file(path, text)


@acl.command("delete")
@resource_options
@click.option("--pattern", default="any", show_default=True, metavar="TYPE", help="Resource pattern filter: literal, prefixed, match, any (as for `acl list`).")
@click.option("--permission", metavar="allow|deny", help="Only ALLOW or only DENY ACLs.")
@click.option("--all", "all_", is_flag=True, help="Delete every ACL on the cluster (no filter).")
@click.option("--dry-run", is_flag=True, help="Show what would be deleted and stop.")
@yes_option
@global_options
@pass_app
def delete(app: App, topics: tuple[str, ...], groups: tuple[str, ...], transactional_ids: tuple[str, ...], cluster: bool, principals: tuple[str, ...], hosts: tuple[str, ...], operations: tuple[str, ...], pattern: str, permission: str | None, all_: bool, dry_run: bool, yes: bool) -> None:
    """Delete the ACLs a filter matches, after showing them and asking.

    The filter options are those of `acl list`, and what `acl list` shows with them is
    what goes (kafka-acls' --pattern defaults to literal; kctl's to any, as its list).
    kctl finds the matching ACLs first, shows them and asks (or needs --yes), then
    deletes exactly those: an ACL created meanwhile is never taken with them. With no
    filter, --all is required.

    \b
    Examples:
      kctl acl delete --principal User:alice --topic orders --dry-run
      kctl acl delete --principal User:alice --topic orders --yes
      kctl acl delete --topic logs. --pattern prefixed --yes
      kctl acl delete --all --dry-run
    """
    from kctl.admin.security.acls import delete_acls, list_acls

    filtered = any((topics, groups, transactional_ids, cluster, principals, hosts, operations, permission, pattern.lower() != "any"))
    if not filtered and not all_:
        raise UsageError("give a filter (--topic, --group, --principal, --operation, ...) or --all to delete every ACL")
    if all_ and filtered:
        raise UsageError("--all deletes every ACL; drop it or the filter options")
    everything = all_
    filters = filters_of(topics, groups, transactional_ids, cluster, principals, hosts, operations, pattern, permission)
    matched = list_acls(app.session, filters)
    if not matched:
        app.note("no ACLs match; nothing to delete")
        return
    if dry_run:
        app.out.table(matched, ACL_TABLE)
        app.note(f"dry run: {_count(len(matched))} would be deleted")
        return
    if not app.quiet and app.stdin_is_tty and not yes:
        app.out.table(matched, ACL_TABLE)
    scope = " (every ACL on the cluster)" if everything else ""
    app.confirm(f"Delete {_count(len(matched))}{scope}?", yes=yes, action=f"delete {_count(len(matched))}{scope}")
    _report(app, delete_acls(app.session, matched), "delete ACLs")


def _count(n: int) -> str:
    return f"{n} ACL" if n == 1 else f"{n} ACLs"


def _report(app: App, results: Sequence[AclResult], action: str) -> None:
    app.out.table(results, RESULT_TABLE)
    failed = [r for r in results if r.status == "failed"]
    for result in failed:
        app.error_line(f"{result.principal} {result.operation} {result.resource_type}:{result.resource_name}: {result.error}")
    if failed:
        raise PartialFailure(action=action, cause=f"{len(failed)} of {len(results)} failed")
