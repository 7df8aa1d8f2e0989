"""kctl transaction: list, describe, find-hanging, abort; kctl producer list."""

from __future__ import annotations

import re

import click

from kctl.cli._app import App
from kctl.cli._batch import report, report_documents
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import RegexType, global_options, pass_app, yes_option
from kctl.errors import UsageError
from kctl.output.spec import Column, DocumentSpec, Field, TableSpec


def _instant(ms):
    from kctl.timespec import format_instant

    return format_instant(ms)


def _age(ms):
    if ms is None:
        return None
    seconds = ms // 1000
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m{seconds % 60:02d}s" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


TRANSACTION_TABLE = TableSpec(
    (
        Column("transactional_id", "TRANSACTIONAL-ID"),
        Column("producer_id", "PRODUCER-ID", align="right"),
        Column("state", "STATE"),
        Column("coordinator_id", "COORDINATOR", align="right"),
    )
)
DESCRIPTION = DocumentSpec(
    fields=(
        Field("transactional_id", "TRANSACTIONAL-ID"),
        Field("coordinator_id", "COORDINATOR"),
        Field("state", "STATE"),
        Field("producer_id", "PRODUCER-ID"),
        Field("producer_epoch", "PRODUCER-EPOCH"),
        Field("transaction_timeout_ms", "TIMEOUT-MS"),
        Field("transaction_start_time_ms", "START-TIME", get=lambda d: _instant(d.transaction_start_time_ms)),
        Field("duration_ms", "DURATION", get=lambda d: _age(d.duration_ms)),
        Field("partitions", "PARTITIONS", get=lambda d: ",".join(d.partitions) or None),
    )
)
PRODUCER_TABLE = TableSpec(
    (
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("producer_id", "PRODUCER-ID", align="right"),
        Column("producer_epoch", "EPOCH", align="right"),
        Column("last_sequence", "LAST-SEQUENCE", align="right"),
        Column("last_timestamp", "LAST-TIMESTAMP", get=lambda p: _instant(p.last_timestamp)),
        Column("current_transaction_start_offset", "TXN-START-OFFSET", align="right"),
        Column("coordinator_epoch", "COORDINATOR-EPOCH", align="right", wide=True),
    )
)
OPEN_TABLE = TableSpec(
    (
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("producer_id", "PRODUCER-ID", align="right"),
        Column("producer_epoch", "EPOCH", align="right"),
        Column("start_offset", "START-OFFSET", align="right"),
        Column("last_stable_offset", "LAST-STABLE-OFFSET", align="right"),
        Column("log_end_offset", "LOG-END-OFFSET", align="right"),
        Column("age_ms", "AGE", get=lambda t: _age(t.age_ms), align="right"),
        Column("transactional_id", "TRANSACTIONAL-ID"),
        Column("coordinator_state", "COORDINATOR-STATE"),
        Column("coordinator_epoch", "COORDINATOR-EPOCH", align="right", wide=True),
        Column("last_timestamp", "LAST-WRITE", get=lambda t: _instant(t.last_timestamp), wide=True),
    )
)


@click.group(cls=LazyGroup, aliases={"ls": "list"})
def transaction():
    """Transactions: list and describe them, find those that block partitions, abort one."""


STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence")


@transaction.command("list")
@click.option("--state", "states", multiple=True, type=click.Choice(STATES), help="Only transactions in this state (repeatable).")
@click.option("--producer-id", "producer_ids", multiple=True, type=int, metavar="ID", help="Only this producer's (repeatable).")
@click.option("--duration", metavar="DURATION", help="Only transactions open at least this long, e.g. 10m (kafka-transactions --duration-filter).")
@click.option("--id-pattern", type=RegexType(), metavar="REGEX", help="Only transactional ids this regular expression matches whole.")
@global_options
@pass_app
def list_(app: App, states: tuple[str, ...], producer_ids: tuple[int, ...], duration: str | None, id_pattern: re.Pattern[str] | None):
    """List the transactional ids the cluster's transaction coordinators hold.

    The filters are the brokers' own (ListTransactions): --duration from Kafka 3.8
    (KIP-994), --id-pattern from Kafka 4.1 (KIP-1152). On an older cluster kctl applies
    them to what the brokers list (the duration from each transaction's start time) and
    says so on stderr.

    \b
    Examples:
      kctl transaction list
      kctl transaction list --state Ongoing --duration 10m
      kctl transaction list --id-pattern 'payments-.*' -o json
    """
    from kctl.admin.cluster.transactions import list_transactions
    from kctl.timespec import parse_duration

    min_duration_ms = int(parse_duration(duration) * 1000) if duration is not None else None
    listing = list_transactions(app.session, states=states, producer_ids=producer_ids, min_duration_ms=min_duration_ms,
                                pattern=id_pattern.pattern if id_pattern is not None else None)
    app.out.table(listing.transactions, TRANSACTION_TABLE)
    if listing.filtered_by_kctl:
        filters = " and ".join(f"--{name}" for name in listing.filtered_by_kctl)
        app.note(f"a broker's ListTransactions predates {filters}: applied by kctl to what the brokers listed")


