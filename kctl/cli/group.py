"""kctl group: consumer groups, their members, committed offsets and lag."""

from __future__ import annotations

import click

from kctl.cli._app import App, pass_app
from kctl.cli._batch import report
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import RegexType, global_options, yes_option
from kctl.errors import PartialFailure
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec

GROUP_TABLE = TableSpec(
    (
        Column("group", "GROUP"),
        Column("state", "STATE"),
        Column("type", "TYPE"),
        Column("members", "MEMBERS", align="right"),
        Column("protocol", "PROTOCOL"),
        Column("coordinator", "COORDINATOR", align="right", wide=True),
    )
)
MEMBER_TABLE = TableSpec(
    (
        Column("client_id", "CLIENT-ID"),
        Column("host", "HOST"),
        Column("assignment", "ASSIGNMENT", get=lambda m: " ".join(m.assignment)),
        Column("group_instance_id", "INSTANCE-ID"),
        Column("member_id", "MEMBER-ID", wide=True),
    )
)
OFFSET_TABLE = TableSpec(
    (Column("topic", "TOPIC"), Column("partition", "PARTITION", align="right"), Column("offset", "COMMITTED-OFFSET", align="right"), Column("metadata", "METADATA", wide=True))
)
GROUP_DOCUMENT = DocumentSpec(
    fields=(
        Field("group", "GROUP"),
        Field("state", "STATE"),
        Field("type", "TYPE"),
        Field("protocol", "PROTOCOL"),
        Field("coordinator", "COORDINATOR"),
        Field("members", "MEMBERS", get=lambda g: len(g.members)),
    ),
    sections=(Section("members", "MEMBERS", MEMBER_TABLE), Section("offsets", "OFFSETS", OFFSET_TABLE)),
)
LAG_TABLE = TableSpec(
    (
        Column("group", "GROUP"),
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("committed", "COMMITTED", align="right"),
        Column("log_start", "LOG-START", align="right"),
        Column("log_end", "LOG-END", align="right"),
        Column("lag", "LAG", align="right"),
        Column("client_id", "CLIENT-ID"),
        Column("flags", "FLAGS"),
        Column("raw_lag", "RAW-LAG", align="right", wide=True),
        Column("member_id", "MEMBER-ID", wide=True),
    )
)
RESULT_TABLE = TableSpec((Column("group", "GROUP"), Column("status", "STATUS"), Column("error", "ERROR", wide=True)))


@click.group(cls=LazyGroup, aliases={"ls": "list", "rm": "delete"})
def group():
    """Consumer groups: members, committed offsets, lag."""


@group.command("list")
@click.option("-r", "--regex", type=RegexType(), help="Only groups whose whole id matches.")
@click.option("-s", "--state", "states", multiple=True, metavar="STATE", help="Only groups in this state: Stable, Empty, PreparingRebalance, CompletingRebalance, Dead (repeatable).")
@click.option("--type", "types", multiple=True, metavar="TYPE", help="Only groups of this type: classic, consumer, share (repeatable).")
@global_options
@pass_app
def list_(app: App, regex, states, types):
    """List consumer groups with state, type, member count and assignor.

    \b
    Examples:
      kctl group list
      kctl group list --state Empty -o json
      kctl group list -r 'billing-.*'
    """
    from kctl.admin.groups import list_groups

    app.out.table(list_groups(app.session, states=states, types=types, regex=regex), GROUP_TABLE)


@group.command("describe")
@click.argument("groups", nargs=-1, required=True, metavar="GROUP...")
@global_options
@pass_app
def describe(app: App, groups):
    """Show groups: state, members (client id, host, assignment), committed offsets.

    JSON output is a list, one object per group.

    \b
    Examples:
      kctl group describe billing
      kctl group describe billing audit -o json
    """
    from kctl.admin.groups import describe_groups

    found, errors = describe_groups(app.session, groups)
    if errors and not found:
        raise next(iter(errors.values()))
    app.out.documents(found, GROUP_DOCUMENT)
    for error in errors.values():
        app.error_line(error.message)
    if errors:
        raise PartialFailure(f"unable to describe groups: {len(errors)} of {len(set(groups))} failed")


@group.command("lag")
@click.argument("groups", nargs=-1, metavar="[GROUP...]")
@click.option("-a", "--all", "all_", is_flag=True, help="Every group of the cluster.")
@click.option("-t", "--topic", "topics", multiple=True, metavar="TOPIC", help="Only this topic's partitions (repeatable).")
@click.option("--isolation", type=click.Choice(["read_uncommitted", "read_committed"]), default="read_uncommitted", show_default=True, help="read_committed measures to the last stable offset.")
@global_options
@pass_app
def lag(app: App, groups, all_, topics, isolation):
    """Show lag per partition: committed offset, log start and end, records left.

    LAG is what is left to consume: log end minus the committed offset, counted from
    the log start when retention deleted records before they were consumed. FLAGS say
    when that happened (BELOW_LOG_START), when a partition has no committed offset
    (NO_COMMIT; LAG is empty) and when the commit is past the log end (AHEAD_OF_END).
    RAW-LAG (-o wide, JSON) is log end minus committed, unclamped. Groups without
    members are included: a stopped consumer is when lag matters most.

    \b
    Examples:
      kctl group lag billing
      kctl group lag --all -o json | jq '.[] | {group, lag_sum}'
      kctl group lag billing -t orders --isolation read_committed
    """
    from kctl.admin.groups import group_lag

    if bool(groups) == all_:
        raise click.UsageError("name groups or give --all")
    found, errors = group_lag(app.session, None if all_ else groups, topics=topics, isolation=isolation)
    if errors and not found:
        raise next(iter(errors.values()))
    if app.out.is_structured or app.out.format == "csv":
        if app.out.format == "csv":
            app.out.table([p for g in found for p in g.partitions], LAG_TABLE)
        else:
            app.out.documents(found, DocumentSpec())
    else:
        app.out.table([p for g in found for p in g.partitions], LAG_TABLE)
        for g in found:
            app.note(f"{g.group}: {g.state}, {g.members} member(s), lag {g.lag_sum} (max {g.lag_max}), {g.partitions_without_commit} partition(s) without commit")
    for error in errors.values():
        app.error_line(error.message)
    if errors:
        raise PartialFailure(f"unable to compute lag: {len(errors)} group(s) failed")


@group.command("delete")
@click.argument("groups", nargs=-1, required=True, metavar="GROUP...")
@yes_option
@global_options
@pass_app
def delete(app: App, groups, yes):
    """Delete groups and their committed offsets (only groups without members).

    \b
    Examples:
      kctl group delete old-consumer --yes
    """
    from kctl.admin.groups import delete_groups

    ids = list(dict.fromkeys(groups))
    app.confirm(f"Delete {len(ids)} group(s) and their committed offsets: {', '.join(ids)}?", yes=yes, action="delete groups")
    results, errors = delete_groups(app.session, ids)
    report(app, results, errors, RESULT_TABLE, "delete groups")
