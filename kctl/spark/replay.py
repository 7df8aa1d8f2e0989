"""`kctl spark replay`: a topic's records (or a dump's) written into another topic.

Keys (null too), values (tombstones too), headers in order and timestamps are kept; so
is each source partition's order, because every destination partition is written by
one task that receives its records sorted by (source partition, offset). Offsets cannot
be kept: the replay manifest maps source ranges to destination ranges instead.

The manifest is written before the job starts (status running) with everything needed
to run it again: `--resume` re-runs the same plan and skips, per destination partition,
the records that already arrived (see sink.py for why that is exact).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from kctl.errors import InvalidError, KctlError, NotFoundError, UsageError
from kctl.spark import frames
from kctl.spark.manifest import now_iso, read_dump_manifest, write_json
from kctl.spark.planning import PartitionBounds

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

PARTITION_MAPS = ("same", "hash", "modulo")


class _Range(TypedDict):
    """A source range as the replay manifest keeps it (source.partitions)."""

    topic: str
    partition: int
    start_offset: int
    end_offset: int


class _Result(TypedDict):
    """What the sink reports (sink.report_result): records per destination partition."""

    delivered: dict[str, int]
    skipped: dict[str, int]


@dataclass
class ReplayRequest:
    to_topic: str
    from_topic: str | None = None
    from_dump: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    partition_map: str = "same"  # same | hash | modulo | a JSON file {"src": dst}
    timestamps: str = "preserve"  # preserve | now | shift:<ms>
    exactly_once: bool = False
    engine: str = "auto"
    explicit_map: dict[int, int] = field(default_factory=dict)


def parse_timestamps(text: str) -> str:
    """preserve | now | shift:+D or shift:-D (D a duration: 90s, 2h, 1d)."""
    from kctl.timespec import parse_duration

    if text in ("preserve", "now"):
        return text
    match = re.fullmatch(r"shift:([+-]?)(.+)", text)
    if not match:
        raise UsageError(action=f"parse --timestamps {text!r}", cause="expected preserve, now or shift:+DURATION")
    seconds = parse_duration(match.group(2))
    return f"shift:{int(seconds * 1000) * (-1 if match.group(1) == '-' else 1)}"


def load_partition_map(path: str) -> dict[int, int]:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidError(action=f"read --partition-map {path}", cause=str(exc.strerror)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidError(action=f"read --partition-map {path}", cause=f"not JSON ({exc})") from None
    if not isinstance(raw, dict) or not all(str(k).isdigit() and type(v) is int and v >= 0 for k, v in raw.items()):
        raise InvalidError(action=f'read --partition-map {path}', cause='expected {"source partition": destination partition, ...}')
    return {int(k): v for k, v in raw.items()}


def _destination_partition(frame: DataFrame, request: ReplayRequest, partitions: int) -> DataFrame:
    from pyspark.sql import functions as F

    source = F.col("partition")
    if request.partition_map == "same":
        return frame.withColumn("dst", source)
    if request.partition_map == "modulo":
        return frame.withColumn("dst", F.pmod(source, F.lit(partitions)))
    if request.partition_map == "hash":
        from pyspark.sql.types import IntegerType

        return frame.withColumn("dst", F.udf(_hash_placement(partitions), IntegerType(), useArrow=False)("key", source))
    mapping = F.create_map(*[F.lit(x) for pair in request.explicit_map.items() for x in pair])
    return frame.withColumn("dst", mapping[source])


def _hash_placement(partitions: int) -> Callable[[bytes | None, int], int]:
    """A row UDF (pandas-free): murmur2 of the key; a null key, which has no hash, stays
    with its source partition (modulo the destination's count)."""

    def place(key: bytes | None, source_partition: int) -> int:
        from kctl.partitioner import partition_for

        return partition_for(key, partitions) if key is not None else source_partition % partitions

    return place


def _timestamp_column(mode: str) -> Column:
    from pyspark.sql import functions as F

    if mode == "now":
        return F.lit(None).cast("bigint")
    millis = F.unix_millis("timestamp")
    if mode.startswith("shift:"):
        return millis + F.lit(int(mode.split(":", 1)[1]))
    return millis


def _source_frame(spark: SparkSession, kafka: Mapping[str, object], request: ReplayRequest,
                  pinned: list[_Range] | None = None) -> tuple[Callable[[], DataFrame], dict[str, Any]]:
    """What makes the DataFrame of the records to replay, and a description of them for
    the manifest; `pinned` are the exact ranges of an interrupted replay of a topic, read
    again as they were. The DataFrame is made only when asked for: a Parquet dump
    replayed partition for partition never needs one (and making one asks a Python
    worker for kctl_dump's schema)."""
    from pyspark.sql import functions as F

    def in_window(frame: DataFrame) -> DataFrame:
        # Timestamps select records even where offsets were looked up by time: a record
        # written late with an older timestamp is outside the window wherever it sits.
        if request.since_ms is not None:
            frame = frame.where(F.unix_millis("timestamp") >= request.since_ms)
        if request.until_ms is not None:
            frame = frame.where(F.unix_millis("timestamp") < request.until_ms)
        return frame

    if request.from_dump:
        manifest = read_dump_manifest(Path(request.from_dump))
        ranges = [{k: p[k] for k in ("topic", "partition", "start_offset", "end_offset")} for p in manifest["partitions"]]
        ordered = manifest["format"] == "parquet"
        return lambda: in_window(frames.load_dump(spark, Path(request.from_dump), manifest, ordered=True)), {"dump": str(request.from_dump), "topics": manifest["topics"], "partitions": ranges, "ordered": ordered}
    assert request.from_topic is not None  # a replay reads a dump or a topic
    options = frames.source_options(
        kafka, [request.from_topic], include_headers=True,
        startingTimestamp=None if request.since_ms is None else str(request.since_ms),
        endingTimestamp=None if request.until_ms is None else str(request.until_ms),
        startingOffsetsByTimestampStrategy="latest",
    )
    if pinned is None:
        _, bounds = frames.plan(options, f"replay {request.from_topic}")
    else:  # records written to the source since are not part of this replay
        bounds = [PartitionBounds(p["topic"], p["partition"], p["start_offset"], p["end_offset"], p["start_offset"], p["end_offset"]) for p in pinned]
    engine = frames.choose_engine(spark, request.engine)
    ranges = [{"topic": b.topic, "partition": b.partition, "start_offset": b.start, "end_offset": b.end} for b in bounds]
    return lambda: in_window(frames.load_topic(spark, engine, options, bounds)), {"topics": [request.from_topic], "engine": engine, "partitions": ranges, "ordered": True}


def replay_manifest_path(env: Mapping[str, str], to_topic: str) -> Path:
    """Where a replay into `to_topic` keeps its manifest unless told: the state directory."""
    from kctl.config.file import state_dir

    return state_dir(env) / "replays" / f"{to_topic}.json"


def resumed(path: Path, to_topic: str) -> tuple[dict[str, Any], ReplayRequest]:
    """The manifest of the interrupted replay into `to_topic` at `path`, and its request:
    what --resume finishes. A missing, foreign or complete manifest is refused."""
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotFoundError(action="resume", cause=f"no replay manifest at {path}", hint="{manifest} names the manifest of the replay to resume") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidError(action="resume", cause=f"{path} is not a replay manifest ({exc})") from None
    if not isinstance(previous, dict) or previous.get("kind") != "kctl-replay" or "request" not in previous:
        raise InvalidError(action="resume", cause=f"{path} is not a replay manifest")
    if previous["request"].get("to_topic") != to_topic:
        raise InvalidError(action="resume", cause=f"{path} is a replay into {previous['request'].get('to_topic')}, not {to_topic}")
    if previous.get("status") == "complete":
        raise InvalidError(action="resume", cause=f"the replay in {path} is already complete")
    kept = previous["request"]
    request = ReplayRequest(**{k: v for k, v in kept.items() if k != "explicit_map"},
                            explicit_map={int(k): v for k, v in kept["explicit_map"].items()})
    return previous, request


def check_destination(partition_counts: dict[str, int], request: ReplayRequest, source_partitions: list[int]) -> int:
    """The destination's partition count, after checking the map fits it."""
    if request.to_topic not in partition_counts:
        raise NotFoundError(action=f"replay into {request.to_topic}", cause="the topic does not exist", hint=f"create it first: kctl topic create {request.to_topic} --partitions N")
    count = partition_counts[request.to_topic]
    if request.partition_map == "same" and source_partitions and max(source_partitions) >= count:
        raise InvalidError(
            action=f"replay into {request.to_topic}", cause=f"{{partition_map}} same needs {max(source_partitions) + 1} partitions, it has {count}",
            hint="add partitions (kctl topic add-partitions) or use {partition_map} modulo|hash",
        )
    if request.explicit_map:
        missing = sorted(set(source_partitions) - set(request.explicit_map))
        if missing:
            raise InvalidError(action="replay", cause=f"{{partition_map}} does not say where source partition {missing[0]} goes")
        beyond = [d for d in request.explicit_map.values() if d >= count]
        if beyond:
            raise InvalidError(action=f"replay into {request.to_topic}", cause=f"{{partition_map}} names partition {beyond[0]}, it has {count}")
    return count


def _ordered_rows(frame: DataFrame, request: ReplayRequest, count: int, *, shuffle: bool) -> DataFrame:
    """The sink's columns, each destination partition's records in one task, in
    (source partition, offset) order."""
    from pyspark.sql import functions as F

    rows = _destination_partition(frame, request, count).select(
        "key", "value", "headers", F.col("dst").cast("int").alias("dst"),
        _timestamp_column(request.timestamps).alias("timestamp_ms"),
        F.col("partition").alias("src_partition"), "offset",
    )
    if shuffle:
        rows = rows.repartition(count, "dst").sortWithinPartitions("dst", "src_partition", "offset")
    return rows.select("key", "value", "headers", F.col("dst").alias("partition"), "timestamp_ms")


def _replay_dump_directly(spark: SparkSession, request: ReplayRequest, sink: dict[str, str]) -> None:
    """A Parquet dump into the partitions of the same numbers: one Spark task per dump
    partition reads its files and produces them (sink.replay_dump_parts), the same
    tasks and guarantees as the DataFrame write, without moving every record through
    the JVM between two Python workers."""
    from functools import partial

    from kctl.spark.reading import dump_parts
    from kctl.spark.sink import replay_dump_parts, report_result

    parts = dump_parts(str(request.from_dump))
    if not parts:
        report_result(sink["kctl.resultPath"], "complete", [])
        return
    window = {"since_ms": request.since_ms, "until_ms": request.until_ms, "timestamps": request.timestamps}
    job = spark.sparkContext.parallelize(parts, len(parts)).mapPartitions(partial(replay_dump_parts, sink, window))
    spark.sparkContext.setJobDescription(f"kctl replay into {request.to_topic}")
    report_result(sink["kctl.resultPath"], "complete", job.collect())


def replay(
    spark_factory: Callable[[], SparkSession],
    kafka: Mapping[str, object],
    request: ReplayRequest,
    *,
    destination_partitions: Callable[[str], dict[str, int]],
    high_watermarks: Callable[[str, int], dict[int, int]],
    manifest_path: Path,
    resume_from: dict[str, Any] | None,
    report: frames.Report | None = None,
) -> dict[str, Any]:
    """Run (or resume) a replay; returns its manifest. `report` gets the records in the
    destination so far while the job runs."""
    spark = spark_factory()
    pinned = resume_from.get("source", {}).get("partitions") if resume_from is not None and request.from_topic else None
    make_frame, source = _source_frame(spark, kafka, request, pinned)
    in_order = source.pop("ordered")
    # Only partitions with records in range need somewhere to go.
    source_partitions = sorted({p["partition"] for p in source["partitions"] if p["end_offset"] > p["start_offset"]})
    count = check_destination(destination_partitions(request.to_topic), request, source_partitions)
    run_id: str
    baseline: dict[int, int]
    if resume_from is not None:
        run_id, baseline = resume_from["run_id"], {int(p): o for p, o in resume_from["baseline"].items()}
        if resume_from.get("source", {}).get("partitions") != source["partitions"]:
            raise InvalidError(action="resume", cause="the dump changed since the interrupted replay (its offset ranges differ)")
    else:
        run_id, baseline = uuid.uuid4().hex[:12], high_watermarks(request.to_topic, count)
    manifest: dict[str, Any] = {
        "kind": "kctl-replay",
        "run_id": run_id,
        "status": "running",
        "started_at": now_iso(),
        "request": asdict(request),  # JSON writes explicit_map's partitions as strings
        "source": source,
        "destination": {"topic": request.to_topic, "partitions": count},
        "baseline": {str(p): o for p, o in baseline.items()},
        "resumed": resume_from is not None,
    }
    write_json(manifest_path, manifest)
    result_path = manifest_path.with_name(f".{manifest_path.name}.result")
    result_path.unlink(missing_ok=True)
    try:
        # Each read task holds one source partition, in offset order, and it goes to one
        # destination partition: already what the sink needs, no shuffle.
        no_shuffle = in_order and request.partition_map == "same" and len({p["topic"] for p in source["partitions"]}) == 1
        sink = frames.kafka_options(kafka)
        sink.update({
            "topic": request.to_topic,
            "kctl.baseline": json.dumps({str(p): o for p, o in baseline.items()}),
            "kctl.resume": "true" if resume_from is not None else "false",
            "kctl.exactlyOnce": "true" if request.exactly_once else "false",
            "kctl.runId": run_id,
            "kctl.resultPath": str(result_path),
        })
        if os.environ.get("KCTL_SPARK_FAIL_AFTER_RECORDS"):  # fault injection for tests
            sink["kctl.failAfterRecords"] = os.environ["KCTL_SPARK_FAIL_AFTER_RECORDS"]
        total = sum(p["end_offset"] - p["start_offset"] for p in source["partitions"])

        def arrived() -> int:
            # Exact and live wherever the job runs: what the destination holds past the
            # baseline (a resumed replay's earlier records too, like `total`).
            return sum(max(0, end - baseline.get(p, 0)) for p, end in high_watermarks(request.to_topic, count).items())

        direct = no_shuffle and request.from_dump is not None
        with frames.Progress(spark, total, report, measure=arrived, every=1.0):
            try:
                if direct:
                    _replay_dump_directly(spark, request, sink)
                else:
                    _ordered_rows(make_frame(), request, count, shuffle=not no_shuffle).write.format("kctl_kafka").mode("append").options(**sink).save()
            except Exception as exc:
                raise frames.spark_failure(exc, f"replay into {request.to_topic}") from exc
        result: _Result = json.loads(result_path.read_text(encoding="utf-8")) if result_path.exists() else {"delivered": {}, "skipped": {}}
    except BaseException as exc:
        manifest.update(status="partial", finished_at=now_iso(), error=exc.message if isinstance(exc, KctlError) else f"{type(exc).__name__}: {exc}")
        write_json(manifest_path, manifest)
        raise
    finally:
        result_path.unlink(missing_ok=True)
    after = high_watermarks(request.to_topic, count)
    delivered = {int(p): n for p, n in result["delivered"].items()}
    skipped = {int(p): n for p, n in result["skipped"].items()}
    manifest["destination"]["ranges"] = [
        {"partition": p, "start_offset": baseline.get(p, 0), "end_offset": after.get(p, 0), "records": delivered.get(p, 0) + skipped.get(p, 0), "resumed_records": skipped.get(p, 0)}
        for p in range(count)
        if delivered.get(p) or skipped.get(p)
    ]
    manifest.update(status="complete", finished_at=now_iso(), records=sum(delivered.values()) + sum(skipped.values()), delivered=sum(delivered.values()), skipped=sum(skipped.values()))
    write_json(manifest_path, manifest)
    return manifest
