"""kctl connect: a Kafka Connect cluster over its REST API — the workers, plugins,
connectors and their tasks, offsets and loggers."""

from __future__ import annotations

from pathlib import Path

import click

from kctl.cli._app import App
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import KeyValueType, global_options, pass_app, yes_option
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeVar

    from kctl.admin.connect.connectors import StateChange
    from kctl.admin.connect.offsets import OffsetsPlan
    from kctl.admin.connect.rest import ConnectClient

    _F = TypeVar("_F", bound=Callable[..., Any])

LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE")

INFO_DOCUMENT = DocumentSpec(fields=(Field("url", "URL"), Field("version", "VERSION"), Field("commit", "COMMIT"),
                                     Field("kafka_cluster_id", "KAFKA-CLUSTER-ID")))
HEALTH_DOCUMENT = DocumentSpec(fields=(Field("url", "URL"), Field("status", "STATUS"), Field("message", "MESSAGE")))
PLUGIN_TABLE = TableSpec((Column("class_name", "CLASS"), Column("type", "TYPE"), Column("version", "VERSION")))
PROBLEM_TABLE = TableSpec((Column("field", "FIELD"), Column("value", "VALUE"), Column("error", "ERROR")))
CONNECTOR_TABLE = TableSpec((
    Column("name", "NAME"),
    Column("type", "TYPE"),
    Column("state", "STATE"),
    Column("tasks", "TASKS", get=lambda c: f"{c.tasks_running}/{c.tasks}", align="right"),
    Column("tasks_failed", "FAILED", align="right"),
    Column("worker_id", "WORKER"),
    Column("class_name", "CLASS", wide=True),
))
TASK_TABLE = TableSpec((Column("id", "TASK", align="right"), Column("state", "STATE"), Column("worker_id", "WORKER"),
                        Column("trace", "TRACE", wide=True, get=lambda t: (t.trace or "").splitlines()[0] if t.trace else None)))
ENTRY_TABLE = TableSpec((Column("key", "KEY", get=lambda e: e[0]), Column("value", "VALUE", get=lambda e: e[1])))
DESCRIBE_DOCUMENT = DocumentSpec(
    fields=(
        Field("name", "NAME"), Field("type", "TYPE"), Field("class_name", "CLASS"), Field("state", "STATE"),
        Field("worker_id", "WORKER"), Field("topics", "TOPICS", get=lambda d: ", ".join(d.topics) or None),
        Field("lag", "LAG", get=lambda d: None if d.lag is None else
              f"{d.lag.lag_sum} (group {d.lag.group}, max {d.lag.lag_max} per partition)"),
    ),
    sections=(Section("tasks", "TASKS", TASK_TABLE), Section("config_entries", "CONFIG", ENTRY_TABLE)),
)
STORED_DOCUMENT = DocumentSpec(fields=(Field("name", "NAME"), Field("type", "TYPE")),
                               sections=(Section("config_entries", "CONFIG", ENTRY_TABLE),))
CHANGE_TABLE = TableSpec((Column("key", "KEY"), Column("change", "CHANGE"), Column("old", "OLD"), Column("new", "NEW")))
STATE_TABLE = TableSpec((Column("connector", "CONNECTOR"), Column("action", "ACTION"), Column("state", "STATE"),
                         Column("tasks", "TASKS", get=lambda s: " ".join(f"{t.id}:{t.state}" for t in s.tasks) or None)))
TOPIC_TABLE = TableSpec((Column("topic", "TOPIC", get=lambda t: t),))
LOGGER_TABLE = TableSpec((Column("logger", "LOGGER"), Column("level", "LEVEL"), Column("last_modified", "LAST-MODIFIED", wide=True)))
OFFSET_TABLE = TableSpec((Column("partition", "PARTITION", get=lambda o: _compact(o.partition)),
                          Column("offset", "OFFSET", get=lambda o: _compact(o.offset))))
OFFSET_PLAN_TABLE = TableSpec((Column("partition", "PARTITION", get=lambda c: _compact(c.partition)),
                               Column("current", "CURRENT", get=lambda c: _compact(c.current)),
                               Column("new", "NEW", get=lambda c: _compact(c.new))))


