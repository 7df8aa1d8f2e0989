"""Operations on contexts: pure functions from one ConfigFile to the next."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kctl.config.model import ClientSettings, ConfigFile, Context
from kctl.config.secrets import MASK, is_secret, mask
from kctl.errors import NotFoundError, Resource, UsageError
from kctl.values import replace


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextSummary:
    name: str
    current: bool
    bootstrap_servers: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Property:
    key: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextView:
    """A context as shown to people: secrets masked."""

    name: str | None
    bootstrap_servers: str | None
    timeout: float | None
    properties: tuple[Property, ...]
    # AWS MSK IAM settings (region, profile, role-arn, role-session-name); empty: off.
    aws_msk_iam: dict[str, str]
    # The schema registry (url, basic-auth masked, ...); empty: none.
    schema_registry: dict[str, str]
    # The Connect clusters by name (url, basic-auth masked, ...); empty: none.
    connect: dict[str, dict[str, str]]
    # Where each secret property lives: "keyring" (the OS keyring), "config file", or
    # "environment or -X" (the settings in effect only).
    secrets: dict[str, str]


def summaries(config: ConfigFile) -> list[ContextSummary]:
    return [
        ContextSummary(name=name, current=name == config.current_context, bootstrap_servers=c.bootstrap_servers)
        for name, c in sorted(config.contexts.items())
    ]


def _properties(values: Mapping[str, str]) -> tuple[Property, ...]:
    return tuple(Property(key=k, value=v) for k, v in sorted(mask(values).items()))


def view_stored(config: ConfigFile, name: str) -> ContextView:
    context = get(config, name)
    in_keyring = dict.fromkeys(context.keyring, MASK)
    return ContextView(
        name=context.name,
        bootstrap_servers=context.bootstrap_servers,
        timeout=context.timeout,
        properties=_properties({**context.properties, **in_keyring}),
        aws_msk_iam=dict(context.aws_msk_iam),
        schema_registry=_shown(context.schema_registry),
        connect={name: _shown(values) for name, values in sorted(context.connect.items())},
        secrets={**{k: "config file" for k in context.properties if stored_secret(k)}, **dict.fromkeys(context.keyring, "keyring")},
    )


def view_effective(settings: ClientSettings, config: ConfigFile | None = None) -> ContextView:
    """The settings in effect; `config` tells a secret of the context's file from one the
    environment or -X gave."""
    stored = config.contexts.get(settings.context) if config is not None and settings.context else None
    in_keyring = dict.fromkeys(settings.keyring, MASK)
    secrets = {}
    for key, value in settings.properties.items():
        if stored_secret(key):
            from_file = stored is not None and stored.properties.get(key) == value
            secrets[key] = "config file" if from_file else "environment or -X"
    return ContextView(
        name=settings.context,
        bootstrap_servers=settings.bootstrap_servers,
        timeout=settings.timeout,
        properties=_properties({**settings.properties, **in_keyring}),
        aws_msk_iam=dict(settings.aws_msk_iam),
        schema_registry=_shown(settings.schema_registry),
        connect={name: _shown(values) for name, values in sorted(settings.connect.items())},
        secrets={**secrets, **dict.fromkeys(settings.keyring, "keyring")},
    )


def stored_secret(key: str) -> bool:
    """Whether property `key` holds a secret that may go to the OS keyring (a password, a
    client secret, a JAAS config; not a token command, a file or a location naming one)."""
    return is_secret(key) and not key.endswith((".command", ".file", ".lifetime", ".location", "-file", ".endpoint.url"))


def _shown(registry: Mapping[str, str]) -> dict[str, str]:
    """A registry's or Connect cluster's settings with their secrets masked."""
    # basic-auth-file and bearer-token-file name files, not secrets: shown as they are.
    return {k: (MASK if is_secret(k) and not k.endswith("-file") else v) for k, v in sorted(registry.items())}


def get(config: ConfigFile, name: str) -> Context:
    if name not in config.contexts:
        raise NotFoundError(action=f"find context {name!r}", cause="no such context", hint="kctl context list shows the contexts",
                            resource=Resource("context", name))
    return config.contexts[name]


def use(config: ConfigFile, name: str) -> ConfigFile:
    get(config, name)
    return replace(config, current_context=name)


def set_context(
    config: ConfigFile,
    name: str,
    *,
    bootstrap_servers: str | None = None,
    timeout: float | None = None,
    properties: Sequence[tuple[str, str]] = (),
    unset: Sequence[str] = (),
    make_current: bool = False,
    aws_msk_iam: Mapping[str, str | None] | None = None,
    schema_registry: Mapping[str, str | None] | None = None,
    connect_name: str = "default",
    connect: Mapping[str, str | None] | None = None,
    in_keyring: Sequence[str] = (),
    local_data_dir: str | None = None,
) -> ConfigFile:
    """Create or update a context; the first context ever created becomes the current one.
    `unset` names properties, bootstrap-servers, timeout, local-data-dir, aws-msk-iam, schema-registry
    (all of it), connect (every Connect cluster) or connect.NAME (one). `connect` sets
    the Connect cluster `connect_name`. `in_keyring` names properties just stored in the
    OS keyring (their values are not kept in the file); a property set in `properties`
    or unset leaves the keyring list."""
    old = config.contexts.get(name) or Context(name=name)
    values = {k: v for k, v in old.properties.items() if k not in unset and k not in in_keyring}
    values.update(dict(properties))
    keyring = tuple(k for k in old.keyring if k not in unset and k not in values) + tuple(
        k for k in in_keyring if k not in old.keyring)
    msk = {} if "aws-msk-iam" in unset else dict(old.aws_msk_iam)
    msk.update({k: v for k, v in (aws_msk_iam or {}).items() if v})
    if msk and not msk.get("region"):
        raise UsageError(action=f"set context {name!r}", cause="AWS MSK IAM needs {aws_msk_iam_region}")
    registry = {} if "schema-registry" in unset else dict(old.schema_registry)
    registry.update({k: v for k, v in (schema_registry or {}).items() if v})
    clusters = {} if "connect" in unset else {k: dict(v) for k, v in old.connect.items() if f"connect.{k}" not in unset}
    given = {k: v for k, v in (connect or {}).items() if v}
    if given:
        cluster = {**clusters.get(connect_name, {}), **given}
        if not cluster.get("url"):
            raise UsageError(action=f"set context {name!r}", cause=f"Connect cluster {connect_name!r} needs {{connect_url}}")
        clusters[connect_name] = cluster
    new = Context(
        name=name,
        bootstrap_servers=bootstrap_servers if bootstrap_servers is not None else (None if "bootstrap-servers" in unset else old.bootstrap_servers),
        timeout=timeout if timeout is not None else (None if "timeout" in unset else old.timeout),
        properties=values,
        aws_msk_iam=msk,
        schema_registry=registry,
        connect=clusters,
        keyring=keyring,
        local_data_dir=local_data_dir if local_data_dir is not None else (None if "local-data-dir" in unset else old.local_data_dir),
    )
    updated = config.with_context(new)
    if make_current or config.current_context is None:
        updated = replace(updated, current_context=name)
    return updated


def delete(config: ConfigFile, name: str) -> ConfigFile:
    get(config, name)
    contexts = {k: v for k, v in config.contexts.items() if k != name}
    current = None if config.current_context == name else config.current_context
    return ConfigFile(current_context=current, contexts=contexts)
