"""kctl doctor: what is wrong with the cluster, worst first (kctl.admin.doctor)."""

from __future__ import annotations

import re
import time

import click

from kctl.cli._app import App
from kctl.cli._options import RegexType, global_options, pass_app
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec

FINDINGS_TABLE = TableSpec((
    Column("severity", "SEVERITY"),
    Column("check", "CHECK"),
    Column("resource", "RESOURCE"),
    Column("summary", "SUMMARY"),
    Column("next", "NEXT"),
    Column("why", "WHY", wide=True),
    Column("evidence", "EVIDENCE", wide=True, get=lambda f: _evidence(f.evidence)),
))
DOCTOR_DOCUMENT = DocumentSpec(
    fields=(
        Field("status", "STATUS"),
        Field("findings", "FINDINGS", get=lambda e: len(e.findings)),
        Field("window_seconds", "WINDOW-SECONDS"),
        Field("unread", "NOT-READ", get=lambda e: "; ".join(f"{part}: {why}" for part, why in e.unread.items()) or None),
    ),
    sections=(Section("findings", "FINDINGS", FINDINGS_TABLE),),
)


def _evidence(figures: dict) -> str:
    """The evidence in a table cell: name=value, structures as JSON."""
    from kctl.output.render import dumps

    return ", ".join(f"{name}={value if isinstance(value, str | int | float) else dumps(value)}" for name, value in figures.items())


@click.command("doctor")
@click.argument("scope", required=False, type=click.Choice(["group", "topic", "broker"]), metavar="[group|topic|broker NAME]")
@click.argument("name", required=False, metavar=" ")
@click.option("--sample", metavar="DURATION",
              help="Look twice, this far apart, and judge what moved: groups stalled or falling behind, stuck rebalances and "
                   "last stable offsets, ISR changes, topics without writes.")
@click.option("--ignore-group", "ignore_groups", multiple=True, type=RegexType(), metavar="REGEX",
              help="Leave groups whose whole id matches out of the group checks (repeatable): abandoned or batch groups "
                   "a monitor should not warn of.")
@click.option("--transaction-age", metavar="DURATION",
              help="A transaction open longer than this hangs (default: the brokers' transaction.max.timeout.ms).")
@click.option("-w", "--watch", is_flag=True, help="Examine again every --interval until Ctrl-C, saying which findings are new and "
                                                  "which are gone (exit: the last examination's status).")
