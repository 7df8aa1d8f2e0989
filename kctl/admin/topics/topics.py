"""Topics: list, describe, create, delete."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from kctl.admin.client.errors import for_kafka_code, no_such_topic
from kctl.admin.client.kafka import TopicLayout
from kctl.admin.client.session import AdminSession, topic_missing
from kctl.admin.topics.models import PartitionInfo, TopicDescription, TopicResult, TopicSummary
from kctl.errors import AlreadyExistsError, InvalidError, KctlError, NotFoundError, Partial, Resource, UsageError
from kctl.messages.errors import error_code
from kctl.polling import poll
from kctl.values import Value

# Kafka's own limits (org.apache.kafka.common.internals.Topic): 249 characters, ASCII
# letters, digits, '.', '_' and '-', and neither "." nor "..".
TOPIC_NAME_MAX_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str) -> None:
    if not name:
        reason = "the name is empty"
    elif name in (".", ".."):
        reason = "'.' and '..' are not allowed"
    elif len(name) > TOPIC_NAME_MAX_LENGTH:
        reason = f"the name is {len(name)} characters long; the limit is {TOPIC_NAME_MAX_LENGTH}"
    elif not _LEGAL_TOPIC_NAME.fullmatch(name):
        reason = "only ASCII letters, digits, '.', '_' and '-' are allowed"
    else:
        return
    raise InvalidError(action=f"use topic name {name!r}", cause=reason)


class NewTopicSpec(Value):
    __slots__ = ("name", "partitions", "replication_factor", "config", "replica_assignment")

    def __init__(
        self, *,
        name: str, partitions: int | None = None, replication_factor: int | None = None, config: Mapping[str, str] | None = None,
        replica_assignment: tuple[tuple[int, ...], ...] | None = None,
    ):
        self.name = name
        # None leaves the choice to the broker (num.partitions, default.replication.factor).
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.config = dict() if config is None else config
        # Explicit replicas per partition; excludes partitions/replication_factor.
        self.replica_assignment = replica_assignment


def parse_replica_assignment(text: str) -> tuple[tuple[int, ...], ...]:
    """Kafka's --replica-assignment syntax: partitions separated by ',', replicas by ':'.

    '1:2,2:3,3:1' is three partitions of two replicas, the first replica preferred leader.
    """
    partitions = []
    for index, part in enumerate(text.split(",")):
        try:
            replicas = tuple(int(b) for b in part.split(":"))
        except ValueError:
            raise UsageError(action=f"parse replica assignment {text!r}", cause=f"partition {index} ({part!r}) is not broker ids joined by ':'") from None
        if len(set(replicas)) != len(replicas):
            raise UsageError(action=f"parse replica assignment {text!r}", cause=f"partition {index} lists a broker twice")
        partitions.append(replicas)
    if len({len(r) for r in partitions}) != 1:
        raise UsageError(action=f"parse replica assignment {text!r}", cause="every partition needs the same number of replicas")
    return tuple(partitions)


def _topic_names(session: AdminSession) -> list[str]:
    metadata = session.metadata("list topics")
    return sorted(metadata.topics)


def _describe(session: AdminSession, names: Sequence[str]) -> dict[str, TopicDescription | KctlError]:
    """Partition layout only (no offsets): one Metadata request."""
    if not names:
        return {}
    metadata = session.kafka.metadata(names, _describe_action(names), topic_ids=False)
    return {name: _layout_error(metadata.topics[name]) or _described(metadata.topics[name], live=None) for name in dict.fromkeys(names)}


def _layout_error(topic: TopicLayout) -> KctlError | None:
    """Why a topic of a Metadata answer has no layout to show, None when it has one (a
    topic still electing leaders, LEADER_NOT_AVAILABLE with partitions, has)."""
    if topic.error is None or (topic.error == "LEADER_NOT_AVAILABLE" and topic.partitions):
        return None
    return for_kafka_code(error_code(topic.error), None, f"describe topic {topic.name}", Resource("topic", topic.name))


def _described(topic: TopicLayout, *, live: set[int] | None, offsets: dict | None = None, detail: dict | None = None,
               eligible: dict | None = None, storage: dict | None = None, tiered: dict | None = None,
               sizes: dict | None = None) -> TopicDescription:
    """A TopicDescription from a topic's layout, its offsets and details when read."""
    partitions = []
    offsets = offsets or {}
    detail = detail or {}
    eligible = eligible or {}
    tiered = tiered or {}
    sizes = sizes or {}
    for p in topic.partitions.values():
        earliest, latest, epoch = offsets.get(p.partition, (None, None, None))
        size, adding, removing = detail.get(p.partition, (sizes.get(p.partition), None, None))
        elr, last_known = eligible.get((topic.name, p.partition), (None, None))
        local, uploaded = tiered.get((topic.name, p.partition), (None, None))
        partitions.append(
            PartitionInfo(
                partition=p.partition,
                leader=p.leader,
                leader_epoch=epoch,
                replicas=p.replicas,
                isr=p.isr,
                offline_replicas=tuple(r for r in p.replicas if live is not None and r not in live),
                offline=p.leader is None,
                under_replicated=len(p.isr) < len(p.replicas),
                earliest_offset=earliest,
                latest_offset=latest,
                size_bytes=size,
                adding_replicas=adding,
                removing_replicas=removing,
                elr=elr,
                last_known_elr=last_known,
                earliest_local_offset=local,
                latest_tiered_offset=uploaded,
            )
        )
    storage = storage or {}
    return TopicDescription(
        name=topic.name,
        topic_id=topic.topic_id,
        internal=topic.internal,
        replication_factor=max((len(p.replicas) for p in partitions), default=0),
        partitions=tuple(partitions),
        remote_storage=storage.get("remote.storage.enable"),
        retention_ms=storage.get("retention.ms"),
        retention_bytes=storage.get("retention.bytes"),
        local_retention_ms=storage.get("local.retention.ms"),
        local_retention_bytes=storage.get("local.retention.bytes"),
        cleanup_policy=storage.get("cleanup.policy"),
    )


