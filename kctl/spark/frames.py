"""DataFrames of records, from a topic or from a dump, all with the source schema
(key, value, topic, partition, offset, timestamp, timestampType, headers), so dump,
replay and audit run the same code whatever the records came from; and the records-done
count that jobs hand to a progress display while they run."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from kctl import errors
from kctl.errors import InvalidError, KctlError
from kctl.spark.options import OptionError, SourceOptions, parse
from kctl.spark.planning import PartitionBounds, plan_bounds

if TYPE_CHECKING:
    from pyspark.core.status import StatusTracker
    from pyspark.sql import DataFrame, SparkSession

# librdkafka properties the Java client knows under the same name (for --engine jvm).
_JAVA_PROPERTIES = ("bootstrap.servers", "security.protocol", "sasl.mechanism", "client.id", "request.timeout.ms")


def kafka_options(kafka: Mapping[str, object]) -> dict[str, str]:
    """The CLI's librdkafka settings as `kafka.*` data source options (strings)."""
    return {f"kafka.{k}": str(v) for k, v in kafka.items() if not callable(v)}


def source_options(kafka: Mapping[str, object], topics: Sequence[str], *, include_headers: bool = True,
                   **extra: str | None) -> dict[str, str]:
    """kctl_kafka options for reading `topics` with the CLI's client settings."""
    options = kafka_options(kafka)
    options["subscribe"] = ",".join(topics)
    options["includeHeaders"] = "true" if include_headers else "false"
    options.update({k: v for k, v in extra.items() if v is not None})
    return options


def plan(options: dict[str, str], action: str, timeout: float = 30.0) -> tuple[SourceOptions, list[PartitionBounds]]:
    """The exact offset ranges a read will cover, planned here so the manifest can say."""
    try:
        parsed = parse(options)
        return parsed, plan_bounds(parsed, timeout=timeout)
    except OptionError as exc:
        raise InvalidError(action=action, cause=str(exc)) from None
    except KctlError as exc:
        raise exc.but(action=action) from None


def pinned(options: dict[str, str], bounds: Sequence[PartitionBounds]) -> dict[str, str]:
    """Options that read exactly `bounds`, whatever has been written since planning."""
    starting: dict[str, dict[str, int]] = {}
    ending: dict[str, dict[str, int]] = {}
    for b in bounds:
        starting.setdefault(b.topic, {})[str(b.partition)] = b.start
        ending.setdefault(b.topic, {})[str(b.partition)] = b.end
    kept = {k: v for k, v in options.items() if "timestamp" not in k.lower() and k not in ("startingOffsets", "endingOffsets")}
    assign = {t: sorted(int(p) for p in parts) for t, parts in starting.items()}
    kept.pop("subscribe", None)
    kept.update(assign=json.dumps(assign), startingOffsets=json.dumps(starting), endingOffsets=json.dumps(ending))
    return kept


def load_topic(spark: SparkSession, engine: str, options: dict[str, str], bounds: Sequence[PartitionBounds]) -> DataFrame:
    """A DataFrame of exactly the planned ranges, read by kctl_kafka or the JVM connector."""
    exact = pinned(options, bounds)
    if engine == "jvm":
        exact = {k: v for k, v in exact.items() if not k.startswith("kafka.") or k[len("kafka."):] in _JAVA_PROPERTIES}
        return spark.read.format("kafka").options(**exact).load()
    return spark.read.format("kctl_kafka").options(**exact).load()


def choose_engine(spark: SparkSession, engine: str) -> str:
    from kctl.spark.session import has_jvm_connector

    if engine == "python":
        return "python"
    available = has_jvm_connector(spark)
    if engine == "jvm" and not available:
        raise InvalidError(
            action="use --engine jvm", cause="the spark-sql-kafka-0-10 connector is not on Spark's classpath",
            hint="add it with {packages} org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version>, or use {engine} python",
        )
    return "jvm" if available else "python"


DUMP_SCHEMA = (
    "key binary, value binary, offset bigint, timestamp timestamp, timestampType int, "
    "headers array<struct<key:string,value:binary>>, topic string, partition int"
)
JSONL_SCHEMA = (
    "offset bigint, timestamp string, timestamp_ms bigint, timestampType int, key_b64 string, value_b64 string, "
    "value string, headers array<struct<key:string,value_b64:string>>, topic string, partition int"
)
COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers")


def load_dump(spark: SparkSession, directory: Path, manifest: dict[str, Any], *, ordered: bool = False) -> DataFrame:
    """A dump's records with the source schema (partitions restored from the layout).

    ordered: a Parquet dump is read by kctl_dump, one task per partition in offset order
    (what a replay wants); otherwise by Spark's Parquet reader, which reads only the
    columns a query needs (what counting and auditing want)."""
    from pyspark.sql import functions as F

    path = str(directory)
    if manifest["format"] == "parquet" and ordered:
        return spark.read.format("kctl_dump").load(path).select(*COLUMNS)
    if manifest["format"] == "parquet":
        frame = spark.read.schema(DUMP_SCHEMA).parquet(path)
    else:
        raw = spark.read.schema(JSONL_SCHEMA).option("mode", "FAILFAST").json(path)
        frame = raw.select(
            F.unbase64("key_b64").alias("key"),
            F.unbase64("value_b64").alias("value"),
            "offset",
            F.timestamp_millis("timestamp_ms").alias("timestamp"),
            "timestampType",
            F.transform("headers", lambda h: F.struct(h["key"].alias("key"), F.unbase64(h["value_b64"]).alias("value"))).alias("headers"),
            "topic",
            "partition",
        )
    return frame.select(*COLUMNS)


