"""Eligible leader replicas (KIP-966), from DescribeTopicPartitions (Kafka 3.8+).

With eligible.leader.replicas.version 1 (the default of clusters formatted by Kafka 4.1+),
a replica that leaves the ISR while the ISR is below min.insync.replicas joins the
partition's ELR: it holds every committed record, so the controller may elect it cleanly
once the ISR is empty. A replica whose broker comes back from an unclean shutdown leaves
the ELR for the last known ELR, which only names the replicas an unclean election should
prefer. Metadata does not carry either list; DescribeTopicPartitions does.
"""

from __future__ import annotations

from collections.abc import Mapping

from kctl.admin.client.session import AdminSession
from kctl.messages import apis

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    pass

DESCRIBE_TOPIC_PARTITIONS = 75
# What one answer may hold (the brokers' max.request.partition.size.limit, 2000 by default):
# topics are asked in batches of this many partitions, every batch at once.
BATCH_PARTITIONS = 2000
NEEDS_ELR = "eligible leader replicas (DescribeTopicPartitions, Kafka 3.8+)"


def supported(session: AdminSession) -> bool:
    """Whether the cluster answers DescribeTopicPartitions (False through librdkafka-only
    settings: kctl's wire client is the one that speaks it)."""
    return session.supports(DESCRIBE_TOPIC_PARTITIONS)


def eligible_leaders(session: AdminSession, partition_counts: Mapping[str, int]
                     ) -> dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]]:
    """{(topic, partition): (ELR, last known ELR)} of the topics named (with their partition
    counts, to batch them). Topics are asked in batches of at most BATCH_PARTITIONS
    partitions, all in flight at once; a topic larger than that is followed by its cursor."""
    found: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]] = {}
    batches: list[list[str]] = []
    size = BATCH_PARTITIONS
    for name, count in sorted(partition_counts.items()):
        if size + count > BATCH_PARTITIONS:
            batches.append([])
            size = 0
        batches[-1].append(name)
        size += count
    action = "describe eligible leader replicas"
    pending: list[tuple[list[str], dict | None]] = [(names, None) for names in batches]
    while pending:
        requests = [(None, apis.DESCRIBE_TOPIC_PARTITIONS,
                     {"topics": [{"name": n} for n in names], "response_partition_limit": BATCH_PARTITIONS, "cursor": cursor}, 0, 0)
                    for names, cursor in pending]
        answers = session.ask_all(action, requests, needs=NEEDS_ELR)
        following: list[tuple[list[str], dict | None]] = []
        for (names, _cursor), answer in zip(pending, answers):
            for topic in answer.topics:
                if topic.name is None:  # Kafka names every topic asked for by name
                    continue
                for p in topic.partitions:
                    found[(topic.name, p.partition_index)] = (tuple(p.eligible_leader_replicas or ()), tuple(p.last_known_elr or ()))
            cursor = answer.next_cursor
            if cursor is not None:
                rest = names[names.index(cursor.topic_name):] if cursor.topic_name in names else []
                if rest:
                    following.append((rest, {"topic_name": cursor.topic_name, "partition_index": cursor.partition_index}))
        pending = following
    return found
