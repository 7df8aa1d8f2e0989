"""kctl export, diff, apply: a cluster's topics, configs, ACLs, quotas and users as YAML
resource files, the plan that makes a cluster match them, and its execution."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import click

from kctl.cli._app import App
from kctl.cli._options import RegexType, global_options, pass_app, yes_option
from kctl.errors import ExitCode, KctlError, PartialFailure, UsageError
from kctl.output.spec import Column, TableSpec

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from kctl.admin.client.session import AdminSession
    from kctl.admin.cluster.replication import PartitionMove
    from kctl.admin.connect.rest import ConnectClient
    from kctl.admin.declarative.apply import ApplyResult
    from kctl.admin.declarative.plan import Change
    from kctl.admin.declarative.resources import Resource
    from kctl.config.model import ClientSettings

    # (context, session, the session if opened here else None, changes, Connect client)
    _Plan = tuple[str | None, AdminSession, AdminSession | None, list[Change], ConnectClient | None]

KIND_NAMES = ("Topic", "ClusterConfig", "Acl", "Quota", "User", "Connector")
PLAN_TABLE = TableSpec(
    (
        Column("action", "ACTION"),
        Column("kind", "KIND"),
        Column("name", "NAME"),
        Column("detail", "DETAIL"),
        Column("context", "CONTEXT", wide=True),
        Column("source", "SOURCE", wide=True),
    )
)
RESULT_TABLE = TableSpec(
    (
        Column("action", "ACTION"),
        Column("kind", "KIND"),
        Column("name", "NAME"),
        Column("status", "STATUS"),
        Column("detail", "DETAIL", wide=True),
        Column("error", "ERROR"),
    )
)

file_option = click.option(
    "-f", "--file", "files", multiple=True, required=True, metavar="PATH", type=click.Path(allow_dash=True),
    help="A resource file, or a directory of *.yaml/*.yml files (repeatable); - reads stdin.",
)
connect_option = click.option(
    "--connect", "connect_choice", metavar="NAME|URL",
    help="The Kafka Connect cluster of the Connector kind: one of the context's by name, or a REST URL; default: the context's only one. [env: KCTL_CONNECT, KCTL_CONNECT_URL]",
)
topic_regex_option = click.option(
    "--topic-regex", type=RegexType(), metavar="REGEX",
    help="Only topics whose whole name matches (the cluster's others are neither compared nor pruned).",
)


def _connect(app: App, settings: ClientSettings, choice: str | None, kinds: Sequence[str]) -> ConnectClient | None:
    """The Connect client for the Connector kind, closed when the command ends; None when
    the kind is not wanted, or none is configured and none was asked for (the kind is
    then skipped or refused, as a kind the cluster lacks)."""
    if "Connector" not in kinds:
        return None
    from kctl.admin.connect.rest import ConnectClient, NoConnectCluster, connect_settings

    try:
        client = ConnectClient(connect_settings(settings.connect, settings.connect_env, choice, settings.timeout,
                                                env_name=settings.connect_name))
    except NoConnectCluster:
        return None
    context = click.get_current_context(silent=True)
    if context is not None:
        context.call_on_close(client.close)
    return client


def _kinds(values: Sequence[str]) -> list[str]:
    by_lower = {k.lower(): k for k in KIND_NAMES}
    kinds = []
    for value in values:
        for part in value.split(","):
            kind = by_lower.get(part.strip().lower().replace("-", "").replace("_", "").rstrip("s"), None)
            if kind is None:
                raise UsageError(f"unknown kind {part!r}; accepted: {', '.join(KIND_NAMES)}")
            kinds.append(kind)
    return list(dict.fromkeys(kinds)) or list(KIND_NAMES)


@click.command("export")
@click.option("--kind", "kinds", multiple=True, metavar="KIND[,KIND...]", help=f"Only these kinds (repeatable): {', '.join(KIND_NAMES)}; default all the cluster supports.")
@topic_regex_option
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), help="Write one file per resource into this directory instead of one stream on stdout.")
@connect_option
@global_options
@pass_app
def export(app: App, kinds: tuple[str, ...], topic_regex: re.Pattern[str] | None, directory: Path | None,
           connect_choice: str | None) -> None:
    """Write the cluster's state as resource files (YAML).

    Topics with their partitions, replication factor and config overrides (values the
    topic inherits are left out), dynamic cluster and broker configs, ACLs grouped by
    principal, quotas by entity and SCRAM users (mechanism and iterations: Kafka never
    gives out passwords), and Kafka Connect's connectors (config and state; their secrets
    as the environment variables apply reads them from) when a Connect cluster is
    configured. Internal topics (__*) are left out. `kctl export | kctl apply -f -`
    changes nothing; applied to another cluster it recreates what it can. Kinds the
    cluster does not support (ACLs without an authorizer, quotas on the bundled broker)
    are skipped with a note unless asked for with --kind.

    \b
    Examples:
      kctl export > cluster.yaml
      kctl export --kind topic --topic-regex 'orders.*'
      kctl export --dir state/ && ls state/
      kctl export --kind topic | kctl apply -f - --dry-run
      kctl --context prod export | kctl --context staging diff -f -
    """
    from kctl.admin.declarative import export as exporting
    from kctl.admin.declarative.state import read

    asked = bool(kinds)
    chosen = _kinds(kinds)
    connect = _connect(app, app.settings, connect_choice, chosen)
    state = read(app.session, chosen, topic_regex=topic_regex, lenient=not asked, connect=connect)
    for kind, why in state.skipped.items():
        app.note(f"skipped {kind}: {why}")
    docs = exporting.documents(state)
    if directory is None:
        app.out.raw(exporting.to_yaml(docs))
    else:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            for doc in docs:
                (directory / exporting.file_name(doc)).write_text(exporting.to_yaml([doc]), encoding="utf-8")
        except OSError as exc:
            raise KctlError(action=f"write {directory}", cause=f"{exc.strerror or exc}") from exc
        app.note(f"wrote {len(docs)} file(s) to {directory}")


def _load(app: App, files: Sequence[str]) -> list[Resource]:
    from kctl.admin.declarative.resources import ResourceFileError, load

    stdin_text = app.stdin.read() if "-" in files else None
    try:
        return load(files, stdin_text)
    except ResourceFileError as exc:
        if len(exc.problems) > 1:
            for problem in exc.problems:
                app.error_line(problem)
        raise


def _groups(app: App, resources: Sequence[Resource]) -> dict[str | None, list[Resource]]:
    """Resources by the context they are for; --context or -b on the command line wins
    over every file's context."""
    if app.context is not None or app.bootstrap is not None:
        return {None: list(resources)}
    groups: dict[str | None, list[Resource]] = {}
    for resource in resources:
        groups.setdefault(resource.context, []).append(resource)
    return groups


