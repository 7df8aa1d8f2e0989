"""The `kctl_kafka` source's options, with the JVM connector's names and meanings.

Spark hands a data source its options as strings under lower-cased keys, so everything
here parses text. Names follow spark-sql-kafka-0-10 (`startingOffsets`, `assign`,
`kafka.bootstrap.servers`, ...) so a job can switch engines by changing only the format
name; knobs of kctl's own live under `kctl.` and can never collide with them.

Pure Python: no pyspark, no Kafka client; the planner and the readers both use it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

# Offsets in startingOffsets/endingOffsets JSON, as in the JVM connector.
EARLIEST = -2
LATEST = -1

# The JVM connector refuses these because it manages them itself; so does kctl.
_REFUSED_KAFKA_KEYS = {
    "auto.offset.reset": "the starting position comes from startingOffsets",
    "key.deserializer": "keys are always read as bytes",
    "value.deserializer": "values are always read as bytes",
    "enable.auto.commit": "the source never commits offsets",
    "interceptor.classes": "interceptors are not supported",
    "group.id": "each read uses its own group id (see groupIdPrefix)",
}


class OptionError(ValueError):
    """An option the source cannot use; the message names it."""


@dataclass(frozen=True)
class SourceOptions:
    """What a read asks for, parsed from the source's string options."""

    kafka: dict[str, str]  # librdkafka properties (the kafka.* options, prefix stripped)
    assign: dict[str, list[int]] | None = None
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    # {topic: {partition: offset}} or "earliest"/"latest" for every partition
    starting_offsets: str | dict[str, dict[int, int]] = "earliest"
    ending_offsets: str | dict[str, dict[int, int]] = "latest"
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    starting_by_timestamp: dict[str, dict[int, int]] | None = None
    ending_by_timestamp: dict[str, dict[int, int]] | None = None
    timestamp_strategy: str = "error"  # startingOffsetsByTimestampStrategy: error | latest
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    group_id_prefix: str = "kctl-spark"
    poll_timeout_ms: int = 120_000
    arrow_batch_size: int = 10_000
    consume_batch: int = 1_000
    # Where each read task keeps its records read so far, for the driver's live progress.
    progress_dir: str | None = None
    # Where planning writes the ranges it chose (kctl spark sql's --explain and --max-records),
    # under the name of the table the query knows the topic by.
    plan_dir: str | None = None
    table: str | None = None


def _int(options: Mapping[str, str], key: str, default: int | None, *, minimum: int | None = None) -> int | None:
    text = options.get(key)
    if text is None:
        return default
    try:
        value = int(str(text).strip())
    except ValueError:
        raise OptionError(f"option {key}: expected an integer, got {text!r}") from None
    if minimum is not None and value < minimum:
        raise OptionError(f"option {key}: must be at least {minimum}, got {value}")
    return value


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    text = options.get(key)
    if text is None:
        return default
    lowered = str(text).strip().lower()
    if lowered not in ("true", "false"):
        raise OptionError(f"option {key}: expected true or false, got {text!r}")
    return lowered == "true"


