"""Lag of groups of every type, in messages and in seconds.

Requests are planned per broker: one OffsetFetch per coordinator for every group, then one
ListOffsets round per broker covers the union of committed partitions (earliest and
latest). kctl never joins a group.

Lag semantics (shared/notes/lag.md §6), per partition with committed offset c, log
start L and log end H (the last stable offset with read_committed):
  raw_lag = H - c, may be negative, always reported;
  lag     = max(0, H - max(c, L)): what is left to consume;
  flags   = NO_COMMIT (c unknown: lag null), BELOW_LOG_START (c < L: L - c records were
            deleted before being consumed), AHEAD_OF_END (c > H).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kctl.admin.client.session import AdminSession
from kctl.admin.groups import protocol
from kctl.admin.groups.groups import committed_offsets, described_error, listed_type, not_found
from kctl.admin.groups.models import TYPES, GroupLag, PartitionLag
from kctl.errors import KctlError, Partial
from kctl.values import Value, replace


def log_offsets(session: AdminSession, partitions: Sequence[tuple[str, int]], isolation: str,
                leaders: Mapping[tuple[str, int], int] | None = None) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    """(log start, log end) for every partition, None where its leader could not say
    (kctl.admin.topics.offsets.log_offsets: every leader asked at once)."""
    from kctl.admin.topics.offsets import log_offsets as ask

    return {key: (start, end) for key, (start, end, _epoch) in ask(session, partitions, isolation, leaders).items()}


def partition_lag(group: str, topic: str, partition: int, committed: int | None, log_start: int | None, log_end: int | None, owner=None) -> PartitionLag:
    """The lag semantics of the module docstring, for one partition."""
    flags = []
    raw_lag = lag = None
    if committed is None:
        flags.append("NO_COMMIT")
    elif log_end is not None:
        raw_lag = log_end - committed
        start = log_start if log_start is not None else committed
        lag = max(0, log_end - max(committed, start))
        if log_start is not None and committed < log_start:
            flags.append("BELOW_LOG_START")
        if committed > log_end:
            flags.append("AHEAD_OF_END")
    return PartitionLag(
        group=group,
        topic=topic,
        partition=partition,
        committed=committed,
        log_start=log_start,
        log_end=log_end,
        raw_lag=raw_lag,
        lag=lag,
        flags=tuple(flags),
        member_id=owner.member_id if owner else None,
        client_id=owner.client_id if owner else None,
    )


def next_offset(p: PartitionLag) -> int:
    """Where a group reads a partition next: its committed offset, or the log start when
    retention deleted the records before it."""
    return max(p.committed or 0, p.log_start or 0)


def record_timestamps(session: AdminSession, positions: Sequence[tuple[str, int, int]], *, timeout: float) -> dict[tuple[str, int, int], int]:
    """Timestamps of the records at (topic, partition, offset), read with a consumer that
    is assigned partitions directly: it never joins or commits to any group."""
    import time

    from confluent_kafka import Consumer, TopicPartition

    if not positions:
        return {}
    config = session.client_config()
    config.update({"group.id": "kctl-lag-probe", "enable.auto.commit": False, "enable.partition.eof": False, "fetch.max.bytes": 1_048_576, "max.partition.fetch.bytes": 65_536})
    consumer = Consumer(config, logger=session_logger())
    wanted = {(t, p): o for t, p, o in positions}
    found: dict[tuple[str, int, int], int] = {}
    try:
        consumer.assign([TopicPartition(t, p, o) for (t, p), o in wanted.items()])
        deadline = time.monotonic() + timeout
        pending = set(wanted)
        while pending and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is None or message.error() is not None:
                continue
            key = (message.topic(), message.partition())
            if key in pending:
                pending.discard(key)
                found[(key[0], key[1], wanted[key])] = message.timestamp()[1]
                consumer.pause([TopicPartition(key[0], key[1])])
    finally:
        consumer.close()
    return found


def session_logger():
    from kctl.admin.client.session import librdkafka_log

    return librdkafka_log()


class _LagInputs(Value):
    """What one group's lag is computed from, whatever its type."""

    __slots__ = ("state", "members", "owners", "offsets", "kafka_lag")

    def __init__(
        self, *,
        state: str, members: int, owners: dict, offsets: dict[tuple[str, int], int | None], kafka_lag: dict[tuple[str, int], int] | None = None,
    ):
        self.state = state
        self.members = members
        # The member consuming each partition (anything with member_id and client_id).
        self.owners = owners
        # Committed offsets (share groups: start offsets, None where there is none yet).
        self.offsets = offsets
        # Share groups: Kafka's own lag per share-partition, where it reports one.
        self.kafka_lag = kafka_lag