@transaction.command("describe")
@click.argument("transactional_ids", nargs=-1, required=True, metavar="TRANSACTIONAL-ID...")
@global_options
@pass_app
def describe(app: App, transactional_ids: tuple[str, ...]):
    """Show transactions: state, producer id and epoch, timeout, how long the open one has
    run and the partitions it has written to.

    \b
    Examples:
      kctl transaction describe payments-tx-1
      kctl transaction describe payments-tx-1 payments-tx-2 -o json
    """
    from kctl.admin.cluster.transactions import describe_transactions

    found, errors = describe_transactions(app.session, transactional_ids)
    report_documents(app, found, errors, DESCRIPTION, "describe transactions", len(set(transactional_ids)))


def _partitions(app: App, topics, regex):
    from kctl.admin.topics.offsets import parse_selector, resolve_partitions

    if not topics and regex is None:
        metadata = app.session.metadata("list partitions")
        return [(name, p) for name in sorted(metadata.topics) if not name.startswith("__") for p in sorted(metadata.topics[name].partitions)]
    return resolve_partitions(app.session, [parse_selector(t) for t in topics], regex, action="find transactions on")


@transaction.command("find-hanging")
@click.option("-t", "--topic", "topics", multiple=True, metavar="TOPIC[:PARTITIONS]", help="Look only at these partitions (repeatable); default every topic's.")
@click.option("-r", "--regex", type=RegexType(), help="Also topics whose whole name matches this regular expression.")
@click.option("--max-age", metavar="DURATION", help="Report transactions whose producer last wrote longer ago than this (default: the brokers' transaction.max.timeout.ms).")
@global_options
@pass_app
def find_hanging(app: App, topics: tuple[str, ...], regex: re.Pattern[str] | None, max_age: str | None):
    """Find open transactions that hold partitions back.

    A transaction open longer than any transaction may last (transaction.max.timeout.ms)
    will not be ended by its coordinator: read_committed consumers stop at its START-OFFSET
    (the partition's LAST-STABLE-OFFSET) and a compacted topic is not cleaned past it.
    TRANSACTIONAL-ID and COORDINATOR-STATE show what the coordinator knows of the
    producer ('-': nothing, a sure sign it hangs). Exit 2 when any is found, so scripts
    and monitors can alert on it; end one with `kctl transaction abort`.

    \b
    Examples:
      kctl transaction find-hanging
      kctl transaction find-hanging -t payments --max-age 5m
      kctl transaction find-hanging -o json
    """
    from kctl.admin.cluster.transactions import max_transaction_timeout_ms, open_transactions
    from kctl.errors import ExitCode
    from kctl.timespec import parse_duration

    limit_ms = int(parse_duration(max_age) * 1000) if max_age else max_transaction_timeout_ms(app.session)
    found = open_transactions(app.session, _partitions(app, topics, regex), limit_ms)
    app.out.table(found, OPEN_TABLE)
    if found:
        app.note(f"{len(found)} transaction(s) open longer than {limit_ms // 1000}s; abort with: kctl transaction abort TOPIC:PARTITION --producer-id ID")
        return int(ExitCode.CRITICAL)
    return None