# The configs that say how a topic is stored, read for every described topic (in one
# DescribeConfigs: cleanup.policy with them, for the compaction note).
STORAGE_CONFIGS = ("remote.storage.enable", "retention.ms", "retention.bytes", "local.retention.ms", "local.retention.bytes",
                   "cleanup.policy")


def storage_configs(session: AdminSession, names: Sequence[str]) -> dict[str, dict]:
    """{topic: {config: value}} of STORAGE_CONFIGS (remote.storage.enable as a bool,
    cleanup.policy as it is, the others as ints); a topic whose configs cannot be read is
    left out."""
    from kctl.admin.client.kafka import TOPIC

    if not names:
        return {}
    try:
        found, _unread = session.kafka.describe_configs([(TOPIC, n) for n in names], "describe topic configs", keys=list(STORAGE_CONFIGS))
    except KctlError:
        return {}  # not allowed to read configs: the description has everything else
    out: dict[str, dict] = {}
    for (_kind, name), entries in found.items():
        values: dict = {}
        for key in STORAGE_CONFIGS:
            value = getattr(entries.get(key), "value", None)
            if value is None:
                continue
            values[key] = value == "true" if key == "remote.storage.enable" else value if key == "cleanup.policy" else int(value)
        # Brokers that predate tiered storage know no remote.storage.enable: it is off.
        values.setdefault("remote.storage.enable", False)
        out[name] = values
    return out


def _leader_sizes(session: AdminSession, names: Sequence[str], leaders: dict[tuple[str, int], int | None]) -> dict[str, dict[int, int | None]]:
    """Each partition's leader replica size on disk (DescribeLogDirs)."""
    from kctl.admin.cluster.logdirs import describe_log_dirs

    _dirs, replicas = describe_log_dirs(session, topics=names)
    sizes = {(r.topic, r.partition, r.broker): r.size_bytes for r in replicas if not r.is_future}
    out: dict[str, dict[int, int | None]] = {}
    for (topic, partition), leader in leaders.items():
        if topic in names:
            out.setdefault(topic, {})[partition] = sizes.get((topic, partition, leader)) if leader is not None else None
    return out


