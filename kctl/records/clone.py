"""`kctl topic clone`: a topic made again under another name, or on another cluster, with
its partitions, replication factor and the configs set on it (DescribeConfigs' source
DYNAMIC_TOPIC_CONFIG; defaults stay the target's), optionally its records (`record copy`,
partitions kept) and the committed offsets of the groups reading it, mapped to the copy.

Mapping a group's offset: a committed offset C on a source partition becomes the target
offset of the first record copied at or after C (learnt from the copy's delivery reports,
kctl.records.copy's tracking), or the target's log end when C is past the last record
copied. Offsets do not simply carry over: retention, compaction and transaction markers
make a source offset and a target offset of the same record differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kctl.admin.client.kafka import TOPIC
from kctl.admin.client.session import AdminSession
from kctl.errors import KctlError, UsageError


@dataclass(frozen=True, kw_only=True)
class GroupCloned:
    group: str
    # Target partition -> the offset committed there.
    offsets: dict[int, int]
    # committed | planned | failed (the coordinator refused: the group has members, say)
    status: str
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class CloneReport:
    source: str
    target: str
    partitions: int
    # None: the target cluster's default.replication.factor.
    replication_factor: int | None
    configs: dict[str, str]
    # planned | created
    status: str
    records: int | None = None
    groups: tuple[GroupCloned, ...] = field(default_factory=tuple)


@dataclass(frozen=True, kw_only=True)
class ClonePlan:
    source: str
    target: str
    partitions: int
    replication_factor: int | None
    configs: dict[str, str]
    # Why the replication factor is the target's default, when it is.
    note: str | None
    # The groups reading the source: {group: {partition: committed offset}}.
    groups: dict[str, dict[int, int]]


def plan_clone(source: AdminSession, target: AdminSession, src: str, dst: str, *, replication_factor: int | None = None,
               with_groups: bool = False) -> ClonePlan:
    action = f"clone topic {src}"
    layout = source.metadata(action, [src]).topics.get(src)
    if layout is None or not layout.partitions:
        from kctl.admin.client.errors import missing_topic

        raise missing_topic(src, layout.error if layout is not None else None, action)
    existing = target.metadata(action, [dst]).topics.get(dst)
    if existing is not None and existing.partitions:
        from kctl.errors import AlreadyExistsError

        raise AlreadyExistsError(action=action, cause=f"topic {dst} already exists")
    found, _unread = source.kafka.describe_configs([(TOPIC, src)], action)
    configs = {name: entry.value for entry_set in found.values() for name, entry in entry_set.items()
               if entry.source == "DYNAMIC_TOPIC_CONFIG" and entry.value is not None and not entry.sensitive}
    rf: int | None = replication_factor or max(len(p.replicas) for p in layout.partitions.values())
    brokers = len(target.metadata(action, []).brokers)
    note = None
    if replication_factor is None and rf is not None and rf > brokers:
        note = f"{src} has {rf} replicas per partition and the target cluster {brokers} broker(s): its default replication factor is used"
        rf = None
    groups: dict[str, dict[int, int]] = {}
    if with_groups:
        from kctl.admin.groups.groups import committed_offsets
        from kctl.admin.groups.protocol import list_groups

        ids = [g["group_id"] for g in list_groups(source) if g.get("group_type") != "share"]
        offsets, _errors = committed_offsets(source, ids)
        for group, committed in offsets.items():
            mine = {p: o for (t, p), (o, _meta) in committed.items() if t == src}
            if mine:
                groups[group] = mine
    return ClonePlan(source=src, target=dst, partitions=len(layout.partitions), replication_factor=rf, configs=configs,
                     note=note, groups=groups)


def clone(source: AdminSession, target: AdminSession | None, plan: ClonePlan, *, with_records: bool, on_batch=None) -> CloneReport:
    """Create the target topic; copy its records and map the groups' offsets when asked."""
    from kctl.admin.topics.topics import NewTopicSpec, create_topics

    writer = target or source
    spec = NewTopicSpec(name=plan.target, partitions=plan.partitions, replication_factor=plan.replication_factor, config=plan.configs)
    _created, errors = create_topics(writer, [spec])
    if errors:
        raise next(iter(errors.values()))
    records = None
    tracked: dict[tuple[int, int], int] = {}
    if with_records:
        from kctl.admin.topics.offsets import PartitionSelector
        from kctl.records.copy import CopyOptions, copy
        from kctl.records.position import EARLIEST, Position, parse_to

        track = {p: tuple(sorted({o for offsets in plan.groups.values() for q, o in offsets.items() if q == p}))
                 for p in range(plan.partitions)}
        options = CopyOptions(source=PartitionSelector(topic=plan.source), target=plan.target, start=Position(EARLIEST),
                              end=parse_to("end"), group=f"kctl-clone-{plan.source}-{plan.target}",
                              track={p: o for p, o in track.items() if o})
        copied = copy(source, target, options, on_batch=on_batch)
        records, tracked = copied.records, copied.tracked
    groups = _commit_groups(writer, plan, tracked) if plan.groups else ()
    return CloneReport(source=plan.source, target=plan.target, partitions=plan.partitions, replication_factor=plan.replication_factor,
                       configs=plan.configs, status="created", records=records, groups=groups)


def _commit_groups(writer: AdminSession, plan: ClonePlan, tracked: dict[tuple[int, int], int]) -> tuple[GroupCloned, ...]:
    """Each group's offsets on the target: the tracked place of its source offset, else the
    target's log end (an offset past everything copied, or no records copied)."""
    from kctl.admin.groups.protocol import offset_commit
    from kctl.admin.topics.offsets import log_offsets
    from kctl.messages.errors import error_name

    ends = {p: end for (_t, p), (_start, end, _epoch) in log_offsets(writer, [(plan.target, p) for p in range(plan.partitions)],
                                                                      "read_committed").items()}
    out = []
    for group, committed in sorted(plan.groups.items()):
        offsets = {p: tracked.get((p, c), ends.get(p) or 0) for p, c in committed.items()}
        try:
            codes = offset_commit(writer, group, {(plan.target, p): o for p, o in offsets.items()},
                                  f"commit offsets of group {group} for {plan.target}")
        except KctlError as exc:
            out.append(GroupCloned(group=group, offsets=offsets, status="failed", error=exc.message))
            continue
        bad = [code for code in codes.values() if code]
        if bad:
            out.append(GroupCloned(group=group, offsets=offsets, status="failed",
                                   error=f"{error_name(bad[0])} (a group with members takes no offsets from outside)"))
        else:
            out.append(GroupCloned(group=group, offsets=offsets, status="committed"))
    return tuple(out)


def check_options(with_groups: bool, with_records: bool) -> None:
    if with_groups and not with_records:
        raise UsageError("unable to clone: --with-groups maps the groups' offsets onto the copied records; give --with-records too")
