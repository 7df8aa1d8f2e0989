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

    [contexts.prod.connect.main]      # kctl connect: one table per Connect cluster
    url = "https://connect.example.com:8083"
    basic-auth-file = "~/.config/kctl/connect.pass"

The file may hold secrets, so it is created 0600 and replaced atomically.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from kctl.config.model import CONNECT_KEYS, MSK_IAM_KEYS, SCHEMA_REGISTRY_KEYS, ConfigFile, Context
from kctl.errors import ConfigError

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from pathlib import Path


def default_location(env: Mapping[str, str]) -> str:
    """The config file's path, without pathlib: every command reads the file, and
    importing pathlib costs a read ~3 ms (issue 59)."""
    if env.get("KCTL_CONFIG"):
        return os.path.expanduser(env["KCTL_CONFIG"])
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return os.path.join(base, "kctl", "config.toml")


def default_path(env: Mapping[str, str]) -> Path:
    from pathlib import Path

    return Path(default_location(env))


def state_dir(env: Mapping[str, str]) -> Path:
    """kctl's state directory ($XDG_STATE_HOME/kctl): lag history, reset journals,
    replay manifests, Spark's log."""
    from pathlib import Path

    base = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return Path(base) / "kctl"


def cache_dir(env: Mapping[str, str]) -> Path:
    """kctl's cache directory ($XDG_CACHE_HOME/kctl): what can be made again, like the
    environments packed for Spark's executors."""
    from pathlib import Path

    return Path(cache_path(env))


def cache_path(env: Mapping[str, str]) -> str:
    """cache_dir as a string, for the everyday reads (the API versions cache): importing
    pathlib (with re, fnmatch and urllib.parse) costs a read ~3 ms."""
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kctl")


def load(path: str | os.PathLike) -> ConfigFile:
    """Read the config file; a missing file is an empty configuration.

    What the file held when it was last parsed is kept beside it (.config.toml.json, mode
    0600 like the file) and used while the file is unchanged (its size, inode and mtime):
    parsing TOML imports tomllib and typing, 6.5 ms of every command (issue 59).
    A cache that is missing, unreadable or not the file's is ignored and made again."""
    try:
        with open(path, "rb") as file:
            status = os.fstat(file.fileno())
            data = _cached(path, status)
            raw = file.read() if data is None else b""
    except FileNotFoundError:
        return ConfigFile()
    except OSError as exc:
        raise ConfigError(action=f"read config file {path}", cause=str(exc.strerror)) from exc
    if data is None:
        import tomllib  # only when the file changed since it was last read

        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(action=f"read config file {path}", cause=str(exc)) from exc
        config = _parse(data, path)
        _keep(path, status, data)
        return config
    return _parse(data, path)


def _cache_path(path: str | os.PathLike) -> str:
    directory, name = os.path.split(os.fspath(path))
    return os.path.join(directory, f".{name}.json")


def _stamp(status: os.stat_result) -> list[int]:
    return [status.st_size, status.st_ino, status.st_mtime_ns]


def _cached(path: str | os.PathLike, status: os.stat_result) -> dict | None:
    """The file's contents as last parsed, when the cache is the file's as it is now."""
    import json

    try:
        with open(_cache_path(path), encoding="utf-8") as file:
            cached = json.load(file)
    except (OSError, ValueError):
        return None
    if not isinstance(cached, dict) or cached.get("stamp") != _stamp(status) or not isinstance(cached.get("data"), dict):
        return None
    return cached["data"]


def _keep(path: str | os.PathLike, status: os.stat_result, data: dict) -> None:
    """Write the cache of a file just parsed; where it cannot be written (a read-only
    directory, values JSON cannot hold), the next command parses the file again."""
    import json
    import tempfile

    try:
        text = json.dumps({"stamp": _stamp(status), "data": data})
        directory = os.path.dirname(os.fspath(path)) or "."
        fd, tmp = tempfile.mkstemp(prefix=".config-cache-", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:  # mkstemp makes it 0600
                handle.write(text)
            os.replace(tmp, _cache_path(path))
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, TypeError, ValueError):
        pass


