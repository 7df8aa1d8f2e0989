"""Consumer-group offsets translated from the source to the target, from MM2's checkpoints.

For every partition a group has committed on the source (or MM2 has checkpointed), the
offset it resumes from on the target is the newest checkpoint's downstream offset, exactly
as RemoteClusterUtils.translateOffsets gives it: kctl computes no offset of its own from
the offset syncs. A partition with no checkpoint gets the --fallback:

  none       nothing is committed: the consumer's auto.offset.reset decides
  timestamp  the first target offset at or after the timestamp of the source record the
             group would read next (MM2 keeps record timestamps): may redeliver, never skips
  latest     the target's log end: skips whatever the group had not read
  earliest   the target's log start: redelivers the whole partition

A failover commits the translation on the target through admin/groups/resets.py (refusal
of active groups, journal, read-back, undo), as `group reset-offsets` does.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from kctl.admin.client.session import AdminSession
from kctl.admin.groups import protocol
from kctl.admin.groups.groups import committed_offsets, describe_groups
from kctl.admin.groups.lag import log_offsets, record_timestamps
from kctl.admin.groups.resets import INACTIVE_STATES, PlannedReset, ResetSpec, plan
from kctl.admin.mirror.pair import MirrorPair, newest_checkpoints
from kctl.admin.mirror.records import Checkpoint
from kctl.errors import GroupActiveError, NotFoundError, UsageError

FALLBACKS = ("none", "timestamp", "latest", "earliest")


@dataclass(frozen=True, kw_only=True)
class Translation:
    group: str
    # The topic on the source (None when neither the source nor the policy can name it).
    topic: str | None
    partition: int
    # Its name on the target, where the offset is committed.
    remote_topic: str
    # The group's committed offset on the source; None when it has none or was not read.
    committed: int | None
    # The newest checkpoint: the source offset it maps and the target offset it maps to.
    checkpoint_upstream: int | None
    checkpoint_downstream: int | None
    # When MM2 wrote that checkpoint (ms since the epoch).
    checkpoint_time: int | None
    # The offset a failover commits on the target; None: nothing is committed.
    translated: int | None
    # checkpoint | timestamp | latest | earliest | none
    method: str
    # Why the translation may redeliver or skip, or why there is none: source_moved
    # (the group committed past the newest checkpoint: up to committed - checkpoint_upstream
    # more records redelivered until MM2 checkpoints again), no_checkpoint,
    # not_replicated (no such topic on the target), may_redeliver, may_skip.
    note: str | None


def translate(pair: MirrorPair, groups: Sequence[str] = (), *, group_regex: str | None = None,
              fallback: str = "none") -> tuple[list[Translation], int]:
    """The translation of every partition of the groups named (or matching `group_regex`,
    on the source or in the checkpoints); and the checkpoint records skipped as malformed."""
    if fallback not in FALLBACKS:
        raise UsageError(action=f"use --fallback {fallback!r}", cause=f"expected one of {', '.join(FALLBACKS)}")
    if fallback == "timestamp" and pair.source is None:
        raise UsageError(action="use --fallback timestamp without the source cluster", cause="it reads the source's records' timestamps")
    checkpoints, skipped = newest_checkpoints(pair)
    chosen = _groups(pair, groups, group_regex, {g for g, _t, _p in checkpoints})
    committed: dict[str, dict[tuple[str, int], int]] = {g: {} for g in chosen}
    if pair.source is not None:
        if groups:  # a --group-regex choice has no share group in it (source_groups)
            _refuse_share_groups(pair.source, chosen)
        found, refused = committed_offsets(pair.source, chosen)
        if refused:
            raise next(iter(refused.values()))
        for group, offsets in found.items():
            committed[group] = {key: offset for key, (offset, _md) in offsets.items()}
    rows: list[Translation] = []
    needs_fallback: list[tuple[str, str, str, int, int]] = []
    for group in chosen:
        mine = {(t, p): s for (g, t, p), s in checkpoints.items() if g == group}
        seen: set[tuple[str, int]] = set()
        for (topic, partition), offset in sorted(committed[group].items()):
            remote = pair.remote_topic(topic)
            seen.add((remote, partition))
            stamped = mine.get((remote, partition))
            if stamped is not None:
                rows.append(_from_checkpoint(group, topic, offset, stamped.record, stamped.timestamp))
            elif remote not in pair.target_topics:
                rows.append(Translation(group=group, topic=topic, partition=partition, remote_topic=remote, committed=offset,
                                        checkpoint_upstream=None, checkpoint_downstream=None, checkpoint_time=None,
                                        translated=None, method="none", note="not_replicated"))
            else:
                needs_fallback.append((group, topic, remote, partition, offset))
        for (remote, partition), stamped in sorted(mine.items()):
            if (remote, partition) not in seen:
                rows.append(_from_checkpoint(group, _source_topic(pair, remote), None, stamped.record, stamped.timestamp))
    rows.extend(_fallbacks(pair, needs_fallback, fallback))
    rows.sort(key=lambda r: (r.group, r.remote_topic, r.partition))
    unknown = [g for g in chosen if groups and not any(r.group == g for r in rows)]
    if unknown and len(unknown) < len(chosen):
        raise NotFoundError(action=f"translate offsets of group {unknown[0]}",
                            cause="it has no checkpoint on the target" + (" and no committed offsets on the source" if pair.source is not None else ""))
    if not rows:
        raise NotFoundError(action=f"translate offsets of {', '.join(chosen)}",
                            cause=f"no checkpoints for {'them' if len(chosen) > 1 else 'it'} on the target and no committed offsets on the source"
                            if pair.source is not None else "no checkpoints on the target, and the source was not read",
                            hint="MM2 checkpoints a group once it has committed on a replicated topic (emit.checkpoints.interval.seconds)")
    return rows, skipped


def _groups(pair: MirrorPair, groups: Sequence[str], group_regex: str | None, checkpointed: set[str]) -> list[str]:
    if groups and group_regex:
        raise UsageError("unable to use both GROUP arguments and --group-regex")
    if not groups and not group_regex:
        raise UsageError(action="translate", cause="name a GROUP or give {group_regex}")
    if groups:
        return list(dict.fromkeys(groups))
    try:
        pattern = re.compile(group_regex or "")
    except re.error as exc:
        raise UsageError(action=f"parse --group-regex {group_regex!r}", cause=str(exc)) from None
    found = {g for g in checkpointed if pattern.fullmatch(g)}
    if pair.source is not None:
        found.update(g for g in source_groups(pair.source) if pattern.fullmatch(g))
    if not found:
        raise NotFoundError(action="translate offsets", cause=f"no group matches {{group_regex}} {group_regex!r}")
    return sorted(found)


def source_groups(session: AdminSession) -> list[str]:
    """The groups of `session` MM2 checkpoints: classic and consumer groups, as its
    checkpoint connector lists them (ListGroupsOptions.forConsumerGroups), less Connect's
    worker groups (MM2's own among them). Share groups have no committed offsets, and MM2
    4.3 leaves streams groups out: named, a streams group gets the --fallback."""
    return sorted(g["group_id"] for g in protocol.list_groups(session)
                  if g.get("protocol_type") != "connect" and (g.get("group_type") or "classic") in ("classic", "consumer"))


def _refuse_share_groups(session: AdminSession, groups: Sequence[str]) -> None:
    shared = sorted({g["group_id"] for g in protocol.list_groups(session) if g.get("group_type") == "share"} & set(groups))
    if shared:
        raise UsageError(action=f"translate offsets of share group {shared[0]}", cause="MM2 checkpoints the committed offsets "
                         "of consumer groups; a share group's state (KIP-932) is not replicated",
                         hint="a share group resumes on the other cluster from its share.auto.offset.reset")


def _source_topic(pair: MirrorPair, remote: str) -> str | None:
    """The source's name for a target topic a checkpoint names."""
    if pair.policy.kind == "identity":
        return remote
    if pair.policy.topic_source(remote) == pair.source_alias:
        return pair.policy.upstream_topic(remote)
    return pair.policy.original_topic(remote)


def _from_checkpoint(group: str, topic: str | None, committed: int | None, c: Checkpoint, written: int) -> Translation:
    moved = committed is not None and committed > c.upstream_offset
    return Translation(group=group, topic=topic, partition=c.partition, remote_topic=c.topic, committed=committed,
                       checkpoint_upstream=c.upstream_offset, checkpoint_downstream=c.downstream_offset, checkpoint_time=written,
                       translated=c.downstream_offset, method="checkpoint", note="source_moved" if moved else None)


def _fallbacks(pair: MirrorPair, wanted: list[tuple[str, str, str, int, int]], fallback: str) -> list[Translation]:
    """Rows for partitions without a checkpoint, by the fallback."""
    if not wanted:
        return []
    targets = sorted({(remote, p) for _g, _t, remote, p, _o in wanted})
    offsets: dict[tuple[str, str, int], int | None] = {}
    if fallback in ("latest", "earliest", "timestamp"):
        log = log_offsets(pair.target, targets, "read_uncommitted")
        for group, _topic, remote, p, _o in wanted:
            start, end = log[(remote, p)]
            offsets[(group, remote, p)] = start if fallback == "earliest" else end
    notes = {"none": "no_checkpoint", "latest": "may_skip", "earliest": "may_redeliver", "timestamp": "may_redeliver"}
    if fallback == "timestamp":
        offsets.update(_by_timestamp(pair, wanted))
    return [Translation(group=g, topic=t, partition=p, remote_topic=remote, committed=o, checkpoint_upstream=None,
                        checkpoint_downstream=None, checkpoint_time=None, translated=offsets.get((g, remote, p)),
                        method=fallback, note=notes[fallback]) for g, t, remote, p, o in wanted]


def _by_timestamp(pair: MirrorPair, wanted: list[tuple[str, str, str, int, int]]) -> dict[tuple[str, str, int], int]:
    """The first target offset at or after the timestamp of the source record at the
    group's committed offset. A group at the source's log end has no such record: it gets
    the target's log end (what it has not read is not on the source yet either)."""
    from kctl.admin.topics.offsets import offsets_for_time

    assert pair.source is not None
    ends = log_offsets(pair.source, sorted({(t, p) for _g, t, _r, p, _o in wanted}), "read_uncommitted")
    positions = sorted({(t, p, o) for _g, t, _r, p, o in wanted if (end := ends[(t, p)][1]) is not None and o < end})
    stamps = record_timestamps(pair.source, positions, timeout=pair.source.timeout)
    found: dict[tuple[str, str, int], int] = {}
    by_time: dict[int, list[tuple[str, int]]] = {}
    for _g, t, remote, p, o in wanted:
        if (t, p, o) in stamps:
            by_time.setdefault(stamps[(t, p, o)], []).append((remote, p))
    answers: dict[tuple[int, str, int], int] = {}
    for at_ms, pairs in by_time.items():
        for (remote, p), offset in offsets_for_time(pair.target, sorted(set(pairs)), at_ms).items():
            answers[(at_ms, remote, p)] = offset
    for g, t, remote, p, o in wanted:
        stamp = stamps.get((t, p, o))
        offset = answers.get((stamp, remote, p), -1) if stamp is not None else -1
        if offset >= 0:
            found[(g, remote, p)] = offset
    return found


# -- failover -------------------------------------------------------------------------------


def require_idle(session: AdminSession, groups: Sequence[str], where: str) -> None:
    """Refuse (exit 10, members named) unless every group is without members on `session`."""
    found, errors = describe_groups(session, groups)
    for error in errors.values():
        if not isinstance(error, NotFoundError):
            raise error
    for d in found:
        if d.state not in INACTIVE_STATES:
            members = ", ".join(sorted(f"{m.client_id}@{m.host}" for m in d.members)) or "none listed"
            raise GroupActiveError(action=f"fail over group {d.group}", cause=f"it is {d.state} on {where} ({members})",
                                   hint="stop its consumers there first, or leave out {require_idle_source}")


def failover_plan(pair: MirrorPair, translations: Sequence[Translation]) -> list[PlannedReset]:
    """The reset on the target that commits every translated offset, checked as every
    reset is (the groups must have no members on the target); nothing is written."""
    offsets = {(t.group, t.remote_topic, t.partition): t.translated for t in translations if t.translated is not None}
    groups = sorted({g for g, _t, _p in offsets})
    if not groups:
        raise NotFoundError(action="fail over", cause="nothing to commit (no checkpoints, and {fallback} none)",
                            hint="{fallback} timestamp|earliest|latest commits partitions MM2 has not checkpointed")
    return plan(pair.target, groups, ResetSpec(mode="explicit", offsets=offsets), allow_new_group=True)


def now_ms() -> int:
    return int(time.time() * 1000)