def _detail(session: AdminSession, names: Sequence[str], leaders: dict[tuple[str, int], int | None]) -> dict[str, dict[int, tuple]]:
    """Leader replica sizes (DescribeLogDirs) and in-progress reassignments."""
    from kctl.admin.cluster.replication import list_reassignments

    sizes = _leader_sizes(session, names, leaders)
    moving = {(r.topic, r.partition): r for r in list_reassignments(session)}
    out: dict[str, dict[int, tuple]] = {}
    for topic, partition in leaders:
        r = moving.get((topic, partition))
        out.setdefault(topic, {})[partition] = (
            sizes.get(topic, {}).get(partition),
            r.adding_replicas if r else (),
            r.removing_replicas if r else (),
        )
    return out


def list_topics(
    session: AdminSession,
    *,
    regex: re.Pattern[str] | None = None,
    include_internal: bool = False,
    filters: Sequence[str] = (),
    with_overrides: bool = False,
    count_overrides: bool = False,
    with_topic_ids: bool = True,
    tiered: bool = False,
) -> list[TopicSummary]:
    """Topics sorted by name; `regex` must match the whole name, as in kafka-topics.sh.

    `filters` (partition health conditions, see kctl.admin.cluster.partitions) keep topics with
    at least one such partition; `with_overrides` keeps topics with config overrides,
    `tiered` those with tiered storage (remote.storage.enable=true).
    Counting overrides needs every topic's configs, which costs more than everything
    else together on large clusters, so it is done only when asked for (or needed by a
    filter); `config_overrides` is None otherwise. Topic ids need a DescribeTopics
    request beside the Metadata one, as costly again (librdkafka builds every
    partition's replica nodes), so without `with_topic_ids` `topic_id` is None and the
    internal flag follows Kafka's rule (INTERNAL_TOPICS).

    A plain listing (no filter, no configs) is one Metadata request through kctl's wire
    client, topic ids and the internal flag included: no client library to import.
    """
    metadata = session.kafka.metadata(None, "list topics", topic_ids=with_topic_ids)
    names = [n for n in sorted(metadata.topics) if regex is None or regex.fullmatch(n)]
    shown = [n for n in names if include_internal or not metadata.topics[n].internal]
    need_configs = count_overrides or with_overrides or any(f in ("under_min_isr", "at_min_isr") for f in filters)
    if need_configs or filters:
        # Imported only when used: a plain listing is mostly start-up time.
        from kctl.admin.cluster.partitions import health_of, topic_configs
    min_isr, overrides = topic_configs(session, shown) if need_configs else ({}, {})
    if tiered:  # only topics with remote.storage.enable=true (one DescribeConfigs of that key)
        storage = storage_configs(session, shown)
        shown = [n for n in shown if storage.get(n, {}).get("remote.storage.enable")]
    live = set(metadata.brokers)
    summaries = []
    for name in shown:
        topic = metadata.topics[name]
        partitions = topic.partitions.values()
        if filters:
            health = [health_of(name, p, min_isr.get(name), live) for p in partitions]
            if not any(getattr(h, f) for h in health for f in filters):
                continue
        if with_overrides and not overrides.get(name):
            continue
        # Counted inline rather than through health_of: this loop runs once per partition
        # of the cluster, and at 18,000 partitions health_of's objects cost 0.07 s.
        replication_factor = under_replicated = offline = 0
        for p in partitions:
            replicas = len(p.replicas)
            replication_factor = max(replication_factor, replicas)
            under_replicated += len(p.isr) < replicas
            offline += p.leader is None
        summaries.append(
            TopicSummary(
                name=name,
                topic_id=topic.topic_id,
                partitions=len(topic.partitions),
                replication_factor=replication_factor,
                internal=topic.internal,
                config_overrides=overrides.get(name) if need_configs else None,
                under_replicated_partitions=under_replicated,
                offline_partitions=offline,
            )
        )
    return summaries


def _describe_action(names: Sequence[str]) -> str:
    # wait_all names the topic of each failure only in batches; a single one is named here.
    return f"describe topic {names[0]}" if len(set(names)) == 1 else "describe topic"


