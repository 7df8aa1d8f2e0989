"""Offset resets for consumer groups: plan (a dry run by default), gate, journal, apply,
verify — kafka-consumer-groups.sh --reset-offsets semantics, with every clamp reported.

Safety, in order:
  1. the group must exist (unless allow_new_group: a typo would otherwise create a group);
  2. it must have no members (Empty or Dead), else GroupActiveError lists who to stop;
  3. before anything is written, an undo journal records the old offsets;
  4. after writing, offsets are read back; a mismatch is ResetIncompleteError, never success.
The broker enforces (2) again when the commit arrives: a consumer that joins in between
makes it refuse the commit, which surfaces as an error, not as a completed reset.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from kctl import journal
from kctl.admin.client.errors import no_such_topic
from kctl.admin.client.session import AdminSession, topic_missing
from kctl.admin.groups import protocol, share
from kctl.admin.groups.groups import committed_offsets, delete_offsets, describe_groups
from kctl.admin.groups.lag import log_offsets
from kctl.config.file import state_dir
from kctl.errors import ExitCode, GroupActiveError, InvalidError, KctlError, NotFoundError, Resource, UsageError
from kctl.messages.errors import ERRORS, error_name

INACTIVE_STATES = ("Empty", "Dead")


class ResetIncompleteError(KctlError):
    exit_code = ExitCode.RESET_INCOMPLETE


@dataclass(frozen=True, kw_only=True)
class ResetSpec:
    """How to compute new offsets; exactly one of the modes is set."""

    mode: str  # earliest | latest | current | offset | shift | timestamp | explicit
    value: int | None = None
    # explicit: (group, topic, partition) -> offset, from --from-file or --to-group.
    offsets: Mapping[tuple[str, str, int], int] | None = None


@dataclass(frozen=True, kw_only=True)
class PlannedReset:
    group: str
    topic: str
    partition: int
    current: int | None
    # None only when an undo restores "no committed offset" (the offset is deleted).
    new: int | None
    # new - current (None without a current commit); negative re-consumes, positive skips.
    delta: int | None
    log_start: int
    log_end: int
    # Why the new offset is not simply what was asked for, e.g. clamped_to_log_start.
    note: str | None


def plan_partition(
    group: str, topic: str, partition: int, current: int | None, log_start: int, log_end: int, spec: ResetSpec, found_at: int | None = None
) -> PlannedReset:
    """Kafka's reset rules for one partition, with the reason for any adjustment."""
    note = None
    if spec.mode == "earliest":
        target = log_start
    elif spec.mode == "latest":
        target = log_end
    elif spec.mode == "current":
        if current is None:
            target, note = log_end, "no_commit_set_to_latest"
        else:
            target = current
    elif spec.mode == "offset":
        target = spec.value or 0
    elif spec.mode == "shift":
        if current is None:
            raise UsageError(action=f"shift {group} {topic}-{partition}", cause="it has no committed offset to shift")
        target = current + (spec.value or 0)
    elif spec.mode == "explicit":
        target = found_at if found_at is not None else log_end
    elif spec.mode == "timestamp":
        if found_at is None or found_at < 0:
            target, note = log_end, "no_record_after_time_set_to_latest"
        else:
            target = found_at
    else:
        raise ValueError(spec.mode)
    if target < log_start:
        target, note = log_start, "clamped_to_log_start"
    elif target > log_end:
        target, note = log_end, "clamped_to_log_end"
    return PlannedReset(
        group=group,
        topic=topic,
        partition=partition,
        current=current,
        new=target,
        delta=None if current is None else target - current,
        log_start=log_start,
        log_end=log_end,
        note=note,
    )


def parse_topic_scope(scopes: Sequence[str]) -> list[tuple[str, tuple[int, ...] | None]]:
    """`topic` or `topic:0,1,2` (kafka-consumer-groups' --topic syntax)."""
    out: list[tuple[str, tuple[int, ...] | None]] = []
    for scope in scopes:
        topic, sep, parts = scope.partition(":")
        if not topic:
            raise UsageError(action=f"parse --topic {scope!r}", cause="expected TOPIC or TOPIC:0,1,2")
        if not sep:
            out.append((topic, None))
            continue
        try:
            out.append((topic, tuple(int(p) for p in parts.split(","))))
        except ValueError:
            raise UsageError(action=f"parse --topic {scope!r}", cause="expected TOPIC or TOPIC:0,1,2") from None
    return out