def group_lag(
    session: AdminSession,
    ids: Sequence[str] | None,
    *,
    topics: Sequence[str] = (),
    isolation: str = "read_uncommitted",
    time_lag: str = "none",
    now_ms: int | None = None,
    listed: Sequence[dict] | None = None,
) -> Partial[list[GroupLag]]:
    """Lag of the named groups (every group of every type when `ids` is None), optionally
    only `topics`; `listed`, what ListGroups just said when the caller has asked it.
    Share groups' lag is Kafka's: records after the share-partition start offset not yet
    acknowledged."""
    listed_by_id = {g["group_id"]: g for g in (protocol.list_groups(session, ids) if listed is None else listed)}
    results, errors, _log, local = _lag(session, listed_by_id, sorted(listed_by_id) if ids is None else ids, topics, isolation, ())
    results = _with_remote_reads(results, local)
    if time_lag == "record":
        results = _with_record_time_lag(session, results, now_ms)
    return Partial(results, errors)


_LIST_OFFSETS = 2  # ListOffsets' API key


def _log_positions(session: AdminSession, partitions: Sequence[tuple[str, int]], isolation: str,
                   leaders: Mapping[tuple[str, int], int] | None) -> tuple[dict[tuple[str, int], tuple[int | None, int | None]],
                                                                         dict[tuple[str, int], int]]:
    """(log start, log end) of every partition, and the earliest local offset of those
    whose older records are in remote storage (tiered: the earliest local offset above the
    log start), all in one round of ListOffsets. A cluster whose ListOffsets cannot ask for
    the earliest local offset (v8, Kafka 3.6+) has no tiered storage. (The versions are the
    wire client's, known.) Asked beside the log offsets, the local ones spare the
    DescribeConfigs round a tiered-storage check would otherwise cost."""
    from kctl.admin.topics.offsets import EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

    timestamps: tuple[int, ...] = (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP)
    if session.supports(_LIST_OFFSETS, 8):
        timestamps += (EARLIEST_LOCAL_TIMESTAMP,)
    found, _errors = session.kafka.list_offsets(partitions, timestamps, isolation, "list offsets", leaders)
    log: dict[tuple[str, int], tuple[int | None, int | None]] = {}
    local: dict[tuple[str, int], int] = {}
    for key, (start, end, *rest) in found.items():
        log[key] = (start.offset if start else None, end.offset if end else None)
        first_local = rest[0].offset if rest and rest[0] else None
        if start and first_local is not None and first_local > start.offset:
            local[key] = first_local
    return log, local


def _with_remote_reads(results: list[GroupLag], local: Mapping[tuple[str, int], int]) -> list[GroupLag]:
    """Marks the partitions whose next offset to read is below the earliest local offset
    of a tiered topic (remote_read: `local`, from _log_positions)."""
    if not local:
        return results
    out = []
    for g in results:
        rows = tuple(replace(p, remote_read=True) if (earliest := local.get((p.topic, p.partition))) is not None
                     and p.committed is not None and next_offset(p) < earliest else p for p in g.partitions)
        out.append(replace(g, partitions=rows))
    return out


