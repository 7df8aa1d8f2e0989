"""kctl offset: partition offsets by position or time."""

from __future__ import annotations

import click

from kctl.cli._lazy import LazyGroup
from kctl.cli._options import RegexType, global_options, runs


@click.group(cls=LazyGroup)
def offset():
    """Look up partition offsets by position or time."""


@offset.command("get")
@click.argument("selectors", nargs=-1, metavar="TOPIC[:PARTITIONS]...")
@click.option("-r", "--regex", type=RegexType(), help="Also every topic whose whole name matches.")
@click.option("--at", "at", metavar="TIME", help="Also the first offset at or after TIME (ISO-8601, epoch ms, now, -1h), "
              "or the tiered storage position earliest-local or latest-tiered.")
@click.option("--max-timestamp", is_flag=True, help="Also the offset and timestamp of the record with the largest timestamp.")
@click.option("--isolation", type=click.Choice(["read_uncommitted", "read_committed"]), default="read_uncommitted", show_default=True, help="read_committed makes LATEST the last stable offset.")
@global_options
@runs("kctl.cli.reads.offset:get")
def get():
    """Show earliest (log start) and latest (log end) offsets per partition.

    PARTITIONS takes kafka-get-offsets' syntax: 0-3, 5, 7- (open-ended), comma-separated.
    SPAN is LATEST - EARLIEST, an upper bound on the records stored. With --at, OFFSET-AT
    is where a consumer seeking to that time would start (the log end when no record is
    that recent); the resolved instant is printed on stderr.

    On topics with tiered storage (remote.storage.enable=true), --at earliest-local is
    the first offset still on the leader's disk (the records below it are read from
    remote storage) and --at latest-tiered the last offset uploaded (blank: none yet),
    as kafka-get-offsets --time -4 and -5 answer them. Without tiered storage Kafka
    answers the log start and blank.

    \b
    Examples:
      kctl offset get orders
      kctl offset get orders:0-3,7 payments -o json
      kctl offset get orders --at 2026-11-22T09:00:00Z
      kctl offset get orders --at -1h --max-timestamp
      kctl offset get orders --at earliest-local
      kctl offset get -r 'logs\\..*' --isolation read_committed
    """


