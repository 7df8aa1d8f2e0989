"""kctl top: a live terminal view of the cluster (kctl.top)."""

from __future__ import annotations

import click

from kctl.cli._app import App
from kctl.cli._options import global_options, pass_app
from kctl.errors import UsageError


class DurationType(click.ParamType):
    name = "duration"

    def convert(self, value, param, ctx):
        from kctl.timespec import parse_duration

        if isinstance(value, (int, float)):
            return float(value)
        try:
            seconds = parse_duration(value)
        except UsageError:
            self.fail(f"{value!r} is not a duration (e.g. 90s, 15m, 1h)", param, ctx)
        if seconds < 10:
            self.fail(f"{value!r} is shorter than 10s", param, ctx)
        return seconds


@click.command("top")
@click.option("--interval", type=click.FloatRange(min=0.5), default=2.0, show_default=True, metavar="SECONDS",
              help="Time between samples of the cluster.")
@click.option("--window", type=DurationType(), default="15m", show_default=True, metavar="DURATION",
              help="What the trends (sparklines) span, kept in memory: 90s, 15m, 1h.")
@click.option("--isolation", type=click.Choice(["read_uncommitted", "read_committed"]), default="read_uncommitted",
              show_default=True, help="Lag to the log end, or to the last stable offset (read_committed).")
@click.option("--connect", "connect_choice", metavar="NAME|URL",
              help="The Kafka Connect cluster of the connectors view; default: the context's, if it has one. [env: KCTL_CONNECT_URL]")
@global_options
@pass_app
def top(app: App, interval: float, window: float, isolation: str, connect_choice: str | None):
    """A live view of the cluster: lag in messages and seconds with its trend, throughput, health.

    Views: the overview (brokers, controller, partitions that need attention, groups
    stalled or falling behind, produce rate), groups of every type (classic, consumer,
    share, streams: lag, lag in seconds, a sparkline over --window, the direction, the
    stuck partitions; enter drills into one), topics (produce rate from log end deltas,
    the groups reading each and their worst lag), brokers and partitions (ISR health;
    u, m, a and x show only under-replicated, under min ISR, at min ISR or offline
    partitions; enter peeks at a partition's last records, decoded through the context's
    schema registry when it has one), and connectors when a Kafka Connect cluster is
    configured (state, tasks running and failed, worker).

    Keys: o g t b p c (or :groups as in k9s) switch views, / filters, s sorts (or select a
    column header), ? lists the keys, q or Ctrl-C leaves (exit 0). Nothing changes the
    cluster. The cluster is sampled on its own thread every --interval: the screen never
    waits on it, and when it cannot be read the last data stays with a banner giving its
    age until sampling succeeds again.

    kctl top needs a terminal (exit 64 otherwise): scripts use `group lag --watch -o
    jsonl` or `group lag --serve`.

    \b
    Examples:
      kctl top
      kctl --context prod top --interval 5 --window 1h
      kctl top --isolation read_committed     # lag to the last stable offset
    """
    if not (app.stdout_is_tty and app.stdin_is_tty):
        raise UsageError("kctl top needs a terminal; in scripts use `kctl group lag --watch -o jsonl` or `kctl group lag --serve`")
    from kctl.top.run import run

    registry = app.registry if app.settings.schema_registry.get("url") else None
    target = app.settings.context or app.settings.bootstrap_servers or ""
    from kctl.admin.connect.rest import NoConnectCluster

    try:
        connect = app.connect(connect_choice)
    except NoConnectCluster:
        connect = None  # no connectors view without a Connect cluster
    code = run(app.session, target=target, interval=interval, window=window, isolation=isolation, registry=registry,
               debug=app.debug, connect=connect)
    raise SystemExit(code)
