"""Kafka Connect's cluster and connectors over its REST API: worker info and health,
plugins and validation, connectors and their tasks, topics, loggers.

Returns frozen dataclasses (their field names are the JSON keys) and raises KctlError
subclasses through the REST client. State changes that Connect makes asynchronously
(pause, resume, stop, restart) are waited for, within the command's timeout, so that the
next command sees them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kctl.admin.connect.rest import ConnectClient, path
from kctl.errors import InvalidError, KctlError, TimeoutError_
from kctl.polling import poll

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Protocol, Required, TypedDict

    from kctl.admin.client.session import AdminSession

    class _Property(Protocol):
        data: str

    class _Properties(Protocol):
        """jproperties.Properties (the package has no type information)."""

        def load(self, source_data: bytes, encoding: str) -> None: ...

        def items(self) -> Iterable[tuple[str, _Property]]: ...

STATES = ("RUNNING", "PAUSED", "STOPPED", "FAILED", "UNASSIGNED", "RESTARTING")
INITIAL_STATES = ("running", "paused", "stopped")
LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerInfo:
    url: str
    version: str
    commit: str
    kafka_cluster_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Health:
    url: str
    # healthy | starting | unhealthy | unknown (a worker before Kafka 3.9 has no /health)
    status: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Plugin:
    class_name: str
    # source | sink | converter | header_converter | transformation | predicate
    type: str
    version: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldProblem:
    field: str
    value: str | None
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Validation:
    class_name: str
    error_count: int
    problems: tuple[FieldProblem, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorSummary:
    name: str
    type: str
    class_name: str
    state: str
    worker_id: str | None
    tasks: int
    tasks_running: int
    tasks_failed: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStatus:
    id: int
    state: str
    worker_id: str | None
    # The failure's stack trace, when the task FAILED (shown with --trace).
    trace: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkLag:
    group: str
    lag_sum: int
    lag_max: int
    partitions_without_commit: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorDescription:
    name: str
    type: str
    class_name: str
    state: str
    worker_id: str | None
    trace: str | None
    config: dict[str, str]
    tasks: tuple[TaskStatus, ...]
    topics: tuple[str, ...]
    # A sink connector's consumer group and its lag (None for sources, or when the
    # Kafka cluster was not asked or could not be read: lag_error says why).
    lag: SinkLag | None = None
    lag_error: str | None = None

    @property
    def config_entries(self) -> list[tuple[str, str]]:
        return sorted(self.config.items())


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorConfig:
    """A connector as Connect stored it on create or update."""

    name: str
    type: str | None
    config: dict[str, str]

    @property
    def config_entries(self) -> list[tuple[str, str]]:
        return sorted(self.config.items())


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorSpec:
    """A connector as a file gives it: its name, its config, and (on create) its initial state."""

    name: str
    config: dict[str, str]
    initial_state: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigChange:
    key: str
    # added | changed | removed
    change: str
    old: str | None
    new: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Logger:
    logger: str
    level: str
    last_modified: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StateChange:
    connector: str
    # paused | resumed | stopped | restarted | deleted | restart requested
    action: str
    state: str | None
    tasks: tuple[TaskStatus, ...] = field(default_factory=tuple)


# -- what Connect's REST API answers (the keys kctl reads) ---------------------------------

# For mypy only: made at run time, these classes took 4 ms of the module's import.
if TYPE_CHECKING:
    class ConnectorState(TypedDict, total=False):
        state: str
        worker_id: str
        trace: str

    class TaskState(TypedDict, total=False):
        id: Required[int]
        state: str
        worker_id: str
        trace: str

    class StatusAnswer(TypedDict, total=False):
        """GET /connectors/NAME/status (and a restart's answer)."""

        name: str
        type: str
        connector: ConnectorState
        tasks: list[TaskState]

    class TaskId(TypedDict):
        connector: str
        task: int

    class InfoAnswer(TypedDict, total=False):
        """GET /connectors/NAME (expand=info's entry), and what a create or an update stored."""

        name: str
        type: str
        config: dict[str, str]
        tasks: list[TaskId]

    class ExpandedAnswer(TypedDict, total=False):
        """One connector's entry in GET /connectors?expand=status&expand=info."""

        status: StatusAnswer
        info: InfoAnswer

    class TopicsAnswer(TypedDict, total=False):
        topics: list[str]

    class LoggerAnswer(TypedDict, total=False):
        level: str
        last_modified: int | None

    class WorkerAnswer(TypedDict, total=False):
        version: str
        commit: str
        kafka_cluster_id: str

    # "class" is a keyword: the functional form.
    PluginAnswer = TypedDict("PluginAnswer", {"class": Required[str], "type": str, "version": str | None}, total=False)

    class ValidatedValue(TypedDict, total=False):
        name: Required[str]
        value: str | None
        errors: list[str]

    class ValidatedConfig(TypedDict, total=False):
        value: ValidatedValue

    class ValidateAnswer(TypedDict, total=False):
        name: str
        error_count: int
        configs: list[ValidatedConfig]


# -- the cluster ---------------------------------------------------------------------------


def info(client: ConnectClient) -> WorkerInfo:
    answer: WorkerAnswer = client.get("/", action=f"read Connect's version at {client.url}")
    return WorkerInfo(url=client.url, version=answer.get("version", ""), commit=answer.get("commit", ""),
                      kafka_cluster_id=answer.get("kafka_cluster_id", ""))


def health(client: ConnectClient) -> Health:
    """KIP-1017's /health: 200 healthy, 503 starting, 500 unhealthy. A worker before 3.9
    answers 404; it is then `unknown`, reachable but not saying more."""
    answer: object
    status, answer = client.exchange("GET", "/health", action=f"read Connect's health at {client.url}")
    if isinstance(answer, dict) and answer.get("status"):
        return Health(url=client.url, status=str(answer["status"]), message=str(answer.get("message") or ""))
    if status == 404:
        return Health(url=client.url, status="unknown", message="this worker has no /health endpoint (Kafka Connect 3.9+, KIP-1017)")
    if status in (401, 403):
        client.raise_for(status, answer, f"read Connect's health at {client.url}")
    return Health(url=client.url, status="unhealthy", message=f"answered {status}: {answer}")


def plugins(client: ConnectClient, *, everything: bool = False) -> list[Plugin]:
    answer: list[PluginAnswer] = client.get(path("connector-plugins", connectorsOnly=not everything), action="list Connect's plugins")
    return sorted((Plugin(class_name=p["class"], type=p.get("type", ""), version=p.get("version")) for p in answer),
                  key=lambda p: (_PLUGIN_ORDER.get(p.type, 9), p.class_name))


_PLUGIN_ORDER = {"source": 0, "sink": 1, "converter": 2, "header_converter": 3, "transformation": 4, "predicate": 5}


def validate(client: ConnectClient, config: Mapping[str, str]) -> Validation:
    """Connect's own validation of a config (PUT .../config/validate): every field's errors."""
    class_name = config.get("connector.class")
    if not class_name:
        raise InvalidError(action="validate the config", cause="it has no connector.class")
    answer: ValidateAnswer = client.put(path("connector-plugins", class_name, "config", "validate"), dict(config),
                                        action=f"validate a config of {class_name}")
    problems = [FieldProblem(field=item["value"]["name"], value=item["value"].get("value"), error=error)
                for item in answer.get("configs", []) for error in item.get("value", {}).get("errors", [])]
    return Validation(class_name=answer.get("name", class_name), error_count=int(answer.get("error_count", len(problems))),
                      problems=tuple(problems))


# -- connectors ----------------------------------------------------------------------------


def names(client: ConnectClient) -> list[str]:
    listed: list[str] = client.get("/connectors", action="list connectors")
    return sorted(listed)


def list_connectors(client: ConnectClient) -> list[ConnectorSummary]:
    """Every connector, its state and its tasks' (expand=status&expand=info)."""
    answer = expanded(client)
    return [_summary(name, answer[name]) for name in sorted(answer)]


def expanded(client: ConnectClient) -> dict[str, ExpandedAnswer]:
    """Every connector's status and info in one request, and the names of those it left
    out: Connect omits a connector whose status it has not written yet (one created a
    moment ago), which is then UNASSIGNED with its config read on its own."""
    answer: dict[str, ExpandedAnswer] = client.get(path("connectors", expand=["status", "info"]), action="list connectors")
    for name in set(names(client)) - set(answer):
        try:
            configured = config(client, name)
        except KctlError:
            continue  # deleted meanwhile
        answer[name] = {"status": {"name": name, "connector": {"state": "UNASSIGNED"}, "tasks": []},
                        "info": {"name": name, "config": configured, "tasks": []}}
    return answer


def _summary(name: str, entry: ExpandedAnswer) -> ConnectorSummary:
    status = entry.get("status") or {}
    info_ = entry.get("info") or {}
    tasks = status.get("tasks") or []
    return ConnectorSummary(
        name=name, type=status.get("type") or info_.get("type") or "unknown",
        class_name=(info_.get("config") or {}).get("connector.class", ""),
        state=(status.get("connector") or {}).get("state", "UNASSIGNED"),
        worker_id=(status.get("connector") or {}).get("worker_id"),
        tasks=len(tasks), tasks_running=sum(t.get("state") == "RUNNING" for t in tasks),
        tasks_failed=sum(t.get("state") == "FAILED" for t in tasks),
    )


def status(client: ConnectClient, name: str) -> StatusAnswer:
    return client.get(path("connectors", name, "status"), action=f"read connector {name!r}'s status")


def config(client: ConnectClient, name: str) -> dict[str, str]:
    return client.get(path("connectors", name, "config"), action=f"read connector {name!r}'s config")


def describe(client: ConnectClient, name: str, *, session: AdminSession | None = None) -> ConnectorDescription:
    """A connector's config, status, tasks and topics; with `session` (the Kafka cluster),
    a sink's consumer group lag from kctl's own lag code."""
    action = f"describe connector {name!r}"
    answer: StatusAnswer = client.get(path("connectors", name, "status"), action=action)
    configured: dict[str, str] = client.get(path("connectors", name, "config"), action=action)
    try:
        topics: list[str] = client.get(path("connectors", name, "topics"), action=action).get(name, {}).get("topics", [])
    except KctlError:
        topics = []  # topic tracking turned off on the workers (topic.tracking.enable=false)
    kind = answer.get("type", "unknown")
    connector = answer.get("connector") or {}
    lag, lag_error = None, None
    if session is not None and kind == "sink":
        try:
            lag = sink_lag(session, name, configured)
        except KctlError as exc:  # Connect answered; the Kafka cluster's trouble is only a note
            lag_error = exc.message
    return ConnectorDescription(
        name=name, type=kind, class_name=configured.get("connector.class", ""),
        state=connector.get("state", "UNASSIGNED"), worker_id=connector.get("worker_id"), trace=connector.get("trace"),
        config=dict(sorted(configured.items())), tasks=_tasks(answer), topics=tuple(sorted(topics)), lag=lag,
        lag_error=lag_error,
    )


def _tasks(answer: StatusAnswer) -> tuple[TaskStatus, ...]:
    return tuple(TaskStatus(id=int(t["id"]), state=t.get("state", ""), worker_id=t.get("worker_id"), trace=t.get("trace"))
                 for t in sorted(answer.get("tasks") or [], key=lambda t: int(t["id"])))


def sink_group(name: str, configured: Mapping[str, str]) -> str:
    """A sink connector's consumer group: connect-NAME unless its config overrides it."""
    return configured.get("consumer.override.group.id") or f"connect-{name}"


def sink_lag(session: AdminSession, name: str, configured: Mapping[str, str]) -> SinkLag | None:
    from kctl.admin.groups.lag import group_lag

    group = sink_group(name, configured)
    results, errors = group_lag(session, [group])
    if not results:
        return None
    result = results[0]
    return SinkLag(group=group, lag_sum=result.lag_sum, lag_max=result.lag_max,
                   partitions_without_commit=result.partitions_without_commit)


def create(client: ConnectClient, spec: ConnectorSpec) -> ConnectorConfig:
    body: dict[str, object] = {"name": spec.name, "config": spec.config}
    if spec.initial_state:
        body["initial_state"] = spec.initial_state.upper()
    return _stored(client.post("/connectors", body, action=f"create connector {spec.name!r}"), spec.name)


def update(client: ConnectClient, name: str, new: Mapping[str, str]) -> ConnectorConfig:
    """PUT the whole config (creating the connector when there is none by that name)."""
    return _stored(client.put(path("connectors", name, "config"), {**new, "name": name}, action=f"update connector {name!r}"), name)


def _stored(answer: InfoAnswer | None, name: str) -> ConnectorConfig:
    answer = answer if isinstance(answer, dict) else {}
    return ConnectorConfig(name=answer.get("name", name), type=answer.get("type"), config=dict(sorted((answer.get("config") or {}).items())))


def patch(client: ConnectClient, name: str, changes: Mapping[str, str | None]) -> InfoAnswer:
    """KIP-477's PATCH: keys set, keys with None removed, the rest kept."""
    return client.patch(path("connectors", name, "config"), dict(changes), action=f"patch connector {name!r}")


def config_changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[ConfigChange]:
    changes = []
    for key in sorted(set(old) | set(new)):
        if key not in old:
            changes.append(ConfigChange(key=key, change="added", old=None, new=new[key]))
        elif key not in new:
            changes.append(ConfigChange(key=key, change="removed", old=old[key], new=None))
        elif old[key] != new[key]:
            changes.append(ConfigChange(key=key, change="changed", old=old[key], new=new[key]))
    return changes


def pause(client: ConnectClient, name: str, *, wait: bool = True) -> StateChange:
    client.put(path("connectors", name, "pause"), action=f"pause connector {name!r}")
    return _settled(client, name, "paused", lambda s: state_of(s) == "PAUSED" and all(t.state == "PAUSED" for t in _tasks(s)), wait)


def resume(client: ConnectClient, name: str, *, wait: bool = True) -> StateChange:
    client.put(path("connectors", name, "resume"), action=f"resume connector {name!r}")
    return _settled(client, name, "resumed", lambda s: state_of(s) in ("RUNNING", "FAILED") and _tasks(s)
                    and all(t.state != "PAUSED" for t in _tasks(s)), wait)


def stop(client: ConnectClient, name: str, *, wait: bool = True) -> StateChange:
    """Stop (KIP-875): the connector and its tasks shut down, their configs kept. Waited
    for until the tasks are gone too: Connect says STOPPED a moment before, and refuses
    to alter offsets until then."""
    client.put(path("connectors", name, "stop"), action=f"stop connector {name!r}")
    return _settled(client, name, "stopped", lambda s: state_of(s) == "STOPPED" and not s.get("tasks"), wait)


def restart(client: ConnectClient, name: str, *, include_tasks: bool = False, only_failed: bool = False,
            wait: bool = True) -> StateChange:
    answer: StatusAnswer | None = client.post(
        path("connectors", name, "restart", includeTasks=include_tasks or None, onlyFailed=only_failed or None),
        action=f"restart connector {name!r}")
    if not wait:
        return StateChange(connector=name, action="restart requested", state=state_of(answer) if answer else None)
    return _settled(client, name, "restarted", lambda s: state_of(s) != "RESTARTING" and all(t.state != "RESTARTING" for t in _tasks(s)), True)


def restart_task(client: ConnectClient, name: str, task: int, *, wait: bool = True) -> StateChange:
    client.post(path("connectors", name, "tasks", task, "restart"), action=f"restart task {task} of connector {name!r}")
    return _settled(client, name, "restarted", lambda s: any(t.id == task and t.state in ("RUNNING", "FAILED", "PAUSED") for t in _tasks(s)), wait)


def delete(client: ConnectClient, name: str) -> StateChange:
    """Delete the connector and wait until Connect no longer lists it: its DELETE answers
    before the worker has dropped the connector, and a connector created again under the
    name meanwhile (`delete` then `apply`, in a CI run) was lost to the pending deletion."""
    client.delete(path("connectors", name), action=f"delete connector {name!r}")
    gone = poll(lambda: name not in client.get("/connectors", action="list connectors"), bool,
                timeout=client.settings.timeout, interval=0.2)
    if not gone:
        raise TimeoutError_(action=f"see connector {name!r} deleted", cause=f"Connect still lists it after {client.settings.timeout:g} s",
                            hint="kctl connect list shows it; a longer {timeout} waits longer")
    return StateChange(connector=name, action="deleted", state=None)


def state_of(answer: StatusAnswer) -> str:
    return (answer.get("connector") or {}).get("state", "")


def _settled(client: ConnectClient, name: str, action: str, done: Callable[[StatusAnswer], object], wait: bool) -> StateChange:
    ask = lambda: status(client, name)  # noqa: E731
    answer = poll(ask, done, timeout=client.settings.timeout, interval=0.2) if wait else ask()
    if wait and not done(answer):
        raise TimeoutError_(action=f"see connector {name!r} {action}", cause=f"it is {state_of(answer)} after {client.settings.timeout:g} s",
                            hint="kctl connect describe shows where it is; a longer {timeout} waits longer")
    return StateChange(connector=name, action=action, state=state_of(answer), tasks=_tasks(answer))


def topics(client: ConnectClient, name: str) -> list[str]:
    answer: dict[str, TopicsAnswer] = client.get(path("connectors", name, "topics"), action=f"read connector {name!r}'s topics")
    return sorted(answer.get(name, {}).get("topics", []))


def reset_topics(client: ConnectClient, name: str) -> None:
    client.put(path("connectors", name, "topics", "reset"), action=f"reset connector {name!r}'s topics")


# -- loggers -------------------------------------------------------------------------------


def loggers(client: ConnectClient, *, prefix: str | None = None) -> list[Logger]:
    answer: dict[str, LoggerAnswer] = client.get("/admin/loggers", action="list Connect's loggers")
    return [Logger(logger=name, level=value.get("level", ""), last_modified=value.get("last_modified"))
            for name, value in sorted(answer.items()) if not prefix or name.startswith(prefix)]


def set_logger(client: ConnectClient, name: str, level: str, *, scope: str = "worker") -> list[str]:
    """The loggers whose level changed (on this worker; with scope `cluster`, every worker
    changes them and Connect does not say which)."""
    answer: object = client.put(path("admin", "loggers", name, scope=None if scope == "worker" else scope), {"level": level.upper()},
                                action=f"set logger {name!r} to {level.upper()}")
    return list(answer) if isinstance(answer, list) else []


# -- connector files -----------------------------------------------------------------------


def read_connector_file(file: Path, name: str | None = None, *, named: bool = True) -> ConnectorSpec:
    """A connector from a file: JSON as Connect takes it ({"name", "config"} as POSTed, or
    the flat config map PUT takes) or Java .properties. Parsed here, so a malformed file
    is a clear error (Connect answers 500 to malformed JSON). `named`: the connector must
    have a name (from the file or `name`); a config to validate need not."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InvalidError(action=f"read connector file {file}", cause=str(exc.strerror)) from None
    initial_state = None
    if file.suffix == ".properties":
        configured = _properties(data, file)
    else:
        try:
            document: object = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidError(action=f"read connector file {file}", cause=f"not JSON: {exc}") from None
        if not isinstance(document, dict):
            raise InvalidError(action=f"read connector file {file}", cause="expected a JSON object")
        if isinstance(document.get("config"), dict):
            configured = _strings(document["config"], file)
            if document.get("name") is not None:
                configured.setdefault("name", str(document["name"]))
            initial_state = document.get("initial_state")
        else:
            configured = _strings(document, file)
    chosen = name or configured.get("name")
    if not chosen and not named:
        return ConnectorSpec(name="", config=configured)
    if not chosen:
        raise InvalidError(action=f"read connector file {file}", cause="it names no connector (a name key, or give NAME)")
    if configured.get("name") and name and configured["name"] != name:
        raise InvalidError(action=f"use connector file {file}", cause=f"it names connector {configured['name']!r}, not {name!r}")
    configured["name"] = chosen
    if initial_state is not None and str(initial_state).lower() not in INITIAL_STATES:
        raise InvalidError(action=f"read connector file {file}", cause=f"initial_state {initial_state!r} is not one of {', '.join(INITIAL_STATES)}")
    return ConnectorSpec(name=chosen, config=configured, initial_state=str(initial_state).lower() if initial_state else None)


def _strings(values: Mapping[str, object], file: Path) -> dict[str, str]:
    """Connect's configs are strings; JSON numbers and booleans are taken as their text."""
    out = {}
    for key, value in values.items():
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            out[key] = str(value)
        elif value is None:
            continue
        else:
            raise InvalidError(action=f"read connector file {file}", cause=f"{key} must be a string, not {type(value).__name__}")
    return out


def _properties(data: bytes, file: Path) -> dict[str, str]:
    import jproperties

    properties: _Properties = jproperties.Properties()
    try:
        properties.load(data, "utf-8")
    except (jproperties.PropertyError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidError(action=f"read connector file {file}", cause=str(exc)) from None
    return {key: value.data for key, value in properties.items()}
