"""The click command tree as plain data, for generating man pages and completions.

Walking it imports every command module, which is fine here: this runs when docs are
generated (or `kctl completion` is asked for), never on `kctl --help`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import click


@dataclass
class OptionInfo:
    flags: tuple[str, ...]
    takes_value: bool
    choices: tuple[str, ...]
    metavar: str
    help: str
    # Completion of the value: "context" (names from the config file) or "".
    value_kind: str = ""


@dataclass
class ArgumentInfo:
    name: str
    metavar: str
    variadic: bool
    required: bool
    choices: tuple[str, ...]
    value_kind: str = ""


@dataclass
class CommandInfo:
    path: tuple[str, ...]
    command: click.Command
    summary: str
    help: str
    options: list[OptionInfo]
    arguments: list[ArgumentInfo]
    subcommands: list[str] = field(default_factory=list)
    # alias -> canonical sub-command name
    aliases: dict[str, str] = field(default_factory=dict)

    @property
    def is_group(self) -> bool:
        return isinstance(self.command, click.Group)

    @property
    def name(self) -> str:
        return " ".join(("kctl", *self.path))


def _choices(param: click.Parameter) -> tuple[str, ...]:
    return tuple(str(c) for c in param.type.choices) if isinstance(param.type, click.Choice) else ()


# Arguments and options that name existing topics, groups or brokers: their values are
# completed with names from the cluster (kctl __names). New names (topic create) are not.
_TOPIC_ARGUMENTS = {("topic", "describe"), ("topic", "delete"), ("topic", "alter-config"), ("topic", "add-partitions"),
                    ("topic", "set-replication-factor"), ("partition", "list"), ("replication", "elect-leaders"),
                    ("offset", "get"), ("record", "consume"), ("record", "delete"), ("record", "produce")}
_TOPIC_OPTIONS = {"topics", "topic", "from_topic", "to_topic"}
_GROUP_NAMES = {"groups", "group_id", "group", "to_group"}
_BROKER_OPTIONS = {"brokers", "leader"}
# Options whose values are topic or broker config names: KEY=VALUE (--set, -c) or KEY.
_CONFIG_SETTINGS = {"sets", "appends", "subtracts", "configs"}
_CONFIG_KEYS = {"deletes", "keys"}


def _value_kind(param: click.Parameter, path: tuple[str, ...]) -> str:
    """How a value is completed: "context" (names from the config file), "topic", "group",
    "broker" (names from the cluster), "subject" (from the schema registry), "connector" and "plugin" (from Kafka Connect), "property" (librdkafka property names),
    "config-setting" / "config-key" (Kafka config names, as KEY= or KEY) or ""."""
    name = param.name
    if name == "context" or (path[:1] == ("context",) and name == "name" and path[1:] in (("use",), ("show",), ("delete",), ("set",))):
        return "context"
    if (isinstance(param, click.Argument) and path[:1] == ("schema",) and name == "subject") or name == "value_schema":
        return "subject"
    if path[:1] == ("connect",) and path[1:2] != ("logger",) and isinstance(param, click.Argument) and name in ("name", "class_name"):
        return "connector" if name == "name" else "plugin"
    if isinstance(param, click.Argument):
        if path in _TOPIC_ARGUMENTS:
            return "topic"
        return "group" if path[:1] == ("group",) and name in _GROUP_NAMES else ""
    if name == "properties":
        return "property"
    if name in _CONFIG_SETTINGS:
        return "config-setting"
    if name in _CONFIG_KEYS and path[:1] in (("config",), ("topic",)):
        return "config-key"
    if name in _TOPIC_OPTIONS:
        return "topic"
    if name in _GROUP_NAMES:
        return "group"
    return "broker" if name in _BROKER_OPTIONS else ""


def describe(command: click.Command, path: tuple[str, ...], ctx: click.Context) -> CommandInfo:
    options, arguments = [], []
    for param in command.get_params(ctx):
        if isinstance(param, click.Option):
            if param.hidden:
                continue
            flags = tuple(param.opts) + tuple(param.secondary_opts)
            options.append(
                OptionInfo(
                    flags=flags,
                    takes_value=not param.is_flag and not param.count,
                    choices=_choices(param),
                    metavar=param.make_metavar(ctx) if not param.is_flag else "",
                    help=param.help or "",
                    value_kind=_value_kind(param, path),
                )
            )
        elif isinstance(param, click.Argument) and param.get_usage_pieces(ctx):
            arguments.append(
                ArgumentInfo(
                    name=param.name or "",
                    metavar=param.make_metavar(ctx),
                    variadic=param.nargs == -1,
                    required=param.required,
                    choices=_choices(param),
                    value_kind=_value_kind(param, path),
                )
            )
    info = CommandInfo(
        path=path,
        command=command,
        summary=command.get_short_help_str(limit=200),
        help=command.help or "",
        options=options,
        arguments=arguments,
    )
    if isinstance(command, click.Group):
        lazy = getattr(command, "lazy_commands", {})
        info.subcommands = [n for n in command.list_commands(ctx)
                            if n in lazy or not getattr(command.get_command(ctx, n), "hidden", True)]
        info.aliases = dict(getattr(command, "aliases", {}))
        if not path and lazy:
            info.summary = "Administer Kafka clusters"
    return info


def walk(root: click.Group | None = None) -> list[CommandInfo]:
    """Every command, parents before children, in the order `--help` lists them."""
    if root is None:
        from kctl.cli.main import cli

        root = cli
    out: list[CommandInfo] = []

    def visit(command: click.Command, path: tuple[str, ...], parent: click.Context | None) -> None:
        # The root's context_settings (help_option_names: -h/--help) must be in force,
        # as in a real invocation, or click caches a --help-only option on each command.
        settings = command.context_settings if parent is None else {}
        ctx = click.Context(command, info_name=path[-1] if path else "kctl", parent=parent, **settings)
        info = describe(command, path, ctx)
        if path:
            lazy = getattr(parent.command, "lazy_commands", {}) if parent else {}
            if path[-1] in lazy:
                info.summary = lazy[path[-1]][1]
        out.append(info)
        if isinstance(command, click.Group):
            for name in info.subcommands:
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    visit(sub, (*path, name), ctx)

    visit(root, (), None)
    return out