def spark_failure(exc: Exception, action: str) -> KctlError:
    """A one-line error from a failed Spark job (the JVM's text is long and nested):
    a Python worker's exception line when there is one."""
    text = str(exc)
    cause = _python_exception(text)
    if cause is not None:
        name, _, message = cause.partition(": ")
        if name == "ModuleNotFoundError":
            # Executors run their machine's python3 unless told otherwise (PYSPARK_PYTHON).
            return errors.ConfigError(
                action=action, cause=f"the executors' Python has {message.replace('No module', 'no module')} ({{ship_env}} ships this environment to them)",
                hint="or install kctl[spark] on every worker with the Python PYSPARK_PYTHON names there",
            )
        # kctl's own errors (kctl.errors.NotFoundError: ...) keep their class, so their exit status.
        kind = getattr(errors, name.rpartition(".")[2], None) if name.startswith("kctl.errors.") else None
        kind = kind if isinstance(kind, type) and issubclass(kind, KctlError) else KctlError
        return kind(action=action, cause=message or name, hint="{debug} shows Spark's full error")
    if "Cannot run program" in text and "kctlenv/bin/python" in text:
        # --ship-env's virtualenv links to the interpreter it was made from.
        interpreter = os.path.realpath(os.path.join(sys.prefix, "bin", "python"))
        return errors.ConfigError(
            action=action, cause=f"the executors cannot run the shipped Python: it needs {interpreter} on every worker",
            hint="install that Python at that path on the workers, or ship a conda-pack archive with spark.archives and spark.pyspark.python",
        )
    # Spark's words for a file it cannot read as Parquet or JSON (not merely "parquet":
    # every write to Parquet names its py4j call `.parquet`).
    if any(words in text for words in ("FAILED_READ_FILE", "not a Parquet file", "Malformed", "FAILFAST")):
        return InvalidError(action=action, cause="a data file is corrupt or not in the dump's format", hint=_first_line(text))
    return KctlError(action=action, cause=f"Spark job failed: {_java_cause(text)}", hint="{debug} shows Spark's full error")


def _java_cause(text: str) -> str:
    """The line of a JVM error that says what went wrong: its innermost `Caused by:`, else
    the exception after py4j's own "An error occurred while calling o231.cache." (which
    was all kctl printed when a disk filled up under a Spark job)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    causes = [line.removeprefix("Caused by:").strip() for line in lines if line.startswith("Caused by:")]
    if causes:
        return causes[-1][:300]
    for line in lines:
        if not line.startswith("An error occurred while calling "):
            return line.removeprefix(":").strip()[:300]
    return _first_line(text)


def _python_exception(text: str) -> str | None:
    """'TypeError: ...' from the first Python traceback in a Spark error, if any."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.rstrip().endswith("Traceback (most recent call last):"):
            for candidate in lines[index + 1 :]:
                if candidate and not candidate[0].isspace():
                    return candidate.strip()
    return None


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()[:300]
    return "no detail"


# report(records done, records in all, bytes of keys and values done or None): what a
# job tells a progress display while it runs (kctl.cli._progress draws it).
Report = Callable[[int, int, "int | None"], None]


class Progress:
    """Hands `report` the records done of a job's `total` every `every` seconds.

    Counted, most exact first: by `measure()` when the job has one (a replay: what has
    arrived in the destination); by the files kctl_kafka's read tasks keep in `directory`
    (kctl.progressDir, see reading.reporting) once the driver sees any (local masters,
    and a dump's --out, which a cluster's executors share); else from the share of
    tasks completed, since Spark reports records read only when a task ends.
    """

    def __init__(self, spark: SparkSession, total: int, report: Report | None, *, directory: Path | None = None,
                 measure: Callable[[], int] | None = None, every: float = 0.25) -> None:
        self.spark, self.total, self.report = spark, total, report
        self.directory, self.measure, self.every = directory, measure, every
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="kctl-spark-progress", daemon=True)
        self.done = 0  # never shown going back (a later job of the command counts from zero)

    def __enter__(self) -> Self:
        if self.report is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop_event.set()
        if self.thread.is_alive():
            self.thread.join(timeout=2)

    def _run(self) -> None:
        tracker = self.spark.sparkContext.statusTracker()
        while not self.stop_event.wait(self.every):
            try:
                done, size = self._sample(tracker)
            except Exception:  # the context is shutting down, or the cluster did not answer
                continue
            if done is not None and done >= self.done and self.report is not None:
                self.done = min(done, self.total)
                self.report(self.done, self.total, size)

    def _sample(self, tracker: StatusTracker) -> tuple[int | None, int | None]:
        if self.measure is not None:
            return self.measure(), None
        if self.directory is not None:
            from kctl.spark.reading import read_progress

            records, size = read_progress(str(self.directory))
            if records:
                return records, size
        finished = tasks = 0
        for stage in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage)
            if info is not None:
                finished += info.numCompletedTasks
                tasks += info.numTasks
        return (self.total * finished // tasks, None) if tasks else (None, None)
