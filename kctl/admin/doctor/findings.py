"""A finding: one problem, where it is, the figures that show it, why it matters and the
kctl command to run next; and the verdict of several (Nagios' convention, as `cluster
health` has it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kctl.admin.cluster.health import CRITICAL as CRITICAL_STATUS
from kctl.admin.cluster.health import OK, STATUS_ORDER, UNKNOWN
from kctl.admin.cluster.health import WARNING as WARNING_STATUS
from kctl.values import Value

CRITICAL, HIGH, WARNING, INFO = "critical", "high", "warning", "info"
# Worst first.
SEVERITIES = (CRITICAL, HIGH, WARNING, INFO)
# The verdict: critical and high findings need acting on now (CRITICAL), warnings soon
# (WARNING); info findings leave the cluster OK.
# `cluster health`'s verdicts (kctl.admin.cluster.health), in its order.
STATUS_OF = {CRITICAL: CRITICAL_STATUS, HIGH: CRITICAL_STATUS, WARNING: WARNING_STATUS, INFO: OK}


class Finding(Value):
    """One problem kctl doctor found."""

    __slots__ = ("severity", "check", "resource", "summary", "evidence", "why", "next")

    def __init__(self, *, severity: str, check: str, resource: str, summary: str, evidence: Mapping[str, Any], why: str,
                 next: str | None):  # noqa: A002 - the field's name in the JSON output
        self.severity = severity
        # What found it, stable for scripts: "under-min-isr", "lag-passes-retention", ...
        self.check = check
        # Where, in kctl's words: "topic orders", "group billing on orders:3", "broker 2", "cluster".
        self.resource = resource
        self.summary = summary
        # The figures it saw, by name.
        self.evidence = dict(evidence)
        self.why = why
        # A kctl command that shows more or fixes it, as it runs.
        self.next = next


def ordered(findings: Sequence[Finding]) -> list[Finding]:
    """Worst first; within a severity, by check and resource."""
    return sorted(findings, key=lambda f: (SEVERITIES.index(f.severity), f.check, f.resource))


def status(findings: Sequence[Finding], *, complete: bool = True) -> str:
    """The verdict: the worst finding's, UNKNOWN when a check could not read what it needs
    and nothing worse was found."""
    worst = max((STATUS_ORDER.index(STATUS_OF[f.severity]) for f in findings), default=0)
    if not complete and worst < STATUS_ORDER.index(CRITICAL_STATUS):
        return UNKNOWN
    return STATUS_ORDER[worst]