def cluster_lag(
    session: AdminSession, partitions: Sequence[tuple[str, int]], *, isolation: str = "read_uncommitted",
    leaders: Mapping[tuple[str, int], int] | None = None,
) -> tuple[Partial[list[GroupLag]], dict[tuple[str, int], tuple[int | None, int | None]], dict[str, dict]]:
    """Lag of every group, and the log offsets of `partitions` besides (kctl top's produce
    rates) read in the same ListOffsets round (`leaders`: each partition's, from metadata
    the caller just read): every group's lag (the groups that could not be read with their
    errors), the log offsets (start, end) of the partitions asked about, and what ListGroups
    said of each group (group_type, group_state)."""
    listed = {g["group_id"]: g for g in protocol.list_groups(session)}
    results, errors, log, _local = _lag(session, listed, sorted(listed), (), isolation, partitions, leaders)
    return Partial(results, errors), log, listed


def _lag(
    session: AdminSession, listed: dict[str, dict], ids: Sequence[str], topics: Sequence[str], isolation: str,
    also: Sequence[tuple[str, int]], leaders: Mapping[tuple[str, int], int] | None = None,
) -> tuple[list[GroupLag], dict[str, KctlError], dict[tuple[str, int], tuple[int | None, int | None]], dict[tuple[str, int], int]]:
    ids = list(dict.fromkeys(ids))
    inputs, errors = _lag_inputs(session, ids, listed)
    partitions: set[tuple[str, int]] = set(also)
    for item in inputs.values():
        partitions.update(k for k in (*item.offsets, *item.owners) if not topics or k[0] in topics)
    # Offsets were fetched first and log ends are read now, so log ends are never older
    # than commits and a negative raw lag means something real.
    log, local = _log_positions(session, sorted(partitions), isolation, leaders)
    results = []
    for group_id in ids:
        found = inputs.get(group_id)
        if found is None:
            continue
        keys = sorted({k for k in (*found.offsets, *found.owners) if not topics or k[0] in topics})
        rows = []
        for t, p in keys:
            row = partition_lag(group_id, t, p, found.offsets.get((t, p)), *log.get((t, p), (None, None)), owner=found.owners.get((t, p)))
            if found.kafka_lag is not None and (t, p) in found.kafka_lag:
                row = replace(row, lag=found.kafka_lag[(t, p)])
            rows.append(row)
        lags = [r.lag for r in rows if r.lag is not None]
        results.append(
            GroupLag(
                group=group_id,
                state=found.state,
                members=found.members,
                lag_sum=sum(lags),
                lag_max=max(lags, default=0),
                lag_seconds_max=None,
                partitions_without_commit=sum(1 for r in rows if "NO_COMMIT" in r.flags),
                partitions=tuple(rows),
            )
        )
    return results, errors, log, local


def _lag_inputs(session: AdminSession, ids: Sequence[str], listed: dict[str, dict]) -> tuple[dict[str, _LagInputs], dict[str, KctlError]]:
    from kctl.admin.groups import classic, consumer, share, streams

    kinds = {g: listed_type(listed[g]) if g in listed else "classic" for g in ids}
    states = {g: listed[g].get("group_state") or "Unknown" for g in ids if g in listed}
    of_kind = {kind: [g for g in ids if kinds[g] == kind] for kind in TYPES}
    # ListGroups already says which groups are Empty; only the others need describing for
    # their members.
    errors: dict[str, KctlError] = {}
    owners: dict[str, dict] = {g: {} for g in ids}
    members: dict[str, int] = {}
    for kind, describe, owned in (("classic", protocol.classic_group_describe, classic.owners),
                                  ("consumer", protocol.consumer_group_describe, consumer.owners),
                                  ("streams", protocol.streams_group_describe, streams.owners)):
        for group_id, (raw, _node) in describe(session, [g for g in of_kind[kind] if states.get(g) != "Empty"]).items():
            if raw.error_code:
                errors[group_id] = described_error(group_id, raw, "compute lag of group")
                continue
            members[group_id] = len(raw.members)
            states.setdefault(group_id, raw.group_state)
            owners[group_id] = owned(raw)
    committed, refused = committed_offsets(session, [g for g in ids if kinds[g] != "share" and g not in errors])
    inputs: dict[str, _LagInputs] = {}
    for group_id in ids:
        offsets = committed.get(group_id, {})
        if kinds[group_id] == "share" or group_id in errors:
            continue
        if group_id in refused:
            errors[group_id] = refused[group_id]
        elif group_id not in listed and not offsets:
            errors[group_id] = not_found(group_id, "compute lag of group")
        else:
            inputs[group_id] = _LagInputs(state=states.get(group_id, "Empty"), members=members.get(group_id, 0),
                                          owners=owners[group_id], offsets={k: o for k, (o, _md) in offsets.items()})
    described_shares = protocol.share_group_describe(session, of_kind["share"])
    share_offsets = protocol.share_group_offsets(session, of_kind["share"])
    for group_id, (shared, _node) in described_shares.items():
        if shared.error_code:
            errors[group_id] = described_error(group_id, shared, "compute lag of group")
            continue
        starts = share.start_offsets(share_offsets.get(group_id, (None,))[0])
        inputs[group_id] = _LagInputs(
            state=shared.group_state, members=len(shared.members), owners={},
            offsets={k: start for k, (start, _lag) in starts.items()},
            kafka_lag={k: lag for k, (_start, lag) in starts.items() if lag is not None})
    return inputs, errors