def _parse(data: dict, path: str | os.PathLike) -> ConfigFile:
    def bad(what: str) -> ConfigError:
        return ConfigError(action=f"read config file {path}", cause=what)

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
        unknown = set(raw) - {"bootstrap-servers", "timeout", "properties", "aws-msk-iam", "schema-registry", "connect", "keyring",
                              "local-data-dir"}
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
        connect = raw.get("connect", {})
        if not isinstance(connect, dict) or any(not isinstance(t, dict) or any(not isinstance(v, str) for v in t.values()) for t in connect.values()):
            raise bad(f"context {name!r}: connect must hold one table of strings per Connect cluster (connect.NAME)")
        for cluster, table in connect.items():
            if set(table) - set(CONNECT_KEYS):
                raise bad(f"context {name!r}: connect.{cluster} has unknown key {sorted(set(table) - set(CONNECT_KEYS))[0]!r} (known: {', '.join(CONNECT_KEYS)})")
            if not table.get("url"):
                raise bad(f"context {name!r}: connect.{cluster} needs a url")
        keyring = raw.get("keyring", [])
        if not isinstance(keyring, list) or any(not isinstance(k, str) for k in keyring):
            raise bad(f"context {name!r}: keyring must be a list of property names (those whose values are in the OS keyring)")
        local = raw.get("local-data-dir")
        if local is not None and not isinstance(local, str):
            raise bad(f"context {name!r}: local-data-dir must be a string (the bundled broker's data directory)")
        contexts[name] = Context(
            local_data_dir=local,
            name=name,
            keyring=tuple(dict.fromkeys(keyring)),
            bootstrap_servers=bootstrap,
            timeout=float(timeout) if timeout is not None else None,
            properties={str(k): _property_value(v) for k, v in properties.items()},
            aws_msk_iam=dict(msk),
            schema_registry=dict(registry),
            connect={str(k): dict(v) for k, v in connect.items()},
        )
    return ConfigFile(current_context=current, contexts=contexts)


def _property_value(value: object) -> str:
    # librdkafka takes every property as a string; TOML booleans become "true"/"false".
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def dumps(config: ConfigFile, existing: str = "") -> str:
    """The file's text for `config`: `existing` (the file as it is) edited only where it
    differs, so a user's comments, blank lines, key order and value styles survive (tomlkit
    edits the document it parsed); new contexts and keys are added after the others."""
    import tomlkit

    document = tomlkit.parse(existing) if existing else tomlkit.document()
    if config.current_context is None:
        document.pop("current-context", None)
    elif document.get("current-context") != config.current_context:
        document["current-context"] = config.current_context
    contexts = document.get("contexts")
    if contexts is None:
        if not config.contexts:
            return tomlkit.dumps(document)
        contexts = document["contexts"] = tomlkit.table(is_super_table=True)
    for name in [n for n in contexts if n not in config.contexts]:
        del contexts[name]
    for name in sorted(config.contexts):  # existing ones are edited in place, new ones added in order
        context = config.contexts[name]
        if name not in contexts:
            contexts[name] = tomlkit.table()
        table = contexts[name]
        _set(table, "bootstrap-servers", context.bootstrap_servers, lambda old, new: old == new)
        _set(table, "timeout", context.timeout, lambda old, new: float(old) == new)
        _set(table, "local-data-dir", context.local_data_dir, lambda old, new: old == new)
        for key, values in (("properties", context.properties), ("aws-msk-iam", context.aws_msk_iam),
                            ("schema-registry", context.schema_registry)):
            _set_strings(table, key, values)
        _set_connect(table, context.connect)
        if not context.keyring:
            table.pop("keyring", None)
        elif list(table.get("keyring", [])) != list(context.keyring):
            table["keyring"] = list(context.keyring)
    return tomlkit.dumps(document)


def _set_connect(table, clusters: Mapping[str, Mapping[str, str]]) -> None:
    """connect.NAME tables, each edited as _set_strings edits one."""
    import tomlkit

    if not clusters:
        table.pop("connect", None)
        return
    if "connect" not in table:
        table["connect"] = tomlkit.table(is_super_table=True)
    tables = table["connect"]
    for name in [n for n in tables if n not in clusters]:
        del tables[name]
    for name in sorted(clusters):
        _set_strings(tables, name, clusters[name])


def _set(table, key: str, value, same) -> None:
    if value is None:
        table.pop(key, None)
    elif key not in table or not same(table[key], value):
        table[key] = value


def _set_strings(table, key: str, values: Mapping[str, str]) -> None:
    """A table of strings, kept as the user wrote it where the value is unchanged (a TOML
    true stays true: it reads as "true")."""
    import tomlkit

    if not values:
        table.pop(key, None)
        return
    if key not in table:
        table[key] = tomlkit.table()
    strings = table[key]
    for name in [n for n in strings if n not in values]:
        del strings[name]
    for name in sorted(values):
        if name not in strings or _property_value(strings[name]) != values[name]:
            strings[name] = values[name]


def save(path: Path, config: ConfigFile) -> None:
    """Write atomically, 0600 from the first byte (the file may hold credentials), as an
    edit of the file that is there (see dumps)."""
    import tempfile

    try:
        existing = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        existing = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(action=f"read config file {path}", cause=f"{getattr(exc, 'strerror', None) or exc}") from exc
    try:
        text = dumps(config, existing)
    except Exception as exc:  # noqa: BLE001 - tomlkit's parse errors share no base class with tomllib's
        raise ConfigError(action=f"read config file {path}", cause=str(exc)) from exc
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".toml", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fchmod(handle.fileno(), 0o600)
                status = os.fstat(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise ConfigError(action=f"write config file {path}", cause=str(exc.strerror)) from exc
    # The next command reads what was written from the cache (see load): the stamp is the
    # written file's, whose inode the rename keeps.
    import tomllib

    _keep(path, status, tomllib.loads(text))
