"""LazyGroup: a click group whose sub-commands are imported only when run.

The registry carries each command's one-line summary, so `kctl --help` and shell
completion list the tree without importing any command module (and through them
confluent_kafka, rich, ...).
"""

from __future__ import annotations

import importlib

import click

from kctl.errors import KctlError


class LazyGroup(click.Group):
    def __init__(
        self,
        *args,
        lazy_commands: dict[str, tuple[str, str]] | None = None,
        aliases: dict[str, str] | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        # name -> ("module:attribute", one-line summary)
        self.lazy_commands = dict(lazy_commands or {})
        # alias -> name (plural nouns, `ls`); resolved but not listed
        self.aliases = dict(aliases or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.lazy_commands) + [n for n in super().list_commands(ctx) if n not in self.lazy_commands]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd_name = self.aliases.get(cmd_name, cmd_name)
        if cmd_name in self.lazy_commands:
            return self._load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx, args):
        # Report the canonical name (so `kctl topics ls` shows as `kctl topic list`).
        try:
            _name, cmd, rest = super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            if exc.possibilities:
                raise
            # click suggests from the commands it holds, and a lazy group holds none yet.
            raise click.exceptions.NoSuchCommand(exc.command_name, possibilities=self.list_commands(ctx), ctx=ctx) from None
        return (cmd.name if cmd else _name), cmd, rest

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy_commands:
                rows.append((name, self.lazy_commands[name][1]))
            else:
                command = super().get_command(ctx, name)
                if command is not None and not command.hidden:
                    rows.append((name, command.get_short_help_str(limit=formatter.width)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):
        """A library error's hint, its settings named as the failed command's flags; a
        usage error click raised without saying whose (a missing option value) said as
        the command's, so its hint names the command's --help."""
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            name = ctx.invoked_subcommand
            if exc.ctx is None and name is not None:
                command = self.get_command(ctx, name)
                if command is not None and not isinstance(command, click.Group):
                    exc.ctx = click.Context(command, info_name=name, parent=ctx)
            raise
        except KctlError as exc:
            from kctl.cli._hints import in_flags, longest_flags

            name = ctx.invoked_subcommand
            command = self.get_command(ctx, name) if name else None
            if isinstance(command, click.Group):
                raise  # its own invoke named them
            options = [(p.name, opt) for p in command.params if isinstance(p, click.Option) and p.name for opt in p.opts] if command else []
            rendered = in_flags(exc, longest_flags(options))
            if rendered is exc:
                raise
            raise rendered from exc

    def _load(self, name: str) -> click.Command:
        target, _summary = self.lazy_commands[name]
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command