def _compact(value: Mapping[str, object] | None) -> str | None:
    """A sink's partition as topic/partition and its offset as the number; other (a
    source's) partitions and offsets as compact JSON."""
    if value is None:
        return None
    if set(value) == {"kafka_topic", "kafka_partition"}:
        return f"{value['kafka_topic']}/{value['kafka_partition']}"
    if set(value) == {"kafka_offset"}:
        return str(value["kafka_offset"])
    import json

    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def connect_option(command: _F) -> _F:
    return click.option(
        "--connect", "connect_choice", metavar="NAME|URL",
        help="Which Connect cluster: one of the context's by name, or a REST URL; default: the context's only one. [env: KCTL_CONNECT, KCTL_CONNECT_URL]",
    )(command)


def change_options(command: _F) -> _F:
    """--execute and --resume of the offset changes."""
    command = click.option("--resume", is_flag=True, help="Afterwards, put the connector back in the state it was in.")(command)
    return click.option("--execute", is_flag=True, help="Make the change (default: show the plan only).")(command)


def file_option(required: bool = True, help_text: str = "The connector: JSON as Connect takes it ({\"name\", \"config\"} or the config map) or a .properties file.") -> Callable[[_F], _F]:
    return click.option("-f", "--file", "file", required=required, type=click.Path(dir_okay=False, path_type=Path), help=help_text)


@click.group(cls=LazyGroup, aliases={"ls": "list", "rm": "delete"})
def connect() -> None:
    """Kafka Connect: workers, plugins, connectors and their tasks, offsets and loggers.

    Talks to a Connect cluster's REST API, named by the context (kctl context set NAME
    --connect-url URL, with --connect-basic-auth-file or --connect-bearer-token-file),
    KCTL_CONNECT_URL, or --connect NAME|URL. A rebalance in progress (Connect's 409) is
    asked again until --timeout; unknown connectors exit 5, an existing one 6, an
    invalid config 65, an unreachable worker 69, refused credentials 77.
    """


# -- the cluster -------------------------------------------------------------------------


@connect.command("info")
@connect_option
@global_options
@pass_app
def info(app: App, connect_choice: str | None) -> None:
    """Show the worker's version, commit and Kafka cluster id.

    \b
    Examples:
      kctl connect info
      kctl connect info --connect http://localhost:8083 -o json
    """
    from kctl.admin.connect.connectors import info as read_info

    app.out.document(read_info(app.connect(connect_choice)), INFO_DOCUMENT)


@connect.command("health")
@connect_option
@global_options
@pass_app
def health(app: App, connect_choice: str | None) -> None:
    """Check the worker's health (KIP-1017, Connect 3.9+); the exit status says it.

    0 healthy, 1 starting, 2 unhealthy, 3 unknown (a worker before 3.9 has no health
    endpoint).

    \b
    Examples:
      kctl connect health
      kctl connect health -o json
    """
    from kctl.admin.connect.connectors import health as read_health
    from kctl.errors import ExitCode

    found = read_health(app.connect(connect_choice))
    app.out.document(found, HEALTH_DOCUMENT)
    status = {"healthy": ExitCode.OK, "starting": ExitCode.ERROR, "unknown": ExitCode.UNKNOWN}.get(found.status, ExitCode.CRITICAL)
    click.get_current_context().exit(status)


@connect.command("plugins")
@click.option("--all", "everything", is_flag=True, help="Also converters, transforms and predicates, not only connectors.")
@connect_option
@global_options
@pass_app
def plugins(app: App, everything: bool, connect_choice: str | None) -> None:
    """List the plugins the workers have: class, type and version.

    \b
    Examples:
      kctl connect plugins
      kctl connect plugins --all -o json
    """
    from kctl.admin.connect.connectors import plugins as list_plugins

    app.out.table(list_plugins(app.connect(connect_choice), everything=everything), PLUGIN_TABLE)