@transaction.command("abort")
@click.argument("where", metavar="TOPIC:PARTITION")
@click.option("--producer-id", type=int, help="The producer whose transaction to abort (when several are open).")
@click.option("--start-offset", type=int, help="The open transaction's first offset (as `find-hanging` shows it).")
@yes_option
@global_options
@pass_app
def abort(app: App, where: str, producer_id: int | None, start_offset: int | None, yes: bool):
    """Abort an open transaction on a partition, as kafka-transactions abort does.

    kctl finds the open transaction on the partition (DescribeProducers; --producer-id
    or --start-offset choose when several are open), shows it, asks, and writes an ABORT
    marker for it: its records become invisible to read_committed consumers and the
    last stable offset moves past it. Aborting a transaction its producer is still
    writing makes that producer fail.

    \b
    Examples:
      kctl transaction abort payments:0                                 # asks first
      kctl transaction abort payments:0 --yes
    """
    from kctl.admin.cluster.transactions import abort as abort_transaction
    from kctl.admin.cluster.transactions import find_open
    from kctl.admin.topics.offsets import parse_selector, resolve_partitions

    selector = parse_selector(where)
    if len(selector.ranges) != 1 or selector.ranges[0][0] != selector.ranges[0][1]:
        raise UsageError(action=f"parse {where!r}", cause="expected one TOPIC:PARTITION, e.g. payments:0")
    (topic, partition), = resolve_partitions(app.session, [selector], action="abort a transaction on")
    producer = find_open(app.session, topic, partition, producer_id=producer_id, start_offset=start_offset)
    if app.stdin_is_tty and not yes:
        app.out.table([producer], PRODUCER_TABLE)
    app.confirm(
        f"Abort the transaction of producer {producer.producer_id} on {topic}:{partition} from offset {producer.current_transaction_start_offset}?",
        yes=yes, action=f"abort the transaction of producer {producer.producer_id} on {topic}:{partition}",
    )
    abort_transaction(app.session, producer)
    app.note(f"aborted the transaction of producer {producer.producer_id} (epoch {producer.producer_epoch}) on {topic}:{partition} from offset {producer.current_transaction_start_offset}")


TERMINATION_TABLE = TableSpec(
    (
        Column("transactional_id", "TRANSACTIONAL-ID"),
        Column("status", "STATUS"),
        Column("producer_id", "NEW-PRODUCER-ID", align="right"),
        Column("producer_epoch", "NEW-EPOCH", align="right"),
        Column("error", "ERROR", wide=True),
    )
)


@transaction.command("force-terminate")
@click.argument("transactional_ids", nargs=-1, required=True, metavar="TRANSACTIONAL-ID...")
@yes_option
@global_options
@pass_app
def force_terminate(app: App, transactional_ids: tuple[str, ...], yes: bool):
    """End the transactions of transactional ids by taking the ids over, as
    kafka-transactions forceTerminateTransaction (KIP-939) does.

    The coordinator hands the id to a new producer (InitProducerId): the producer that
    held it is fenced (its next write fails with PRODUCER_FENCED) and its ongoing
    transaction is aborted (ABORT markers written, the last stable offset moves on). For
    a transaction whose coordinator knows nothing of it, use `kctl transaction abort`.
    Needs WRITE on the transactional ids.

    \b
    Examples:
      kctl transaction force-terminate payments-tx-5 --yes
    """
    from kctl.admin.cluster.transactions import force_terminate as terminate

    ids = list(dict.fromkeys(transactional_ids))
    app.confirm(f"Terminate the transactions of {', '.join(ids)} (their producers are fenced)?", yes=yes,
                action="terminate transactions")
    results, errors = terminate(app.session, ids)
    report(app, results, errors, TERMINATION_TABLE, "terminate transactions")


@click.group(cls=LazyGroup, aliases={"ls": "list"})
def producer():
    """Producers the partition leaders know: ids, epochs, sequences, open transactions."""


@producer.command("list")
@click.argument("selectors", nargs=-1, required=True, metavar="TOPIC[:PARTITIONS]...")
@global_options
@pass_app
def producer_list(app: App, selectors: tuple[str, ...]):
    """List the active producers of partitions (DescribeProducers), as kafka-transactions
    describe-producers does, for whole topics or some partitions.

    TXN-START-OFFSET is the first offset of the producer's open transaction ('-': none).

    \b
    Examples:
      kctl producer list payments
      kctl producer list payments:0-2 orders -o json
    """
    from kctl.admin.cluster.transactions import list_producers
    from kctl.admin.topics.offsets import parse_selector, resolve_partitions

    pairs = resolve_partitions(app.session, [parse_selector(s) for s in selectors], action="list producers of")
    app.out.table(list_producers(app.session, pairs), PRODUCER_TABLE)
