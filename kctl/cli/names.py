"""`kctl __names KIND -- [WORDS]...`: names for shell completion, called by the generated
completion scripts (completions/) for arguments that name topics, groups, brokers or
schema registry subjects (the registry of --registry-url, else the context's), Kafka
Connect connectors and plugin classes (the Connect cluster of --connect, else the context's).

The cluster is the one the command line being completed would use (its -b,
--bootstrap-server, --context and -X, else the current context), asked with a budget of
0.3 s: names on stdout one per line, and nothing at all (no error text, exit 0) when the
cluster is unreachable, slow or not configured, so a TAB never hangs or prints noise.
Groups are those ListGroups reports, of every type (classic, consumer, share, streams).
"""

from __future__ import annotations

import click

KINDS = ("topic", "group", "broker", "subject", "connector", "plugin")
# The whole lookup, connection included, must fit in this (issue 21: <= 0.3 s on localhost).
BUDGET_SECONDS = 0.25
_VALUE_FLAGS = {"-b": "bootstrap", "--bootstrap-server": "bootstrap", "--context": "context", "-X": "property",
                "--registry-url": "registry_url", "--connect": "connect"}


def command_line_settings(words: tuple[str, ...]) -> dict:
    """-b / --bootstrap-server / --context / -X values in the words being completed."""
    found: dict = {"properties": []}
    given = list(words)
    for index, word in enumerate(given):
        flag, eq, inline = word.partition("=")
        if flag not in _VALUE_FLAGS:
            continue
        value = inline if eq else (given[index + 1] if index + 1 < len(given) else None)
        if value is None:
            continue
        kind = _VALUE_FLAGS[flag]
        if kind == "property":
            found["properties"].append(value)
        else:
            found[kind] = value
    return found


@click.command("__names", hidden=True)
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("words", nargs=-1, type=click.UNPROCESSED)
def names(kind: str, words: tuple[str, ...]) -> None:
    """Names of KIND for shell completion (used by the completion scripts).

    WORDS are the words of the command line being completed, after `--`; its -b,
    --bootstrap-server, --context and -X say which cluster to ask.

    \b
    Examples:
      kctl __names topic
      kctl __names group -- -b localhost:9092 group lag
      kctl __names subject -- schema describe --registry-url http://localhost:8081
    """
    import os
    import sys

    from kctl.cli._app import App

    given = command_line_settings(words)
    app = App(bootstrap=given.get("bootstrap"), context=given.get("context"), properties=tuple(given["properties"]),
              timeout=BUDGET_SECONDS)
    try:
        found = _lookup(app, kind, given.get("registry_url"), given.get("connect"))
    except Exception:  # noqa: BLE001 - completion must stay silent whatever goes wrong
        found = []
    click.echo("".join(f"{name}\n" for name in sorted(found)), nl=False)
    # Skip librdkafka's teardown (it can wait on a broker that never answered).
    sys.stdout.flush()
    os._exit(0)


def _lookup(app, kind: str, registry_url: str | None, connect: str | None) -> list[str]:
    if kind in ("connector", "plugin"):
        from kctl.admin.connect.connectors import names, plugins

        client = app.connect(connect)
        if kind == "connector":
            return names(client)
        # Classes and their short names, as Connect takes either.
        return [n for p in plugins(client) for n in (p.class_name, p.class_name.rsplit(".", 1)[-1])]
    if kind == "subject":
        return [s.subject for s in app.registry(registry_url).subjects()]
    if kind == "group":
        # Kafka's ListGroups through kctl's wire client, as `group list`: groups of every type
        # (librdkafka's list sees classic and consumer groups only).
        from kctl.admin.groups.protocol import list_groups

        return [g["group_id"] for g in list_groups(app.session)]
    # One Metadata request through the session's client (the App's timeout is the budget).
    metadata = app.session.kafka.metadata(None, "list topics", topic_ids=False)
    if kind == "broker":
        return [str(b) for b in metadata.brokers]
    return [t for t in metadata.topics if not t.startswith("__")]
