"""`kctl spark sql`: a read-only SQL query over topics and dumps, in Spark.

Every table the query names is a topic (`orders`, `` `orders.v2` ``) read by kctl_kafka
with the source columns (key, value, topic, partition, offset, timestamp, timestampType,
headers), or a dump directory (`dump.orders`, `` dump.`/data/orders` ``) read by Spark's
own Parquet or JSON reader. Tables are found the way Spark finds them: the query is
analysed, and each table Spark cannot find is looked up (a topic, or a dump when the name
is `dump.<directory>`), made a temporary view and the query analysed again. A dump's name
is replaced in the query's text by its view's name, at the span Spark reports.

The predicates Spark pushes to each topic's scan cut its read ranges
(kctl.spark.pushdown). Planning runs in a Python process of Spark's own, so each scan
writes the ranges it chose into a directory this process reads: that is what --explain
shows and --max-records checks, before anything is read. Each read task counts what it
read into another directory (kctl.spark.reading.reporting): the records-read figure.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict

from kctl.errors import InvalidError, KctlError, NotFoundError, UsageError
from kctl.spark import frames
from kctl.spark.manifest import SUCCESS, now_iso, write_json

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.errors import PySparkException
    from pyspark.errors.exceptions.base import QueryContext
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from kctl.spark.decode import DecodePlan
    from kctl.spark.planning import BoundsDocument

# A py4j proxy of a JVM object (Spark's parser and plans): py4j has no types.
JavaObject: TypeAlias = Any

SQL_MANIFEST = "_kctl_sql.json"
# Analyse, add the missing table, analyse again: a bound on the tables one query names.
MAX_TABLES = 64
# Values sampled to infer a JSON schema for --value-format json (the newest records).
JSON_SAMPLE = 1000
# Spark's parsed plans that change something rather than read (INSERT, CREATE, SET,
# CACHE, DROP, ADD JAR, ...): all are commands or parsed statements.
_WRITING_PLANS = ("org.apache.spark.sql.catalyst.plans.logical.Command", "org.apache.spark.sql.catalyst.plans.logical.ParsedStatement")


@dataclass(frozen=True)
class SqlRequest:
    """One query and how to run it, refused when made if its settings contradict each
    other (errors name the settings as `{name}`: the CLI says them as its flags)."""

    query: str
    # kctl_kafka options per topic (startingTimestamp, endingOffsets, ...): "" for every topic.
    positions: dict[str, dict[str, str]] = field(default_factory=dict)
    decode: bool = False  # registry-typed value_decoded for topics that have a TOPIC-value subject
    registry_url: str | None = None  # the registry for decode (None: the context's)
    value_format: str = "bytes"  # "json": value_decoded parsed from JSON values (topics decode does not type)
    json_schema: str | None = None  # Spark DDL for JSON values; inferred from a sample when None
    max_records: int | None = None  # refuse a read of more records than this
    limit: int | None = None  # rows returned at most
    explain: bool = False  # plan only: what the query would read
    out: str | None = None  # a directory to write the whole result to, rather than return it
    out_format: str = "parquet"
    overwrite: bool = False

    def __post_init__(self) -> None:
        refused = None
        if not self.query.strip():
            refused = "it is empty"
        elif self.out is not None and "://" in self.out:
            raise UsageError(action=f"write the result to {self.out}", cause="{out} is a directory on a local or shared file system")
        elif self.out is not None and self.limit is not None:
            refused = "{limit} bounds the rows printed, and {out} writes them all (put a LIMIT in the query)"
        elif self.out is None and (self.overwrite or self.out_format != "parquet"):
            refused = "{out_format} and {overwrite} are for {out}"
        elif self.json_schema is not None and not self.json_values:
            refused = "{json_schema} types JSON values ({value_format} json)"
        elif self.registry_url is not None and not self.decode:
            refused = "{registry_url} is for {decode}"
        if refused is not None:
            raise UsageError(action="run the query", cause=refused)

    @property
    def json_values(self) -> bool:
        return self.value_format == "json"

    @property
    def out_path(self) -> Path | None:
        return Path(self.out).absolute() if self.out is not None else None


@dataclass
class Scan:
    """One read of one topic, as its planner wrote it."""

    scan: str
    table: str
    pushed: list[str]
    partitions: list[BoundsDocument]

    @property
    def records(self) -> int:
        return sum(p["end_offset"] - p["start_offset"] for p in self.partitions)

    @property
    def available(self) -> int:
        return sum(p["high_watermark"] - p["log_start_offset"] for p in self.partitions)


@dataclass
class Plan:
    scans: list[Scan]
    dumps: dict[str, int]  # dump directory -> records its manifest holds

    @property
    def records(self) -> int:
        return sum(s.records for s in self.scans)

    @property
    def available(self) -> int:
        return sum(s.available for s in self.scans)


@dataclass
class Tables:
    """The tables a query named, and the edits made to its text (dumps' names)."""

    text: str
    views: dict[str, str] = field(default_factory=dict)  # view name -> what it reads
    edits: list[tuple[int, int, int]] = field(default_factory=list)  # (start, old length, new length)
    dumps: dict[str, int] = field(default_factory=dict)

    def original_position(self, index: int) -> int:
        """Where `index` of the edited text was in the query as given."""
        for start, old, new in reversed(self.edits):
            if index >= start + new:
                index -= new - old
            elif index >= start:
                index = start
        return index


class _ScanDocument(TypedDict):
    """A scan's plan as planning.record_plan writes it (kctl.table is always set here)."""

    scan: str
    table: str
    pushed: list[str]
    partitions: list[BoundsDocument]


class SqlError(UsageError):
    """The query is not valid SQL, names what does not exist, or does not type-check."""


def _where(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"line {line}, column {column}"


def _spark_message(exc: BaseException) -> str:
    """Spark's error text without its [CONDITION] tag, SQLSTATE and plan dump."""
    text = str(exc).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else type(exc).__name__
    first = re.sub(r"^\[[A-Z0-9_.]+\]\s*", "", first)
    first = re.sub(r"\s*SQLSTATE: \w+.*$", "", first)
    return first.rstrip(" ;")


def sql_error(exc: PySparkException, tables: Tables, original: str) -> KctlError:
    """One line for a query Spark refused: its message and where in the query."""
    message = _spark_message(exc)
    where = None
    contexts: list[QueryContext] = []
    with contextlib.suppress(Exception):
        contexts = exc.getQueryContext() or []
    if contexts:
        with contextlib.suppress(Exception):
            where = _where(original, tables.original_position(contexts[0].startIndex()))
    if where is None:
        found = re.search(r"\(line (\d+), pos (\d+)\)", str(exc))
        if found:
            message = message.replace(found.group(0), "").rstrip()
            where = f"line {found.group(1)}, column {int(found.group(2)) + 1}"
    return SqlError(action="run the query", cause=message + (f" ({where})" if where else ""))


def quiet_spark_errors() -> None:
    """PySpark logs every failed analysis as a JSON error record (its SQLQueryContextLogger)
    before raising it: kctl reports the exception in one line, so the record is noise."""
    logging.getLogger("SQLQueryContextLogger").disabled = True


def check_read_only(spark: SparkSession, query: str) -> None:
    """Parse the query and refuse anything but a query (kctl spark sql never writes), and
    a query naming two topics that differ only in case: Spark's names ignore case, so the
    second would silently read the first."""
    from pyspark.errors import ParseException

    parser = spark._jsparkSession.sessionState().sqlParser()
    try:
        plan = parser.parsePlan(query)
    except ParseException as exc:
        raise sql_error(exc, Tables(query), query) from None
    classes = [_java_class(spark, name) for name in _WRITING_PLANS]
    names: dict[str, set[str]] = {}
    for node in _parsed_nodes(plan):
        if any(c is not None and c.isInstance(node) for c in classes):
            statement = node.getClass().getSimpleName()
            raise UsageError(
                action="run the query", cause=f"kctl spark sql only reads (SELECT, WITH, VALUES, TABLE, FROM ... |>), and this statement does more ({statement})",
                hint="kctl spark replay writes records to a topic; {out} writes the query's result to files",
            )
        if node.getClass().getSimpleName() == "UnresolvedRelation":
            parts = _scala_list(node.multipartIdentifier())
            if len(parts) == 1:
                names.setdefault(parts[0].lower(), set()).add(parts[0])
    for spellings in names.values():
        if len(spellings) > 1:
            first, second = sorted(spellings)[:2]
            raise SqlError(action="run the query", cause=f"it names {first} and {second}, which Spark cannot tell apart (its table names ignore case)")


def _parsed_nodes(plan: JavaObject) -> Iterator[JavaObject]:
    """Every node of a parsed plan: children, CTE definitions, subqueries in expressions."""
    pending = [plan]
    while pending:
        node = pending.pop()
        yield node
        for more in (node.children(), node.innerChildren(), node.subqueries()):
            pending.extend(_scala_list(more))


def _scala_list(sequence: JavaObject) -> list[JavaObject]:
    return [sequence.apply(i) for i in range(sequence.size())]


def _java_class(spark: SparkSession, name: str) -> JavaObject | None:
    try:
        # _jvm is None only before a SparkContext starts (an error here is caught either way).
        jvm: JavaObject = spark._jvm
        return jvm.java.lang.Class.forName(name, False, jvm.java.lang.Thread.currentThread().getContextClassLoader())
    except Exception:  # a Spark without that class has no plans of that kind
        return None


def _relation_parts(name: str) -> list[str]:
    """["dump", "/data/orders"] from Spark's "`dump`.`/data/orders`"."""
    return [part.replace("``", "`") for part in re.findall(r"`((?:[^`]|``)*)`", name)]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@dataclass
class Context:
    """What resolving tables needs from the command: the cluster and the registry."""

    kafka: Mapping[str, object]
    topic_exists: Callable[[str], bool]
    decode_plan: Callable[[str], DecodePlan | None]  # topic -> DecodePlan, or None without a subject
    plan_dir: Path
    progress_dir: Path
    note: Callable[[str], None] = lambda _text: None


@dataclass
class SqlResult:
    """What a query did: what it planned to read and, unless only explained, the rows it
    returned or the manifest of what it wrote, and the records it read from topics (None:
    unknown, when a cluster's executors could not report them)."""

    plan: Plan
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    written: dict[str, Any] | None = None
    read: int | None = None

    @property
    def row_count(self) -> int:
        return self.written["rows"] if self.written is not None else len(self.rows)


def run(request: SqlRequest, session: Callable[[], SparkSession], *, kafka: Mapping[str, object], topic_exists: Callable[[str], bool],
        decode_plan: Callable[[str], DecodePlan | None], note: Callable[[str], None] = lambda _text: None,
        progress: Callable[[Callable[[], str]], contextlib.AbstractContextManager[frames.Report | None]] = (
            lambda _more: contextlib.nullcontext(None))) -> SqlResult:
    """Run `request` in the Spark session `session()` starts: refuse anything but a
    query, find its tables (topics through `kafka`, asking `topic_exists` and, to decode,
    `decode_plan`), plan its reads and refuse one larger than its max_records, then
    return its rows or write them out. `progress(more)` is entered while it reads: it
    yields a report for the records done (or None), `more()` the partitions read so far."""
    from kctl.spark.session import size_shuffles

    with contextlib.ExitStack() as stack, work_directories() as (plan_dir, progress_dir):
        spark = session()
        quiet_spark_errors()
        # kctl_kafka's scans take the query's predicates (kctl.spark.pushdown).
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
        check_read_only(spark, request.query)
        if request.json_schema is not None:
            check_schema(request.json_schema)
        context = Context(kafka=kafka, topic_exists=topic_exists, decode_plan=decode_plan, plan_dir=plan_dir,
                          progress_dir=progress_dir, note=note)
        tables = stack.enter_context(tables_of(spark, request.query))
        try:
            frame = resolve(spark, request, context, tables)
            if request.limit is not None:
                frame = frame.limit(request.limit)
            planned = plan(spark, frame, tables, plan_dir)
        except KctlError:
            raise
        except Exception as exc:
            raise frames.spark_failure(exc, "plan the query") from exc
        if request.explain:
            return SqlResult(planned)
        check_size(planned, request.max_records)
        size_shuffles(spark, sum(len(s.partitions) for s in planned.scans) or 1)
        result = SqlResult(planned)
        with progress(lambda: partitions_done(progress_dir, plan_dir)) as report:
            counting = frames.Progress(spark, planned.records, report, directory=progress_dir)
            try:
                if request.out is not None:
                    result.written = write_out(spark, frame, request, planned, plan_dir, counting)
                else:
                    with counting:
                        result.columns, result.rows = rows(frame.toArrow())
            except KctlError:
                raise
            except Exception as exc:
                raise frames.spark_failure(exc, "run the query") from exc
        result.read = records_read(progress_dir) if planned.records else 0
        return result


@contextlib.contextmanager
def tables_of(spark: SparkSession, query: str) -> Iterator[Tables]:
    """The query's Tables; their views are dropped afterwards (a session that lives on,
    under spark-submit or in tests, must not answer a later query from a stale view)."""
    tables = Tables(query)
    try:
        yield tables
    finally:
        for view in tables.views:
            with contextlib.suppress(Exception):  # the session may be stopping (Ctrl-C)
                spark.catalog.dropTempView(view)  # the name itself (createOrReplaceTempView parses its argument)


def resolve(spark: SparkSession, request: SqlRequest, context: Context, tables: Tables) -> DataFrame:
    """The query's DataFrame, every table it names registered as a view."""
    from pyspark.errors import AnalysisException

    for _ in range(MAX_TABLES + 1):
        try:
            return spark.sql(tables.text)
        except AnalysisException as exc:
            if exc.getCondition() != "TABLE_OR_VIEW_NOT_FOUND":
                raise sql_error(exc, tables, request.query) from None
            parts = _relation_parts((exc.getMessageParameters() or {}).get("relationName", ""))
            contexts = exc.getQueryContext() or []
            span = (contexts[0].startIndex(), contexts[0].stopIndex()) if contexts else None
            where = f" ({_where(request.query, tables.original_position(span[0]))})" if span else ""
            _add_table(spark, request, context, tables, parts, span, where)
    raise SqlError(action="run the query", cause=f"it names more than {MAX_TABLES} tables")


def _add_table(spark: SparkSession, request: SqlRequest, context: Context, tables: Tables, parts: list[str], span: tuple[int, int] | None,
               where: str) -> None:
    if len(parts) == 2 and parts[0].lower() == "dump" and span is not None:
        view = f"dump:{parts[1]}"
        if view not in tables.views:
            directory = Path(parts[1]).absolute()
            frame, records = _dump_frame(spark, directory, where)
            frame.createOrReplaceTempView(_quoted(view))
            tables.views[view] = str(directory)
            tables.dumps[str(directory)] = records
        start, stop = span
        replacement = _quoted(view)
        tables.text = tables.text[:start] + replacement + tables.text[stop + 1 :]
        tables.edits.append((start, stop + 1 - start, len(replacement)))
        return
    if len(parts) != 1:
        shown = ".".join(parts)
        raise NotFoundError(action="run the query", cause=f"no table {shown}{where}: a table is a topic (quote a name with dots in backquotes: `{shown}`) or dump.<directory>")
    topic = parts[0]
    if not context.topic_exists(topic):
        raise NotFoundError(action="run the query", cause=f"topic '{topic}' does not exist{where}")
    frame = _topic_frame(spark, request, context, topic)
    frame.createOrReplaceTempView(_quoted(topic))
    tables.views[topic] = topic


def _topic_frame(spark: SparkSession, request: SqlRequest, context: Context, topic: str) -> DataFrame:
    from pyspark.sql import functions as F

    options = frames.source_options(context.kafka, [topic], include_headers=True)
    options.update(request.positions.get("", {}))
    options.update(request.positions.get(topic, {}))
    # A start time past the last record reads nothing rather than failing the query.
    options["startingOffsetsByTimestampStrategy"] = "latest"
    options.update({"kctl.pushFilters": "true", "kctl.planDir": str(context.plan_dir), "kctl.table": topic, "kctl.progressDir": str(context.progress_dir)})
    plan = context.decode_plan(topic) if request.decode else None
    if plan is not None:
        from kctl.spark.decode import plan_options

        options.update(plan_options(plan))
    # Always true of a record, and pushed to the scan like any predicate: a scan with
    # predicates plans its ranges when the query is planned (so --explain and
    # --max-records see them); one without would plan them only as it starts reading.
    frame = spark.read.format("kctl_kafka").options(**options).load().where(F.col("offset") >= 0)
    if plan is None and request.json_values:
        schema = request.json_schema or infer_json_schema(spark, options, topic, context.note)
        frame = frame.withColumn("value_decoded", F.from_json(F.col("value").cast("string"), schema))
    return frame


def check_schema(ddl: str) -> None:
    """--schema: Spark DDL Spark can parse (asked of the running session's parser)."""
    from pyspark.sql.types import _parse_datatype_string

    try:
        _parse_datatype_string(ddl)
    except Exception as exc:
        raise UsageError(action=f"use {{json_schema}} {ddl!r}", cause=f"{_spark_message(exc)}") from None


def infer_json_schema(spark: SparkSession, options: dict[str, str], topic: str, note: Callable[[str], None]) -> StructType:
    """The Spark DDL of a topic's JSON values, inferred by Spark's JSON reader from the
    newest JSON_SAMPLE records (spread over the partitions)."""
    from kctl.spark.planning import PartitionBounds

    sample_options = {k: v for k, v in options.items() if not k.startswith("kctl.")}
    _, bounds = frames.plan(sample_options, f"read {topic}")
    share = -(-JSON_SAMPLE // max(1, len(bounds)))
    newest = [PartitionBounds(b.topic, b.partition, b.log_start, b.high_watermark, max(b.start, b.end - share), b.end) for b in bounds]
    values = [row[0] for row in frames.load_topic(spark, "python", sample_options, newest).selectExpr("CAST(value AS STRING)").collect() if row[0]]
    if not values:
        raise InvalidError(action=f"infer a JSON schema for {topic}", cause="its newest records have no values", hint="give one with {schema} 'id BIGINT, name STRING'")
    schema = spark.read.json(spark.sparkContext.parallelize(values, 1)).schema
    fields = [f for f in schema.fields if f.name != "_corrupt_record"]
    if not fields:
        raise InvalidError(action=f"infer a JSON schema for {topic}", cause=f"none of its newest {len(values):,} values is a JSON object", hint="give one with {schema} 'id BIGINT, name STRING'")
    from pyspark.sql.types import StructType

    inferred = StructType(fields)
    note(f"{topic}: value_decoded typed from {len(values):,} newest value(s): {inferred.simpleString()}")
    return inferred


def _dump_frame(spark: SparkSession, directory: Path, where: str) -> tuple[DataFrame, int]:
    from kctl.spark.manifest import read_dump_manifest

    if not directory.exists():
        raise NotFoundError(action="run the query", cause=f"no dump directory {directory}{where}")
    try:
        manifest = read_dump_manifest(directory)
    except InvalidError as exc:
        raise exc.but(cause=f"{exc.cause}{where}") from None
    return frames.load_dump(spark, directory, manifest), int(manifest.get("records") or 0)


def plan(spark: SparkSession, frame: DataFrame, tables: Tables, plan_dir: Path) -> Plan:
    """Plan the query (Spark's optimizer pushes the predicates, each scan plans its
    ranges) and read what the scans chose. Reads no records."""
    forget_plans(plan_dir)
    frame._jdf.queryExecution().optimizedPlan()
    return Plan(read_scans(plan_dir), dict(tables.dumps))


def forget_plans(plan_dir: Path) -> None:
    """Before a query is planned (again: writing it to --out plans it anew)."""
    for leftover in plan_dir.glob("*.json"):
        leftover.unlink()


def read_scans(plan_dir: Path) -> list[Scan]:
    import json

    scans: list[Scan] = []
    for path in sorted(plan_dir.glob("*.json")):
        with contextlib.suppress(OSError, ValueError, KeyError):  # forgotten while read
            document: _ScanDocument = json.loads(path.read_text(encoding="utf-8"))
            scans.append(Scan(document["scan"], document["table"], document["pushed"], document["partitions"]))
    scans.sort(key=lambda s: (s.table, s.pushed))
    return scans


def check_size(plan: Plan, max_records: int | None) -> None:
    from kctl.errors import ExitCode

    if max_records and plan.records > max_records:
        raise KctlError(
            action="run the query", cause=f"it would read {plan.records:,} records from topics, more than {{max_records}} {max_records:,}",
            hint="narrow it with WHERE on timestamp, partition or offset ({explain} shows what it reads), or raise {max_records}",
            exit_code=ExitCode.ABORTED,
        )


def rows(table: pa.Table) -> tuple[list[str], list[dict[str, Any]]]:
    """Column names and rows (dicts) of an Arrow table of results."""
    return list(table.column_names), table.to_pylist()


def write_out(spark: SparkSession, frame: DataFrame, request: SqlRequest, plan: Plan, plan_dir: Path,
              progress: frames.Progress) -> dict[str, Any]:
    """Write the whole result to --out (Parquet, CSV or JSON Lines part files), with
    _kctl_sql.json saying complete (and _SUCCESS) only once every file is written."""
    from kctl.spark.dump import check_out

    out = request.out_path
    assert out is not None
    replace = check_out(out, request.overwrite, manifest=SQL_MANIFEST, action="write the result", kind="query result")
    if replace:
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"kind": "kctl-sql", "query": request.query, "format": request.out_format, "created_at": now_iso(), "status": "running"}
    path = out / SQL_MANIFEST
    write_json(path, manifest)
    forget_plans(plan_dir)  # the write plans the query again
    try:
        with progress:
            writer = frame.write.mode("append")
            if request.out_format == "parquet":
                writer.option("compression", "zstd").parquet(str(out))
            elif request.out_format == "csv":
                writer.option("header", "true").csv(str(out))
            else:
                writer.option("ignoreNullFields", "false").json(str(out))
        reader = {"parquet": spark.read.parquet, "csv": lambda p: spark.read.option("header", "true").csv(p), "jsonl": spark.read.json}[request.out_format]
        written = reader(str(out)).count() if any(out.glob("part-*")) else 0
    except BaseException as exc:
        manifest.update(status="partial", finished_at=now_iso(), error=exc.message if isinstance(exc, KctlError) else f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        write_json(path, manifest)
        raise
    manifest.update(status="complete", finished_at=now_iso(), rows=written, planned_records=plan.records)
    write_json(path, manifest)
    (out / SUCCESS).write_bytes(b"")
    return manifest


@contextlib.contextmanager
def work_directories() -> Iterator[tuple[Path, Path]]:
    """(plan directory, progress directory): temporary, on the driver's machine (planning
    runs there; on a cluster whose executors cannot see it, records read are unknown)."""
    root = Path(tempfile.mkdtemp(prefix="kctl-sql-"))
    try:
        (root / "plan").mkdir()
        (root / "progress").mkdir()
        yield root / "plan", root / "progress"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def partitions_done(progress_dir: Path, plan_dir: Path) -> str:
    """"3/8 partitions" read to their end so far, of the query's latest plan (each read
    task's file in the progress directory is named SCAN-TOPIC-PARTITION-START and holds
    "RECORDS BYTES")."""
    ranges = {f"{s.scan}-{p['topic']}-{p['partition']}-{p['start_offset']}": p["end_offset"] - p["start_offset"]
              for s in read_scans(plan_dir) for p in s.partitions if p["end_offset"] > p["start_offset"]}
    done = 0
    for name, size in ranges.items():
        with contextlib.suppress(OSError, ValueError, IndexError):
            done += int((progress_dir / name).read_text(encoding="ascii").split()[0]) >= size
    return f"{done}/{len(ranges)} partitions"


def records_read(progress_dir: Path) -> int | None:
    from kctl.spark.reading import read_progress

    if not os.path.isdir(progress_dir) or not os.listdir(progress_dir):
        return None
    return read_progress(str(progress_dir))[0]
