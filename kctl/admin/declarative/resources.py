"""Resource files: YAML documents describing the state a cluster should have, read and
checked offline (no cluster needed) into typed resources.

A document is `kind` (Topic, ClusterConfig, Acl, Quota, User, Connector), `metadata` (name, and the
context it is for) and `spec`. The shape is checked against the JSON Schema shipped
beside this module; values against Kafka's own config definitions (kafka_configs). Every
problem names its file, line and key, so a review bot can point at it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources as package_files
from pathlib import Path
from typing import TYPE_CHECKING, cast

from kctl.admin.declarative.kafka_configs import config_string
from kctl.errors import InvalidError, KctlError, render_hint

if TYPE_CHECKING:
    from typing import Any, Protocol, Required, TypedDict, Unpack

    from kctl.admin.security.acls import Acl
    from kctl.admin.security.quotas import Entity
    from kctl.errors import ExitCode
    from kctl.errors import Resource as ErrorResource

KINDS = ("Topic", "ClusterConfig", "Acl", "Quota", "User", "Connector")
API_VERSION = "kctl/v1"
# ClusterConfig's name for the cluster-wide default of every broker.
CLUSTER_DEFAULT = "default"
# As `kctl user set-password`.
DEFAULT_ITERATIONS = 8192


@dataclass(frozen=True)
class TopicPolicy:
    """What apply may do to a topic; a change outside it is refused in the plan."""

    min_retention_ms: int | None = None
    allow_config_delete: bool = True
    allow_replication_change: bool = True
    allow_partition_increase: bool = True


@dataclass(frozen=True)
class Resource:
    kind: str
    name: str
    context: str | None
    # "FILE:LINE" of the document, for messages.
    where: str


@dataclass(frozen=True)
class Topic(Resource):
    partitions: int
    replication_factor: int | None
    configs: Mapping[str, str]
    replicas: tuple[tuple[int, ...], ...] | None = None
    # "any" or "rack-aware"
    placement: str = "any"
    policy: TopicPolicy = field(default_factory=TopicPolicy)


@dataclass(frozen=True)
class ClusterConfig(Resource):
    """name: `default` (every broker) or a broker id."""

    configs: Mapping[str, str]


@dataclass(frozen=True)
class AclSet(Resource):
    acls: tuple[Acl, ...]


@dataclass(frozen=True)
class QuotaSet(Resource):
    entity: Entity
    quotas: Mapping[str, float]


@dataclass(frozen=True)
class User(Resource):
    # (mechanism, iterations) pairs
    credentials: tuple[tuple[str, int], ...]
    password_env: str | None = None


@dataclass(frozen=True)
class Connector(Resource):
    """A Kafka Connect connector (kctl.admin.declarative.connectors)."""

    config: Mapping[str, str]
    # running | paused | stopped
    state: str = "running"
    # config key -> the environment variable holding its secret value
    secrets: Mapping[str, str] = field(default_factory=dict)


if TYPE_CHECKING:
    class _ErrorFields(TypedDict, total=False):
        """KctlError's keyword arguments."""

        action: str | None
        cause: Required[str]
        hint: str | None
        exit_code: ExitCode | None
        kafka_error: str | None
        resource: ErrorResource | None
        service_code: int | None


class ResourceFileError(InvalidError):
    """Problems found in resource files; `problems` holds every one, each on one line."""

    def __init__(self, *, problems: Sequence[str] = (), **fields: Unpack[_ErrorFields]):
        super().__init__(**fields)
        self.problems = list(problems)


def _invalid(problems: Sequence[str]) -> ResourceFileError:
    if len(problems) == 1:
        return ResourceFileError(cause=f"invalid resource file: {problems[0]}", problems=problems)
    return ResourceFileError(cause=f"invalid resource files: {len(problems)} problems (each on a line above)", problems=problems)


# -- what the documents hold once the schema has passed them ------------------------------

