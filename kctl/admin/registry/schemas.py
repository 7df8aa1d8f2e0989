"""Schema Registry: subjects, versions, schemas and compatibility, over confluent-kafka's
SchemaRegistryClient (Confluent's REST API, which Apicurio, Redpanda and Karapace serve
too). Returns frozen dataclasses; every failure is a KctlError naming the registry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import ParamSpec, TypeVar

    from confluent_kafka.schema_registry import Schema
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    P = ParamSpec("P")
    T = TypeVar("T")

from kctl.admin.client.confluent import registry_rest_client
from kctl.config.secrets import read_secret
from kctl.errors import ConfigError, ExitCode, InvalidError, KctlError, NotAuthorizedError, NotFoundError, UnreachableError

SCHEMA_TYPES = {"avro": "AVRO", "protobuf": "PROTOBUF", "json": "JSON"}
COMPATIBILITY_LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE")
MODES = ("READWRITE", "READONLY", "IMPORT")


@dataclass(frozen=True, slots=True, kw_only=True)
class RegistrySettings:
    url: str
    # user:password for HTTP basic authentication; never printed.
    basic_auth: str | None = None
    # A bearer token (static: from the config, the environment or a file); never printed.
    bearer_token: str | None = None
    # Confluent Cloud's target-sr-cluster header, sent with a bearer token.
    logical_cluster: str | None = None
    # TLS: CA bundle to verify the registry with; client certificate and key.
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    timeout: float = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Subject:
    subject: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Reference:
    name: str
    subject: str
    version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SchemaVersion:
    subject: str | None
    version: int | None
    id: int
    type: str
    references: tuple[Reference, ...]
    schema: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Compatibility:
    subject: str
    compatible: bool
    # The registry's reasons when not compatible (its verbose answer), in its words.
    messages: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CompatibilitySetting:
    """The level a subject's new schemas are checked at, and where it comes from: the
    subject's own, or the registry's global one (which a subject without its own follows)."""

    subject: str | None
    compatibility: str
    source: str  # subject | global


@dataclass(frozen=True, slots=True, kw_only=True)
class ModeSetting:
    subject: str | None
    mode: str
    source: str  # subject | global


def registry_settings(configured: Mapping[str, str], url_flag: str | None, timeout: float) -> RegistrySettings:
    """The registry to use: --registry-url, else the context's schema-registry settings
    with KCTL_SCHEMA_REGISTRY_* over them (kctl.config.resolve layers those)."""
    url = url_flag or configured.get("url")
    if not url:
        raise ConfigError(
            action="reach a schema registry", cause="none is configured",
            hint="give {registry_url} URL, set KCTL_SCHEMA_REGISTRY_URL, or kctl context set NAME --schema-registry-url URL",
        )
    if not url.startswith(("http://", "https://")):
        raise ConfigError(action=f"use schema registry {url!r}", cause="expected an http:// or https:// URL")
    basic_auth = read_secret(configured, "basic-auth", "the schema registry")
    if basic_auth is not None and ":" not in basic_auth:
        raise ConfigError(action="use the schema registry's basic-auth", cause="expected user:password")
    bearer_token = read_secret(configured, "bearer-token", "the schema registry")
    if basic_auth and bearer_token:
        raise ConfigError(action="use the schema registry", cause="both basic-auth and bearer-token are set; keep one")
    return RegistrySettings(
        url=url.rstrip("/"), basic_auth=basic_auth or None, timeout=timeout,
        bearer_token=bearer_token or None, logical_cluster=configured.get("logical-cluster"),
        ssl_ca_location=configured.get("ssl-ca-location"), ssl_certificate_location=configured.get("ssl-certificate-location"),
        ssl_key_location=configured.get("ssl-key-location"),
    )


class Registry:
    """One registry client for a command; every call maps the registry's errors."""

    def __init__(self, settings: RegistrySettings):
        from confluent_kafka.schema_registry import SchemaRegistryClient

        config: dict[str, str | float] = {"url": settings.url, "timeout": settings.timeout, "max.retries": 1}
        if settings.basic_auth:
            config["basic.auth.user.info"] = settings.basic_auth
        if settings.bearer_token:
            # A static token; the client insists on a logical cluster (a Confluent Cloud
            # header, which other registries ignore).
            config.update({"bearer.auth.credentials.source": "STATIC_TOKEN", "bearer.auth.token": settings.bearer_token,
                           "bearer.auth.logical.cluster": settings.logical_cluster or ""})
        for key, value in (("ssl.ca.location", settings.ssl_ca_location), ("ssl.certificate.location", settings.ssl_certificate_location),
                           ("ssl.key.location", settings.ssl_key_location)):
            if value:
                config[key] = str(Path(value).expanduser())
        self.settings = settings
        self.client = SchemaRegistryClient(config)

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if close is not None:
            close()

    def _call(self, action: str, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        from kctl.admin.client.confluent import registry_http_library

        httpx = registry_http_library()

        try:
            return function(*args, **kwargs)
        except SchemaRegistryError as exc:
            raise registry_error(action, exc, self.settings.url) from None
        except httpx.TimeoutException:
            raise KctlError(action=action, cause=f"the schema registry at {self.settings.url} did not answer within {self.settings.timeout:g} s", exit_code=ExitCode.TIMEOUT) from None
        except httpx.HTTPError as exc:
            raise UnreachableError(action=action, cause=f"cannot reach the schema registry at {self.settings.url} ({exc})") from None

    # -- reading -------------------------------------------------------------------------

    def subjects(self, *, prefix: str | None = None, deleted: bool = False) -> list[Subject]:
        names = self._call("list subjects", self.client.get_subjects, subject_prefix=prefix, deleted=deleted)
        # Not every registry filters by prefix (the parameter is newer than the API).
        return [Subject(subject=name) for name in sorted(names) if prefix is None or name.startswith(prefix)]

    def versions(self, subject: str, *, deleted: bool = False) -> list[SchemaVersion]:
        numbers = self._call(f"list versions of {subject}", self.client.get_versions, subject, deleted=deleted)
        return [self.version(subject, number, deleted=deleted) for number in sorted(numbers)]

    def version(self, subject: str, version: int | str = "latest", *, deleted: bool = False) -> SchemaVersion:
        action = f"describe {subject} version {version}"
        if version == "latest":
            registered = self._call(action, self.client.get_latest_version, subject)
        else:
            registered = self._call(action, self.client.get_version, subject, int(version), deleted=deleted)
        # The registry's answer has the id (the client types its fields Optional: its from_dict reads them with get).
        return _schema_version(registered.subject, registered.version, cast("int", registered.schema_id), registered.schema)

    def by_id(self, schema_id: int) -> SchemaVersion:
        schema = self._call(f"get schema {schema_id}", self.client.get_schema, schema_id)
        return _schema_version(None, None, schema_id, schema)

    # -- writing -------------------------------------------------------------------------

    def register(self, subject: str, schema_text: str, schema_type: str, references: list[Reference]) -> SchemaVersion:
        from confluent_kafka.schema_registry import Schema, SchemaReference

        schema = Schema(schema_text, schema_type, [SchemaReference(r.name, r.subject, r.version) for r in references])
        action = f"register a schema under {subject}"
        self._call(action, self.client.register_schema, subject, schema)
        registered = self._call(action, self.client.lookup_schema, subject, schema)
        self.client.clear_caches()  # they hold the text as sent; show it as the registry keeps it
        return self.version(subject, cast("int", registered.version))

    def check(self, subject: str, schema_text: str, schema_type: str, references: list[Reference]) -> Compatibility:
        """Whether the schema could be registered under the subject, by the subject's
        compatibility level (against the versions that level compares with)."""
        from confluent_kafka.schema_registry import Schema, SchemaReference

        schema = Schema(schema_text, schema_type, [SchemaReference(r.name, r.subject, r.version) for r in references])
        # The client's test_compatibility returns only the verdict; the same request through
        # its REST client keeps the registry's reasons (verbose=true).
        rest = registry_rest_client(self.client)
        path = f"compatibility/subjects/{_quote(subject)}/versions/latest?verbose=true"
        answer = self._call(f"check a schema against {subject}", rest.post, path, body=schema.to_dict())
        messages = answer.get("messages") or []
        return Compatibility(subject=subject, compatible=bool(answer.get("is_compatible")), messages=tuple(str(m) for m in messages))

    # -- compatibility levels and modes ------------------------------------------------

    def compatibility(self, subject: str | None) -> CompatibilitySetting:
        action = f"get the compatibility level of {_scope(subject)}"
        if subject is None:
            return CompatibilitySetting(subject=None, compatibility=self._call(action, self.client.get_compatibility), source="global")
        # The level in force is asked with defaultToGlobal (the client has no such call; its
        # REST client keeps the command's URL, credentials and TLS). Whether it is the
        # subject's own: Confluent's registry answers 404 without one, Apicurio NONE.
        rest = registry_rest_client(self.client)
        effective = self._call(action, rest.get, f"config/{_quote(subject)}", query={"defaultToGlobal": "true"})["compatibilityLevel"]
        try:
            own = self._call(action, self.client.get_compatibility, subject)
        except NotFoundError:
            own = None
        return CompatibilitySetting(subject=subject, compatibility=effective, source="subject" if own == effective else "global")

    def set_compatibility(self, subject: str | None, level: str) -> CompatibilitySetting:
        self._call(f"set the compatibility level of {_scope(subject)}", self.client.set_compatibility, subject, level)
        return self.compatibility(subject)

    def delete_compatibility(self, subject: str) -> CompatibilitySetting:
        self._call(f"delete the compatibility level of {subject}", self.client.delete_config, subject)
        return self.compatibility(subject)

    def mode(self, subject: str | None) -> ModeSetting:
        action = f"get the mode of {_scope(subject)}"
        if subject is not None:
            try:
                return ModeSetting(subject=subject, mode=self._call(action, self.client.get_mode, subject), source="subject")
            except NotFoundError as exc:  # no mode of its own (Confluent's 40409): the global one
                if exc.service_code == 40401:
                    raise
        return ModeSetting(subject=subject, mode=self._call(action, self.client.get_global_mode), source="global")

    def set_mode(self, subject: str | None, mode: str, *, force: bool = False) -> ModeSetting:
        action = f"set the mode of {_scope(subject)}"
        if subject is None:
            self._call(action, self.client.update_global_mode, mode, force=force)
        else:
            self._call(action, self.client.update_mode, subject, mode, force=force)
        return self.mode(subject)

    def delete(self, subject: str, *, version: int | None = None, permanent: bool = False) -> list[int]:
        action = f"delete {subject}" + (f" version {version}" if version is not None else "")
        if version is None:
            return list(self._call(action, self.client.delete_subject, subject, permanent=permanent))
        return [self._call(action, self.client.delete_version, subject, version, permanent=permanent)]


def _scope(subject: str | None) -> str:
    return subject if subject is not None else "the registry"


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def _schema_version(subject: str | None, version: int | None, schema_id: int, schema: Schema) -> SchemaVersion:
    # A registered schema has its text, and each of its references all three fields (the client types them Optional).
    references = tuple(Reference(name=cast("str", r.name), subject=cast("str", r.subject), version=cast("int", r.version))
                       for r in (schema.references or []))
    return SchemaVersion(subject=subject, version=version, id=schema_id, type=schema.schema_type or "AVRO", references=references,
                         schema=cast("str", schema.schema_str))


def registry_error(action: str, exc: SchemaRegistryError, url: str) -> KctlError:
    """The registry's error (HTTP status, its error code, its message) as a KctlError."""
    status, code, message = exc.http_status_code, exc.error_code, exc.error_message
    if status in (401, 403):
        return NotAuthorizedError(action=action, cause=f"the schema registry at {url} refused the credentials ({message})", service_code=code)
    if status == 404:
        return NotFoundError(action=action, cause=message, service_code=code)
    if status in (409, 422) or code in (42201, 42202, 409):
        return InvalidError(action=action, cause=message, service_code=code)
    return KctlError(action=action, cause=f"the schema registry answered {message} (HTTP {status}, error code {code})", service_code=code)


def read_schema_file(path: Path, schema_type: str | None) -> tuple[str, str]:
    """(schema text, registry type) of a schema file; the type from --type, else the
    file's extension (.avsc, .proto, .json), else Avro (the registry's default)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidError(action=f"read schema file {path}", cause=str(exc.strerror)) from None
    except UnicodeDecodeError:
        raise InvalidError(action=f"read schema file {path}", cause="not UTF-8 text") from None
    if schema_type is None:
        schema_type = {".proto": "protobuf", ".json": "json"}.get(path.suffix.lower(), "avro")
    if schema_type in ("avro", "json"):
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidError(action=f"read schema file {path}", cause=f"not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    return text, SCHEMA_TYPES[schema_type]


def parse_reference(text: str) -> Reference:
    """NAME=SUBJECT:VERSION, as --reference takes it."""
    name, _, target = text.partition("=")
    subject, _, version = target.rpartition(":")
    if not name or not subject or not version.isdigit():
        from kctl.errors import UsageError

        raise UsageError(action=f"parse --reference {text!r}", cause="expected NAME=SUBJECT:VERSION, such as common.proto=common-value:1")
    return Reference(name=name, subject=subject, version=int(version))


def pretty(schema: SchemaVersion) -> str:
    """The schema as people read it: JSON indented, Protobuf as registered."""
    if schema.type in ("AVRO", "JSON"):
        try:
            return json.dumps(json.loads(schema.schema), indent=2) + "\n"
        except json.JSONDecodeError:
            pass
    return schema.schema if schema.schema.endswith("\n") else schema.schema + "\n"
