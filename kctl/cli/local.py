"""kctl local: run the bundled single-node Kafka broker (pure Python, no Java, no Docker)."""

from __future__ import annotations

from pathlib import Path

import click

from kctl.cli._app import App, until_stopped
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options, pass_app, yes_option
from kctl.output.spec import DocumentSpec, Field

STATUS_DOCUMENT = DocumentSpec(
    fields=(
        Field("state", "STATE"),
        Field("bootstrap", "BOOTSTRAP"),
        Field("pid", "PID"),
        Field("data_dir", "DATA-DIR"),
        Field("topics", "TOPICS"),
        Field("size_bytes", "SIZE-BYTES"),
        Field("log_file", "LOG-FILE"),
    )
)
DEFAULT_WAIT = 15.0

data_dir_option = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="The instance's data directory (default: $XDG_DATA_HOME/kctl/local).",
)


def _data_dir(app: App, value: Path | None) -> Path:
    from kctl.local import default_data_dir

    return (value or default_data_dir(app.env)).expanduser().absolute()


def _wait(app: App) -> float:
    return app.timeout or DEFAULT_WAIT


@click.group(cls=LazyGroup)
def local():
    """Run the bundled single-node Kafka broker.

    A Kafka broker written in Python that unmodified clients (librdkafka, Java,
    kafka-python, kcat) talk to: Kafka's wire protocol, Kafka's on-disk log format,
    consumer groups and idempotent producers. It starts in a fraction of a second
    and needs no Java and no Docker. Meant for trying kctl, development and tests,
    not production: one node, no replication. It can open SASL (PLAIN, SCRAM) and TLS
    listeners and enforce ACLs, to test secured clients locally.

    \b
    Examples:
      kctl local start && kctl topic create demo -p 3
      kctl local status
      kctl local stop
    """