def _resettable(session: AdminSession, groups: Sequence[str], action: str,
                on_active: Callable[[GroupActiveError], None] | None = None) -> dict:
    """The groups' descriptions, refusing any that has members (whatever its type), or with
    `on_active` (a preview: nothing will be written) telling it the refusal instead; missing
    groups are left out."""
    found, errors = describe_groups(session, groups)
    for error in errors.values():
        if not isinstance(error, NotFoundError):
            raise error
    described = {d.group: d for d in found}
    for group, d in described.items():
        if d.state not in INACTIVE_STATES:
            members = ", ".join(sorted(f"{m.client_id}@{m.host}" for m in d.members)) or "none listed"
            refusal = GroupActiveError(
                action=f"{action} group {group}", cause=f"the group is {d.state}; stop its consumers first ({members})",
                hint="offsets can only be reset while a group has no members (Empty)",
            )
            if on_active is None:
                raise refusal
            on_active(refusal)
    return described


def plan(
    session: AdminSession,
    groups: Sequence[str],
    spec: ResetSpec,
    *,
    topics: Sequence[str] = (),
    all_topics: bool = False,
    allow_new_group: bool = False,
    on_active: Callable[[GroupActiveError], None] | None = None,
) -> list[PlannedReset]:
    """The reset of every selected partition of every group, checked, nothing written. A
    group with members is refused (GroupActiveError), unless `on_active` is given for a
    plan only to be shown: then it is told the refusal the execution would meet."""
    described = _resettable(session, groups, "reset offsets of", on_active)
    shared = [g for g, d in described.items() if d.type == "share"]
    committed, refused = committed_offsets(session, [g for g in groups if g not in shared])
    committed.update(share.start_offsets_of(session, shared))
    scopes = parse_topic_scope(topics)
    named = {t for (_g, t, _p) in (spec.offsets or {})} if spec.mode == "explicit" else set()
    named.update(topic for topic, _parts in scopes)
    metadata = session.metadata("reset offsets", named)
    selected: dict[str, list[tuple[str, int]]] = {}
    for group in groups:
        if group in refused:
            raise refused[group]
        offsets = committed.get(group, {})
        if group not in described and not allow_new_group:
            raise NotFoundError(
                action=f"reset offsets of group {group}", cause="GROUP_ID_NOT_FOUND: no such group",
                hint="{allow_new_group} creates it with these offsets", kafka_error="GROUP_ID_NOT_FOUND",
                resource=Resource("group", group),
            )
        pairs: list[tuple[str, int]] = []
        if spec.mode == "explicit":
            pairs = [(t, p) for (g, t, p) in (spec.offsets or {}) if g == group]
            for t, p in pairs:
                if t not in metadata.topics or p not in metadata.topics[t].partitions:
                    raise NotFoundError(action=f"reset offsets of {group}", cause=f"{t}-{p} does not exist")
        if all_topics:
            pairs = sorted(offsets)
        for topic, parts in scopes:
            if topic_missing(metadata, topic):
                raise no_such_topic(f"reset offsets of {group}: topic {topic}", topic)
            meta = metadata.topics[topic]
            existing = sorted(meta.partitions)
            for p in parts or existing:
                if p not in meta.partitions:
                    raise NotFoundError(action=f"reset offsets of {group}", cause=f"{topic} has no partition {p} (it has {len(existing)})")
                pairs.append((topic, p))
        selected[group] = sorted(set(pairs))
    union = sorted({p for pairs in selected.values() for p in pairs})
    log = log_offsets(session, union, "read_uncommitted")
    found: dict[tuple[str, int], int] = {}
    if spec.mode == "timestamp" and union:
        answers, _errors = session.kafka.list_offsets(union, [spec.value or 0], "read_uncommitted", "list offsets by timestamp")
        found = {k: a[0].offset for k, a in answers.items() if a[0] is not None}
    planned = []
    for group, pairs in selected.items():
        offsets = committed.get(group, {})
        for topic, partition in pairs:
            start, end = log[(topic, partition)]
            if start is None or end is None:
                raise KctlError(action=f"reset offsets of {group}", cause=f"{topic}-{partition} has no leader to read offsets from")
            current = offsets.get((topic, partition), (None, None))[0]
            at = (spec.offsets or {}).get((group, topic, partition)) if spec.mode == "explicit" else found.get((topic, partition))
            planned.append(plan_partition(group, topic, partition, current, start, end, spec, at))
    return planned


