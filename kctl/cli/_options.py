"""Options shared by many commands.

Global options are accepted on the root (`kctl -o json topic list`) and on every
command (`kctl topic list -o json`), because that is where people type them; a
value given on the command wins over the root's.
"""

from __future__ import annotations

import functools
import importlib
import re

import click

from kctl.cli._app import App
from kctl.output.formats import FORMATS

OUTPUT_HELP = "Output format: auto (table on a terminal, plain when piped), table, wide, plain, json, jsonl, csv; prom for group lag."


def _set(attribute: str):
    def callback(ctx: click.Context, _param: click.Parameter, value):
        if value is None or value is False or value == ():
            return value
        app = ctx.find_object(App)
        if app is None:
            return value
        if attribute == "properties":
            if "help" in value:
                from kctl.config.properties import print_property_help

                print_property_help(app.stdout)
                ctx.exit(0)
            app.properties = app.properties + tuple(value)
        else:
            setattr(app, attribute, value)
        return value

    return callback


pass_app = click.make_pass_decorator(App)


def runs(body: str):
    """The command's body is the function `body` ("module:name") of a module free of click,
    called with the App and the command's parameters by name; its return value is the exit
    status (None: 0). The console script runs such a command without click when it can
    (kctl.cli.direct, from the parameters `python -m kctl.devtools gen-docs` records in
    kctl/cli/_direct_params.py); here, click parses and calls it."""

    def decorate(function):
        @functools.wraps(function)
        def callback(app: App, **params):
            module, name = body.split(":")
            return getattr(importlib.import_module(module), name)(app, **params)

        callback.kctl_body = body  # type: ignore[attr-defined]
        return pass_app(callback)

    return decorate


def global_option_decorators(*, on_root: bool) -> list:
    """The global options; on the root they are exposed to its callback, on commands they
    update the App directly."""

    def opt(*decls, attribute: str, **kwargs):
        if not on_root:
            kwargs["callback"] = _set(attribute)
            kwargs["expose_value"] = False
        return click.option(*decls, **kwargs)

    return [
        opt(
            "-b",
            "--bootstrap-server",
            "bootstrap",
            attribute="bootstrap",
            metavar="HOST:PORT[,...]",
            help="Brokers to bootstrap from. [env: KCTL_BOOTSTRAP_SERVERS]",
        ),
        opt("--context", "context", attribute="context", metavar="NAME", help="Use this context. [env: KCTL_CONTEXT]"),
        opt(
            "-X",
            "properties",
            attribute="properties",
            multiple=True,
            metavar="KEY=VALUE",
            help="librdkafka client property (repeatable); -X help lists common ones. [env: KCTL_X_<KEY>]",
        ),
        opt(
            "-o",
            "--output",
            "output_format",
            attribute="output_format",
            type=click.Choice(FORMATS),
            default=None,
            help=OUTPUT_HELP + " [env: KCTL_OUTPUT]",
        ),
        opt("--no-headers", "no_headers", attribute="no_headers", is_flag=True, default=False, help="Omit header rows."),
        opt(
            "--timeout",
            "timeout",
            attribute="timeout",
            type=click.FloatRange(min=0, min_open=True),
            metavar="SECONDS",
            help="Give up on the cluster after this long (default 10). [env: KCTL_TIMEOUT]",
        ),
        opt("-q", "--quiet", "quiet", attribute="quiet", is_flag=True, default=False, help="No progress or notes on stderr."),
        opt("--debug", "debug", attribute="debug", is_flag=True, default=False, help="Show client logs and tracebacks. [env: KCTL_DEBUG]"),
    ]


def global_options(command):
    for decorator in reversed(global_option_decorators(on_root=False)):
        command = decorator(command)
    return command


def yes_option(command):
    return click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation (required without a terminal).")(command)


class RegexType(click.ParamType):
    name = "REGEX"

    def convert(self, value, param, ctx):
        if isinstance(value, re.Pattern):
            return value
        try:
            return re.compile(value)
        except re.error as exc:
            self.fail(f"{value!r} is not a valid regular expression: {exc}", param, ctx)


class KeyValueType(click.ParamType):
    """`key=value`, as in `-c retention.ms=1000`."""

    name = "KEY=VALUE"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        key, sep, val = value.partition("=")
        if not sep or not key.strip():
            self.fail(f"{value!r} is not of the form key=value", param, ctx)
        return key.strip(), val


class BytesRegexType(RegexType):
    """A regular expression matched against record bytes (keys, values)."""

    def convert(self, value, param, ctx):
        if isinstance(value, re.Pattern):
            return value
        try:
            return re.compile(value.encode())
        except re.error as exc:
            self.fail(f"{value!r} is not a valid regular expression: {exc}", param, ctx)
