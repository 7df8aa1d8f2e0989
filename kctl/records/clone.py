"""`kctl topic clone`: a topic made again under another name, or on another cluster, with
its partitions, replication factor and the configs set on it (DescribeConfigs' source
DYNAMIC_TOPIC_CONFIG; defaults stay the target's), optionally its records (`record copy`,
partitions kept) and the committed offsets of the groups reading it, mapped to the copy.

Mapping a group's offset: a committed offset C on a source partition becomes the target
offset of the first record copied at or after C (learnt from the copy's delivery reports,
kctl.records.copy's tracking), or the target's log end when C is past the last record
copied. Offsets do not simply carry over: retention, compaction and transaction markers
make a source offset and a target offset of the same record differ.

The record copy keeps its progress in a group of kctl's own, kctl-clone-SOURCE-TARGET
(kctl.admin.groups.models.KCTL_GROUPS), deleted once the clone is done; a clone that
fails or is interrupted says what it left and how to go on or remove it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kctl.admin.client.kafka import TOPIC
from kctl.admin.client.session import AdminSession
from kctl.errors import ExitCode, KctlError, Resource, UsageError


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
    # The bookkeeping group of the record copy, when it could not be deleted.
    left_behind: str | None = None


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
    action = f"clone topic {src} to {dst}"
    layout = source.kafka.metadata([src], action, topic_ids=False).topics.get(src)
    if layout is None or not layout.partitions:
        from kctl.admin.client.errors import missing_topic

        raise missing_topic(src, layout.error if layout is not None else None, action, named=True)
    answer = target.kafka.metadata([dst], action, topic_ids=False)
    existing = answer.topics.get(dst)
    if existing is not None and existing.partitions:
        from kctl.errors import AlreadyExistsError

        raise AlreadyExistsError(action=action, cause=f"topic {dst} already exists", resource=Resource("topic", dst))
    found, _unread = source.kafka.describe_configs([(TOPIC, src)], action)
    configs = {name: entry.value for entry_set in found.values() for name, entry in entry_set.items()
               if entry.source == "DYNAMIC_TOPIC_CONFIG" and entry.value is not None and not entry.sensitive}
    rf: int | None = replication_factor or max(len(p.replicas) for p in layout.partitions.values())
    brokers = len(answer.brokers)
    note = None
    if replication_factor is None and rf is not None and rf > brokers:
        note = f"{src} has {rf} replicas per partition and the target cluster {brokers} broker(s): its default replication factor is used"
        rf = None
    groups: dict[str, dict[int, int]] = {}
    if with_groups:
        from kctl.admin.groups.groups import committed_offsets
        from kctl.admin.groups.models import kctl_group
        from kctl.admin.groups.protocol import list_groups

        # kctl's own bookkeeping (an earlier clone's, a redrive's) is no reader to carry over.
        ids = [g["group_id"] for g in list_groups(source) if g.get("group_type") != "share" and kctl_group(g["group_id"]) is None]
        offsets, _errors = committed_offsets(source, ids)
        for group, committed in offsets.items():
            mine = {p: o for (t, p), (o, _meta) in committed.items() if t == src}
            if mine:
                groups[group] = mine
    return ClonePlan(source=src, target=dst, partitions=len(layout.partitions), replication_factor=rf, configs=configs,
                     note=note, groups=groups)


def bookkeeping_group(src: str, dst: str) -> str:
    """The group a clone's record copy commits its progress in (kctl.admin.groups.models'
    KCTL_GROUPS): on SOURCE's cluster, deleted once the clone is done."""
    return f"kctl-clone-{src}-{dst}"


def clone(source: AdminSession, target: AdminSession | None, plan: ClonePlan, *, with_records: bool, stop=None, on_batch=None) -> CloneReport:
    """Create the target topic; copy its records and map the groups' offsets when asked.
    What a failure leaves behind (the topic, the bookkeeping group) is said in its hint."""
    from kctl.admin.topics.topics import NewTopicSpec, create_topics

    writer = target or source
    spec = NewTopicSpec(name=plan.target, partitions=plan.partitions, replication_factor=plan.replication_factor, config=plan.configs)
    _created, errors = create_topics(writer, [spec])
    if errors:
        raise next(iter(errors.values()))
    records: int | None = None
    left_behind: str | None = None
    tracked: dict[tuple[int, int], int] = {}
    if with_records:
        from kctl.admin.topics.offsets import PartitionSelector
        from kctl.records.copy import Copy, CopyOptions
        from kctl.records.position import EARLIEST, Position, parse_to

        group = bookkeeping_group(plan.source, plan.target)
        track = {p: tuple(sorted({o for offsets in plan.groups.values() for q, o in offsets.items() if q == p}))
                 for p in range(plan.partitions)}
        options = CopyOptions(source=PartitionSelector(topic=plan.source), target=plan.target, start=Position(EARLIEST),
                              end=parse_to("end"), group=group, track={p: o for p, o in track.items() if o},
                              action=f"clone topic {plan.source} to {plan.target}")
        job = Copy(source, target, options)
        try:
            copied = job.run(stop=stop, on_batch=on_batch)
        except KctlError as exc:
            raise exc.but(hint=_left_behind(plan, group, job.committed)) from exc
        if copied.stopped != "end":
            raise KctlError(action=options.what, cause=f"interrupted after {copied.records} record(s)", exit_code=ExitCode.INTERRUPTED,
                            hint=_left_behind(plan, group, job.committed))
        records, tracked = copied.records, copied.tracked
        if not _forgot(source, group):
            left_behind = group
    groups = _commit_groups(writer, plan, tracked) if plan.groups else ()
    return CloneReport(source=plan.source, target=plan.target, partitions=plan.partitions, replication_factor=plan.replication_factor,
                       configs=plan.configs, status="created", records=records, groups=groups, left_behind=left_behind)


def _left_behind(plan: ClonePlan, group: str, committed: bool) -> str:
    """What a clone that failed while copying leaves, and the commands that go on or remove it."""
    if not committed:
        return (f"topic {plan.target} was created; the copy committed nothing: 'kctl topic delete {plan.target} --yes' "
                "removes it, and the clone can run again")
    return (f"topic {plan.target} was created and group {group} keeps how far the copy got: "
            f"'kctl record copy {plan.source} {plan.target} --group {group}' copies the rest (groups' offsets are not mapped then), "
            f"or 'kctl topic delete {plan.target} --yes' and 'kctl group delete {group} --yes' remove both")


def _forgot(source: AdminSession, group: str) -> bool:
    """Delete the clone's bookkeeping group; whether it is gone."""
    from kctl.admin.groups.groups import delete_groups

    _deleted, errors = delete_groups(source, [group])
    return not errors


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
        raise UsageError(action="clone", cause="{with_groups} maps the groups' offsets onto the copied records; give {with_records} too")