def _offsets_json(key: str, text: str, *, allow_earliest: bool = True) -> dict[str, dict[int, int]]:
    """{"topic": {"0": 23, "1": -2}} -> {"topic": {0: 23, 1: -2}}."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OptionError(f"option {key}: not JSON ({exc.msg}): {text!r}") from None
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise OptionError(f'option {key}: expected {{"topic": {{"partition": offset}}}}, got {text!r}')
    parsed: dict[str, dict[int, int]] = {}
    for topic, partitions in raw.items():
        parsed[topic] = {}
        for partition, offset in partitions.items():
            if not str(partition).lstrip("-").isdigit() or int(partition) < 0 or type(offset) is not int:
                raise OptionError(f"option {key}: partition {partition!r} of {topic!r} needs an integer offset")
            if offset < EARLIEST or (offset == EARLIEST and not allow_earliest):
                raise OptionError(f"option {key}: offset {offset} of {topic}:{partition} is not allowed")
            parsed[topic][int(partition)] = offset
    return parsed


def _position(options: Mapping[str, str], key: str, default: str, *, allow_earliest: bool):
    text = options.get(key)
    if text is None:
        return default
    stripped = str(text).strip()
    if stripped.lower() in ("earliest", "latest"):
        if stripped.lower() == "earliest" and not allow_earliest:
            raise OptionError(f"option {key}: earliest is not allowed for the end of a batch read")
        return stripped.lower()
    return _offsets_json(key, stripped, allow_earliest=allow_earliest)


def parse(options: Mapping[str, str]) -> SourceOptions:
    """SourceOptions from a data source's options (keys in any case)."""
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    kafka = {k[len("kafka."):]: v for k, v in lowered.items() if k.startswith("kafka.")}
    for key, why in _REFUSED_KAFKA_KEYS.items():
        if key in kafka:
            raise OptionError(f"option kafka.{key} is not supported: {why}")
    if not kafka.get("bootstrap.servers"):
        raise OptionError("option kafka.bootstrap.servers is required")

    chosen = [k for k in ("assign", "subscribe", "subscribepattern") if lowered.get(k)]
    if len(chosen) != 1:
        raise OptionError("exactly one of the options assign, subscribe and subscribePattern is required")
    assign = None
    subscribe: tuple[str, ...] = ()
    pattern = None
    if chosen[0] == "assign":
        assign = {t: sorted(p) for t, p in _assign(lowered["assign"]).items()}
    elif chosen[0] == "subscribe":
        subscribe = tuple(t.strip() for t in lowered["subscribe"].split(",") if t.strip())
        if not subscribe:
            raise OptionError("option subscribe: no topic given")
    else:
        pattern = lowered["subscribepattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError(f"option subscribePattern: {exc}") from None

    strategy = lowered.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise OptionError(f"option startingOffsetsByTimestampStrategy: expected error or latest, got {strategy!r}")
    return SourceOptions(
        kafka=kafka,
        assign=assign,
        subscribe=subscribe,
        subscribe_pattern=pattern,
        starting_offsets=_position(lowered, "startingoffsets", "earliest", allow_earliest=True),
        ending_offsets=_position(lowered, "endingoffsets", "latest", allow_earliest=False),
        starting_timestamp=_int(lowered, "startingtimestamp", None, minimum=0),
        ending_timestamp=_int(lowered, "endingtimestamp", None, minimum=0),
        starting_by_timestamp=_maybe_json(lowered, "startingoffsetsbytimestamp"),
        ending_by_timestamp=_maybe_json(lowered, "endingoffsetsbytimestamp"),
        timestamp_strategy=strategy,
        fail_on_data_loss=_bool(lowered, "failondataloss", True),
        min_partitions=_int(lowered, "minpartitions", None, minimum=1),
        max_records_per_partition=_int(lowered, "maxrecordsperpartition", None, minimum=1),
        include_headers=_bool(lowered, "includeheaders", False),
        group_id_prefix=lowered.get("groupidprefix", "kctl-spark"),
        poll_timeout_ms=_int(lowered, "kafkaconsumer.polltimeoutms", 120_000, minimum=1),
        arrow_batch_size=_int(lowered, "kctl.arrowbatchsize", 10_000, minimum=1),
        consume_batch=_int(lowered, "kctl.consumebatch", 1_000, minimum=1),
        progress_dir=lowered.get("kctl.progressdir"),
        plan_dir=lowered.get("kctl.plandir"),
        table=lowered.get("kctl.table"),
    )


def _assign(text: str) -> dict[str, list[int]]:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError:
        raw = None
    if not isinstance(raw, dict) or not all(isinstance(v, list) and all(type(p) is int and p >= 0 for p in v) for v in raw.values()):
        raise OptionError(f'option assign: expected {{"topic": [0, 1]}}, got {text!r}')
    return raw


def _maybe_json(options: Mapping[str, str], key: str) -> dict[str, dict[int, int]] | None:
    text = options.get(key)
    if text is None:
        return None
    parsed = _offsets_json(key, text)
    for topic, partitions in parsed.items():
        for partition, value in partitions.items():
            if value < 0:
                raise OptionError(f"option {key}: timestamp {value} of {topic}:{partition} is negative")
    return parsed
