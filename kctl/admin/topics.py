"""Topics: list, describe, create, delete."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kctl.admin.models import PartitionInfo, TopicDescription, TopicResult, TopicSummary
from kctl.admin.session import AdminSession
from kctl.errors import AlreadyExistsError, InvalidError, KctlError, NotFoundError

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
    raise InvalidError(f"unable to use topic name {name!r}: {reason}")


@dataclass(frozen=True, kw_only=True)
class NewTopicSpec:
    name: str
    # None leaves the choice to the broker (num.partitions, default.replication.factor).
    partitions: int | None = None
    replication_factor: int | None = None
    config: Mapping[str, str] = field(default_factory=dict)


def _topic_names(session: AdminSession) -> list[str]:
    metadata = session.metadata("list topics")
    return sorted(metadata.topics)


def _describe(session: AdminSession, names: Sequence[str]) -> dict[str, TopicDescription | KctlError]:
    from confluent_kafka import TopicCollection

    if not names:
        return {}
    futures = session.client.describe_topics(TopicCollection(list(names)), request_timeout=session.timeout)
    results = session.wait_all(futures, "describe topic")
    return {name: r if isinstance(r, KctlError) else _description(r) for name, r in results.items()}


def _description(raw) -> TopicDescription:
    partitions = []
    for p in sorted(raw.partitions, key=lambda p: p.id):
        replicas = tuple(n.id for n in p.replicas)
        isr = tuple(n.id for n in p.isr)
        leader = p.leader.id if p.leader is not None and p.leader.id >= 0 else None
        partitions.append(
            PartitionInfo(
                partition=p.id,
                leader=leader,
                replicas=replicas,
                isr=isr,
                offline=leader is None,
                under_replicated=len(isr) < len(replicas),
            )
        )
    return TopicDescription(
        name=raw.name,
        topic_id=str(raw.topic_id) if raw.topic_id is not None else None,
        internal=bool(raw.is_internal),
        replication_factor=max((len(p.replicas) for p in partitions), default=0),
        partitions=tuple(partitions),
    )


def list_topics(
    session: AdminSession, *, regex: re.Pattern[str] | None = None, include_internal: bool = False
) -> list[TopicSummary]:
    """Topics sorted by name; `regex` must match the whole name, as in kafka-topics.sh."""
    names = [n for n in _topic_names(session) if regex is None or regex.fullmatch(n)]
    summaries = []
    for name, description in sorted(_describe(session, names).items()):
        if isinstance(description, KctlError):
            continue  # deleted between the two requests
        if description.internal and not include_internal:
            continue
        summaries.append(
            TopicSummary(
                name=description.name,
                topic_id=description.topic_id,
                partitions=len(description.partitions),
                replication_factor=description.replication_factor,
                internal=description.internal,
            )
        )
    return summaries


def describe_topics(
    session: AdminSession, names: Sequence[str]
) -> tuple[list[TopicDescription], dict[str, KctlError]]:
    """Descriptions in the order asked, and the errors of topics that could not be described."""
    for name in names:
        validate_topic_name(name)
    results = _describe(session, list(dict.fromkeys(names)))
    found = [r for n in dict.fromkeys(names) if not isinstance(r := results[n], KctlError)]
    errors = {n: r for n, r in results.items() if isinstance(r, KctlError)}
    return found, errors


def create_topics(
    session: AdminSession,
    specs: Sequence[NewTopicSpec],
    *,
    validate_only: bool = False,
    if_not_exists: bool = False,
) -> tuple[list[TopicResult], dict[str, KctlError]]:
    """One result per topic, and the errors of those that failed."""
    from confluent_kafka.admin import NewTopic

    for spec in specs:
        validate_topic_name(spec.name)
    new_topics = [
        NewTopic(
            spec.name,
            num_partitions=spec.partitions if spec.partitions is not None else -1,
            replication_factor=spec.replication_factor if spec.replication_factor is not None else -1,
            config=dict(spec.config),
        )
        for spec in specs
    ]
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
    return results, errors


def _await_visible(session: AdminSession, names: Sequence[str]) -> dict[str, TopicDescription]:
    """Descriptions of newly created topics, once their metadata has reached the broker
    we ask (it propagates asynchronously); whatever is visible when the timeout ends.

    Waiting means the command returns when the topic is usable, and the result shows
    what the brokers made of defaults (partitions, replication factor).
    """
    deadline = time.monotonic() + session.timeout
    found: dict[str, TopicDescription] = {}
    while True:
        missing = [n for n in names if n not in found]
        found.update({d.name: d for d in _describe(session, missing).values() if not isinstance(d, KctlError) and d.partitions})
        if len(found) == len(names) or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


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
) -> tuple[list[TopicResult], dict[str, KctlError]]:
    """One result per topic, and the errors of those that failed."""
    if not names:
        return [], {}
    futures = session.client.delete_topics(list(names), operation_timeout=session.timeout, request_timeout=session.timeout)
    outcomes = session.wait_all(futures, "delete topic")
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
    return results, errors