@connect.command("validate")
@click.argument("class_name", metavar="[CLASS]", required=False)
@file_option(help_text="The config to validate (JSON or .properties).")
@connect_option
@global_options
@pass_app
def validate(app: App, class_name: str | None, file: Path, connect_choice: str | None) -> None:
    """Validate a connector config with the plugin itself: each field's errors (exit 65
    when there are any).

    CLASS sets connector.class (else the file's).

    \b
    Examples:
      kctl connect validate -f orders-sink.json
      kctl connect validate FileStreamSink -f sink.properties -o json
    """
    from kctl.admin.connect.connectors import read_connector_file
    from kctl.admin.connect.connectors import validate as check
    from kctl.errors import ExitCode

    spec = read_connector_file(file, named=False)
    configured = dict(spec.config)
    if class_name:
        configured["connector.class"] = class_name
    result = check(app.connect(connect_choice), configured)
    app.out.table(list(result.problems), PROBLEM_TABLE)
    if result.error_count:
        app.note(f"{result.error_count} error(s) in the config of {result.class_name}")
        click.get_current_context().exit(ExitCode.INVALID)
    app.note(f"the config of {result.class_name} is valid")


# -- connectors ---------------------------------------------------------------------------


@connect.command("list")
@connect_option
@global_options
@pass_app
def list_(app: App, connect_choice: str | None) -> None:
    """List connectors: type, state, tasks running/total and failed, worker (one request).

    \b
    Examples:
      kctl connect list
      kctl connect list -o json | jq -r '.[] | select(.tasks_failed > 0) | .name'
      kctl connect list -o wide
    """
    from kctl.admin.connect.connectors import list_connectors

    app.out.table(list_connectors(app.connect(connect_choice)), CONNECTOR_TABLE)


@connect.command("describe")
@click.argument("name")
@click.option("--trace", is_flag=True, help="Print the failed connector's and tasks' stack traces after the summary.")
@click.option("--no-lag", is_flag=True, help="Do not ask the Kafka cluster for a sink connector's consumer group lag.")
@connect_option
@global_options
@pass_app
def describe(app: App, name: str, trace: bool, no_lag: bool, connect_choice: str | None) -> None:
    """Show a connector: state, worker, topics, tasks, config, and a sink's lag.

    Config values are Connect's as stored: secrets from config providers stay their
    ${provider:path:key} references. A sink's lag is its consumer group's (connect-NAME,
    or consumer.override.group.id), read from the Kafka cluster of the context.

    \b
    Examples:
      kctl connect describe orders-sink
      kctl connect describe orders-sink --trace
      kctl connect describe orders-sink -o json | jq .config
    """
    from kctl.admin.connect.connectors import describe as read

    session = None if no_lag or not app.settings.bootstrap_servers else app.session
    found = read(app.connect(connect_choice), name, session=session)
    app.out.document(found, DESCRIBE_DOCUMENT)
    if found.lag_error:
        app.warn(f"no lag for sink {name!r}: {found.lag_error}")
    if trace and not app.out.is_structured:
        for label, text in [("connector", found.trace)] + [(f"task {t.id}", t.trace) for t in found.tasks]:
            if text:
                app.out.raw(f"\nTRACE ({label})\n{text.rstrip()}\n")


@connect.command("create")
@file_option()
@click.option("--name", metavar="NAME", help="The connector's name, when the file has none (or to check it is this one).")
@click.option("--initial-state", type=click.Choice(["running", "paused", "stopped"]), help="Create it in this state (KIP-980, Connect 3.7+).")
@connect_option
@global_options
@pass_app
def create(app: App, file: Path, name: str | None, initial_state: str | None, connect_choice: str | None) -> None:
    """Create a connector from a file (exit 6 when one of that name exists).

    \b
    Examples:
      kctl connect create -f orders-sink.json
      kctl connect create -f file-source.properties --initial-state paused
    """
    import dataclasses

    from kctl.admin.connect.connectors import create as make
    from kctl.admin.connect.connectors import read_connector_file

    spec = read_connector_file(file, name)
    if initial_state:
        spec = dataclasses.replace(spec, initial_state=initial_state)
    app.out.document(make(app.connect(connect_choice), spec), STORED_DOCUMENT)
    app.note(f"connector {spec.name!r} created" + (f" ({spec.initial_state})" if spec.initial_state else ""))


