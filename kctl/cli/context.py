"""kctl context: named cluster connections in the config file."""

from __future__ import annotations

import click

from kctl.cli._app import App
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import KeyValueType, global_options, pass_app, yes_option
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Iterable

    from kctl.config.model import ConfigFile

CONTEXT_TABLE = TableSpec(
    (Column("current", "CURRENT", get=lambda c: "*" if c.current else ""), Column("name", "NAME"), Column("bootstrap_servers", "BOOTSTRAP-SERVERS"))
)
CONTEXT_DOCUMENT = DocumentSpec(
    fields=(
        Field("name", "CONTEXT"),
        Field("bootstrap_servers", "BOOTSTRAP-SERVERS"),
        Field("timeout", "TIMEOUT"),
        Field("aws_msk_iam", "AWS-MSK-IAM", get=lambda c: " ".join(f"{k}={v}" for k, v in sorted(c.aws_msk_iam.items())) or None),
        Field("schema_registry", "SCHEMA-REGISTRY", get=lambda c: " ".join(f"{k}={v}" for k, v in sorted(c.schema_registry.items())) or None),
        Field("connect", "CONNECT", get=lambda c: "; ".join(
            f"{name}: " + " ".join(f"{k}={v}" for k, v in sorted(values.items())) for name, values in sorted(c.connect.items())) or None),
        Field("secrets", "SECRETS", get=lambda c: " ".join(f"{k}={v}" for k, v in sorted(c.secrets.items())) or None),
    ),
    sections=(Section("properties", "PROPERTIES", TableSpec((Column("key", "KEY"), Column("value", "VALUE")))),),
)


@click.group(cls=LazyGroup, aliases={"ls": "list", "rm": "delete"})
def context() -> None:
    """Manage named cluster connections.

    Contexts live in $KCTL_CONFIG or $XDG_CONFIG_HOME/kctl/config.toml (created
    0600, since it may hold credentials). Settings are layered: built-in defaults,
    then the context, then KCTL_* environment variables, then flags.
    """


def _save(app: App, config: ConfigFile) -> None:
    from kctl.config.file import save

    save(app.config_path, config)


@context.command("list")
@global_options
@pass_app
def list_(app: App) -> None:
    """List contexts; the current one is marked with *.

    \b
    Examples:
      kctl context list
      kctl context list -o json
    """
    from kctl.config.contexts import summaries

    app.out.table(summaries(app.config_file), CONTEXT_TABLE)


@context.command("show")
@click.argument("name", required=False)
@global_options
@pass_app
def show(app: App, name: str | None) -> None:
    """Show a stored context, or without NAME the settings in effect now.

    The settings in effect include -b, -X, --timeout and KCTL_* variables. Secrets
    (passwords, client secrets, JAAS configs) are always masked; SECRETS says where
    each lives: the OS keyring, the config file, or the environment or -X.

    \b
    Examples:
      kctl context show
      kctl context show prod -o json
      kctl --context prod -X client.id=me context show
    """
    from kctl.config.contexts import view_effective, view_stored

    view = view_stored(app.config_file, name) if name else view_effective(app.settings, app.config_file)
    app.out.document(view, CONTEXT_DOCUMENT)


@context.command("use")
@click.argument("name")
@global_options
@pass_app
def use(app: App, name: str) -> None:
    """Make NAME the current context.

    \b
    Examples:
      kctl context use prod
    """
    from kctl.config.contexts import use as use_context

    _save(app, use_context(app.config_file, name))
    app.note(f"current context is now {name!r}")


