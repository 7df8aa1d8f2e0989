"""Helpers the handlers share: topic lookup, auto-creation, authorised-operation bits."""

from __future__ import annotations

import logging
import uuid

from kctl.broker.protocol import errors
from kctl.broker.storage.manager import topic_name_problem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kctl.broker.broker import Broker
    from kctl.broker.storage.manager import TopicInfo

log = logging.getLogger("kctl.broker")

ZERO_UUID = uuid.UUID(int=0)
# AclOperation codes a topic supports: READ..DESCRIBE (3-8), DESCRIBE_CONFIGS, ALTER_CONFIGS
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
GROUP_OPERATIONS = sum(1 << op for op in (3, 6, 8))
NO_OPERATIONS = -2147483648
# Topics the broker keeps for itself: listed as internal, never produced to or deleted by clients.
INTERNAL_TOPICS = frozenset({"__consumer_offsets"})


def topic_for_name(broker: Broker, name: str, auto_create: bool) -> tuple[TopicInfo | None, int]:
    """(TopicInfo or None, error code): auto-creates when the broker and request allow."""
    info = broker.logs.topics.get(name)
    if info is not None:
        return info, errors.NONE
    if topic_name_problem(name):
        return None, errors.INVALID_TOPIC_EXCEPTION
    if auto_create and broker.config.auto_create_topics:
        try:
            return broker.logs.create_topic(name, broker.config.num_partitions, {}), errors.NONE
        except OSError as exc:
            log.error("%s", storage_error_message(f"auto-create topic {name}", exc))
            return None, errors.KAFKA_STORAGE_ERROR
    return None, errors.UNKNOWN_TOPIC_OR_PARTITION


def storage_error_message(action: str, exc: Exception) -> str:
    """One line for a request the disk refused (KAFKA_STORAGE_ERROR), logged and answered."""
    return f"cannot {action}: {getattr(exc, 'strerror', None) or exc}"


def answer_storage_error(result: dict[str, object], action: str, exc: OSError) -> None:
    """Log the failure in one line and answer it in `result` as KAFKA_STORAGE_ERROR."""
    message = storage_error_message(action, exc)
    log.error("%s", message)
    result.update(error_code=errors.KAFKA_STORAGE_ERROR, error_message=message)


def answer_storage_errors(results: list[dict[str, object]], action: str, exc: OSError) -> None:
    """A change the disk refused: every result that had succeeded becomes KAFKA_STORAGE_ERROR."""
    message = storage_error_message(action, exc)
    log.error("%s", message)
    for result in results:
        if result["error_code"] == errors.NONE:
            result.update(error_code=errors.KAFKA_STORAGE_ERROR, error_message=message)


def topic_name(broker: Broker, name: str | None, topic_id: uuid.UUID | None) -> str | None:
    """The topic a request names, by name (older versions) or by id (newer ones)."""
    if topic_id is not None and topic_id != ZERO_UUID:
        return broker.logs.topic_ids.get(topic_id)
    return name


def leader_epoch_error(current_leader_epoch: int) -> int:
    """Kafka's check of a client's known leader epoch against ours (always 0)."""
    return errors.UNKNOWN_LEADER_EPOCH if (current_leader_epoch or 0) > 0 else errors.NONE


def other_group_type(broker: Broker, group_id: str, kind: str, empty_classic: bool = False) -> str | None:
    """The type of a group of that id other than `kind` (an empty classic group counts
    only with `empty_classic`, as the describes count it: Kafka lets a modern group take
    its id), or None. Group ids are one namespace."""
    for other, groups in (("consumer", broker.consumer_groups.groups), ("share", broker.share_groups.groups),
                          ("streams", broker.streams_groups.groups)):
        if other != kind and group_id in groups:
            return other
    classic = broker.groups.group(group_id)
    return "classic" if classic is not None and (classic.members or empty_classic) else None