@connect.command("update")
@click.argument("name")
@file_option()
@click.option("--dry-run", is_flag=True, help="Show the changes only.")
@yes_option
@connect_option
@global_options
@pass_app
def update(app: App, name: str, file: Path, dry_run: bool, yes: bool, connect_choice: str | None) -> None:
    """Replace a connector's config with a file's (PUT), showing the changes and asking.

    \b
    Examples:
      kctl connect update orders-sink -f orders-sink.json --dry-run -o json
      kctl connect update orders-sink -f orders-sink.json --yes
    """
    from kctl.admin.connect.connectors import config, config_changes, read_connector_file
    from kctl.admin.connect.connectors import update as put

    client = app.connect(connect_choice)
    spec = read_connector_file(file, name)
    changes = config_changes(config(client, name), spec.config)
    app.out.table(changes, CHANGE_TABLE)
    if not changes:
        app.note(f"connector {name!r} already has this config")
        return
    if dry_run:
        app.note(f"dry run: {len(changes)} change(s) not applied")
        return
    app.confirm(f"Apply {len(changes)} change(s) to connector {name!r}?", yes=yes, action=f"update connector {name!r}")
    put(client, name, spec.config)
    app.note(f"connector {name!r} updated")


@connect.command("patch")
@click.argument("name")
@click.option("--set", "sets", type=KeyValueType(), multiple=True, metavar="KEY=VALUE", help="Set a config key (repeatable).")
@click.option("--delete", "deletes", multiple=True, metavar="KEY", help="Remove a config key (repeatable).")
@connect_option
@global_options
@pass_app
def patch(app: App, name: str, sets: tuple[tuple[str, str], ...], deletes: tuple[str, ...], connect_choice: str | None) -> None:
    """Change some of a connector's config keys, keeping the rest (PATCH, KIP-477, 3.8+).

    \b
    Examples:
      kctl connect patch orders-sink --set tasks.max=4
      kctl connect patch orders-sink --set errors.tolerance=all --delete transforms
    """
    from kctl.admin.connect.connectors import config, config_changes
    from kctl.admin.connect.connectors import patch as send
    from kctl.errors import UsageError

    if not sets and not deletes:
        raise UsageError(action="patch", cause="give --set KEY=VALUE or --delete KEY")
    client = app.connect(connect_choice)
    old = config(client, name)
    new = {k: v for k, v in old.items() if k not in deletes} | dict(sets)
    send(client, name, {**dict(sets), **{k: None for k in deletes}})
    app.out.table(config_changes(old, new), CHANGE_TABLE)
    app.note(f"connector {name!r} patched")


def _change_state(app: App, verb: str, name: str, no_wait: bool, connect_choice: str | None) -> None:
    from kctl.admin.connect import connectors

    change: StateChange = getattr(connectors, verb)(app.connect(connect_choice), name, wait=not no_wait)
    app.out.table([change], STATE_TABLE)


no_wait_option = click.option("--no-wait", is_flag=True, help="Return once Connect accepted it, without waiting for the new state.")


@connect.command("pause")
@click.argument("name")
@no_wait_option
@connect_option
@global_options
@pass_app
def pause(app: App, name: str, no_wait: bool, connect_choice: str | None) -> None:
    """Pause a connector and its tasks (they stay assigned); waits until they are PAUSED.

    \b
    Examples:
      kctl connect pause orders-sink
      kctl connect pause orders-sink --no-wait
    """
    _change_state(app, "pause", name, no_wait, connect_choice)


@connect.command("resume")
@click.argument("name")
@no_wait_option
@connect_option
@global_options
@pass_app
def resume(app: App, name: str, no_wait: bool, connect_choice: str | None) -> None:
    """Resume a paused or stopped connector; waits until its tasks run again.

    \b
    Examples:
      kctl connect resume orders-sink
    """
    _change_state(app, "resume", name, no_wait, connect_choice)


@connect.command("stop")
@click.argument("name")
@no_wait_option
@connect_option
@global_options
@pass_app
def stop(app: App, name: str, no_wait: bool, connect_choice: str | None) -> None:
    """Stop a connector: it and its tasks shut down, the config kept (KIP-875, 3.5+); waits until the tasks are gone.

    \b
    Examples:
      kctl connect stop orders-sink
      kctl connect stop orders-sink -o json
    """
    _change_state(app, "stop", name, no_wait, connect_choice)