# For mypy only, like every class and alias of this block: made at run time, they took
# 2 ms of the module's import.
if TYPE_CHECKING:
    # A config value as YAML gives it (the schema's config_value).
    ConfigScalar = str | int | float | bool
    # The keys leading to a value in a document (mapping keys and list indexes), for its line.
    KeyPath = tuple[str | int, ...]

    class _Metadata(TypedDict, total=False):
        name: Required[str]
        context: str
        labels: dict[str, str]

    class _Document(TypedDict, total=False):
        api_version: str
        kind: Required[str]
        metadata: Required[_Metadata]
        # The spec of `kind` (the schema checked which).
        spec: Required[_TopicSpec | _ClusterConfigSpec | _AclSpec | _QuotaSpec | _UserSpec | _ConnectorSpec]

    class _Base(TypedDict):
        """The fields of Resource."""

        kind: str
        name: str
        context: str | None
        where: str

    class _PolicySpec(TypedDict, total=False):
        min_retention_ms: int
        allow_config_delete: bool
        allow_replication_change: bool
        allow_partition_increase: bool

    class _TopicSpec(TypedDict, total=False):
        partitions: Required[int]
        replication_factor: int
        configs: dict[str, ConfigScalar]
        placement: str
        replicas: list[list[int]]
        policy: _PolicySpec

    class _ClusterConfigSpec(TypedDict):
        configs: dict[str, ConfigScalar]

    class _AclSpec(TypedDict):
        acls: list[dict[str, str]]

    class _QuotaEntitySpec(TypedDict, total=False):
        user: str
        client_id: str
        ip: str

    class _QuotaSpec(TypedDict):
        entity: _QuotaEntitySpec
        quotas: dict[str, float | str]

    class _CredentialSpec(TypedDict, total=False):
        mechanism: Required[str]
        iterations: int

    class _UserSpec(TypedDict, total=False):
        credentials: Required[list[_CredentialSpec]]
        password_env: str

    class _ConnectorSpec(TypedDict, total=False):
        config: Required[dict[str, ConfigScalar]]
        state: str
        secrets: dict[str, str]

    class _Problem(Protocol):
        """Appends a problem found at `keys` of the document."""

        def __call__(self, message: str, *keys: str | int) -> None: ...

    class _Mark(Protocol):
        line: int

    class _Node(Protocol):
        """A PyYAML node."""

        start_mark: _Mark

    class _Loader(Protocol):
        """A PyYAML loader (SafeLoader, CSafeLoader)."""

        def check_node(self) -> bool: ...

        def get_node(self) -> _Node: ...

        def construct_document(self, node: _Node) -> object: ...

        def dispose(self) -> None: ...

    class _SchemaError(Protocol):
        """jsonschema's ValidationError."""

        validator: str
        absolute_path: Sequence[str | int]
        message: str
        instance: object
        schema: Mapping[str, Any]

    class _Validator(Protocol):
        def iter_errors(self, instance: object) -> Iterable[_SchemaError]: ...


@cache
def schema() -> dict[str, Any]:
    return json.loads(package_files.files(__package__).joinpath("resources.schema.json").read_text(encoding="utf-8"))


@cache
def _validator() -> _Validator:
    import jsonschema

    return jsonschema.Draft202012Validator(schema())


# -- reading -------------------------------------------------------------------------------


