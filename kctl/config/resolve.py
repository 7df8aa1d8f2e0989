"""Layering client settings: defaults < config file < KCTL_* environment < flags.

The environment is passed in, never read here, so the layering is testable and the
CLI stays the only place that looks at os.environ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kctl.config.model import CONNECT_KEYS, DEFAULT_TIMEOUT, MSK_IAM_KEYS, SCHEMA_REGISTRY_KEYS, ClientSettings, ConfigFile, Context
from kctl.errors import ConfigError, NotFoundError, Resource, UsageError

# KCTL_X_SASL_PASSWORD=... sets sasl.password: a way to keep secrets off the command line.
PROPERTY_ENV_PREFIX = "KCTL_X_"
# KCTL_AWS_MSK_IAM_REGION=... (and _PROFILE, _ROLE_ARN, _ROLE_SESSION_NAME) turn AWS MSK
# IAM on, or change a context's.
MSK_IAM_ENV_PREFIX = "KCTL_AWS_MSK_IAM_"
# KCTL_SCHEMA_REGISTRY_URL=... (and _BASIC_AUTH, _BASIC_AUTH_FILE, _SSL_CA_LOCATION, ...)
# set the schema registry, or change a context's.
SCHEMA_REGISTRY_ENV_PREFIX = "KCTL_SCHEMA_REGISTRY_"
# KCTL_CONNECT_URL=... (and _BASIC_AUTH, _BEARER_TOKEN, _SSL_CA_LOCATION, ...) set the
# Connect cluster, or change the context's chosen one; KCTL_CONNECT=NAME chooses one.
CONNECT_ENV_PREFIX = "KCTL_CONNECT_"


def parse_property(text: str) -> tuple[str, str]:
    """Parse one `-X key=value`."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(action=f"parse -X {text!r}", cause="expected key=value", hint="kctl -X help lists common properties")
    return key, value


def parse_timeout(text: str, source: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise UsageError(action=f"parse {source} {text!r}", cause="expected a positive number of seconds")
    return value


def select_context(config: ConfigFile, name: str | None, source: str) -> Context | None:
    """The context named by --context/KCTL_CONTEXT, else the file's current context."""
    if name is not None:
        if name not in config.contexts:
            raise NotFoundError(
                action=f"use context {name!r} (from {source})", cause="no such context",
                hint="kctl context list shows the contexts; kctl context set creates one", resource=Resource("context", name),
            )
        return config.contexts[name]
    if config.current_context is None:
        return None
    if config.current_context not in config.contexts:
        raise ConfigError(
            action=f"use current context {config.current_context!r}", cause="it is not defined in the config file",
            hint="kctl context use NAME picks another one",
        )
    return config.contexts[config.current_context]


def resolve(
    config: ConfigFile,
    env: Mapping[str, str],
    *,
    context_flag: str | None = None,
    bootstrap_flag: str | None = None,
    property_flags: Sequence[str] = (),
    timeout_flag: float | None = None,
) -> ClientSettings:
    if context_flag is not None:
        context = select_context(config, context_flag, "--context")
    elif env.get("KCTL_CONTEXT"):
        context = select_context(config, env["KCTL_CONTEXT"], "KCTL_CONTEXT")
    else:
        context = select_context(config, None, "config file")

    properties: dict[str, str] = dict(context.properties) if context else {}
    in_keyring = context.keyring if context else ()
    for key, value in sorted(env.items()):
        if key.startswith(PROPERTY_ENV_PREFIX) and len(key) > len(PROPERTY_ENV_PREFIX):
            properties[key[len(PROPERTY_ENV_PREFIX):].lower().replace("_", ".")] = value
    # bootstrap.servers as a property is honoured at the layer it was given in.
    layered_bootstrap = properties.pop("bootstrap.servers", None)
    flag_bootstrap = None
    for text in property_flags:
        key, value = parse_property(text)
        if key == "bootstrap.servers":
            flag_bootstrap = value
        else:
            properties[key] = value

    bootstrap = (
        bootstrap_flag
        or flag_bootstrap
        or env.get("KCTL_BOOTSTRAP_SERVERS")
        or layered_bootstrap
        or (context.bootstrap_servers if context else None)
    )

    if timeout_flag is not None:
        timeout = timeout_flag
    elif env.get("KCTL_TIMEOUT"):
        timeout = parse_timeout(env["KCTL_TIMEOUT"], "KCTL_TIMEOUT")
    elif context and context.timeout is not None:
        timeout = context.timeout
    else:
        timeout = DEFAULT_TIMEOUT

    aws_msk_iam = dict(context.aws_msk_iam) if context else {}
    for key in MSK_IAM_KEYS:
        given = env.get(MSK_IAM_ENV_PREFIX + key.upper().replace("-", "_"))
        if given:
            aws_msk_iam[key] = given
    if aws_msk_iam and not aws_msk_iam.get("region"):
        raise ConfigError(action="use AWS MSK IAM", cause="no region set", hint="set KCTL_AWS_MSK_IAM_REGION or the context's aws-msk-iam region")

    schema_registry = dict(context.schema_registry) if context else {}
    for key in SCHEMA_REGISTRY_KEYS:
        given = env.get(SCHEMA_REGISTRY_ENV_PREFIX + key.upper().replace("-", "_"))
        if given:
            schema_registry[key] = given

    connect_env = {key: env[CONNECT_ENV_PREFIX + key.upper().replace("-", "_")] for key in CONNECT_KEYS
                   if env.get(CONNECT_ENV_PREFIX + key.upper().replace("-", "_"))}

    return ClientSettings(
        bootstrap_servers=bootstrap,
        properties=properties,
        timeout=timeout,
        context=context.name if context else None,
        aws_msk_iam=aws_msk_iam,
        schema_registry=schema_registry,
        connect={name: dict(values) for name, values in context.connect.items()} if context else {},
        connect_env=connect_env,
        connect_name=env.get("KCTL_CONNECT") or None,
        # A keyring secret the environment or a flag replaced is not read.
        keyring=tuple(k for k in in_keyring if k not in properties),
    )


def resolve_cluster(config: ConfigFile, env: Mapping[str, str], name: str, *, source: str,
                    property_flags: Sequence[str] = (), timeout_flag: float | None = None) -> ClientSettings:
    """The settings of a second cluster a command names (`--source`, `--target`): a context
    of the config file, else a bootstrap address (host:port[,host:port]) with the
    KCTL_X_* and -X properties. The command's own -b, --context, KCTL_BOOTSTRAP_SERVERS and
    KCTL_CONTEXT never apply to it: they name the command's cluster."""
    own = {k: v for k, v in env.items() if k not in ("KCTL_BOOTSTRAP_SERVERS", "KCTL_CONTEXT")}
    flags = [f for f in property_flags if parse_property(f)[0] != "bootstrap.servers"]
    if name in config.contexts:
        return resolve(config, own, context_flag=name, property_flags=flags, timeout_flag=timeout_flag)
    if ":" in name and all(part.rpartition(":")[2].isdigit() for part in name.split(",")):
        return resolve(ConfigFile(), own, bootstrap_flag=name, property_flags=flags, timeout_flag=timeout_flag)
    raise NotFoundError(action=f"use {source} {name!r}", cause="no such context, and not a host:port address",
                        hint="kctl context list shows the contexts", resource=Resource("context", name))