# -- journal, apply, verify -----------------------------------------------------------------


def journal_dir(env: Mapping[str, str]) -> Path:
    return state_dir(env) / "resets"


def write_journal(directory: Path, plans: Sequence[PlannedReset], *, bootstrap: str | None, command: str) -> str:
    """Record what is about to change, before it changes; returns the journal id."""
    return journal.write(directory, {"bootstrap": bootstrap, "command": command, "partitions": [asdict(p) for p in plans]})


def read_journal(directory: Path, journal_id: str) -> dict:
    return journal.read(directory, journal_id)


def plan_undo(session: AdminSession, directory: Path, journal_id: str, *, bootstrap: str | None,
              on_active: Callable[[GroupActiveError], None] | None = None) -> tuple[dict, list[PlannedReset]]:
    """The journal entry `journal_id` ("last" for the newest) and the plan that restores
    what it replaced. An undo runs only against the cluster the reset was made on: the
    same group and topic names elsewhere are other offsets."""
    entry = read_journal(directory, journal_id)
    if entry.get("bootstrap") != bootstrap:
        raise UsageError(f"reset {entry['id']} was made against {entry.get('bootstrap')}, not {bootstrap}; pass -b {entry.get('bootstrap')}",
                         hint="an undo runs against the cluster the reset was made on")
    return entry, undo_plan(session, entry, on_active)


def totals(plans: Sequence[PlannedReset]) -> tuple[int, int]:
    """(records to re-consume, records to skip) over a plan."""
    back = -sum(p.delta for p in plans if p.delta is not None and p.delta < 0)
    skip = sum(p.delta for p in plans if p.delta is not None and p.delta > 0)
    return back, skip


def write_offsets_csv(path: str | Path, plans: Sequence[PlannedReset], *, old: bool = False) -> None:
    """Kafka's CSV of a plan's new (or, `old`, replaced) offsets, written to `path`."""
    try:
        Path(path).write_text(offsets_csv(plans, old=old), encoding="utf-8")
    except OSError as exc:
        raise InvalidError(action=f"write {path}", cause=str(exc.strerror)) from exc


def execute(session: AdminSession, plans: Sequence[PlannedReset], *, journal: Path, bootstrap: str | None, command: str,
            backup: str | Path | None = None, journaled: Callable[[str], None] = lambda journal_id: None) -> str:
    """Apply a reset safely, in this order: the replaced offsets to `backup` (Kafka's CSV,
    when given), the undo journal in `journal` (`journaled(id)` is told before anything
    changes), the commits, and a read back that fails the reset unless every partition
    holds its new offset. Returns the journal id. Nothing is written to the cluster if
    the backup or the journal cannot be written."""
    if backup:
        write_offsets_csv(backup, plans, old=True)
    journal_id = write_journal(journal, plans, bootstrap=bootstrap, command=command)
    journaled(journal_id)
    apply(session, plans)
    return journal_id


def apply(session: AdminSession, plans: Sequence[PlannedReset]) -> None:
    """Commit the new offsets, one request per group (share groups: set their start
    offsets; offsets planned as "none" are deleted), then read them back."""
    shared = share.share_groups(session, {p.group for p in plans})
    for group in sorted(shared):
        _reset_share_group(session, group, [p for p in plans if p.group == group])
    others = [p for p in plans if p.group not in shared]
    _forget(session, [p for p in others if p.new is None])
    _commit(session, [p for p in others if p.new is not None])
    after, unread = committed_offsets(session, sorted({p.group for p in others}))
    after.update(share.start_offsets_of(session, sorted(shared)))
    wrong = [p for p in plans if p.group in unread or after.get(p.group, {}).get((p.topic, p.partition), (None,))[0] != p.new]
    if wrong:
        p = wrong[0]
        raise ResetIncompleteError(action=f"verify the reset of group {p.group}", cause=f"{p.topic}-{p.partition} is not at {p.new} ({len(wrong)} partition(s) differ)")


