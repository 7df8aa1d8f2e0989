"""App: what the root command resolved (global options, environment, streams), handed to
every command (`@pass_app`, kctl.cli._options). Expensive things (config file, admin
client, output) are built on first use so `--help` and the context commands never
connect to anything. Free of click: the everyday reads run without it (kctl.cli.direct)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from functools import cached_property

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    import contextlib
    from typing import Any, TextIO

    from kctl.admin.client.session import AdminSession
    from kctl.config.model import ClientSettings, ConfigFile
    from kctl.output.render import Output


class App:
    # A plain class, not a dataclass: importing dataclasses costs every read ~7 ms
    # (kctl.values says why).
    def __init__(self, *, env: Mapping[str, str] | None = None, output_format: str = "auto", no_headers: bool = False,
                 quiet: bool = False, debug: bool = False, bootstrap: str | None = None, context: str | None = None,
                 properties: tuple[str, ...] = (), timeout: float | None = None, stdout: TextIO | None = None,
                 stderr: TextIO | None = None, stdin: TextIO | None = None):
        self.env = dict(os.environ) if env is None else env
        self.output_format = output_format
        self.no_headers = no_headers
        self.quiet = quiet
        self.debug = debug
        self.bootstrap = bootstrap
        self.context = context
        self.properties = properties
        self.timeout = timeout
        self.stdout = sys.stdout if stdout is None else stdout
        self.stderr = sys.stderr if stderr is None else stderr
        self.stdin = sys.stdin if stdin is None else stdin
        # The sessions of other clusters a command names (session_for), by name.
        self._other_sessions: dict[str, AdminSession] = {}
        # What to close when the command ends (clients), last opened first: close().
        self._to_close: list = []

    # -- configuration ---------------------------------------------------------------------

    @cached_property
    def config_path(self):
        from kctl.config.file import default_path

        return default_path(self.env)

    @cached_property
    def config_file(self) -> ConfigFile:
        from kctl.config.file import default_location, load

        return load(default_location(self.env))

    @cached_property
    def settings(self) -> ClientSettings:
        from kctl.config.resolve import resolve

        return resolve(
            self.config_file,
            self.env,
            context_flag=self.context,
            bootstrap_flag=self.bootstrap,
            property_flags=self.properties,
            timeout_flag=self.timeout,
        )

    @cached_property
    def session(self) -> AdminSession:
        from kctl.admin.client.session import AdminSession

        session = AdminSession(self.settings)
        self.on_close(session.close)
        if self.debug:
            self.note(f"connecting to {self.settings.bootstrap_servers} (context: {self.settings.context or '-'})")
            self.note(f"client properties: {dict(session.debug_config())}")
        return session

    def session_for(self, name: str | None, option: str) -> AdminSession:
        """A session on the cluster `name` (a context or host:port) that `option` names, or
        the command's own cluster when None; closed when the command ends."""
        if name is None:
            return self.session
        if name in self._other_sessions:
            return self._other_sessions[name]
        from kctl.admin.client.session import AdminSession
        from kctl.config.resolve import resolve_cluster

        settings = resolve_cluster(self.config_file, self.env, name, source=option, property_flags=self.properties,
                                   timeout_flag=self.timeout)
        session = AdminSession(settings)
        self.on_close(session.close)
        if self.debug:
            self.note(f"{option}: connecting to {settings.bootstrap_servers} (context: {settings.context or '-'})")
        self._other_sessions[name] = session
        return session

    def on_close(self, close) -> None:
        """Call `close` when the command ends (click's context closing, or kctl.cli.direct)."""
        self._to_close.append(close)

    def close(self) -> None:
        while self._to_close:
            self._to_close.pop()()

    def registry(self, url_flag: str | None = None):
        """The schema registry client for this command (--registry-url, else the
        context's and KCTL_SCHEMA_REGISTRY_*), closed when the command ends."""
        from kctl.admin.registry.schemas import Registry, registry_settings

        registry = Registry(registry_settings(self.settings.schema_registry, url_flag, self.settings.timeout))
        self.on_close(registry.close)
        return registry

    def connect(self, choice: str | None = None):
        """The Kafka Connect client for this command (--connect NAME|URL, else
        KCTL_CONNECT / KCTL_CONNECT_URL, else the context's), closed when it ends."""
        from kctl.admin.connect.rest import ConnectClient, connect_settings

        settings = self.settings
        client = ConnectClient(connect_settings(settings.connect, settings.connect_env, choice, settings.timeout,
                                                env_name=settings.connect_name))
        self.on_close(client.close)
        return client

    # -- streams ---------------------------------------------------------------------------

    def _isatty(self, stream: Any) -> bool:
        try:
            return stream.isatty()
        except (AttributeError, ValueError):
            return False

    @property
    def stdout_is_tty(self) -> bool:
        return self._isatty(self.stdout)

    @property
    def stdin_is_tty(self) -> bool:
        return self._isatty(self.stdin)

    @property
    def stderr_is_tty(self) -> bool:
        return self._isatty(self.stderr)

    @property
    def color(self) -> bool:
        return self.stdout_is_tty and "NO_COLOR" not in self.env and self.env.get("TERM") != "dumb"

    @cached_property
    def out(self) -> Output:
        from kctl.output.render import Output

        return Output(
            self.output_format,
            self.stdout,
            tty=self.stdout_is_tty,
            color=self.color,
            no_headers=self.no_headers,
        )

    def note(self, message: str) -> None:
        """Progress and information, on stderr; silenced by -q."""
        if not self.quiet:
            _echo(message, self.stderr)

    def warn(self, message: str) -> None:
        _echo(f"warning: {message}", self.stderr)

    def error_line(self, message: str) -> None:
        """A per-item failure inside a batch; the command still exits with its status."""
        _echo(f"error: {message}", self.stderr)

    def confirm(self, question: str, *, yes: bool, action: str) -> None:
        """Go on only when confirmed: --yes, or 'y' at a terminal prompt.

        Without a terminal there is nobody to ask, so a missing --yes refuses the
        operation rather than assuming consent.
        """
        from kctl.errors import AbortedError

        if yes:
            return
        if not self.stdin_is_tty:
            raise AbortedError(
                action=action, cause="confirmation required and stdin is not a terminal",
                hint="pass --yes to confirm",
            )
        import click

        if not click.confirm(question, default=False, err=True):
            raise AbortedError(action=action, cause="not confirmed")


def _echo(message: str, stream: TextIO) -> None:
    """A line on `stream`, flushed: what click.echo does with a str."""
    stream.write(message + "\n")
    stream.flush()


def until_stopped() -> contextlib.suppress:
    """The one rule for Ctrl-C (README, "Exit status"): a --follow or --watch run goes on
    until the user stops it, so Ctrl-C is its normal end and the command finishes as it
    would on its own (exit 0, or a health check's last status). Anything else that Ctrl-C
    interrupts exits 130."""
    import contextlib  # not at import: the everyday reads never wait on Ctrl-C (~1 ms)

    return contextlib.suppress(KeyboardInterrupt)