def _session(app: App, context: str | None) -> tuple[AdminSession, AdminSession | None]:
    if context is None:
        return app.session, None
    from kctl.admin.client.session import AdminSession
    from kctl.config.resolve import resolve

    settings = resolve(app.config_file, app.env, context_flag=context, property_flags=app.properties, timeout_flag=app.timeout)
    session = AdminSession(settings)
    return session, session


def _plans(app: App, resources: Sequence[Resource], prune: bool, topic_regex: re.Pattern[str] | None,
           connect_choice: str | None = None) -> list[_Plan]:
    """(context, session, the session if opened here else None, changes) per context the
    files name."""
    import dataclasses

    from kctl.admin.declarative.plan import plan
    from kctl.admin.declarative.resources import Topic
    from kctl.admin.declarative.state import read

    out: list[_Plan] = []
    for context, members in _groups(app, resources).items():
        if topic_regex is not None:
            members = [r for r in members if not isinstance(r, Topic) or topic_regex.fullmatch(r.name)]
        kinds = [k for k in KIND_NAMES if any(r.kind == k for r in members)]
        session, owned = _session(app, context)
        try:
            names = None if prune else [r.name for r in members if isinstance(r, Topic)]
            connect = _connect(app, session.settings, connect_choice, kinds)
            if connect is None and "Connector" in kinds:
                from kctl.admin.connect.rest import NoConnectCluster

                raise NoConnectCluster(action=f"plan connectors{f' of context {context!r}' if context else ''}", cause="no Kafka Connect cluster is configured",
                                  hint="give --connect URL, set KCTL_CONNECT_URL, or kctl context set NAME --connect-url URL")
            state = read(session, kinds, topic_regex=topic_regex, topics=names, connect=connect)
            login_user = session.settings.properties.get("sasl.username")
            changes = [dataclasses.replace(c, context=context)
                       for c in plan(members, state, prune=prune, login_user=login_user, env=app.env)]
        except BaseException:
            if owned is not None:
                owned.close()
            raise
        out.append((context, session, owned, changes, connect))
    return out


@click.command("diff")
@file_option
@click.option("--prune", is_flag=True, help="Also show what --prune would remove: resources of the files' kinds that no file lists.")
@topic_regex_option
@connect_option
@global_options
@pass_app
def diff(app: App, files: tuple[str, ...], prune: bool, topic_regex: re.Pattern[str] | None, connect_choice: str | None) -> None:
    """Show the changes that would make the cluster match the files.

    One line per change: topics to create, configs to set or reset (old -> new),
    partitions to add, reassignments a replication-factor or placement change implies,
    ACLs, quotas and SCRAM credentials to add or remove, and changes refused with the
    reason (fewer partitions, more replicas than brokers, a topic policy). Exit 0 when
    the cluster matches, 2 when there are changes (for drift checks in CI), other
    statuses on errors; -o json for machines. Files are checked first, offline.

    \b
    Examples:
      kctl diff -f cluster.yaml
      kctl diff -f state/ -o json
      kctl diff -f cluster.yaml --topic-regex 'orders.*' --prune
      kctl export | kctl diff -f -
    """
    from kctl.admin.declarative.plan import summary

    resources = _load(app, files)
    every: list[Change] = []
    plans = _plans(app, resources, prune, topic_regex, connect_choice)
    for context, _session, owned, changes, _connect in plans:
        if owned is not None:
            owned.close()
        every += changes
        if len(plans) > 1:
            app.note(f"context {context or '(default)'}: {summary(changes)}")
    if every or app.out.is_structured:
        app.out.table(every, PLAN_TABLE)
    app.note(summary(every))
    if every:
        raise click.exceptions.Exit(int(ExitCode.CRITICAL))