def expand_paths(paths: Sequence[str]) -> list[str]:
    """Files as given; a directory stands for its *.yaml and *.yml files, recursively, sorted."""
    out = []
    for path in paths:
        if path != "-" and os.path.isdir(path):
            found = sorted(str(p) for p in Path(path).rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
            if not found:
                raise InvalidError(action=f"read {path}", cause="the directory holds no .yaml or .yml files")
            out += found
        else:
            out.append(path)
    return out


def load(paths: Sequence[str], stdin_text: str | None = None) -> list[Resource]:
    """Every resource in the files, checked; ResourceFileError lists all problems found."""
    problems: list[str] = []
    loaded: list[Resource] = []
    for path in expand_paths(paths):
        if path == "-":
            text, name = stdin_text or "", "<stdin>"
        else:
            name = path
            try:
                text = Path(path).read_text(encoding="utf-8")
            except FileNotFoundError:
                raise InvalidError(action=f"read {path}", cause="no such file") from None
            except (OSError, UnicodeDecodeError) as exc:
                raise InvalidError(action=f"read {path}", cause=f"{getattr(exc, 'strerror', None) or exc}") from exc
        loaded += parse(text, name, problems)
    problems += _duplicates(loaded)
    if problems:
        raise _invalid(problems)
    return loaded


def parse(text: str, path: str, problems: list[str]) -> list[Resource]:
    """The resources of one file; problems are appended, never raised."""
    import yaml

    # One pass with libyaml's C parser when PyYAML has it (the wheels do): pure Python
    # parsing was two thirds of a 2,000-topic diff. Nodes keep the line numbers.
    loader: _Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    nodes, documents = [], []
    try:
        while loader.check_node():
            node = loader.get_node()
            nodes.append(node)
            documents.append(loader.construct_document(node))
    except yaml.YAMLError as exc:
        mark: _Mark | None = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problems.append(f"{path}{line}: not valid YAML: {getattr(exc, 'problem', None) or exc}")
        return []
    finally:
        loader.dispose()
    out = []
    for document, node in zip(documents, nodes, strict=True):
        if document is None:
            continue  # an empty document (a trailing ---)
        lines: dict[KeyPath, int] = {}
        _record_lines(node, (), lines)
        located = _Located(path, lines, node.start_mark.line + 1)
        before = len(problems)
        _check_schema(document, located, problems)
        if len(problems) == before:
            # The schema passed it: a _Document.
            resource = _build(cast("_Document", document), located, problems)
            if resource is not None and len(problems) == before:
                out.append(resource)
    if not out and not problems and not any(d is not None for d in documents):
        problems.append(f"{path}: holds no resource documents")
    return out


@dataclass(frozen=True)
class _Located:
    path: str
    lines: Mapping[KeyPath, int]
    start: int

    def at(self, *keys: str | int) -> str:
        """FILE:LINE of the deepest of `keys` the file has."""
        for end in range(len(keys), -1, -1):
            if keys[:end] in self.lines:
                return f"{self.path}:{self.lines[keys[:end]]}"
        return f"{self.path}:{self.start}"


def _record_lines(node: _Node, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    import yaml

    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                lines[path + (key.value,)] = key.start_mark.line + 1
                _record_lines(value, path + (key.value,), lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _record_lines(item, path + (index,), lines)


def _label(document: object) -> str:
    if not isinstance(document, dict):
        return "document"
    found = document.get("kind")
    kind = found if isinstance(found, str) else "document"
    metadata = document.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return f"{kind} {name}" if isinstance(name, str) else kind


def _check_schema(document: object, located: _Located, problems: list[str]) -> None:
    validator = _validator()
    label = _label(document)
    for error in sorted(validator.iter_errors(document), key=lambda e: [str(p) for p in e.absolute_path]):
        if error.validator in ("if", "allOf"):
            continue  # its sub-errors say what is wrong
        keys = tuple(error.absolute_path)
        where = ".".join(str(k) for k in keys) or "document"
        message = error.message
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
            accepted = ", ".join(error.schema.get("properties", {}))
            keys += (extra[0],)
            message = f"unknown key{'s' if len(extra) > 1 else ''} {', '.join(extra)}; accepted: {accepted}"
        elif error.validator == "enum" and keys == ("kind",):
            message = f"unknown kind {error.instance!r}; accepted: {', '.join(KINDS)}"
        problems.append(f"{located.at(*keys)}: {label}: {where}: {message}")


def _build(document: _Document, located: _Located, problems: list[str]) -> Resource | None:
    kind = document["kind"]
    metadata = document["metadata"]
    spec = document["spec"]
    label = f"{kind} {metadata['name']}"
    base: _Base = dict(kind=kind, name=metadata["name"], context=metadata.get("context"), where=f"{located.path}:{located.start}")

    def problem(message: str, *keys: str | int) -> None:
        problems.append(f"{located.at(*keys)}: {label}: {message}")

    # Each builder takes its kind's spec (the schema checked it is that kind's).
    builders: dict[str, Callable[[_Base, Any, _Problem], Resource | None]] = {
        "Topic": _topic, "ClusterConfig": _cluster_config, "Acl": _acl_set, "Quota": _quota_set, "User": _user,
        "Connector": _connector}
    builder = builders[kind]
    return builder(base, spec, problem)


def _configs(scope: str, configs: Mapping[str, ConfigScalar], problem: _Problem) -> dict[str, str]:
    from kctl.admin.declarative.kafka_configs import MANAGED_BY_REASSIGNMENT, check, definitions

    out = {}
    for key, raw in configs.items():
        value = config_string(raw)
        if key in MANAGED_BY_REASSIGNMENT:
            problem(f"config {key} is set and cleared by reassignments; leave it out", "spec", "configs", key)
            continue
        if getattr(definitions(scope).get(key), "type", None) == "PASSWORD":
            problem(f"config {key} is a password: resource files are kept in Git, secrets are not; set it with `kctl config alter`", "spec", "configs", key)
            continue
        reason = check(scope, key, value)
        if reason:
            problem(f"config {key}: {reason}", "spec", "configs", key)
            continue
        out[key] = value
    return out


def _topic(base: _Base, spec: _TopicSpec, problem: _Problem) -> Topic | None:
    from kctl.admin.topics.topics import validate_topic_name

    try:
        validate_topic_name(base["name"])
    except KctlError as exc:
        problem(exc.message, "metadata", "name")
    configs = _configs("topic", spec.get("configs") or {}, problem)
    replicas = tuple(tuple(r) for r in spec["replicas"]) if "replicas" in spec else None
    rf = spec.get("replication_factor")
    if replicas is not None:
        if len(replicas) != spec["partitions"]:
            problem(f"replicas lists {len(replicas)} partition(s) but partitions is {spec['partitions']}", "spec", "replicas")
        sizes = {len(r) for r in replicas}
        if len(sizes) > 1:
            problem("every partition in replicas needs the same number of replicas", "spec", "replicas")
        elif rf is not None and sizes != {rf}:
            problem(f"replicas has {sizes.pop()} replica(s) per partition but replication_factor is {rf}", "spec", "replicas")
        elif rf is None:
            rf = sizes.pop()
    placement = spec.get("placement", "any")
    if placement != "any" and replicas is not None:
        problem("placement and replicas exclude each other: replicas is an explicit placement", "spec", "placement")
    policy = TopicPolicy(**(spec.get("policy") or {}))
    retention = configs.get("retention.ms")
    if policy.min_retention_ms is not None and retention is not None and retention != "-1" and int(retention) < policy.min_retention_ms:
        problem(f"retention.ms {retention} is below the policy's min_retention_ms {policy.min_retention_ms}", "spec", "configs", "retention.ms")
    return Topic(**base, partitions=spec["partitions"], replication_factor=rf, configs=configs, replicas=replicas, placement=placement, policy=policy)


def _cluster_config(base: _Base, spec: _ClusterConfigSpec, problem: _Problem) -> ClusterConfig | None:
    name = base["name"]
    if name != CLUSTER_DEFAULT and not name.isdigit():
        problem(f"name must be {CLUSTER_DEFAULT!r} (every broker) or a broker id, not {name!r}", "metadata", "name")
    return ClusterConfig(**base, configs=_configs("broker", spec["configs"], problem))


def _acl_set(base: _Base, spec: _AclSpec, problem: _Problem) -> AclSet | None:
    from kctl.admin.security.acls import acl_from_row

    acls = []
    for index, row in enumerate(spec["acls"]):
        try:
            acls.append(acl_from_row(row, f"acls[{index}]"))
        except KctlError as exc:
            problem(exc.message, "spec", "acls", index)
    return AclSet(**base, acls=tuple(sorted(set(acls))))


def _quota_set(base: _Base, spec: _QuotaSpec, problem: _Problem) -> QuotaSet | None:
    from kctl.admin.security.quotas import entity_of, parse_key, parse_value

    names = spec["entity"]
    try:
        entity = entity_of(names.get("user"), names.get("client_id"), names.get("ip"))
    except KctlError as exc:
        problem(render_hint(exc.message), "spec", "entity")
        return None
    quotas = {}
    for key, raw in spec["quotas"].items():
        try:
            name = parse_key(key, entity)
            quotas[name] = parse_value(name, str(raw))
        except KctlError as exc:
            problem(render_hint(exc.message), "spec", "quotas", key)
    return QuotaSet(**base, entity=entity, quotas=quotas)


def _user(base: _Base, spec: _UserSpec, problem: _Problem) -> User | None:
    mechanisms = [c["mechanism"] for c in spec["credentials"]]
    if len(set(mechanisms)) != len(mechanisms):
        problem("a mechanism is listed twice in credentials", "spec", "credentials")
    credentials = tuple(sorted((c["mechanism"], c.get("iterations", DEFAULT_ITERATIONS)) for c in spec["credentials"]))
    return User(**base, credentials=credentials, password_env=spec.get("password_env"))


def _connector(base: _Base, spec: _ConnectorSpec, problem: _Problem) -> Connector | None:
    from kctl.admin.declarative.connectors import check_spec

    checked = check_spec(base["name"], spec, problem)
    return Connector(**base, config=checked.config, state=checked.state, secrets=checked.secrets)


def _duplicates(loaded: Iterable[Resource]) -> list[str]:
    seen: dict[tuple[str | None, str, str], str] = {}
    problems = []
    for resource in loaded:
        if isinstance(resource, AclSet):
            continue  # ACL rows are a set: the same row twice is one ACL
        identity = (resource.context, resource.kind, str(resource.entity) if isinstance(resource, QuotaSet) else resource.name)
        if identity in seen:
            problems.append(f"{resource.where}: {resource.kind} {resource.name}: also defined at {seen[identity]}")
        else:
            seen[identity] = resource.where
    return problems
