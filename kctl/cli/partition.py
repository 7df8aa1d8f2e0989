"""kctl partition: partitions across topics, with the ISR health filters."""

from __future__ import annotations

import click

from kctl.cli._lazy import LazyGroup
from kctl.cli._options import RegexType, global_options, runs


@click.group(cls=LazyGroup, aliases={"ls": "list"})
def partition():
    """Inspect partitions: leaders, replicas, ISR."""


@partition.command("list")
@click.argument("topics", nargs=-1, metavar="[TOPIC...]")
@click.option("-r", "--regex", type=RegexType(), help="Only topics whose whole name matches.")
@click.option("--under-replicated", "filters", flag_value="under_replicated", multiple=True, help="Fewer in-sync replicas than replicas.")
@click.option("--under-min-isr", "filters", flag_value="under_min_isr", multiple=True, help="Fewer in-sync replicas than min.insync.replicas (acks=all writes fail).")
@click.option("--at-min-isr", "filters", flag_value="at_min_isr", multiple=True, help="Exactly min.insync.replicas in sync (one failure from refusing writes).")
@click.option("--unavailable", "filters", flag_value="unavailable", multiple=True, help="No leader, or a leader that is not a live broker.")
@click.option("--offline", "filters", flag_value="offline", multiple=True, help="No leader at all.")
@click.option("--elr-recoverable", "filters", flag_value="elr_recoverable", multiple=True,
              help="Empty ISR, and an eligible leader replica to lead again cleanly once it is back.")
@click.option("--elr-unrecoverable", "filters", flag_value="elr_unrecoverable", multiple=True,
              help="Empty ISR and no eligible leader replica: only an unclean election recovers it.")
@click.option("--leader", type=int, metavar="BROKER", help="Only partitions led by this broker.")
@click.option("-i", "--internal", is_flag=True, help="Include internal topics (__consumer_offsets, ...).")
@global_options
@runs("kctl.cli.reads.partition:list_")
def list_():
    """List partitions with leader, replicas, ISR and health.

    The filters select what kafka-topics.sh's --under-replicated-partitions,
    --under-min-isr-partitions, --at-min-isr-partitions and --unavailable-partitions
    select; several filters select partitions matching any of them. STATUS sums up
    each partition (ok, or the conditions it is in).

    ELR and LAST-KNOWN-ELR are the eligible leader replicas of KIP-966 (on by default
    since Kafka 4.1): replicas that left the ISR below min.insync.replicas but hold every
    committed record, so one is elected cleanly when the ISR empties; the last known ELR
    names the replicas an unclean election should prefer. Both are left out where the
    cluster does not report them (before Kafka 3.8, and on the bundled broker; null in
    JSON); the ELR filters then fail with exit status 65.

    \b
    Examples:
      kctl partition list orders
      kctl partition list --under-replicated --unavailable
      kctl partition list --leader 2 -o json
      kctl partition list --under-min-isr --no-headers | wc -l
      kctl partition list --elr-recoverable --elr-unrecoverable
    """