@click.option("--interval", metavar="DURATION", default="30s", show_default=True, help="Time between examinations with --watch.")
@click.option("--max-wait", type=click.FloatRange(min=0), metavar="SECONDS", help="With --watch: stop after this long with the last status.")
@global_options
@pass_app
def doctor(app: App, scope: str | None, name: str | None, sample: str | None, ignore_groups: tuple[re.Pattern[str], ...], transaction_age: str | None, watch: bool, interval: str, max_wait: float | None):
    """Find what is wrong with the cluster: each problem, how bad, the evidence, and the
    command to run next.

    Reads the cluster through the Kafka protocol alone (no JMX, no metrics reporter)
    and reports each finding with its severity, where it is, what it is, and NEXT: a
    kctl command that shows more or fixes it (EVIDENCE, the figures seen, and WHY with
    -o wide; all of it with -o json). `group G`, `topic T` or `broker N` examine only
    what concerns it (a group's topics; a broker's replicas, disks and skew). What it
    looks for (CHECK names, stable for scripts):

    \b
      critical  offline-partitions      partitions without a leader
                elr-unrecoverable       empty ISR, no eligible leader replica
                under-min-isr           acks=all writes are refused
                records-lost-unread     retention deleted records a group had not read
                log-dir-offline         a broker's log directory failed
                no-quorum-leader        the controller quorum has no leader
      high      broker-down             a broker not alive holds replicas
                unclean-leader-election a topic allows it (acknowledged records lost)
                min-isr-not-below-rf    one replica down and acks=all writes fail
                lag-nears-retention     a group's next record is 80% of retention.ms old
                hanging-transaction     open past transaction.max.timeout.ms (or
                                        --transaction-age): read_committed reads stop
                disk-nearly-full        under 5% of a log directory's disk free
      warning   under-replicated, at-min-isr, leader-not-preferred,
                single-replica          one replica on a cluster of several brokers
                lag-nears-retention     50% of retention.ms old
                lag-without-members     lag, and no member to consume it
                subscribed-topic-missing  members subscribe to a topic that does not exist
                replica-skew, leader-skew, disk-skew
                                        a broker above 1.10x the mean
                versions-differ         brokers answer different API versions
                disk-nearly-full        under 15% free
                voter-behind            a controller 30 s and more behind the leader
                log-dir-cordoned        every log dir of a broker cordoned (KIP-1066):
                                        it takes no new replica
      info      single-replica          on one broker, as it must be
                large-partition         a replica over 50 GiB
                log-dir-cordoned        one log dir of several cordoned
                quotas-throttle         client quotas set: the lowest of each kind
                not-supported           a part the cluster has no API for (the
                                        bundled broker's controller quorum)

    With --sample or --watch, between two looks (Burrow's judgements for groups):

    \b
      warning   group-stalled           members, lag, and a committed offset that
                                        did not move
                group-rewound           a committed offset went back
                lag-growing             lag grew while the group consumed
                rebalance-stuck         the same rebalancing state in both looks
                lso-stuck               the last stable offset did not move, below
                                        the log end (an open transaction)
                isr-flapping            a partition's ISR changed
      info      no-writes               topics whose log end did not move

    A part the cluster cannot answer (an API it lacks, an ACL) is named under NOT-READ,
    and the rest is examined. Exit status, as Nagios reads it: 0 OK (info findings at
    most), 1 WARNING, 2 CRITICAL (a critical or high finding), 3 UNKNOWN (a part could
    not be read and nothing critical was found); 69 when no broker can be reached, 5
    when the group, topic or broker named does not exist. Under --watch an examination
    that fails is one line, judged CRITICAL (no broker reached) or UNKNOWN, and the next
    one tries again.

    \b
    Examples:
      kctl doctor  # exit 1
      kctl doctor -o wide  # exit 1
      kctl doctor group billing  # exit 1
      kctl doctor broker 1 -o json
      kctl doctor --sample 5s  # exit 1
      kctl doctor --ignore-group 'billing|batch-.*'
      kctl doctor --transaction-age 10m  # exit 1
      kctl doctor -o json | jq -r '.findings[] | select(.severity == "critical") | .next'
      kctl doctor --watch --interval 1m  # Ctrl-C stops it (exit 1)
    """
    from kctl.admin.doctor.examine import CLUSTER, Scope, examine
    from kctl.cli._watch import VERDICT_EXIT, failed, show, watch_loop
    from kctl.timespec import parse_duration

    if scope is not None and name is None:
        raise click.UsageError(f"doctor {scope} needs a name: kctl doctor {scope} NAME")
    if scope == "broker" and not (name or "").isdigit():
        raise click.UsageError(f"doctor broker needs a broker id (a number), not {name!r}")
    age_ms = int(parse_duration(transaction_age) * 1000) if transaction_age else None
    window = parse_duration(sample) if sample else None
    every = parse_duration(interval)
    where = CLUSTER if scope is None or name is None else Scope(kind=scope, name=name)
    last: dict = {}

    def once() -> int:
        from kctl.errors import KctlError

        try:
            examination, taken = examine(app.session, transaction_age_ms=age_ms, scope=where, previous=last.get("sample"),
                                         sampled=bool(window or watch), ignore_groups=ignore_groups)
        except KctlError as exc:
            if not watch:
                raise
            # Under --watch a pass that fails is said and judged, and the next one tries again.
            return failed(app, exc)
        show(app, examination, DOCTOR_DOCUMENT, watch=watch)
        if "findings" in last:
            _say_changes(app, last["findings"], examination.findings)
        last.update(sample=taken, findings=examination.findings)
        counts = {s: sum(1 for f in examination.findings if f.severity == s) for s in ("critical", "high", "warning", "info")}
        said = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no findings"
        app.note(f"{examination.status}: {said} in {examination.seconds:.1f} s")
        return VERDICT_EXIT[examination.status]

    if window:
        _first, last["sample"] = examine(app.session, transaction_age_ms=age_ms, scope=where, sampled=True, ignore_groups=ignore_groups)
        app.note(f"looking again in {sample}")
        time.sleep(window)
    status = watch_loop(app, once, watch=watch, interval=every, exit_when_healthy=False, max_wait=max_wait)
    click.get_current_context().exit(status)


def _say_changes(app: App, before: list, after: list) -> None:
    """Under --watch: the findings new since the last examination and those gone."""
    def key(f):
        return (f.severity, f.check, f.resource)

    earlier, now = {key(f): f for f in before}, {key(f): f for f in after}
    for k in sorted(set(now) - set(earlier)):
        app.note(f"new: {' '.join(k)}: {now[k].summary}")
    for k in sorted(set(earlier) - set(now)):
        app.note(f"gone: {' '.join(k)}")