@context.command("set")
@click.argument("name")
@click.option("-b", "--bootstrap-server", "bootstrap", metavar="HOST:PORT[,...]", help="Brokers to bootstrap from.")
@click.option("-X", "properties", type=KeyValueType(), multiple=True, metavar="KEY=VALUE", help="librdkafka property to store (repeatable).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS", help="Default --timeout for this context.")
@click.option("--unset", multiple=True, metavar="KEY", help="Remove a stored property (or bootstrap-servers, timeout, aws-msk-iam, schema-registry, connect, connect.NAME).")
@click.option("--use", "make_current", is_flag=True, help="Also make it the current context.")
@click.option("--aws-msk-iam-region", metavar="REGION", help="Authenticate to Amazon MSK with AWS IAM in this region (pip install 'kctl[msk]').")
@click.option("--aws-msk-iam-profile", metavar="PROFILE", help="With AWS MSK IAM: the AWS profile whose credentials sign (default: the default chain).")
@click.option("--aws-msk-iam-role-arn", metavar="ARN", help="With AWS MSK IAM: assume this role to sign.")
@click.option("--schema-registry-url", metavar="URL", help="The cluster's schema registry (kctl schema).")
@click.option("--schema-registry-basic-auth-file", metavar="PATH", help="A file holding the registry's user:password (read when used; or set KCTL_SCHEMA_REGISTRY_BASIC_AUTH).")
@click.option("--schema-registry-bearer-token-file", metavar="PATH", help="A file holding a bearer token for the registry (or set KCTL_SCHEMA_REGISTRY_BEARER_TOKEN).")
@click.option("--schema-registry-ca", metavar="PATH", help="CA certificates to verify the registry's TLS certificate with.")
@click.option("--connect-url", metavar="URL", help="A Kafka Connect cluster's REST URL (kctl connect).")
@click.option("--connect-name", default="default", show_default=True, metavar="NAME", help="Which of the context's Connect clusters the --connect-* options set (kctl connect --connect NAME picks one).")
@click.option("--connect-basic-auth-file", metavar="PATH", help="A file holding the Connect cluster's user:password (or set KCTL_CONNECT_BASIC_AUTH).")
@click.option("--connect-bearer-token-file", metavar="PATH", help="A file holding a bearer token for the Connect cluster (or set KCTL_CONNECT_BEARER_TOKEN).")
@click.option("--connect-ca", metavar="PATH", help="CA certificates to verify the Connect cluster's TLS certificate with.")
@click.option("--password-stdin", is_flag=True, help="Read sasl.password from the first line of stdin (kept off the command line and the shell's history).")
@click.option("--secrets-in", type=click.Choice(["auto", "keyring", "file"]), default="auto", show_default=True,
              help="Where passwords and client secrets given now are kept: the OS keyring (auto: when one is available, else the file, with a note) or config.toml (mode 600).")
@pass_app
def set_(app: App, name: str, bootstrap: str | None, properties: tuple[tuple[str, str], ...], timeout: float | None,
         unset: tuple[str, ...], make_current: bool, aws_msk_iam_region: str | None, aws_msk_iam_profile: str | None,
         aws_msk_iam_role_arn: str | None, schema_registry_url: str | None, schema_registry_basic_auth_file: str | None,
         schema_registry_bearer_token_file: str | None, schema_registry_ca: str | None, connect_url: str | None, connect_name: str,
         connect_basic_auth_file: str | None, connect_bearer_token_file: str | None, connect_ca: str | None, password_stdin: bool,
         secrets_in: str) -> None:
    """Create or update a context.

    The first context created becomes the current one. Passwords and client secrets
    (sasl.password, sasl.oauthbearer.client.secret, ssl.key.password, ...) go to the OS
    keyring when one is available (the Secret Service on Linux, Keychain on macOS,
    Credential Manager on Windows) and config.toml names them; --secrets-in file keeps
    them in config.toml, as a machine without a keyring does. --password-stdin keeps
    the password off the command line.

    OAUTHBEARER takes librdkafka's sasl.oauthbearer.* properties (OIDC client
    credentials, or unsecured JWTs for development); AWS MSK IAM takes
    --aws-msk-iam-region (security.protocol SASL_SSL and sasl.mechanism OAUTHBEARER are
    implied). Every command honours them, whichever client serves it.

    \b
    Examples:
      kctl context set local -b 127.0.0.1:9092
      kctl context set prod -b b1:9092,b2:9092 -X security.protocol=SASL_SSL \\
          -X sasl.mechanism=SCRAM-SHA-512 -X sasl.username=admin --use
      kctl context set prod --password-stdin < prod.pass
      kctl context set prod --unset sasl.username
      kctl context set sso -b b1:9093 -X security.protocol=SASL_SSL -X sasl.mechanism=OAUTHBEARER \\
          -X sasl.oauthbearer.method=oidc -X sasl.oauthbearer.client.id=kctl \\
          -X sasl.oauthbearer.token.endpoint.url=https://idp.example.com/oauth2/token
      kctl context set msk -b b-1.msk.example.com:9098 --aws-msk-iam-region eu-west-1
      kctl context set prod --schema-registry-url https://registry.example.com \\
          --schema-registry-basic-auth-file ~/.config/kctl/registry.pass
      kctl context set prod --connect-url https://connect.example.com:8083 \\
          --connect-basic-auth-file ~/.config/kctl/connect.pass
      kctl context set prod --connect-name cdc --connect-url http://cdc-connect:8083
    """
    from kctl.config.contexts import set_context

    properties = tuple(properties)
    if password_stdin:
        properties += (("sasl.password", _password_from_stdin()),)
    stored = _store_secrets(app, name, properties, secrets_in)
    old = app.config_file.contexts.get(name)
    config = set_context(
        app.config_file,
        name,
        in_keyring=stored,
        bootstrap_servers=bootstrap,
        timeout=timeout,
        properties=tuple((k, v) for k, v in properties if k not in stored),
        unset=unset,
        make_current=make_current,
        aws_msk_iam={"region": aws_msk_iam_region, "profile": aws_msk_iam_profile, "role-arn": aws_msk_iam_role_arn},
        schema_registry={"url": schema_registry_url, "basic-auth-file": schema_registry_basic_auth_file,
                         "bearer-token-file": schema_registry_bearer_token_file, "ssl-ca-location": schema_registry_ca},
        connect_name=connect_name,
        connect={"url": connect_url, "basic-auth-file": connect_basic_auth_file, "bearer-token-file": connect_bearer_token_file,
                 "ssl-ca-location": connect_ca},
    )
    _save(app, config)
    # Keyring entries the context no longer names (set in the file now, or unset).
    _forget(app, name, set(old.keyring if old else ()) - set(config.contexts[name].keyring))
    app.note(f"context {name!r} saved to {app.config_path}" + (f" ({', '.join(stored)} in the OS keyring)" if stored else ""))


