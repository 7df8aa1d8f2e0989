"""The detections of `kctl doctor` about how the cluster's load and versions spread over its
brokers: replicas, leaders or bytes piled on some brokers (above SKEW times the mean, as
Cruise Control's balance thresholds judge), partitions grown very large, brokers answering
different API versions. Functions of facts already read, like kctl.admin.doctor.checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kctl.admin.cluster.layout import replicas_and_leaders
from kctl.admin.cluster.logdirs import LogDir, ReplicaSize
from kctl.admin.cluster.partitions import PartitionSnapshot
from kctl.admin.doctor.checks import SHOWN, _command, _names
from kctl.admin.doctor.findings import INFO, WARNING, Finding

# A broker holding more than this times the mean of replicas, leaders or bytes is skewed
# (Cruise Control's default balance threshold)...
SKEW = 1.10
# ... by at least this much more than the mean: on a small cluster one replica more is
# not a skew, nor a few bytes on an empty one.
SKEW_MIN_COUNT = 2
SKEW_MIN_BYTES = 1 << 30
# A partition replica larger than this takes long to move or rebuild after a failure.
LARGE_PARTITION_BYTES = 50 << 30


def skew(snapshot: PartitionSnapshot, dirs: Sequence[LogDir], *, min_bytes: int = SKEW_MIN_BYTES) -> list[Finding]:
    """Brokers (alive) above SKEW times the mean of replicas, of leaders, or of bytes on
    disk: one finding per measure, naming the brokers above."""
    live = sorted(snapshot.live_brokers)
    if len(live) < 2:
        return []
    replicas, leaders = replicas_and_leaders(snapshot.partitions, live)
    disk = dict.fromkeys(live, 0)
    for d in dirs:
        if d.broker in disk and d.error is None:
            disk[d.broker] += d.size_bytes
    found = []
    for measure, counts, minimum, fix in (
            ("replica", replicas, SKEW_MIN_COUNT, _command("cluster", "balance")),
            ("leader", leaders, SKEW_MIN_COUNT, _command("replication", "elect-leaders", "--preferred", "--all")),
            ("disk", disk, min_bytes, _command("cluster", "balance"))):
        mean = sum(counts.values()) / len(counts)
        over = {b: n for b, n in counts.items() if n > mean * SKEW and n - mean >= minimum}
        if not over:
            continue
        worst = max(over, key=lambda b: over[b])
        unit = "bytes" if measure == "disk" else f"{measure}s"
        found.append(Finding(
            severity=WARNING, check=f"{measure}-skew", resource=f"broker {worst}" if len(over) == 1 else "cluster",
            summary=f"broker(s) {_names(over)} hold more than {SKEW:.2f}x the mean of {unit} "
                    f"(broker {worst}: {over[worst] / mean:.2f}x)" if mean else f"broker(s) {_names(over)} hold all the {unit}",
            evidence={"brokers_above": sorted(over), "by_broker": {str(b): n for b, n in counts.items()}, "mean": round(mean, 1),
                      "threshold": SKEW},
            why="the brokers above the mean do more of the work (and fill first) while the others idle",
            next=fix))
    return found


def large_partitions(replicas: Sequence[ReplicaSize], *, limit: int = LARGE_PARTITION_BYTES) -> list[Finding]:
    """Partitions with a replica larger than `limit`: one info finding per topic."""
    by_topic: dict[str, dict[int, int]] = {}
    for r in replicas:
        if r.size_bytes > limit and not r.is_future:
            sizes = by_topic.setdefault(r.topic, {})
            sizes[r.partition] = max(sizes.get(r.partition, 0), r.size_bytes)
    return [Finding(
        severity=INFO, check="large-partition", resource=f"topic {topic}",
        summary=f"{len(sizes)} partition(s) of {topic} hold more than {limit / (1 << 30):.0f} GiB",
        evidence={"partitions": _names(sizes), "largest_bytes": max(sizes.values()),
                  "bytes": {str(p): n for p, n in sorted(sizes.items())[:SHOWN]}},
        why="a large partition takes long to move, and to rebuild on a replacement broker",
        next=_command("broker", "log-dirs", "-t", topic, "--replicas")) for topic, sizes in sorted(by_topic.items())]


def versions_differ(versions: Mapping[int, Mapping[int, tuple[int, int]]]) -> list[Finding]:
    """Brokers that answer different API versions (ApiVersions: a rolling upgrade not
    finished, or a broker left behind): one finding naming the APIs that differ."""
    from kctl.messages import api_keys

    if len({tuple(sorted(v.items())) for v in versions.values()}) < 2:
        return []
    keys = sorted({k for v in versions.values() for k in v})
    differing = {}
    for key in keys:
        ranges = {broker: v.get(key) for broker, v in sorted(versions.items())}
        if len(set(ranges.values())) > 1:
            differing[api_keys.name(key)] = {str(b): "-" if r is None else f"{r[0]}-{r[1]}" for b, r in ranges.items()}
    return [Finding(
        severity=WARNING, check="versions-differ", resource="cluster",
        summary=f"brokers answer different versions of {len(differing)} API(s): not all run the same Kafka release",
        evidence={"apis": dict(list(differing.items())[:SHOWN]), "brokers": len(versions)},
        why="clients and brokers use the oldest version every broker speaks; features wait until all run the same release",
        next=_command("broker", "list"))]