def describe_topics(
    session: AdminSession, names: Sequence[str], *, detail: bool = False
) -> Partial[list[TopicDescription]]:
    """Descriptions in the order asked, and the errors of topics that could not be described.

    Offsets come from ListOffsets; with `detail`, replica sizes and in-progress
    reassignments too (a DescribeLogDirs to every broker and a ListPartitionReassignments).
    Every topic's storage configs are read (one DescribeConfigs), and its eligible leader
    replicas where the cluster reports them (DescribeTopicPartitions); a topic with
    tiered storage also gets its earliest local and latest tiered offsets and its leader
    replicas' sizes.
    """
    for name in names:
        validate_topic_name(name)
    unique = list(dict.fromkeys(names))
    from kctl.admin.topics.offsets import log_offsets

    metadata = session.ask_until_found(lambda: session.kafka.metadata(unique, _describe_action(unique)),
                                       lambda metadata: any(metadata.pending(n) for n in unique))
    errors: dict[str, KctlError] = {}
    for name in unique:
        error = _layout_error(metadata.topics[name])
        if error is not None:
            errors[name] = error
    layouts = [metadata.topics[n] for n in unique if n not in errors]
    leaders = {(t.name, p.partition): p.leader for t in layouts for p in t.partitions.values()}
    offsets: dict[str, dict[int, tuple]] = {}
    led = {k: leader for k, leader in leaders.items() if leader is not None}
    for (name, partition), answer in log_offsets(session, list(led), leaders=led).items():
        offsets.setdefault(name, {})[partition] = answer
    details = _detail(session, [t.name for t in layouts], leaders) if detail and layouts else {}
    from kctl.admin.cluster import elr

    eligible = elr.eligible_leaders(session, {t.name: len(t.partitions) for t in layouts}) if layouts and elr.supported(session) else {}
    storage = storage_configs(session, [t.name for t in layouts])
    remote = [t.name for t in layouts if storage.get(t.name, {}).get("remote.storage.enable")]
    tiered, sizes = {}, {}
    if remote:
        from kctl.admin.topics.offsets import tiered_offsets

        led = {k: leader for k, leader in leaders.items() if leader is not None and k[0] in remote}
        tiered = tiered_offsets(session, sorted(led), led)
        if not detail:
            sizes = _leader_sizes(session, remote, leaders)
    live = set(metadata.brokers)
    found = [_described(t, live=live, offsets=offsets.get(t.name), detail=details.get(t.name), eligible=eligible,
                        storage=storage.get(t.name), tiered=tiered, sizes=sizes.get(t.name)) for t in layouts]
    return Partial(found, errors)


def uncompacted_topics(session: AdminSession, topics: Sequence[TopicDescription]) -> list[str]:
    """Topics whose cleanup.policy includes compact while a broker holding their replicas
    runs no log cleaner (log.cleaner.enable=false): their records are never compacted.
    The policy comes with the description where it was read; best effort: configs that
    cannot be read count as fine."""
    from kctl.admin.client.kafka import BROKER, TOPIC

    if not topics:
        return []
    try:
        compacted = {t.name for t in topics if "compact" in (t.cleanup_policy or "")}
        unknown = [t.name for t in topics if t.cleanup_policy is None]
        if unknown:
            policies, _unread = session.kafka.describe_configs([(TOPIC, n) for n in unknown], "describe topic configs", keys=["cleanup.policy"])
            compacted |= {name for (_kind, name), found in policies.items() if "compact" in (getattr(found.get("cleanup.policy"), "value", None) or "")}
        if not compacted:
            return []
        replicas_of = {t.name: {r for p in t.partitions for r in p.replicas} for t in topics if t.name in compacted}
        brokers = sorted(set().union(*replicas_of.values()))
        cleaners, _unread = session.kafka.describe_configs([(BROKER, str(b)) for b in brokers], "describe broker configs", keys=["log.cleaner.enable"])
    except KctlError:
        return []  # best effort: not allowed to read configs, say
    cleaner_off = {int(name) for (_kind, name), found in cleaners.items() if getattr(found.get("log.cleaner.enable"), "value", None) == "false"}
    return sorted(name for name, replicas in replicas_of.items() if replicas & cleaner_off)