@connect.command("restart")
@click.argument("name")
@click.option("--include-tasks", is_flag=True, help="Restart the tasks too.")
@click.option("--only-failed", is_flag=True, help="Only what has FAILED (the connector and, with --include-tasks, its failed tasks).")
@click.option("--task", "task", type=click.IntRange(min=0), metavar="ID", help="Restart this one task only.")
@no_wait_option
@connect_option
@global_options
@pass_app
def restart(app: App, name: str, include_tasks: bool, only_failed: bool, task: int | None, no_wait: bool,
            connect_choice: str | None) -> None:
    """Restart a connector, its tasks, only what failed, or one task.

    \b
    Examples:
      kctl connect restart orders-sink --include-tasks --only-failed
      kctl connect restart orders-sink --task 0
    """
    from kctl.admin.connect.connectors import restart as again
    from kctl.admin.connect.connectors import restart_task
    from kctl.errors import UsageError

    client = app.connect(connect_choice)
    if task is not None:
        if include_tasks or only_failed:
            raise UsageError(action="restart", cause="--task restarts one task; leave out --include-tasks and --only-failed")
        change = restart_task(client, name, task, wait=not no_wait)
    else:
        change = again(client, name, include_tasks=include_tasks, only_failed=only_failed, wait=not no_wait)
    app.out.table([change], STATE_TABLE)


@connect.command("delete")
@click.argument("name")
@yes_option
@connect_option
@global_options
@pass_app
def delete(app: App, name: str, yes: bool, connect_choice: str | None) -> None:
    """Delete a connector: its tasks stop and its config is gone (its offsets stay).

    \b
    Examples:
      kctl connect delete orders-sink          # asks first
      kctl connect delete file-source --yes
    """
    from kctl.admin.connect.connectors import config
    from kctl.admin.connect.connectors import delete as remove

    client = app.connect(connect_choice)
    config(client, name)  # unknown: exit 5 before asking
    app.confirm(f"Delete connector {name!r}?", yes=yes, action=f"delete connector {name!r}")
    app.out.table([remove(client, name)], STATE_TABLE)


@connect.command("topics")
@click.argument("name")
@click.option("--reset", is_flag=True, help="Forget the topics recorded (Connect records them again as they are used).")
@yes_option
@connect_option
@global_options
@pass_app
def topics(app: App, name: str, reset: bool, yes: bool, connect_choice: str | None) -> None:
    """List the topics a connector has used (KIP-558), or --reset that record.

    \b
    Examples:
      kctl connect topics orders-sink
      kctl connect topics orders-sink --reset --yes
    """
    from kctl.admin.connect.connectors import reset_topics
    from kctl.admin.connect.connectors import topics as read

    client = app.connect(connect_choice)
    found = read(client, name)
    if not reset:
        app.out.table(found, TOPIC_TABLE)
        return
    app.confirm(f"Forget the {len(found)} topic(s) connector {name!r} has used?", yes=yes, action=f"reset connector {name!r}'s topics")
    reset_topics(client, name)
    app.note(f"connector {name!r}'s topics reset (it had {len(found)})")


# -- offsets ------------------------------------------------------------------------------


@connect.group("offsets", cls=LazyGroup)
def offsets() -> None:
    """A connector's offsets (KIP-875): get, alter, reset, undo.

    Changes are plans until --execute; Connect changes offsets only of a STOPPED
    connector, so kctl stops it first and, with --resume, puts it back as it was. Each
    change is journalled (the old offsets) before it is made, for --undo.
    """


@offsets.command("get")
@click.argument("name")
@connect_option
@global_options
@pass_app
def offsets_get(app: App, name: str, connect_choice: str | None) -> None:
    """Show a connector's offsets: a sink's per topic partition, a source's as it wrote them.

    \b
    Examples:
      kctl connect offsets get orders-sink
      kctl connect offsets get file-source -o json > offsets.json
    """
    from kctl.admin.connect.offsets import get

    app.out.table(get(app.connect(connect_choice), name), OFFSET_TABLE)


def _offsets_change(app: App, plan: OffsetsPlan, execute: bool, resume: bool, client: ConnectClient) -> None:
    from kctl.admin.connect.offsets import execute as run
    from kctl.admin.connect.offsets import journal_dir

    app.out.table(list(plan.changes), OFFSET_PLAN_TABLE)
    if not plan.changes:
        app.note(f"connector {plan.connector!r} has no offsets to {plan.action}")
        return
    if not execute:
        stop = "" if plan.state == "STOPPED" else f"; --execute stops the {plan.state} connector first"
        app.note(f"dry run: {len(plan.changes)} partition(s) planned, nothing changed{stop}")
        return
    import shlex
    import sys

    result = run(client, plan, directory=journal_dir(app.env), command=shlex.join(["kctl", *sys.argv[1:]]), resume=resume,
                 journaled=lambda journal_id: app.note(f"undo journal: {journal_id}"))
    app.note(f"connector {plan.connector!r}: offsets {'reset' if plan.action == 'reset' else 'altered'}; it is {result.state}"
             + ("" if resume or result.state != "STOPPED" else " (kctl connect resume puts it back to work)"))


