"""kctl config: describe and alter configs of topics, brokers, broker loggers, groups and
client-metrics subscriptions."""

from __future__ import annotations

import click

from kctl.cli._app import App
from kctl.cli._batch import report
from kctl.cli._configs import ALTER_TABLE, change_options, run_alter
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options, pass_app, runs, yes_option

ENTITY_TYPES = ("topic", "broker", "broker-default", "broker-logger", "group", "client-metrics")

@click.group(cls=LazyGroup)
def config():
    """Describe and alter configs: topics, brokers, groups, client-metrics subscriptions."""


@config.command("describe")
@click.argument("entity_type", type=click.Choice(ENTITY_TYPES), metavar="TYPE")
@click.argument("names", nargs=-1, metavar="[NAME...]")
@click.option("-a", "--all", "include_defaults", is_flag=True, help="Every config, defaults and static ones included.")
@click.option("-k", "--key", "keys", multiple=True, metavar="NAME", help="Only this config (repeatable); shown even when default.")
@global_options
@runs("kctl.cli.reads.config:describe")
def describe():
    """Show configs with their source.

    TYPE is topic, broker (NAME is a broker id), broker-default (the cluster-wide
    dynamic default, no NAME), broker-logger (NAME is a broker id), group (a group id:
    KIP-848 group configs such as consumer.session.timeout.ms) or client-metrics (a
    KIP-714 subscription; no NAME: every subscription). Without --all only overrides
    are shown. SOURCE is Kafka's name for where a value comes from:
    DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_GROUP_CONFIG, DYNAMIC_CLIENT_METRICS_CONFIG, STATIC_BROKER_CONFIG
    (server.properties) or DEFAULT_CONFIG. Sensitive values are always hidden.

    \b
    Examples:
      kctl config describe topic orders
      kctl config describe topic orders --all -k retention.ms -k cleanup.policy
      kctl config describe broker 1 --all -o json
      kctl config describe broker-default
      kctl config describe broker-logger 1
      kctl config describe group billing --all
      kctl config describe client-metrics
    """



@config.command("alter")
@click.argument("entity_type", type=click.Choice(ENTITY_TYPES), metavar="TYPE")
@click.argument("names", nargs=-1, metavar="[NAME...]")
@change_options
@global_options
@pass_app
def alter(app: App, entity_type: str, names: tuple[str, ...], sets: tuple[tuple[str, str], ...], deletes: tuple[str, ...], appends: tuple[tuple[str, str], ...], subtracts: tuple[tuple[str, str], ...], dry_run: bool):
    """Change configs incrementally: only the named keys change.

    TYPE is as for `config describe`. --append and --subtract edit list configs
    (cleanup.policy, ...). --dry-run uses Kafka's validate-only mode: invalid values are
    reported, nothing changes.

    A client-metrics subscription (KIP-714) is created by setting its configs: metrics
    (metric name prefixes, comma-separated; * for all), interval.ms (how often clients
    push) and match (client selectors such as client_id=REGEX,client_software_name=REGEX;
    empty matches every client). `config delete client-metrics NAME` removes it.

    \b
    Examples:
      kctl config alter topic orders --set retention.ms=86400000 --delete segment.bytes
      kctl config alter topic orders --append cleanup.policy=compact --dry-run
      kctl config alter broker 1 --set log.cleaner.threads=2
      kctl config alter broker-default --set message.max.bytes=2097152
      kctl config alter broker-logger 1 --set kafka.server.ReplicaManager=DEBUG
      kctl config alter group billing --set consumer.session.timeout.ms=60000
      kctl config alter client-metrics producers --set metrics=org.apache.kafka.producer. \\
          --set interval.ms=60000
      kctl config alter client-metrics kcat --set metrics='*' --set match=client_software_name=kcat
    """
    run_alter(app, entity_type, list(names) or [None], sets, deletes, appends, subtracts, dry_run)


@config.command("delete")
@click.argument("entity_type", type=click.Choice(["client-metrics"]), metavar="TYPE")
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@click.option("--dry-run", is_flag=True, help="Ask the brokers to validate the deletion without applying it.")
@yes_option
@global_options
@pass_app
def delete(app: App, entity_type: str, names: tuple[str, ...], dry_run: bool, yes: bool):
    """Delete client-metrics subscriptions (TYPE is client-metrics), after asking.

    Every config of each subscription is deleted, which removes it, as
    kafka-client-metrics --delete does. An unknown name is reported (exit 5; 4 when
    others were deleted).

    \b
    Examples:
      kctl config delete client-metrics producers --dry-run
      kctl config delete client-metrics producers kcat --yes
    """
    from kctl.admin.topics.configs import AlterResult, delete_subscriptions, describe_configs

    unique = list(dict.fromkeys(names))
    found, missing = describe_configs(app.session, entity_type, unique)
    if not found:
        raise next(iter(missing.values()))
    going = ", ".join(r.entity_name for r in found)
    if not dry_run:
        app.confirm(f"Delete client-metrics subscription(s) {going}?", yes=yes, action=f"delete client-metrics subscription(s) {going}")
    results, errors = delete_subscriptions(app.session, found, validate_only=dry_run)
    results += [AlterResult(entity_type=entity_type, entity_name=n, status="failed", changes=(), error=e.message) for n, e in missing.items()]
    report(app, results, {**missing, **errors}, ALTER_TABLE, "delete client-metrics subscriptions")
