"""The root `kctl` command and main(), which runs the click tree; errors are rendered and exit
statuses chosen in kctl.cli._exit (shared with kctl.cli.direct)."""

from __future__ import annotations

import os
import sys

import click

from kctl import __version__
from kctl.cli._app import App
from kctl.cli._exit import failure_status, finish, render_error, truthy
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_option_decorators
from kctl.errors import EXIT_CODE_MEANINGS, ExitCode, NotFoundError, UnreachableError

# noun -> (module:attribute, one-line summary). Order is the order of `kctl --help`.
NOUNS: dict[str, tuple[str, str]] = {
    "cluster": ("kctl.cli.cluster:cluster", "Show the cluster: id, controller, brokers, health, metadata quorum"),
    "broker": ("kctl.cli.broker:broker", "List the cluster's brokers"),
    "topic": ("kctl.cli.topic:topic", "List, describe, create and delete topics"),
    "partition": ("kctl.cli.partition:partition", "Inspect partitions: leaders, replicas, ISR"),
    "replication": ("kctl.cli.replication:replication", "Reassign partitions and elect leaders"),
    "config": ("kctl.cli.config:config", "Describe and alter topic and broker configs"),
    "group": ("kctl.cli.group:group", "Groups of every type (classic, consumer, share, streams): members, offsets, lag"),
    "offset": ("kctl.cli.offset:offset", "Look up partition offsets by position or time"),
    "record": ("kctl.cli.record:record", "Produce, consume and delete records"),
    "acl": ("kctl.cli.acl:acl", "List, create and delete ACLs"),
    "user": ("kctl.cli.user:user", "SCRAM users: list, describe, set passwords, delete"),
    "token": ("kctl.cli.token:token", "Delegation tokens: create, list, describe, renew, expire"),
    "quota": ("kctl.cli.quota:quota", "Client quotas of users, client ids and IPs"),
    "transaction": ("kctl.cli.transaction:transaction", "Transactions: list, describe, find hanging ones, abort"),
    "producer": ("kctl.cli.transaction:producer", "Producers partitions know: ids, epochs, open transactions"),
    "feature": ("kctl.cli.feature:feature", "Feature flags: finalized and supported levels, upgrade, downgrade"),
    "schema": ("kctl.cli.schema:schema", "Schema Registry subjects and schemas: list, describe, register, check, delete"),
    "connect": ("kctl.cli.connect:connect", "Kafka Connect: connectors, tasks, offsets, plugins, loggers"),
    "mirror": ("kctl.cli.mirror:mirror", "MirrorMaker 2: replication health, offset translation, failover, failback"),
    "export": ("kctl.cli.declarative:export", "Write the cluster's topics, configs, ACLs, quotas and users as YAML resource files"),
    "diff": ("kctl.cli.declarative:diff", "Show what applying resource files would change (exit 2 on changes)"),
    "apply": ("kctl.cli.declarative:apply", "Make the cluster match resource files: plan, confirm, apply"),
    "top": ("kctl.cli.top:top", "A live terminal view: lag and its trend, throughput, ISR health"),
    "doctor": ("kctl.cli.doctor:doctor", "What is wrong with the cluster, worst first, and the command to run next"),
    "local": ("kctl.cli.local:local", "Run the bundled single-node Kafka broker"),
    "spark": ("kctl.cli.spark:spark", "Dump, replay, audit and query (SQL) topics with PySpark"),
    "context": ("kctl.cli.context:context", "Manage named cluster connections"),
    "completion": ("kctl.cli.completion:completion", "Print a shell completion script"),
}
ALIASES = {
    "clusters": "cluster",
    "brokers": "broker",
    "topics": "topic",
    "partitions": "partition",
    "configs": "config",
    "groups": "group",
    "offsets": "offset",
    "records": "record",
    "contexts": "context",
    "acls": "acl",
    "users": "user",
    "tokens": "token",
    "quotas": "quota",
    "transactions": "transaction",
    "producers": "producer",
    "features": "feature",
    "schemas": "schema",
    "connectors": "connect",
    "connector": "connect",
}