@offsets.command("alter")
@click.argument("name")
@file_option(required=False, help_text="The new offsets: as `offsets get -o json` prints them, or Connect's {\"offsets\": [...]}.")
@click.option("--undo", "undo", metavar="ID|last", help="Put back the offsets a journalled change replaced.")
@change_options
@connect_option
@global_options
@pass_app
def offsets_alter(app: App, name: str, file: Path | None, undo: str | None, execute: bool, resume: bool,
                  connect_choice: str | None) -> None:
    """Set some of a connector's offsets (a null offset removes one), or --undo a change.

    \b
    Examples:
      kctl connect offsets get orders-sink -o json > offsets.json   # edit, then:
      kctl connect offsets alter orders-sink -f offsets.json
      kctl connect offsets alter orders-sink -f offsets.json --execute --resume
      kctl connect offsets alter orders-sink --undo last --execute
    """
    from kctl.admin.connect.offsets import journal_dir, plan_alter, plan_undo, read_offsets_file
    from kctl.errors import UsageError

    if bool(file) == bool(undo):
        raise UsageError(action="alter offsets", cause="give -f FILE or --undo ID")
    client = app.connect(connect_choice)
    if undo:
        _entry, plan = plan_undo(client, name, journal_dir(app.env), undo)
    else:
        assert file is not None  # one of the two, checked above
        plan = plan_alter(client, name, read_offsets_file(file))
    _offsets_change(app, plan, execute, resume, client)


@offsets.command("reset")
@click.argument("name")
@change_options
@connect_option
@global_options
@pass_app
def offsets_reset(app: App, name: str, execute: bool, resume: bool, connect_choice: str | None) -> None:
    """Forget all of a connector's offsets: a source reads from the start, a sink from its
    consumer's auto.offset.reset.

    \b
    Examples:
      kctl connect offsets reset file-source
      kctl connect offsets reset file-source --execute --resume
    """
    from kctl.admin.connect.offsets import plan_reset

    client = app.connect(connect_choice)
    _offsets_change(app, plan_reset(client, name), execute, resume, client)


# -- loggers ------------------------------------------------------------------------------


@connect.group("logger", cls=LazyGroup, aliases={"ls": "list"})
def logger() -> None:
    """The workers' log levels: list them, set one (on this worker or every worker)."""


@logger.command("list")
@click.argument("prefix", required=False)
@connect_option
@global_options
@pass_app
def logger_list(app: App, prefix: str | None, connect_choice: str | None) -> None:
    """List loggers with a level set and their levels; PREFIX keeps those it starts.

    \b
    Examples:
      kctl connect logger list
      kctl connect logger list org.apache.kafka.connect.runtime
    """
    from kctl.admin.connect.connectors import loggers

    app.out.table(loggers(app.connect(connect_choice), prefix=prefix), LOGGER_TABLE)


@logger.command("set")
@click.argument("name")
@click.argument("level", type=click.Choice(LEVELS, case_sensitive=False))
@click.option("--scope", type=click.Choice(["worker", "cluster"]), default="worker", show_default=True,
              help="This worker only, or every worker of the cluster (KIP-976, 3.7+).")
@connect_option
@global_options
@pass_app
def logger_set(app: App, name: str, level: str, scope: str, connect_choice: str | None) -> None:
    """Set a logger's level (and its descendants').

    \b
    Examples:
      kctl connect logger set org.apache.kafka.connect.runtime.WorkerSinkTask DEBUG
      kctl connect logger set org.apache.kafka.connect INFO --scope cluster
    """
    from kctl.admin.connect.connectors import Logger, set_logger

    changed = set_logger(app.connect(connect_choice), name, level, scope=scope)
    if scope == "cluster":
        app.note(f"logger {name!r} set to {level.upper()} on every worker")
    else:
        app.out.table([Logger(logger=n, level=level.upper()) for n in changed], LOGGER_TABLE)