def _password_from_stdin() -> str:
    import sys

    from kctl.errors import UsageError

    line = sys.stdin.readline()
    password = line.rstrip("\r\n")
    if not password:
        raise UsageError(action="read --password-stdin", cause="stdin holds no password (an empty first line)")
    return password


def _store_secrets(app: App, name: str, properties: tuple[tuple[str, str], ...], secrets_in: str) -> tuple[str, ...]:
    """Store the secrets among `properties` in the OS keyring as --secrets-in says; the
    keys stored (the others stay in the file)."""
    from kctl.config.contexts import stored_secret

    secrets = [(k, v) for k, v in properties if stored_secret(k)]
    if not secrets or secrets_in == "file":
        return ()
    from kctl.config.os_keyring import KeyringUnavailable, store
    from kctl.errors import ConfigError

    stored: list[str] = []
    for key, value in secrets:
        try:
            store(name, key, value)
        except KeyringUnavailable as exc:
            if secrets_in == "keyring":
                raise ConfigError(action=f"store {key} of context {name!r} in the OS keyring", cause=str(exc),
                                  hint="unlock or start the keyring, or keep it in config.toml (mode 600): --secrets-in file") from exc
            app.note(f"note: {exc}: {', '.join(k for k, _ in secrets if k not in stored)} kept in {app.config_path} (mode 600)")
            return tuple(stored)
        stored.append(key)
    return tuple(stored)


def _forget(app: App, name: str, keys: Iterable[str]) -> None:
    """Remove `keys` of context `name` from the OS keyring, saying what could not be."""
    from kctl.config.os_keyring import forget

    for key in sorted(keys):
        why = forget(name, key)
        if why:
            app.note(f"note: {key} of context {name!r} is still in the OS keyring ({why}): remove it there")


@context.command("delete")
@click.argument("name")
@yes_option
@global_options
@pass_app
def delete(app: App, name: str, yes: bool) -> None:
    """Delete a context from the config file, and its secrets from the OS keyring.

    \b
    Examples:
      kctl context delete old-cluster --yes
    """
    from kctl.config.contexts import delete as delete_context

    config = delete_context(app.config_file, name)
    app.confirm(f"Delete context {name!r}?", yes=yes, action=f"delete context {name!r}")
    in_keyring = app.config_file.contexts[name].keyring
    _save(app, config)
    _forget(app, name, in_keyring)
    app.note(f"context {name!r} deleted" + (f", and its {', '.join(in_keyring)} from the OS keyring" if in_keyring else ""))