def _exit_status_epilog() -> str:
    lines = ["\b", "Exit status:"]
    lines += [f"  {int(code):>3}  {meaning}" for code, meaning in EXIT_CODE_MEANINGS.items()]
    return "\n".join(lines)


ROOT_HELP = """Administer Kafka clusters: topics, partitions, configs, consumer groups, lag and records.

Commands read `kctl <noun> <verb>`. Data goes to stdout (a table on a terminal,
tab-separated text when piped, or -o json|jsonl|csv); progress and errors go to stderr.

\b
Examples:
  kctl -b localhost:9092 cluster info
  kctl topic list -o json
  kctl topic create orders --partitions 6 --replication-factor 3 -c retention.ms=86400000
  kctl context set prod -b b1:9092,b2:9092 -X security.protocol=SASL_SSL
"""


class RootGroup(LazyGroup):
    """The root of the tree: a missing topic, group or context is answered with the
    closest existing name, a stopped bundled broker with the command that starts it
    (cli/_suggest.py), while the command's App is still at hand."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (NotFoundError, UnreachableError) as exc:
            if not isinstance(ctx.obj, App):
                raise
            from kctl.cli._suggest import for_app

            said = for_app(ctx.obj, exc)
            if said is exc:
                raise
            raise said from exc


def _root(function):
    for decorator in reversed(global_option_decorators(on_root=True)):
        function = decorator(function)
    return function


@click.group(
    cls=RootGroup,
    invoke_without_command=True,
    no_args_is_help=True,
    lazy_commands=NOUNS,
    aliases=ALIASES,
    help=ROOT_HELP,
    epilog=_exit_status_epilog(),
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "--version", prog_name="kctl", message="%(prog)s %(version)s")
@_root
@click.pass_context
def cli(ctx: click.Context, bootstrap: str | None, context: str | None, properties: tuple[str, ...], output_format: str | None, no_headers: bool, timeout: float | None, quiet: bool, debug: bool):
    env = dict(os.environ)
    if "help" in properties:
        from kctl.config.properties import print_property_help

        print_property_help(sys.stdout)
        ctx.exit(0)
    if ctx.invoked_subcommand is None:
        raise click.UsageError("missing command", ctx=ctx)
    ctx.obj = App(
        env=env,
        output_format=output_format or env.get("KCTL_OUTPUT") or "auto",
        no_headers=no_headers,
        quiet=quiet,
        debug=debug or truthy(env.get("KCTL_DEBUG")),
        bootstrap=bootstrap,
        context=context,
        properties=tuple(properties),
        timeout=timeout,
    )
    ctx.call_on_close(ctx.obj.close)


def _add_hidden_commands() -> None:
    from kctl.cli.names import names

    cli.add_command(names)  # for the completion scripts; not listed anywhere


_add_hidden_commands()


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args or truthy(os.environ.get("KCTL_DEBUG"))
    if debug:
        import logging

        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="debug: %(name)s: %(message)s")
    try:
        status = cli.main(args=args, prog_name="kctl", standalone_mode=False)
        code = status if isinstance(status, int) else ExitCode.OK
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc), file=sys.stdout)
        code = ExitCode.OK
    except click.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "kctl"
        render_error(_one_line(exc.format_message()), f"see '{command} --help'")
        code = ExitCode.USAGE
    except click.ClickException as exc:
        render_error(_one_line(exc.format_message()), None)
        code = ExitCode.ERROR
    except click.exceptions.Abort:
        render_error("interrupted", None)
        code = ExitCode.INTERRUPTED
    except SystemExit:
        raise
    # The last line of defence against tracebacks (kctl.cli._exit). Bare, because
    # confluent-kafka can raise its KafkaError, which is no exception class, past
    # `except Exception`.
    except:  # noqa: E722
        code = failure_status(sys.exc_info()[1], debug)  # type: ignore[arg-type]
    finish(code, console_script=argv is None)


def _one_line(text: str) -> str:
    # click's messages start with a capital and may span lines; kctl's errors are one line.
    text = " ".join(text.split())
    return text[:1].lower() + text[1:]