def create_topics(
    session: AdminSession,
    specs: Sequence[NewTopicSpec],
    *,
    validate_only: bool = False,
    if_not_exists: bool = False,
) -> Partial[list[TopicResult]]:
    """One result per topic, and the errors of those that failed."""
    from confluent_kafka.admin import NewTopic

    for spec in specs:
        validate_topic_name(spec.name)
    new_topics = []
    for spec in specs:
        if spec.replica_assignment is not None:
            # librdkafka wants the partition count spelled out alongside the assignment.
            assignment = [list(r) for r in spec.replica_assignment]
            new_topics.append(NewTopic(spec.name, num_partitions=len(assignment), replica_assignment=assignment, config=dict(spec.config)))
        else:
            new_topics.append(
                NewTopic(
                    spec.name,
                    num_partitions=spec.partitions if spec.partitions is not None else -1,
                    replication_factor=spec.replication_factor if spec.replication_factor is not None else -1,
                    config=dict(spec.config),
                )
            )
    futures = session.client.create_topics(
        new_topics,
        validate_only=validate_only,
        operation_timeout=session.timeout,
        request_timeout=session.timeout,
    )
    outcomes = session.wait_all(futures, "create topic")
    created = [s.name for s in specs if not isinstance(outcomes[s.name], KctlError) and not validate_only]
    actual = _await_visible(session, created)
    results = []
    errors: dict[str, KctlError] = {}
    for spec in specs:
        outcome = outcomes[spec.name]
        description = actual.get(spec.name)
        if isinstance(outcome, AlreadyExistsError) and if_not_exists:
            results.append(TopicResult(name=spec.name, status="exists"))
        elif isinstance(outcome, KctlError):
            errors[spec.name] = outcome
            results.append(TopicResult(name=spec.name, status="failed", error=outcome.message))
        else:
            results.append(
                TopicResult(
                    name=spec.name,
                    status="validated" if validate_only else "created",
                    partitions=len(description.partitions) if description else spec.partitions,
                    replication_factor=description.replication_factor if description else spec.replication_factor,
                )
            )
    return Partial(results, errors)


def _await_visible(session: AdminSession, names: Sequence[str]) -> dict[str, TopicDescription]:
    """Descriptions of newly created topics, once their metadata has reached every broker
    (it propagates asynchronously); whatever is visible when the timeout ends.

    Waiting means the command returns when the topic is usable, and the result shows
    what the brokers made of defaults (partitions, replication factor).
    """
    found: dict[str, TopicDescription] = {}

    def ask() -> dict[str, TopicDescription]:
        missing = [n for n in names if n not in found]
        found.update({d.name: d for d in _describe(session, missing).values() if not isinstance(d, KctlError) and d.partitions})
        return found

    poll(ask, lambda visible: len(visible) == len(names), timeout=session.timeout, interval=0.05)
    # The next command may ask any broker: return once every one knows them.
    session.await_every_broker("create topics", list(found), exist=True)
    return found


def _await_gone(session: AdminSession, names: Sequence[str]) -> None:
    """Return once deleted topics are gone from the metadata of every broker, as
    _await_visible waits for new ones: Kafka acknowledges a deletion when the controller
    has committed it, and each broker applies that a moment later, so a listing right
    after `topic delete` or `apply --prune` could still show the topic (a CI run saw it
    on three nodes). Whatever is still listed when the timeout ends is left to Kafka."""
    if not names:
        return
    session.await_every_broker("delete topics", names, exist=False)


def match_topics(session: AdminSession, names: Sequence[str], regex: re.Pattern[str] | None) -> tuple[list[str], list[str]]:
    """Existing topics among `names` plus those the regex matches, and the names that do not exist."""
    existing = set(_topic_names(session))
    chosen = [n for n in dict.fromkeys(names) if n in existing]
    missing = [n for n in dict.fromkeys(names) if n not in existing]
    if regex is not None:
        # Internal topics (__consumer_offsets, ...) are only ever deleted by name.
        chosen += [n for n in sorted(existing) if regex.fullmatch(n) and not n.startswith("__") and n not in chosen]
    return chosen, missing


