"""MM2's replication policies: how a topic is named on the cluster it is copied to, and
where MM2 keeps its internal topics (org.apache.kafka.connect.mirror.DefaultReplicationPolicy
and IdentityReplicationPolicy, replication.policy.separator included).

default:  `orders` from alias `primary` is `primary.orders` on the target;
identity: it keeps its name (heartbeats excepted), so a topic's origin cannot be read
          from its name: the pair's offset syncs tell which topics are replicated.
"""

from __future__ import annotations

from dataclasses import dataclass

from kctl.errors import UsageError

POLICIES = ("default", "identity")
HEARTBEATS = "heartbeats"


@dataclass(frozen=True)
class ReplicationPolicy:
    kind: str = "default"
    separator: str = "."

    def __post_init__(self) -> None:
        if self.kind not in POLICIES:
            raise UsageError(action=f"use replication policy {self.kind!r}", cause=f"expected one of {', '.join(POLICIES)}")
        if not self.separator:
            raise UsageError("unable to use an empty replication policy separator")

    def _heartbeat(self, topic: str) -> bool:
        return topic.endswith(HEARTBEATS)

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        if self.kind == "identity" and not self._heartbeat(topic):
            return topic
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """The alias a remote topic came from, None for a local one (identity: None
        unless it is a heartbeats topic, as Kafka's policy without source.cluster.alias)."""
        if self.kind == "identity" and not self._heartbeat(topic):
            return None
        parts = topic.split(self.separator)
        while parts and not parts[-1]:
            parts.pop()  # Java's String.split drops trailing empty strings
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        if self.kind == "identity" and not self._heartbeat(topic):
            return topic
        source = self.topic_source(topic)
        return None if source is None else topic[len(source) + len(self.separator):]

    def original_topic(self, topic: str) -> str:
        """The topic's name on the cluster it was first produced to, through every hop."""
        seen = set()
        while (upstream := self.upstream_topic(topic)) is not None and upstream != topic and topic not in seen:
            seen.add(topic)
            topic = upstream
        return topic

    def remote_topic(self, topic: str, source_alias: str, target_alias: str) -> str:
        """Where the source's `topic` is found on the target, as MM2's checkpoints name it:
        a topic that came from the target goes back to its original name (a failback),
        any other gets the source's prefix (MirrorCheckpointTask.renameTopicPartition)."""
        if self.topic_source(topic) == target_alias:
            return self.original_topic(topic)
        return self.format_remote_topic(source_alias, topic)

    # -- MM2's internal topics (internal topics always use "." here: Kafka's default of
    # replication.policy.internal.topic.separator.enabled is true, so they follow the
    # separator; kctl follows it too) --

    def checkpoints_topic(self, alias: str) -> str:
        return f"{alias}{self.separator}checkpoints{self.separator}internal"

    def offset_syncs_topic(self, alias: str) -> str:
        return f"mm2-offset-syncs{self.separator}{alias}{self.separator}internal"

    def checkpoints_alias(self, topic: str) -> str | None:
        """The source alias of a checkpoints topic's name, None for any other topic."""
        suffix = f"{self.separator}checkpoints{self.separator}internal"
        return topic[: -len(suffix)] if topic.endswith(suffix) and len(topic) > len(suffix) else None

    def offset_syncs_alias(self, topic: str) -> str | None:
        prefix, suffix = f"mm2-offset-syncs{self.separator}", f"{self.separator}internal"
        if topic.startswith(prefix) and topic.endswith(suffix) and len(topic) > len(prefix) + len(suffix):
            return topic[len(prefix): -len(suffix)]
        return None

    def is_internal(self, topic: str) -> bool:
        """MM2's and Kafka's own topics, never replicated data."""
        return (topic.endswith(f"{self.separator}internal") or topic.startswith("__")
                or topic.startswith("mm2-") or self._heartbeat(topic))
