"""kctl doctor: what is wrong with the cluster, worst first (kctl.admin.doctor)."""

from __future__ import annotations

import click

from kctl.cli._app import App
from kctl.cli._options import global_options, pass_app
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
        Field("unread", "NOT-READ", get=lambda e: "; ".join(f"{part}: {why}" for part, why in e.unread.items()) or None),
    ),
    sections=(Section("findings", "FINDINGS", FINDINGS_TABLE),),
)


def _evidence(figures: dict) -> str:
    """The evidence in a table cell: name=value, structures as JSON."""
    from kctl.output.render import dumps

    return ", ".join(f"{name}={value if isinstance(value, str | int | float) else dumps(value)}" for name, value in figures.items())


@click.command("doctor")
@click.option("--transaction-age", metavar="DURATION",
              help="A transaction open longer than this hangs (default: the brokers' transaction.max.timeout.ms).")
@global_options
@pass_app
def doctor(app: App, transaction_age):
    """Find what is wrong with the cluster: each problem, how bad, the evidence, and the
    command to run next.

    Reads the cluster through the Kafka protocol alone (no JMX, no metrics reporter)
    and reports each finding with its severity, where it is, what it is, and NEXT: a
    kctl command that shows more or fixes it (EVIDENCE, the figures seen, and WHY with
    -o wide; all of it with -o json). What it looks for (CHECK names, stable for
    scripts):

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
                disk-nearly-full        under 15% free
                voter-behind            a controller 30 s and more behind the leader
      info      single-replica          on one broker, as it must be
                not-supported           a part the cluster has no API for (the
                                        bundled broker's controller quorum)

    A part the cluster cannot answer (an API it lacks, an ACL) is named under NOT-READ,
    and the rest is examined. Exit status, as Nagios reads it: 0 OK (info findings at
    most), 1 WARNING, 2 CRITICAL (a critical or high finding), 3 UNKNOWN (a part could
    not be read and nothing critical was found); 69 when no broker can be reached.

    \b
    Examples:
      kctl doctor
      kctl doctor -o wide
      kctl doctor --transaction-age 10m
      kctl doctor -o json | jq -r '.findings[] | select(.severity == "critical") | .next'
    """
    from kctl.admin.doctor.examine import examine
    from kctl.cli._watch import VERDICT_EXIT
    from kctl.timespec import parse_duration

    age_ms = int(parse_duration(transaction_age) * 1000) if transaction_age else None
    examination = examine(app.session, transaction_age_ms=age_ms)
    app.out.document(examination, DOCTOR_DOCUMENT)
    counts = {s: sum(1 for f in examination.findings if f.severity == s) for s in ("critical", "high", "warning", "info")}
    said = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no findings"
    app.note(f"{examination.status}: {said} in {examination.seconds:.1f} s")
    click.get_current_context().exit(VERDICT_EXIT[examination.status])