def with_history(results: list[GroupLag], state_file, *, interpolate: bool, now_ms: int | None = None):
    """Record this sample in the history file; with `interpolate`, fill lag_seconds from it
    (source "interp") where no better source filled it. Returns (results, histories)."""
    import time

    from kctl.admin.groups.lag_history import record

    now = now_ms if now_ms is not None else int(time.time() * 1000)
    histories = record(state_file, samples_of(results, now))
    return (interpolated(results, histories, now) if interpolate else results), histories


def samples_of(results: Sequence[GroupLag], now_ms: int) -> dict:
    """This sample of every partition, as the lag history keeps it."""
    from kctl.admin.groups.lag_history import Sample

    return {(p.group, p.topic, p.partition): Sample(t=now_ms, committed=p.committed, log_end=p.log_end) for g in results for p in g.partitions}


def interpolated(results: list[GroupLag], histories: dict, now_ms: int) -> list[GroupLag]:
    """lag_seconds (source "interp") from each partition's history where nothing better
    filled it: kafka-lag-exporter's interpolation over (time, log end) samples."""
    from kctl.admin.groups.lag_history import interpolated_lag_seconds

    updated = []
    for g in results:
        rows = []
        for p in g.partitions:
            if p.lag_seconds is None and p.committed is not None:
                dated = 0.0 if p.lag == 0 else interpolated_lag_seconds(histories.get((p.group, p.topic, p.partition), []), next_offset(p), now_ms)
                if dated is not None:
                    p = replace(p, lag_seconds=dated, lag_seconds_source="caught_up" if p.lag == 0 else "interp")
            rows.append(p)
        known = [r.lag_seconds for r in rows if r.lag_seconds is not None]
        updated.append(replace(g, partitions=tuple(rows), lag_seconds_max=max(known) if known else None))
    return updated


def _with_record_time_lag(session: AdminSession, results: list[GroupLag], now_ms: int | None) -> list[GroupLag]:
    """lag_seconds = now - timestamp of the next record to consume (exact for LogAppendTime
    topics, subject to producer clocks for CreateTime)."""
    import time

    now = now_ms if now_ms is not None else int(time.time() * 1000)
    positions = sorted({(p.topic, p.partition, next_offset(p)) for g in results for p in g.partitions if p.lag})
    stamps = record_timestamps(session, positions, timeout=min(session.timeout, 10.0))
    updated = []
    for g in results:
        rows = []
        for p in g.partitions:
            if p.lag == 0:
                rows.append(replace(p, lag_seconds=0.0, lag_seconds_source="caught_up"))
            elif p.lag:
                ts = stamps.get((p.topic, p.partition, next_offset(p)))
                rows.append(replace(p, lag_seconds=max(0.0, (now - ts) / 1000) if ts is not None and ts >= 0 else None, lag_seconds_source="record" if ts is not None and ts >= 0 else "none"))
            else:
                rows.append(p)
        seconds = [r.lag_seconds for r in rows if r.lag_seconds is not None]
        updated.append(replace(g, partitions=tuple(rows), lag_seconds_max=max(seconds) if seconds else None))
    return updated
