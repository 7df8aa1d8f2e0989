"""The group reads, `group list`, `group describe` and `group lag`: their bodies and
tables, free of click so the console script runs them without it (kctl.cli.direct);
kctl.cli.group declares their options and help."""

from __future__ import annotations

from kctl.cli._app import App, until_stopped
from kctl.cli._batch import report_documents
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    import re
    from collections.abc import Sequence
    from pathlib import Path
    from types import FrameType
    from typing import NoReturn

    from kctl.admin.groups.models import GroupLag, PartitionLag

HELP_HINT = "see 'kctl group lag --help'"

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
        Column("member_epoch", "MEMBER-EPOCH", align="right"),
        Column("target_assignment", "TARGET-ASSIGNMENT", get=lambda m: None if m.target_assignment is None else " ".join(m.target_assignment), wide=True),
        Column("subscribed_topics", "SUBSCRIBED", get=lambda m: m.subscribed_regex or ",".join(m.subscribed_topics), wide=True),
        Column("member_id", "MEMBER-ID", wide=True),
    )
)
OFFSET_TABLE = TableSpec(
    (Column("topic", "TOPIC"), Column("partition", "PARTITION", align="right"), Column("offset", "OFFSET", align="right"), Column("metadata", "METADATA", wide=True))
)
TOPOLOGY_TABLE = TableSpec(
    (
        Column("subtopology", "SUBTOPOLOGY"),
        Column("source_topics", "SOURCE-TOPICS"),
        Column("repartition_source_topics", "REPARTITION-SOURCES"),
        Column("repartition_sink_topics", "REPARTITION-SINKS", wide=True),
        Column("changelog_topics", "CHANGELOGS", wide=True),
    )
)
GROUP_DOCUMENT = DocumentSpec(
    fields=(
        Field("group", "GROUP"),
        Field("state", "STATE"),
        Field("type", "TYPE"),
        Field("protocol", "PROTOCOL"),
        Field("coordinator", "COORDINATOR"),
        Field("members", "MEMBERS", get=lambda g: len(g.members)),
        Field("group_epoch", "GROUP-EPOCH"),
        Field("assignment_epoch", "ASSIGNMENT-EPOCH"),
    ),
    sections=(Section("members", "MEMBERS", MEMBER_TABLE), Section("offsets", "OFFSETS", OFFSET_TABLE),
              Section("topology", "TOPOLOGY", TOPOLOGY_TABLE, optional=True)),
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


def list_(app: App, regex: re.Pattern[str] | None, states: tuple[str, ...], types: tuple[str, ...]) -> None:
    from kctl.admin.groups.groups import list_groups, unsupported_types
    from kctl.admin.groups.models import kctl_group

    groups = list_groups(app.session, states=states, types=types, regex=regex)
    app.out.table(groups, GROUP_TABLE)
    for group in groups:
        command = kctl_group(group.group)
        if command is not None:
            app.note(f"note: {group.group} is kctl's own ({command}): it keeps that command's progress, not a consumer's")
    for kind, release in unsupported_types(app.session, types):
        app.warn(f"the cluster does not support {kind} groups (Apache Kafka {release} or newer has them): none are listed")


def describe(app: App, groups: tuple[str, ...]) -> None:
    from kctl.admin.groups.groups import describe_groups

    found, errors = describe_groups(app.session, groups)
    report_documents(app, found, errors, GROUP_DOCUMENT, "describe groups", len(set(groups)))


def lag(app: App, groups: tuple[str, ...], all_: bool, topics: tuple[str, ...], isolation: str, time_lag: str, history: bool,
        state_file: str | None, watch: bool, until_caught_up: bool, max_lag: int, max_seconds: float | None, for_: str | None,
        interval: float, serve: str | None) -> int | None:
    from kctl.admin.groups import lag_watch
    from kctl.errors import ExitCode, PartialFailure, UsageError

    if bool(groups) == all_:
        raise UsageError("name groups or give --all", hint=HELP_HINT)
    limit = None
    if for_:
        from kctl.timespec import parse_duration

        limit = parse_duration(for_)
    if sum(map(bool, (watch, until_caught_up, serve))) > 1:
        raise UsageError("choose one of --watch, --until-caught-up and --serve", hint=HELP_HINT)
    ids = None if all_ else groups
    if serve:
        _serve(app, ids, topics, isolation, interval, serve)
        return None
    if watch:
        with until_stopped():
            _watch(app, ids, topics, isolation, interval, limit)
        return None
    if max_seconds is not None:
        time_lag = "record"
    history_file = state_file_path(app, state_file) if history or time_lag == "interp" else None
    late: list[PartitionLag] = []
    if until_caught_up:
        # The progress shows how much of the largest lag seen has been consumed since.
        from kctl.cli._progress import progress

        with progress(app, "catching up", unit="messages") as shown:
            def show(state: lag_watch.CatchUp) -> None:
                total = sum(g.lag_sum for g in state.found)
                shown.update(state.first_lag - total, total=state.first_lag, detail=f"lag {total:,}, {len(state.behind)} partition(s) behind")

            caught = lag_watch.until_caught_up(app.session, ids, max_lag=max_lag, max_seconds=max_seconds, interval=interval, limit=limit,
                                               topics=topics, isolation=isolation, time_lag=time_lag, history=history_file, progress=show)
            found, errors, late = caught.found, caught.errors, caught.behind
            total = sum(g.lag_sum for g in found)
            shown.summary = (f"waited {caught.seconds:.0f}s: lag {total}, {len(late)} partition(s) behind" if late
                             else f"caught up: lag {total} after {caught.seconds:.0f}s")
    else:
        found, errors = lag_watch.sample(app.session, ids, topics=topics, isolation=isolation, time_lag=time_lag, history=history_file)
    _render_lag(app, found, time_lag)
    if isolation == "read_committed":
        from kctl.cli._transactions import note_held_back

        note_held_back(app, sorted({(p.topic, p.partition) for g in found for p in g.partitions}))
    if late:
        app.error_line(f"unable to catch up within {for_}: {len(late)} partition(s) still behind")
        return ExitCode.CRITICAL
    for error in errors.values():
        app.error_line(error.message)
    if errors:
        raise PartialFailure(action="compute lag", cause=f"{len(errors)} group(s) failed")
    return None


WATCH_TABLE = TableSpec(
    (
        Column("group", "GROUP"),
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("committed", "COMMITTED", align="right"),
        Column("log_end", "LOG-END", align="right"),
        Column("lag", "LAG", align="right"),
        Column("lag_delta", "LAG-DELTA", align="right"),
        Column("consume_rate", "CONSUME/S", align="right", get=lambda r: None if r.consume_rate is None else f"{r.consume_rate:.1f}"),
        Column("produce_rate", "PRODUCE/S", align="right", get=lambda r: None if r.produce_rate is None else f"{r.produce_rate:.1f}"),
        Column("eta_seconds", "CATCH-UP", align="right", get=lambda r: _eta(r.eta_seconds, r.lag, r.falling_behind)),
    )
)


def _eta(seconds: float | None, lag: int | None, falling_behind: bool) -> str | None:
    if lag == 0:
        return "caught up"
    if falling_behind:
        return "falling behind"
    return None if seconds is None else f"{seconds:.0f}s"


def _watch(app: App, groups: Sequence[str] | None, topics: Sequence[str], isolation: str, interval: float, limit: float | None) -> None:
    """Each sample as it comes: a refreshed table on a terminal, JSON lines when piped."""
    import time

    from kctl.admin.groups.lag_watch import watch

    for rows, errors in watch(app.session, groups, interval=interval, limit=limit, topics=topics, isolation=isolation):
        if app.stdout_is_tty and app.out.format in ("table", "wide"):
            app.out.raw("\x1b[H\x1b[2J")
            app.out.table(rows, WATCH_TABLE)
            app.note(f"{time.strftime('%H:%M:%S')}  every {interval:g}s, Ctrl-C stops")
        else:
            from kctl.output.render import Output

            Output("jsonl", app.stdout, tty=False, color=False).table(rows, WATCH_TABLE)
        for error in errors.values():
            app.error_line(error.message)


def _serve(app: App, groups: Sequence[str] | None, topics: Sequence[str], isolation: str, interval: float, address: str) -> None:
    import signal

    from kctl.lag_exporter import LagSampler, parse_address, serve

    sampler = LagSampler(app.session, app.settings.context or app.settings.bootstrap_servers or "", interval=interval, groups=groups, topics=topics, isolation=isolation, notify=app.warn)
    server = serve(sampler, parse_address(address))
    host, port = str(server.server_address[0]), server.server_address[1]
    sampler.start()
    app.note(f"serving lag metrics on http://{host}:{port}/metrics every {interval:g}s; Ctrl-C stops")
    # SIGTERM (Kubernetes, systemd, kill) is a normal stop too, as Ctrl-C is.
    previous = signal.signal(signal.SIGTERM, _stop_serving)
    try:
        with until_stopped():
            server.serve_forever(poll_interval=0.2)
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.server_close()
        sampler.stop()


def _stop_serving(signum: int, frame: FrameType | None) -> NoReturn:
    raise KeyboardInterrupt


def state_file_path(app: App, path: str | None) -> Path:
    """The lag history file: --state-file, else the default for the cluster."""
    from pathlib import Path

    from kctl.admin.groups.lag_history import state_path

    return Path(path) if path else state_path(app.env, app.settings.bootstrap_servers)


def _render_lag(app: App, found: Sequence[GroupLag], time_lag: str) -> None:
    rows = [p for g in found for p in g.partitions]
    for g in found:
        remote = sorted({p.topic for p in g.partitions if p.remote_read})
        for topic in remote:
            below = [str(p.partition) for p in g.partitions if p.topic == topic and p.remote_read]
            app.note(f"note: {g.group} reads {topic} from remote storage: its next offset on partition(s) {','.join(below)} "
                     "is below the earliest local offset (tiered storage)")
    if app.out.format == "prom":
        from kctl.output.prometheus import render_lag

        app.out.raw(render_lag(found, app.settings.context or app.settings.bootstrap_servers or ""))
        return
    if app.out.format in ("json", "jsonl"):
        app.out.documents(found, DocumentSpec())
        return
    spec = LAG_TABLE if time_lag == "none" else TableSpec(LAG_TABLE.columns[:7] + (Column("lag_seconds", "LAG-S", align="right"),) + LAG_TABLE.columns[7:])
    app.out.table(rows, spec)
    if app.out.format != "csv":
        for g in found:
            app.note(f"{g.group}: {g.state}, {g.members} member(s), lag {g.lag_sum} (max {g.lag_max}), {g.partitions_without_commit} partition(s) without commit")
