"""The detections of `kctl doctor` that need two looks at the cluster, some time apart
(--sample, --watch): groups stalled, rewound, falling behind or stuck rebalancing (Burrow's
judgements, from committed offsets alone), a last stable offset that does not move, ISRs
that change, topics nobody writes to. Like kctl.admin.doctor.checks, each is a function
of facts already read, tested on facts made by hand as well as on real clusters."""

from __future__ import annotations

from collections.abc import Mapping

from kctl.admin.doctor.checks import SHOWN, _command, _duration, _names
from kctl.admin.doctor.findings import INFO, WARNING, Finding
from kctl.admin.groups.models import GroupLag, kctl_group
from kctl.values import Value

# Group states that are a rebalance under way (classic: PreparingRebalance,
# CompletingRebalance; consumer and streams groups: Assigning, Reconciling). A group found
# in the same one twice is stuck in it.
REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


class Sample(Value):
    """What one look at the cluster saw that a later look is compared with."""

    __slots__ = ("taken", "isr", "log_end", "stable", "groups")

    def __init__(self, *, taken: float, isr: Mapping[tuple[str, int], tuple[int, ...]],
                 log_end: Mapping[tuple[str, int], int | None], stable: Mapping[tuple[str, int], int | None],
                 groups: Mapping[str, GroupLag]):
        # time.monotonic() when it was taken.
        self.taken = taken
        self.isr = dict(isr)
        # Each partition's log end offset (high watermark) and last stable offset.
        self.log_end = dict(log_end)
        self.stable = dict(stable)
        self.groups = dict(groups)


def compare(first: Sample, second: Sample) -> list[Finding]:
    """Every finding the two samples show, `second` the later."""
    window = max(second.taken - first.taken, 0.001)
    return (groups(first, second, window) + stuck_rebalances(first, second, window) + stuck_stable_offsets(first, second, window)
            + isr_changes(first, second, window) + no_writes(first, second, window))


def groups(first: Sample, second: Sample, window: float) -> list[Finding]:
    """Burrow's judgements of each group with members, from its committed offsets in the
    two samples: stalled (lag, and a committed offset that did not move), rewound (a
    committed offset that went back), falling behind (lag grew while it consumed)."""
    found = []
    for name, now in sorted(second.groups.items()):
        before = first.groups.get(name)
        if before is None or kctl_group(name) is not None:
            continue
        earlier = {(p.topic, p.partition): p for p in before.partitions}
        pairs = [(earlier[(p.topic, p.partition)], p) for p in now.partitions if (p.topic, p.partition) in earlier]
        rewound = [(a, b) for a, b in pairs if a.committed is not None and b.committed is not None and b.committed < a.committed]
        if rewound:
            found.append(Finding(
                severity=WARNING, check="group-rewound", resource=f"group {name}",
                summary=f"group {name}'s committed offset went back on {len(rewound)} partition(s) in {_duration(window)}",
                evidence={"partitions": ", ".join(f"{b.topic}:{b.partition} {a.committed}->{b.committed}" for a, b in rewound[:SHOWN]),
                          "count": len(rewound), "window_seconds": round(window, 1)},
                why="its consumers will process those records again (a reset, or a consumer committing an old position)",
                next=_command("group", "describe", name)))
        if not now.members or not before.members:
            continue
        stalled = [b for a, b in pairs if a.lag and b.lag and a.committed is not None and a.committed == b.committed]
        if stalled:
            found.append(Finding(
                severity=WARNING, check="group-stalled", resource=f"group {name}",
                summary=f"group {name} has members but its committed offset did not move in {_duration(window)} on "
                        f"{len(stalled)} partition(s) with lag",
                evidence={"partitions": _names_of(stalled), "lag": sum(p.lag or 0 for p in stalled), "members": now.members,
                          "window_seconds": round(window, 1)},
                why="its consumers are up but not getting through the records (stuck on one, or not committing)",
                next=_command("group", "describe", name)))
            continue
        consumed = sum(b.committed - a.committed for a, b in pairs if a.committed is not None and b.committed is not None)
        lag_before = sum(a.lag or 0 for a, _b in pairs)
        lag_after = sum(b.lag or 0 for _a, b in pairs)
        if consumed > 0 and lag_after > lag_before and lag_before > 0:
            produced = sum((b.log_end or 0) - (a.log_end or 0) for a, b in pairs)
            found.append(Finding(
                severity=WARNING, check="lag-growing", resource=f"group {name}",
                summary=f"group {name} fell further behind in {_duration(window)}: lag {lag_before:,} -> {lag_after:,} records",
                evidence={"lag_before": lag_before, "lag_after": lag_after, "consumed_per_second": round(consumed / window, 1),
                          "produced_per_second": round(produced / window, 1), "window_seconds": round(window, 1)},
                why="its consumers read slower than producers write: the lag, and the age of its next record, grow",
                next=_command("group", "lag", name, "--time-lag", "record")))
    return found