@local.command("start")
@click.option("--port", type=click.IntRange(0, 65535), default=9092, show_default=True, envvar="KCTL_LOCAL_PORT", help="Port to listen on (0: any free port). [env: KCTL_LOCAL_PORT]")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind and advertise.")
@data_dir_option
@click.option("--foreground", is_flag=True, help="Run in this process, logging to stderr, until Ctrl-C.")
@click.option("--save-context", "context_name", default="local", show_default=True, metavar="NAME", help="Context to create or update with the bootstrap address.")
@click.option("--no-context", is_flag=True, help="Do not touch the config file.")
@click.option("--sasl", metavar="MECHANISMS", help="SASL on --port's listener: plain, scram-sha-256, scram-sha-512, oauthbearer (unsecured JWTs, as Kafka's default validator; comma-separated).")
@click.option("--user", "users", multiple=True, metavar="NAME:PASSWORD", help="A SASL user (repeatable): PLAIN checks it; SCRAM credentials are made for it once.")
@click.option("--users-file", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE", help="More users, NAME:PASSWORD per line.")
@click.option("--tls", is_flag=True, help="TLS on --port's listener; the CA of a generated certificate is <data-dir>/tls/ca.pem.")
@click.option("--tls-cert", type=click.Path(dir_okay=False, path_type=Path), metavar="PEM", help="The server certificate chain (default: generated for localhost).")
@click.option("--tls-key", type=click.Path(dir_okay=False, path_type=Path), metavar="PEM", help="The private key of --tls-cert.")
@click.option("--listener", "listeners", multiple=True, metavar="PROTOCOL://HOST:PORT", help="Another listener beside --port's (repeatable), e.g. PLAINTEXT://127.0.0.1:9093.")
@click.option("--authorizer", is_flag=True, help="Enforce ACLs (Kafka's StandardAuthorizer semantics).")
@click.option("--super-user", "super_users", multiple=True, metavar="PRINCIPAL", help="A principal allowed everything (repeatable; default with --authorizer: the first --user, or User:ANONYMOUS without SASL).")
@click.option("--num-partitions", type=click.IntRange(min=1), metavar="N", help="Partitions of a topic created without a count (auto-created, or CreateTopics with -1): --config num.partitions=N. [default: 1]")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE", help="A broker setting in server.properties' names, for this run (repeatable): num.partitions, auto.create.topics.enable, log.retention.ms|minutes|hours, log.retention.bytes, log.segment.bytes, message.max.bytes and the other log.* topic defaults, connections.max.idle.ms, max.connections, max.connections.per.ip[.overrides], socket.request.max.bytes, fetch.max.bytes, default.replication.factor=1, ...")
@global_options
@pass_app
def start(app: App, port: int, host: str, data_dir: Path | None, foreground: bool, context_name: str, no_context: bool, sasl: str | None, users: tuple[str, ...], users_file: Path | None, tls: bool, tls_cert: Path | None,
          tls_key: Path | None, listeners: tuple[str, ...], authorizer: bool, super_users: tuple[str, ...], num_partitions: int | None, configs: tuple[str, ...]):
    """Start the broker (detached) and print its bootstrap address.

    Data and broker.log live in the data directory, which survives restarts. One
    broker runs per directory (it holds the directory's .lock): starting an instance
    that already runs prints its address again, and a second broker on the same
    directory (say --foreground) is refused with the pid of the one running.
    The `local` context is created (and made current if there is none), so later
    commands need no -b. Instances on different --data-dir and --port coexist.

    Security, to test a secured client without a JVM Kafka: --sasl and --tls make
    --port's listener SASL_PLAINTEXT, SSL or SASL_SSL; --listener opens more beside it.
    OAUTHBEARER takes unsecured JWTs (alg none) as Kafka's default validator does: the
    principal from the `sub` claim (--config sasl.oauthbearer.sub.claim.name), refused
    once `exp` has passed; with --config connections.max.reauth.ms=N sessions end after
    N ms or at the token's expiry, and clients authenticate again (KIP-368); Kafka's
    listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms=N form sets it for
    one listener and mechanism. Mutual TLS:
    --tls --config ssl.client.auth=required --config ssl.truststore.location=CA.pem makes
    clients present a certificate that CA signed; the principal is its subject as Kafka
    names it (User:CN=alice,OU=...), rewritten by --config ssl.principal.mapping.rules
    (Kafka's RULE:pattern/replacement/[LU] and DEFAULT). Clients then add
    -X ssl.certificate.location=... -X ssl.key.location=...
    The context saved then carries the settings to connect as the first --user (its
    password in the config file, as -X sasl.password would put it) and, with a
    generated certificate, ssl.ca.location. SCRAM credentials, ACLs and client quotas
    are kept in the data directory; `kctl user`, `kctl acl` and `kctl quota` manage them.

    --config sets what a Kafka user puts in server.properties, for this run (a restart
    without it is back to the defaults; an instance already running keeps its own):
    `kctl config describe broker 1` lists them as STATIC_BROKER_CONFIG, and the log.*
    ones are the defaults of every topic without its own value. A setting the bundled
    broker does not have is refused, naming the ones it takes.

    \b
    Examples:
      kctl local start
      kctl local start --port 19092 --data-dir /tmp/kafka2 --save-context dev2
      BOOTSTRAP=$(kctl local start --port 0 --data-dir "$TMP" --no-context)
      kctl local start --foreground       # Ctrl-C stops it (exit 0)
      kctl local start --port 0 --data-dir "$TMP/sec" --save-context sec --sasl scram-sha-512 \\
          --tls --user admin:admin-secret --authorizer
      kctl local start --port 0 --data-dir "$TMP/six" --no-context --num-partitions 6 \\
          --config log.retention.hours=1
    """
    from kctl import local as lib

    directory = _data_dir(app, data_dir)
    options = lib.BrokerOptions(host=host, port=port, sasl=sasl, users=tuple(users), users_file=users_file, tls=tls,
                                tls_cert=tls_cert, tls_key=tls_key, listeners=tuple(listeners), authorizer=authorizer,
                                super_users=tuple(super_users),
                                configs=((f"num.partitions={num_partitions}",) if num_partitions else ()) + tuple(configs))
    # Checked here, so bad flags are a usage error before anything starts (the broker's
    # modules are imported only when there is something to check).
    config = lib.checked_config(directory, options) if options.secured or options.configs or foreground else None
    if foreground:
        _run_foreground(app, config, context_name, no_context, str(directory))
        return
    state = lib.start(directory, options, _wait(app))
    if not no_context and state.bootstrap is not None:
        _save_context(app, context_name, state.bootstrap, config, state.data_dir)
    _report_started(app, state)


def _report_started(app: App, state) -> None:
    if app.out.format in ("json", "jsonl"):
        app.out.document(state, STATUS_DOCUMENT)
    else:
        app.out.raw(f"{state.bootstrap}\n")
    app.note(f"local broker running (pid {state.pid}, data {state.data_dir})")


def _save_context(app: App, name: str, bootstrap: str, config, data_dir: str) -> None:
    from kctl.config.contexts import set_context
    from kctl.config.file import save
    from kctl.local import CLIENT_KEYS, client_properties

    save(app.config_path, set_context(app.config_file, name, bootstrap_servers=bootstrap, properties=client_properties(config),
                                      unset=CLIENT_KEYS, local_data_dir=data_dir))


def _run_foreground(app: App, config, context_name: str, no_context: bool, data_dir: str) -> None:
    import logging

    from kctl.local import serve_foreground

    handler = logging.StreamHandler(app.stderr)
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.DEBUG if app.debug else logging.INFO)

    def ready(bootstrap: str) -> None:
        if not no_context:
            _save_context(app, context_name, bootstrap, config, data_dir)
        app.out.raw(f"{bootstrap}\n")
        app.stdout.flush()

    serve_foreground(config, ready)