def delete_topics(
    session: AdminSession, names: Sequence[str], *, if_exists: bool = False
) -> Partial[list[TopicResult]]:
    """One result per topic, and the errors of those that failed."""
    if not names:
        return Partial([], {})
    futures = session.client.delete_topics(list(names), operation_timeout=session.timeout, request_timeout=session.timeout)
    outcomes = session.wait_all(futures, "delete topic", resource_type="topic")
    _await_gone(session, [n for n in names if not isinstance(outcomes[n], KctlError)])
    results = []
    errors: dict[str, KctlError] = {}
    for name in names:
        outcome = outcomes[name]
        if isinstance(outcome, NotFoundError) and if_exists:
            results.append(TopicResult(name=name, status="absent"))
        elif isinstance(outcome, KctlError):
            errors[name] = outcome
            results.append(TopicResult(name=name, status="failed", error=outcome.message))
        else:
            results.append(TopicResult(name=name, status="deleted"))
    return Partial(results, errors)


class PartitionsResult(Value):
    __slots__ = ("name", "status", "partitions_before", "partitions_after", "error")

    def __init__(self, *, name: str, status: str, partitions_before: int | None, partitions_after: int | None, error: str | None = None):
        self.name = name
        # added | validated | unchanged | failed
        self.status = status
        self.partitions_before = partitions_before
        self.partitions_after = partitions_after
        self.error = error


def add_partitions(
    session: AdminSession,
    names: Sequence[str],
    *,
    total: int | None = None,
    add: int | None = None,
    replica_assignment: tuple[tuple[int, ...], ...] | None = None,
    validate_only: bool = False,
) -> Partial[list[PartitionsResult]]:
    """Grow topics to `total` partitions (or by `add`); Kafka never removes partitions."""
    from confluent_kafka.admin import NewPartitions

    for name in names:
        validate_topic_name(name)
    metadata = session.metadata("add partitions", names)
    results: dict[str, PartitionsResult] = {}
    errors: dict[str, KctlError] = {}
    requests = []
    for name in names:
        if topic_missing(metadata, name):
            errors[name] = no_such_topic(f"add partitions to {name}", name)
            results[name] = PartitionsResult(name=name, status="failed", partitions_before=None, partitions_after=None, error=errors[name].message)
            continue
        topic = metadata.topics[name]
        before = len(topic.partitions)
        target = total if total is not None else before + (add or 0)
        if replica_assignment is not None and target - before != len(replica_assignment):
            raise UsageError(
                action=f"add partitions to {name}", cause=f"the replica assignment lists {len(replica_assignment)} partition(s) but {target - before} are being added"
            )
        if target < before:
            errors[name] = InvalidError(action=f"add partitions to {name}", cause=f"it has {before} partitions; Kafka cannot remove partitions")
            results[name] = PartitionsResult(name=name, status="failed", partitions_before=before, partitions_after=before, error=errors[name].message)
        elif target == before:
            results[name] = PartitionsResult(name=name, status="unchanged", partitions_before=before, partitions_after=before)
        else:
            if replica_assignment:
                requests.append(NewPartitions(name, target, replica_assignment=[list(r) for r in replica_assignment]))
            else:
                requests.append(NewPartitions(name, target))
            results[name] = PartitionsResult(name=name, status="validated" if validate_only else "added", partitions_before=before, partitions_after=target)
    if requests:
        futures = session.client.create_partitions(requests, validate_only=validate_only, operation_timeout=session.timeout, request_timeout=session.timeout)
        outcomes = session.wait_all(futures, "add partitions")
        for name, outcome in outcomes.items():
            if isinstance(outcome, KctlError):
                failure = outcome.but(action=f"add partitions to {name}")
                errors[name] = failure
                old = results[name]
                results[name] = PartitionsResult(name=name, status="failed", partitions_before=old.partitions_before, partitions_after=old.partitions_before, error=failure.message)
    return Partial([results[n] for n in names], errors)
