"""Reading and writing the config file ($KCTL_CONFIG or $XDG_CONFIG_HOME/kctl/config.toml).

Layout::

    current-context = "prod"

    [contexts.prod]
    bootstrap-servers = "b1:9092,b2:9092"
    timeout = 15.0

    [contexts.prod.properties]        # librdkafka properties, verbatim
    "security.protocol" = "SASL_SSL"
    "sasl.mechanism" = "SCRAM-SHA-512"

    [contexts.msk.aws-msk-iam]        # AWS MSK IAM: region, and a profile or role-arn
    region = "eu-west-1"

    [contexts.prod.schema-registry]   # kctl schema, and records with schemas
    url = "https://registry.example.com"
    basic-auth-file = "~/.config/kctl/registry.pass"   # user:password (or basic-auth = "...")

The file may hold secrets, so it is created 0600 and replaced atomically.
"""

from __future__ import annotations

import json
import os

from collections.abc import Mapping
from pathlib import Path

from kctl.config.model import MSK_IAM_KEYS, SCHEMA_REGISTRY_KEYS, ConfigFile, Context
from kctl.errors import ConfigError


def default_path(env: Mapping[str, str]) -> Path:
    if env.get("KCTL_CONFIG"):
        return Path(env["KCTL_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return Path(base) / "kctl" / "config.toml"


def state_dir(env: Mapping[str, str]) -> Path:
    """kctl's state directory ($XDG_STATE_HOME/kctl): lag history, reset journals,
    replay manifests, Spark's log."""
    base = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return Path(base) / "kctl"


def cache_dir(env: Mapping[str, str]) -> Path:
    """kctl's cache directory ($XDG_CACHE_HOME/kctl): what can be made again, like the
    environments packed for Spark's executors."""
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return Path(base) / "kctl"


def load(path: Path) -> ConfigFile:
    """Read the config file; a missing file is an empty configuration."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ConfigFile()
    except OSError as exc:
        raise ConfigError(f"unable to read config file {path}: {exc.strerror}") from exc
    import tomllib  # only when there is a file to parse

    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"unable to read config file {path}: {exc}") from exc
    return _parse(data, path)


def _parse(data: dict, path: Path) -> ConfigFile:
    def bad(what: str) -> ConfigError:
        return ConfigError(f"unable to read config file {path}: {what}")

    current = data.get("current-context")
    if current is not None and not isinstance(current, str):
        raise bad("current-context must be a string")
    raw_contexts = data.get("contexts", {})
    if not isinstance(raw_contexts, dict):
        raise bad("contexts must be a table")
    contexts: dict[str, Context] = {}
    for name, raw in raw_contexts.items():
        if not isinstance(raw, dict):
            raise bad(f"context {name!r} must be a table")
        unknown = set(raw) - {"bootstrap-servers", "timeout", "properties", "aws-msk-iam", "schema-registry"}
        if unknown:
            raise bad(f"context {name!r} has unknown key {sorted(unknown)[0]!r}")
        bootstrap = raw.get("bootstrap-servers")
        if bootstrap is not None and not isinstance(bootstrap, str):
            raise bad(f"context {name!r}: bootstrap-servers must be a string")
        timeout = raw.get("timeout")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
            raise bad(f"context {name!r}: timeout must be a positive number of seconds")
        properties = raw.get("properties", {})
        if not isinstance(properties, dict):
            raise bad(f"context {name!r}: properties must be a table")
        msk = raw.get("aws-msk-iam", {})
        if not isinstance(msk, dict) or any(not isinstance(v, str) for v in msk.values()):
            raise bad(f"context {name!r}: aws-msk-iam must be a table of strings")
        if set(msk) - set(MSK_IAM_KEYS):
            raise bad(f"context {name!r}: aws-msk-iam has unknown key {sorted(set(msk) - set(MSK_IAM_KEYS))[0]!r} (known: {', '.join(MSK_IAM_KEYS)})")
        if msk and not msk.get("region"):
            raise bad(f"context {name!r}: aws-msk-iam needs a region")
        registry = raw.get("schema-registry", {})
        if not isinstance(registry, dict) or any(not isinstance(v, str) for v in registry.values()):
            raise bad(f"context {name!r}: schema-registry must be a table of strings")
        if set(registry) - set(SCHEMA_REGISTRY_KEYS):
            raise bad(f"context {name!r}: schema-registry has unknown key {sorted(set(registry) - set(SCHEMA_REGISTRY_KEYS))[0]!r} (known: {', '.join(SCHEMA_REGISTRY_KEYS)})")
        contexts[name] = Context(
            name=name,
            bootstrap_servers=bootstrap,
            timeout=float(timeout) if timeout is not None else None,
            properties={str(k): _property_value(v) for k, v in properties.items()},
            aws_msk_iam=dict(msk),
            schema_registry=dict(registry),
        )
    return ConfigFile(current_context=current, contexts=contexts)


def _property_value(value: object) -> str:
    # librdkafka takes every property as a string; TOML booleans become "true"/"false".
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def dumps(config: ConfigFile) -> str:
    lines: list[str] = []
    if config.current_context is not None:
        lines.append(f"current-context = {_quote(config.current_context)}")
    for name in sorted(config.contexts):
        context = config.contexts[name]
        lines += ["", f"[contexts.{_quote(name)}]"]
        if context.bootstrap_servers is not None:
            lines.append(f"bootstrap-servers = {_quote(context.bootstrap_servers)}")
        if context.timeout is not None:
            lines.append(f"timeout = {context.timeout!r}")
        if context.properties:
            lines += ["", f"[contexts.{_quote(name)}.properties]"]
            lines += [f"{_quote(k)} = {_quote(v)}" for k, v in sorted(context.properties.items())]
        if context.aws_msk_iam:
            lines += ["", f"[contexts.{_quote(name)}.aws-msk-iam]"]
            lines += [f"{_quote(k)} = {_quote(v)}" for k, v in sorted(context.aws_msk_iam.items())]
        if context.schema_registry:
            lines += ["", f"[contexts.{_quote(name)}.schema-registry]"]
            lines += [f"{_quote(k)} = {_quote(v)}" for k, v in sorted(context.schema_registry.items())]
    return "\n".join(lines) + "\n"


def _quote(value: str) -> str:
    # A JSON string is a valid TOML basic string for everything json.dumps emits
    # with ensure_ascii (\uXXXX escapes, \" and \\).
    return json.dumps(value, ensure_ascii=True)


def save(path: Path, config: ConfigFile) -> None:
    """Write atomically, 0600 from the first byte (the file may hold credentials)."""
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".toml", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(dumps(config))
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise ConfigError(f"unable to write config file {path}: {exc.strerror}") from exc