@local.command("stop")
@data_dir_option
@global_options
@pass_app
def stop(app: App, data_dir: Path | None):
    """Stop the broker cleanly (logs flushed, checkpoints written).

    Stopping an instance that is not running is not an error.

    \b
    Examples:
      kctl local stop
      kctl local stop --data-dir /tmp/kafka2
    """
    from kctl import local as lib

    directory = _data_dir(app, data_dir)
    stopped = lib.stop(directory, _wait(app))
    app.note(f"local broker stopped (pid {stopped.pid})" if stopped else f"no local broker runs on {directory}")


@local.command("status")
@data_dir_option
@global_options
@pass_app
def status(app: App, data_dir: Path | None):
    """Show whether the broker runs, where, and how much data it holds.

    Exits 0 when the broker runs and 3 when it does not (the LSB init-script habit),
    so scripts can test it; other statuses are errors.

    \b
    Examples:
      kctl local status
      kctl local status -o json
    """
    from kctl import local as lib
    from kctl.errors import ExitCode

    state = lib.status(_data_dir(app, data_dir))
    app.out.document(state, STATUS_DOCUMENT)
    if state.state != "running":
        raise click.exceptions.Exit(ExitCode.UNKNOWN)


@local.command("logs")
@data_dir_option
@click.option("-n", "--lines", type=click.IntRange(min=0), default=50, show_default=True, help="How many of the last lines to show.")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until Ctrl-C (exit 0).")
@global_options
@pass_app
def logs(app: App, data_dir: Path | None, lines: int, follow: bool):
    """Print the broker's log (broker.log in the data directory).

    \b
    Examples:
      kctl local logs
      kctl local logs -f                     # Ctrl-C stops it (exit 0)
      kctl local logs -n 200 | grep listening  # its address and cluster id
    """
    from kctl import local as lib

    directory = _data_dir(app, data_dir)
    for line in lib.log_lines(directory, lines):
        app.out.raw(line + "\n")
    if follow:
        app.stdout.flush()

        def write(text: str) -> None:
            app.out.raw(text)
            app.stdout.flush()

        with until_stopped():
            lib.follow(directory, write)


@local.command("purge")
@data_dir_option
@yes_option
@global_options
@pass_app
def purge(app: App, data_dir: Path | None, yes: bool):
    """Stop the broker and delete its data directory: every topic, offset and log.

    \b
    Examples:
      kctl local purge --yes
      kctl local purge --data-dir /tmp/kafka2 --yes
    """
    from kctl import local as lib

    directory = _data_dir(app, data_dir)
    if not directory.exists():
        app.note(f"nothing to purge: {directory} does not exist")
        return
    app.confirm(f"Delete the local broker's data in {directory}?", yes=yes, action=f"purge {directory}")
    lib.purge(directory, _wait(app))
    app.note(f"purged {directory}")
