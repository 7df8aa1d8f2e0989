"""Topic and broker configuration: names, defaults, types, validation (Kafka 4.x values).

Topic configs resolve, like Kafka's, from the topic's own override, then a dynamic
cluster-wide broker default (the `log.*` synonym), then the static default below.
"""

from __future__ import annotations

from dataclasses import dataclass

# DescribeConfigs config_type values
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = range(1, 10)
# DescribeConfigs config_source values
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
DYNAMIC_GROUP_CONFIG = 8

LONG_MAX = "9223372036854775807"


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    default: str
    type: int
    synonym: str | None  # the broker config that supplies the cluster default
    doc: str
    choices: tuple[str, ...] = ()


TOPIC_CONFIGS = {c.name: c for c in (
    ConfigDef("cleanup.policy", "delete", LIST, "log.cleanup.policy",
              "Retention policy for old log segments: delete, compact or both.",
              ("delete", "compact")),
    ConfigDef("compression.type", "producer", STRING, "compression.type",
              "Final compression type; 'producer' keeps what the producer sent.",
              ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    ConfigDef("compression.gzip.level", "-1", INT, "compression.gzip.level", "gzip level."),
    ConfigDef("compression.lz4.level", "9", INT, "compression.lz4.level", "lz4 level."),
    ConfigDef("compression.zstd.level", "3", INT, "compression.zstd.level", "zstd level."),
    ConfigDef("delete.retention.ms", "86400000", LONG, "log.cleaner.delete.retention.ms",
              "How long tombstones are retained on compacted topics."),
    ConfigDef("file.delete.delay.ms", "60000", LONG, "log.segment.delete.delay.ms",
              "Delay before deleting a file from the filesystem."),
    ConfigDef("flush.messages", LONG_MAX, LONG, "log.flush.interval.messages",
              "Messages accumulated before the log is fsynced."),
    ConfigDef("flush.ms", LONG_MAX, LONG, "log.flush.interval.ms",
              "Maximum time before the log is fsynced."),
    ConfigDef("index.interval.bytes", "4096", INT, "log.index.interval.bytes",
              "Bytes between offset index entries."),
    ConfigDef("max.compaction.lag.ms", LONG_MAX, LONG, "log.cleaner.max.compaction.lag.ms",
              "Maximum time a message stays ineligible for compaction."),
    ConfigDef("max.message.bytes", "1048588", INT, "message.max.bytes",
              "Largest record batch size allowed."),
    ConfigDef("message.timestamp.after.max.ms", "3600000", LONG,
              "log.message.timestamp.after.max.ms",
              "How far in the future a CreateTime timestamp may be."),
    ConfigDef("message.timestamp.before.max.ms", LONG_MAX, LONG,
              "log.message.timestamp.before.max.ms",
              "How far in the past a CreateTime timestamp may be."),
    ConfigDef("message.timestamp.type", "CreateTime", STRING, "log.message.timestamp.type",
              "CreateTime or LogAppendTime.", ("CreateTime", "LogAppendTime")),
    ConfigDef("min.cleanable.dirty.ratio", "0.5", DOUBLE, "log.cleaner.min.cleanable.ratio",
              "Dirty ratio above which the log is compacted."),
    ConfigDef("min.compaction.lag.ms", "0", LONG, "log.cleaner.min.compaction.lag.ms",
              "Minimum time a message stays uncompacted."),
    ConfigDef("min.insync.replicas", "1", INT, "min.insync.replicas",
              "Minimum in-sync replicas for acks=all."),
    ConfigDef("preallocate", "false", BOOLEAN, "log.preallocate",
              "Preallocate segment files."),
    ConfigDef("retention.bytes", "-1", LONG, "log.retention.bytes",
              "Maximum partition size before old segments are deleted (-1: no limit)."),
    ConfigDef("retention.ms", "604800000", LONG, "log.retention.ms",
              "Maximum age of a segment's newest record before the segment is deleted."),
    ConfigDef("segment.bytes", "1073741824", INT, "log.segment.bytes",
              "Segment file size."),
    ConfigDef("segment.index.bytes", "10485760", INT, "log.index.size.max.bytes",
              "Offset index size."),
    ConfigDef("segment.jitter.ms", "0", LONG, "log.roll.jitter.ms", "Roll jitter."),
    ConfigDef("segment.ms", "604800000", LONG, "log.roll.ms",
              "Time after which a non-empty segment is rolled."),
    ConfigDef("unclean.leader.election.enable", "false", BOOLEAN,
              "unclean.leader.election.enable", "Allow out-of-sync replicas to lead."),
)}

# Broker-only configs (beyond the log.* synonyms of topic configs) with Kafka 4.x defaults.
# None: no default value (Kafka shows null).
BROKER_CONFIGS = {c.name: c for c in (
    ConfigDef("log.retention.hours", "168", INT, None, "Hours to keep a log segment."),
    ConfigDef("log.retention.minutes", None, INT, None, "Minutes to keep a log segment."),
    ConfigDef("log.roll.hours", "168", INT, None, "Maximum time before a new segment is rolled."),
    ConfigDef("log.retention.check.interval.ms", "300000", LONG, None,
              "How often retention is checked."),
    ConfigDef("log.cleaner.threads", "1", INT, None, "Log cleaner threads."),
    ConfigDef("log.cleaner.backoff.ms", "15000", LONG, None,
              "Sleep when there are no logs to clean."),
    ConfigDef("log.cleaner.dedupe.buffer.size", "134217728", LONG, None, "Cleaner memory."),
    ConfigDef("log.cleaner.io.buffer.size", "524288", INT, None, "Cleaner I/O buffer."),
    ConfigDef("log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308", DOUBLE, None,
              "Cleaner I/O limit."),
    ConfigDef("num.io.threads", "8", INT, None, "Request handler threads."),
    ConfigDef("num.network.threads", "3", INT, None, "Network threads."),
    ConfigDef("num.replica.fetchers", "1", INT, None, "Replica fetcher threads."),
    ConfigDef("background.threads", "10", INT, None, "Background threads."),
    ConfigDef("max.connections", "2147483647", INT, None, "Maximum connections."),
    ConfigDef("max.connections.per.ip", "2147483647", INT, None, "Connections per IP."),
)}

# Broker configs that may be changed at runtime (cluster-wide default or per broker).
DYNAMIC_BROKER_CONFIGS = {c.synonym for c in TOPIC_CONFIGS.values()} | set(BROKER_CONFIGS)


class InvalidConfig(ValueError):
    pass


def validate(definition: ConfigDef, value: str | None) -> str | None:
    """The normalised value, or InvalidConfig with Kafka-like wording."""
    if value is None:
        return None
    try:
        if definition.type in (INT, SHORT, LONG):
            number = int(value)
            if definition.type == INT and not -2**31 <= number < 2**31:
                raise ValueError
            return str(number)
        if definition.type == DOUBLE:
            return str(float(value))
        if definition.type == BOOLEAN:
            if value.lower() not in ("true", "false"):
                raise ValueError
            return value.lower()
    except ValueError:
        raise InvalidConfig(f"Invalid value {value} for configuration {definition.name}") from None
    if definition.choices:
        parts = [p.strip() for p in value.split(",")] if definition.type == LIST else [value]
        if not all(p in definition.choices for p in parts):
            raise InvalidConfig(f"Invalid value {value} for configuration {definition.name}: "
                                f"String must be one of: {', '.join(definition.choices)}")
    return value


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The resolved configs a partition log acts on."""
    segment_bytes: int
    segment_ms: int
    retention_ms: int
    retention_bytes: int
    max_message_bytes: int
    index_interval_bytes: int
    log_append_time: bool
    timestamp_before_max_ms: int
    timestamp_after_max_ms: int
    flush_messages: int
    delete: bool  # cleanup.policy holds delete: retention by time and size applies
    compact: bool = False  # cleanup.policy holds compact: the log cleaner keeps the last value per key
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 2**63 - 1
    min_cleanable_dirty_ratio: float = 0.5

    @classmethod
    def from_values(cls, values: dict[str, str]) -> LogConfig:
        return cls(
            segment_bytes=int(values["segment.bytes"]),
            segment_ms=int(values["segment.ms"]),
            retention_ms=int(values["retention.ms"]),
            retention_bytes=int(values["retention.bytes"]),
            max_message_bytes=int(values["max.message.bytes"]),
            index_interval_bytes=int(values["index.interval.bytes"]),
            log_append_time=values["message.timestamp.type"] == "LogAppendTime",
            timestamp_before_max_ms=int(values["message.timestamp.before.max.ms"]),
            timestamp_after_max_ms=int(values["message.timestamp.after.max.ms"]),
            flush_messages=int(values["flush.messages"]),
            delete="delete" in values["cleanup.policy"],
            compact="compact" in values["cleanup.policy"],
            delete_retention_ms=int(values["delete.retention.ms"]),
            min_compaction_lag_ms=int(values["min.compaction.lag.ms"]),
            max_compaction_lag_ms=int(values["max.compaction.lag.ms"]),
            min_cleanable_dirty_ratio=float(values["min.cleanable.dirty.ratio"]),
        )