def _commit(session: AdminSession, plans: Sequence[PlannedReset]) -> None:
    """Commit each group's new offsets (OffsetCommit to its coordinator, as an admin)."""
    by_group: dict[str, dict[tuple[str, int], int]] = {}
    for p in plans:
        if p.new is not None:
            by_group.setdefault(p.group, {})[(p.topic, p.partition)] = p.new
    for group, offsets in by_group.items():
        codes = protocol.offset_commit(session, group, offsets, f"reset offsets of group {group}")
        bad = [(key, code) for key, code in sorted(codes.items()) if code]
        if bad:
            (topic, partition), code = bad[0]
            name = error_name(code)
            raise refused_reset(group, f"{topic}-{partition}: {name}: {ERRORS.get(code, (name, ''))[1]}", name)


def _reset_share_group(session: AdminSession, group_id: str, plans: Sequence) -> None:
    """Apply reset plans (new start offsets; new=None forgets a topic's state, which Kafka
    does per topic: only when every planned partition of the topic is forgotten)."""
    moves = {(p.topic, p.partition): p.new for p in plans if p.new is not None}
    forgotten = {p.topic for p in plans if p.new is None}
    mixed = forgotten & {topic for topic, _ in moves}
    if mixed:
        raise ResetIncompleteError(action=f"reset offsets of group {group_id}", cause="Kafka forgets a share group's "
                                   f"state per topic, not per partition ({', '.join(sorted(mixed))})")
    if moves:
        code, partitions = protocol.alter_share_group_offsets(session, group_id, moves)
        _raise_refusal(group_id, code, [(f"{t}-{p}: ", c) for (t, p), c in partitions.items()])
    if forgotten:
        # Forgetting a topic forgets all its partitions: never one the plan does not name.
        planned = {(p.topic, p.partition) for p in plans if p.new is None}
        spared = sorted(f"{t}-{p}" for t, p in share.start_offsets_of(session, [group_id])[group_id] if t in forgotten and (t, p) not in planned)
        if spared:
            raise ResetIncompleteError(action=f"reset offsets of group {group_id}", cause="forgetting the state of "
                                       f"{', '.join(sorted(forgotten))} would also forget {', '.join(spared)}")
        code, topics = protocol.delete_share_group_offsets(session, group_id, sorted(forgotten))
        _raise_refusal(group_id, code, [(f"{t}: ", c) for t, c in topics.items()])


def _raise_refusal(group_id: str, code: int, items: list[tuple[str, int]]) -> None:
    """The reset refusal for the top-level error code, else the first item's."""
    where, failed = ("", code) if code else next(((w, c) for w, c in items if c), ("", 0))
    if failed:
        name = error_name(failed)
        raise refused_reset(group_id, f"{where}{name}: {ERRORS.get(failed, (name, name))[1]}", name)


# What the coordinator answers a commit when the group has members after all.
_GROUP_ACTIVE = frozenset({"UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS", "NON_EMPTY_GROUP", "ILLEGAL_GENERATION"})


def refused_reset(group: str, cause: str, kafka_error: str | None) -> KctlError:
    """The broker refused to write the reset (Kafka's error name `kafka_error`): because
    a member joined, or otherwise."""
    kind = GroupActiveError if kafka_error in _GROUP_ACTIVE else ResetIncompleteError
    return kind(action=f"reset offsets of group {group}", cause=f"the broker refused the commit: {cause}", kafka_error=kafka_error,
                hint="a consumer may have joined the group; nothing is reported as reset")


def _forget(session: AdminSession, plans: Sequence[PlannedReset]) -> None:
    """Delete the committed offsets of partitions that had none before (OffsetDelete)."""
    by_group: dict[str, dict[str, list[int]]] = {}
    for p in plans:
        by_group.setdefault(p.group, {}).setdefault(p.topic, []).append(p.partition)
    for group, topics in by_group.items():
        _rows, errors = delete_offsets(session, group, [(t, tuple(ps)) for t, ps in topics.items()])
        if errors:
            error = next(iter(errors.values()))
            kind = GroupActiveError if error.exit_code == ExitCode.GROUP_ACTIVE else ResetIncompleteError
            # What failed was the deletion part of the reset: said as such.
            raise error.but(action=f"reset offsets of group {group}", cause=f"{error.action}: {error.cause}" if error.action else error.cause,
                            kind=kind)