@click.command("apply")
@file_option
@click.option("--validate", is_flag=True, help="Check the files offline (schema, config names and values) and stop; needs no cluster.")
@click.option("--dry-run", is_flag=True, help="Show the plan and stop (as `kctl diff`, exit 0).")
@click.option("--prune", is_flag=True, help="Also remove resources of the files' kinds that no file lists (topics, principals' ACLs, quota entities, users), after confirmation; never topics named _*, nor the user kctl logs in as.")
@topic_regex_option
@click.option("--throttle", metavar="RATE", help="Replication throttle for reassignments, e.g. 50MB/s; removed when they finish.")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait for reassignments to finish, with progress.")
@click.option("--wait-timeout", type=click.FloatRange(min=0), metavar="SECONDS", help="Give up waiting after this long (the moves go on).")
@yes_option
@connect_option
@global_options
@pass_app
def apply(app: App, files: tuple[str, ...], validate: bool, dry_run: bool, prune: bool, topic_regex: re.Pattern[str] | None, throttle: str | None, wait: bool, wait_timeout: float | None, yes: bool, connect_choice: str | None) -> None:
    """Make the cluster match the files: plan, confirm, apply, report.

    Changes go in a safe order: topics created, configs set, partitions added,
    replication changes as throttled reassignments (waited for, with progress), then
    ACLs, quotas and credentials; removals last. The plan is shown and confirmed at a
    terminal (or --yes); --prune removals are listed the same way. Each change is
    reported; when some fail (or are refused) the rest are still made and the exit
    status is 4, and running apply again does what is left. SCRAM passwords come from
    the environment variable a User's password_env names, never from the file.

    \b
    Examples:
      kctl apply -f cluster.yaml --validate
      kctl apply -f cluster.yaml --dry-run
      kctl apply -f cluster.yaml --yes
      kctl apply -f state/ --throttle 50MB/s --yes
      kctl apply -f cluster.yaml --topic-regex 'orders.*' --prune --yes
    """
    from kctl.admin.declarative.apply import apply as applying
    from kctl.admin.declarative.plan import summary
    from kctl.sizes import parse_bytes

    rate = parse_bytes(throttle, "--throttle") if throttle else None
    resources = _load(app, files)
    if validate:
        app.note(f"{len(resources)} resource(s) valid")
        return
    plans = _plans(app, resources, prune, topic_regex, connect_choice)
    try:
        every = [c for _ctx, _s, _o, changes, _c in plans for c in changes]
        if not every or dry_run:
            if every:
                app.out.table(every, PLAN_TABLE)
            app.note(summary(every) + (" (dry run)" if every else ""))
            return
        if not app.quiet and app.stdin_is_tty and not yes:
            app.out.table(every, PLAN_TABLE)
        removals = sum(1 for c in every if c.symbol == "-")
        question = f"Apply {summary(every)}" + (f" (removes {removals})" if removals else "") + "?"
        app.confirm(question, yes=yes, action="apply the plan")
        results: list[ApplyResult]
        waits: list[tuple[AdminSession, list[PartitionMove]]]
        results, waits = [], []
        for _context, session, _owned, changes, connect in plans:
            done, moves = applying(session, changes, throttle=rate, env=app.env, connect=connect)
            results += done
            if moves:
                waits.append((session, moves))
        app.out.table(results, RESULT_TABLE)
        _wait(app, waits, wait, wait_timeout)
    finally:
        for _context, _session, owned, _changes, _connect in plans:
            if owned is not None:
                owned.close()
    _finish(app, results)


def _wait(app: App, waits: Sequence[tuple[AdminSession, Sequence[PartitionMove]]], wait: bool, wait_timeout: float | None) -> None:
    if not waits:
        return
    if not wait:
        app.note("reassignments started; `kctl replication reassign list` shows them (throttles stay until they finish and are verified)")
        return
    from kctl.cli._moves import finish, wait_for_moves

    for session, moves in waits:
        finish(app, wait_for_moves(app, moves, wait_timeout=wait_timeout, session=session), "reassign partitions")


def _finish(app: App, results: Sequence[ApplyResult]) -> None:
    bad = [r for r in results if r.status in ("failed", "refused")]
    for result in bad:
        what = "refused" if result.status == "refused" else f"{result.action} failed"
        app.error_line(f"{result.kind} {result.name}: {what}: {result.error}")
    if bad:
        raise PartialFailure(action="apply the plan", cause=f"{len(bad)} of {len(results)} change(s) not made", hint="fix the cause and run apply again: it plans only what is left")