def _names_of(rows) -> str:
    shown = sorted(f"{p.topic}:{p.partition}" for p in rows)
    return ", ".join(shown[:SHOWN]) + (f", ... ({len(shown)} in all)" if len(shown) > SHOWN else "")


def stuck_rebalances(first: Sample, second: Sample, window: float) -> list[Finding]:
    """Groups found in the same rebalancing state in both samples."""
    return [Finding(
        severity=WARNING, check="rebalance-stuck", resource=f"group {name}",
        summary=f"group {name} has been {now.state} for at least {_duration(window)}",
        evidence={"state": now.state, "members": now.members, "window_seconds": round(window, 1)},
        why="no member consumes while the group rebalances: a member that does not rejoin holds everyone up",
        next=_command("group", "describe", name))
        for name, now in sorted(second.groups.items())
        if now.state in REBALANCING and name in first.groups and first.groups[name].state == now.state]


def stuck_stable_offsets(first: Sample, second: Sample, window: float) -> list[Finding]:
    """Partitions whose last stable offset stayed where it was, below the log end, in both
    samples: an open transaction holds read_committed consumers there (one finding per
    topic; `hanging-transaction` names the producer once it is older than the longest a
    transaction may last)."""
    by_topic: dict[str, list[tuple[int, int, int]]] = {}
    for key, stable in sorted(second.stable.items()):
        end = second.log_end.get(key)
        if stable is None or end is None or stable >= end or first.stable.get(key) != stable:
            continue
        by_topic.setdefault(key[0], []).append((key[1], stable, end))
    return [Finding(
        severity=WARNING, check="lso-stuck", resource=f"topic {topic}",
        summary=f"{len(rows)} partition(s) of {topic}: the last stable offset did not move in {_duration(window)}",
        evidence={"partitions": _names(p for p, _s, _e in rows), "last_stable_offset": {str(p): s for p, s, _e in rows[:SHOWN]},
                  "log_end_offset": {str(p): e for p, _s, e in rows[:SHOWN]}, "window_seconds": round(window, 1)},
        why="read_committed consumers stop at an open transaction's first record until it commits or aborts",
        next=_command("producer", "list", f"{topic}:{','.join(str(p) for p, _s, _e in rows[:SHOWN])}"))
        for topic, rows in sorted(by_topic.items())]


def isr_changes(first: Sample, second: Sample, window: float) -> list[Finding]:
    """Partitions whose in-sync replicas changed between the samples (one finding per
    topic): replicas falling out of sync and back."""
    by_topic: dict[str, list[tuple[int, tuple[int, ...], tuple[int, ...]]]] = {}
    for key, isr in sorted(second.isr.items()):
        before = first.isr.get(key)
        if before is not None and set(before) != set(isr):
            by_topic.setdefault(key[0], []).append((key[1], before, isr))
    return [Finding(
        severity=WARNING, check="isr-flapping", resource=f"topic {topic}",
        summary=f"the ISR of {len(rows)} partition(s) of {topic} changed in {_duration(window)}",
        evidence={"partitions": _names(p for p, _a, _b in rows),
                  "isr": {str(p): {"before": list(a), "after": list(b)} for p, a, b in rows[:SHOWN]}, "window_seconds": round(window, 1)},
        why="replicas fall out of sync and back: a slow or overloaded broker, or a network between them",
        next=_command("partition", "list", topic, "--under-replicated")) for topic, rows in sorted(by_topic.items())]


def no_writes(first: Sample, second: Sample, window: float) -> list[Finding]:
    """Topics (not internal) none of whose log ends moved between the samples: one info
    finding for the cluster."""
    moved: dict[str, bool] = {}
    for key, end in second.log_end.items():
        if key[0].startswith("__") or key not in first.log_end:
            continue
        moved[key[0]] = moved.get(key[0], False) or end != first.log_end[key]
    idle = sorted(topic for topic, written in moved.items() if not written)
    if not idle:
        return []
    return [Finding(
        severity=INFO, check="no-writes", resource="cluster",
        summary=f"{len(idle)} topic(s) had no writes in {_duration(window)}",
        evidence={"topics": len(idle), "examples": ", ".join(idle[:SHOWN]), "window_seconds": round(window, 1)},
        why="a producer that stopped, or a topic no longer used",
        next=_command("topic", "describe", idle[0]))]