def undo_plan(session: AdminSession, entry: dict, on_active: Callable[[GroupActiveError], None] | None = None) -> list[PlannedReset]:
    """Plans restoring a journal's old offsets; a partition that had no committed offset
    before gets new=None: its offset is deleted, so it starts from auto.offset.reset again."""
    recorded = [PlannedReset(**p) for p in entry["partitions"]]
    groups = sorted({p.group for p in recorded})
    described = _resettable(session, groups, "undo the reset of", on_active)
    shared = [g for g, d in described.items() if d.type == "share"]
    committed, _unread = committed_offsets(session, [g for g in groups if g not in shared])
    committed.update(share.start_offsets_of(session, shared))
    log = log_offsets(session, sorted({(p.topic, p.partition) for p in recorded}), "read_uncommitted")
    plans = []
    for p in recorded:
        now = committed.get(p.group, {}).get((p.topic, p.partition), (None,))[0]
        start, end = log[(p.topic, p.partition)]
        if start is None or end is None:
            raise KctlError(action=f"undo the reset of group {p.group}", cause=f"{p.topic}-{p.partition} has no leader to read offsets from")
        if p.current is None:
            plans.append(PlannedReset(group=p.group, topic=p.topic, partition=p.partition, current=now, new=None,
                                      delta=None, log_start=start, log_end=end, note="restore_no_commit"))
        else:
            plans.append(plan_partition(p.group, p.topic, p.partition, now, start, end, ResetSpec(mode="offset", value=p.current)))
    return plans


# -- Kafka's CSV files ----------------------------------------------------------------------


def parse_offsets_csv(text: str, groups: Sequence[str], source: str) -> dict[tuple[str, str, int], int]:
    """kafka-consumer-groups' --from-file CSV: `topic,partition,offset` (for every group
    given) or `group,topic,partition,offset`; a header line is tolerated."""
    import csv
    import io

    offsets: dict[tuple[str, str, int], int] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or all(not cell.strip() for cell in row):
            continue
        cells = [c.strip() for c in row]
        if number == 1 and cells[-1].lower() in ("offset", "new-offset", "current-offset"):
            continue
        try:
            if len(cells) == 3:
                topic, partition, offset = cells[0], int(cells[1]), int(cells[2])
                targets = [(g, topic, partition) for g in groups]
            elif len(cells) == 4:
                group, topic, partition, offset = cells[0], cells[1], int(cells[2]), int(cells[3])
                targets = [(group, topic, partition)]
            else:
                raise ValueError(f"expected 3 or 4 fields, found {len(cells)}")
        except ValueError as exc:
            message = str(exc) if "fields" in str(exc) else "partition and offset must be integers"
            raise InvalidError(action=f"read offsets file {source}", cause=f"line {number}: {message}") from None
        if offset < 0:
            raise InvalidError(action=f"read offsets file {source}", cause=f"line {number}: negative offset {offset}")
        for key in targets:
            offsets[key] = offset
    if not offsets:
        raise InvalidError(action=f"read offsets file {source}", cause="it lists no offsets")
    missing = sorted(set(groups) - {g for g, _, _ in offsets})
    if missing:
        raise InvalidError(action=f"read offsets file {source}", cause=f"no offsets for group {', '.join(missing)}")
    return offsets


def offsets_csv(plans: Sequence[PlannedReset], *, old: bool = False) -> str:
    """`group,topic,partition,offset` lines (Kafka's --export layout); old=True writes the
    offsets being replaced, a backup kafka-consumer-groups --from-file can restore."""
    lines = []
    for p in plans:
        value = p.current if old else p.new
        if value is not None:
            lines.append(f"{p.group},{p.topic},{p.partition},{value}")
    return "\n".join(lines) + ("\n" if lines else "")


def copy_offsets(session: AdminSession, source: str, groups: Sequence[str], topics: Sequence[str]) -> dict[tuple[str, str, int], int]:
    """--to-group: the source group's committed offsets, for each target group."""
    found, refused = committed_offsets(session, [source])
    if source in refused:
        raise refused[source]
    committed = found.get(source, {})
    scope = {t for t, _ in parse_topic_scope(topics)} if topics else None
    parts = {t: p for t, p in parse_topic_scope(topics)} if topics else {}
    chosen = {
        (t, p): o
        for (t, p), (o, _md) in committed.items()
        if scope is None or (t in scope and (parts.get(t) is None or p in (parts.get(t) or ())))
    }
    if not chosen:
        raise NotFoundError(action=f"copy offsets from group {source}", cause="it has no committed offsets" + (" for those topics" if topics else ""))
    return {(g, t, p): o for g in groups for (t, p), o in chosen.items()}
