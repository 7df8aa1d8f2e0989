"""`kctl spark audit`: what a topic or a dump holds, and whether something is wrong with it.

Per partition, in one pass with window functions over offset order: record count,
offset range, gaps between consecutive offsets, timestamp regressions, null keys,
tombstones, duplicates (the same key, value, headers and timestamp, or the same JSON
field with --key-path) and, with
--json, values that are not JSON; with --json-schema, values that do not match it
(the jsonschema package, by the draft the schema's $schema names). Gaps are expected in two cases and reported apart
from holes: a compacted topic removes records, and transaction markers take offsets
of their own (one per transaction, so a gap of one or two offsets in a topic that is
not compacted). With --compare-to, the two sides are compared as multisets of
(key, value, headers) and the records on one side only are counted and sampled.

Problems, which make the audit fail (exit status 2): holes, duplicates, invalid JSON,
values that do not match the schema,
records missing or extra in a comparison, and a dump whose files hold a different
number of records than its manifest says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MARKER_GAP = 2  # the widest gap a topic that is not compacted gets from transaction markers
SAMPLE = 10


@dataclass
class PartitionAudit:
    topic: str
    partition: int
    records: int
    first_offset: int | None
    last_offset: int | None
    gaps: int  # gaps of any kind
    missing_offsets: int
    holes: int  # gaps that neither compaction nor transaction markers explain
    first_timestamp: int | None
    last_timestamp: int | None
    timestamp_regressions: int
    largest_regression_ms: int
    null_keys: int
    tombstones: int
    duplicates: int
    invalid_json: int | None
    schema_mismatches: int | None
    expected_records: int | None = None


@dataclass
class Comparison:
    other: str
    records: int
    other_records: int
    missing: int  # on this side only: absent from the other
    extra: int  # on the other side only
    missing_sample: list[dict[str, Any]] = field(default_factory=list)
    extra_sample: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class AuditReport:
    source: str
    records: int
    partitions: list[PartitionAudit]
    duplicates: int  # in all partitions (a record and its copy in another partition are not duplicates)
    comparison: Comparison | None
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def _prepared(frame, key_path: str | None, check_json: bool, json_schema: Any):
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    order = Window.partitionBy("topic", "partition").orderBy("offset")
    text = F.col("value").cast("string")
    identity = F.get_json_object(text, key_path) if key_path else F.xxhash64("key", "value", "headers", "timestamp")
    return frame.select(
        "topic",
        "partition",
        "offset",
        F.unix_millis("timestamp").alias("ts"),
        F.col("key").isNull().alias("null_key"),
        F.col("value").isNull().alias("null_value"),
        identity.alias("identity"),
        (F.try_parse_json(text).isNull() & F.col("value").isNotNull()).alias("bad_json") if check_json else F.lit(False).alias("bad_json"),
        _schema_mismatch(json_schema, BooleanType()).alias("bad_schema") if json_schema is not None else F.lit(False).alias("bad_schema"),
        (F.col("offset") - F.lag("offset").over(order) - 1).alias("gap"),
        (F.lag(F.unix_millis("timestamp")).over(order) - F.unix_millis("timestamp")).alias("step_back"),
    )


def load_json_schema(text: str) -> Any:
    """A JSON Schema document, checked against its draft's metaschema (the draft its
    $schema names; the newest without one). InvalidError names what is wrong."""
    import json

    import jsonschema

    from kctl.errors import InvalidError

    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise InvalidError(cause=f"not JSON: {exc}") from None
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "the top level"
        raise InvalidError(cause=f"not a valid JSON Schema: at {where}: {exc.message}") from None
    _check_references(schema)
    return schema


def _check_references(schema: Any) -> None:
    """Every $ref must resolve inside the document: Spark's workers fetch nothing, and a
    reference that fails there would fail the job record by record."""
    from referencing import Registry, Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    from kctl.errors import InvalidError

    uri = "urn:kctl:json-schema"
    resolver = Registry().with_resource(uri, Resource.from_contents(schema, default_specification=DRAFT202012)).resolver(base_uri=uri)
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                try:
                    resolver.lookup(ref)
                except Unresolvable:
                    raise InvalidError(cause=f"not a valid JSON Schema: $ref {ref!r} does not resolve inside the schema") from None
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)


def json_validator(schema: Any):
    """A function bytes -> bool (None for a null value) for one checked schema, with the
    formats its draft defines checked where jsonschema can check them. It carries only the
    schema: each Spark worker builds its validator on its first value."""
    built = []

    def check(raw: bytes | None) -> bool | None:
        import json

        if raw is None:
            return None
        if not built:
            import jsonschema

            kind = jsonschema.validators.validator_for(schema)
            built.append(kind(schema, format_checker=kind.FORMAT_CHECKER))
        try:
            document = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return False
        return built[0].is_valid(document)

    return check


def _schema_mismatch(json_schema: Any, boolean):
    """True where a value is not JSON matching the schema (a row UDF: no pandas needed)."""
    from pyspark.sql import functions as F

    check = json_validator(json_schema)
    return F.udf(lambda raw: (lambda ok: None if ok is None else not ok)(check(raw)), boolean, useArrow=False)("value") == F.lit(True)


def audit(
    frame,
    source: str,
    *,
    compacted: set[str],
    key_path: str | None = None,
    check_json: bool = False,
    json_schema: Any = None,
    ranges: dict[tuple[str, int], tuple[int, int]] | None = None,
    expected: dict[tuple[str, int], int] | None = None,
    compare_to=None,
    compare_name: str | None = None,
) -> AuditReport:
    """Audit `frame`; `ranges` are the offsets [start, end) it was read from, so gaps
    before the first and after the last record count too; `expected` are a dump
    manifest's record counts."""
    from pyspark.sql import functions as F

    ranges = ranges or {}
    prepared = _prepared(frame, key_path, check_json, json_schema).cache()
    try:
        compacted_topic = F.col("topic").isin(list(compacted)) if compacted else F.lit(False)
        hole = (F.col("gap") > 0) & ~compacted_topic & (F.col("gap") > MARKER_GAP)
        rows = (
            prepared.groupBy("topic", "partition")
            .agg(
                F.count("*").alias("records"),
                F.min("offset").alias("first_offset"),
                F.max("offset").alias("last_offset"),
                F.count_if(F.col("gap") > 0).alias("gaps"),
                F.coalesce(F.sum(F.when(F.col("gap") > 0, F.col("gap"))), F.lit(0)).alias("missing_offsets"),
                F.count_if(hole).alias("holes"),
                F.min("ts").alias("first_timestamp"),
                F.max("ts").alias("last_timestamp"),
                F.count_if(F.col("step_back") > 0).alias("timestamp_regressions"),
                F.coalesce(F.max(F.when(F.col("step_back") > 0, F.col("step_back"))), F.lit(0)).alias("largest_regression_ms"),
                F.count_if("null_key").alias("null_keys"),
                F.count_if("null_value").alias("tombstones"),
                (F.count("identity") - F.count_distinct("identity")).alias("duplicates"),
                F.count_if("bad_json").alias("invalid_json"),
                F.count_if("bad_schema").alias("schema_mismatches"),
            )
            .orderBy("topic", "partition")
            .collect()
        )
    finally:
        prepared.unpersist()
    found = {(row["topic"], row["partition"]): row.asDict() for row in rows}
    partitions = []
    for key in sorted(set(found) | set(ranges)):
        values = found.get(key) or _empty(*key)
        if not check_json:
            values["invalid_json"] = None
        if json_schema is None:
            values["schema_mismatches"] = None
        values["expected_records"] = expected.get(key) if expected is not None else None
        audit_row = PartitionAudit(**values)
        if key in ranges:
            _edges(audit_row, *ranges[key], compacted=key[0] in compacted)
        partitions.append(audit_row)
    comparison = _compare(frame, compare_to, compare_name) if compare_to is not None else None
    report = AuditReport(
        source=source,
        records=sum(p.records for p in partitions),
        partitions=partitions,
        duplicates=sum(p.duplicates for p in partitions),
        comparison=comparison,
        problems=[],
    )
    report.problems = _problems(report, key_path)
    return report


def _empty(topic: str, partition: int) -> dict[str, Any]:
    return dict(
        topic=topic, partition=partition, records=0, first_offset=None, last_offset=None, gaps=0, missing_offsets=0, holes=0,
        first_timestamp=None, last_timestamp=None, timestamp_regressions=0, largest_regression_ms=0, null_keys=0, tombstones=0,
        duplicates=0, invalid_json=0, schema_mismatches=0,
    )


def _edges(row: PartitionAudit, start: int, end: int, *, compacted: bool) -> None:
    """Count the gaps at the ends of the range: before the first record (compaction
    removed the oldest) and after the last (a transaction's commit marker)."""
    if row.records == 0:
        edges = [end - start] if end > start else []
    else:
        edges = [g for g in (row.first_offset - start, end - 1 - row.last_offset) if g > 0]
    for gap in edges:
        row.gaps += 1
        row.missing_offsets += gap
        if not compacted and gap > MARKER_GAP:
            row.holes += 1


def _problems(report: AuditReport, key_path: str | None) -> list[str]:
    problems = []
    for p in report.partitions:
        where = f"{p.topic}:{p.partition}"
        if p.holes:
            problems.append(f"{where}: {p.holes} gap(s) in the offsets that neither compaction nor transaction markers explain")
        if p.invalid_json:
            problems.append(f"{where}: {p.invalid_json} value(s) are not JSON")
        if p.schema_mismatches:
            problems.append(f"{where}: {p.schema_mismatches} value(s) do not match the JSON schema")
        if p.expected_records is not None and p.expected_records != p.records:
            problems.append(f"{where}: the dump's files hold {p.records} record(s), its manifest says {p.expected_records}")
    if report.duplicates:
        by = f"the same {key_path}" if key_path else "the same key, value, headers and timestamp"
        problems.append(f"{report.duplicates} duplicate record(s) ({by} more than once)")
    if report.comparison is not None:
        c = report.comparison
        if c.missing:
            problems.append(f"{c.missing} record(s) are missing from {c.other}")
        if c.extra:
            problems.append(f"{c.extra} record(s) in {c.other} are not in {report.source}")
    return problems


def _fingerprints(frame):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    with_fp = frame.select("partition", "offset", "key", F.xxhash64("key", "value", "headers").alias("fp"))
    occurrence = Window.partitionBy("fp").orderBy("partition", "offset")
    return with_fp.withColumn("n", F.row_number().over(occurrence))


def _sample(rows) -> list[dict[str, Any]]:
    sample = []
    for row in rows:
        key = row["key"]
        try:
            shown = key.decode() if key is not None else None
        except UnicodeDecodeError:
            shown = key.hex()
        sample.append({"partition": row["partition"], "offset": row["offset"], "key": shown})
    return sample


def _compare(frame, other, other_name: str | None) -> Comparison:
    from pyspark.sql import functions as F

    mine = _fingerprints(frame).alias("a")
    theirs = _fingerprints(other).alias("b")
    joined = mine.join(theirs, on=["fp", "n"], how="full_outer").cache()
    try:
        counts = joined.agg(
            F.count("a.offset").alias("records"),
            F.count("b.offset").alias("other_records"),
            F.count_if(F.col("b.offset").isNull()).alias("missing"),
            F.count_if(F.col("a.offset").isNull()).alias("extra"),
        ).collect()[0]
        missing = joined.where(F.col("b.offset").isNull()).select("a.partition", "a.offset", "a.key").orderBy("partition", "offset").limit(SAMPLE).collect()
        extra = joined.where(F.col("a.offset").isNull()).select("b.partition", "b.offset", "b.key").orderBy("partition", "offset").limit(SAMPLE).collect()
    finally:
        joined.unpersist()
    return Comparison(
        other=other_name or "the other side",
        records=counts["records"],
        other_records=counts["other_records"],
        missing=counts["missing"],
        extra=counts["extra"],
        missing_sample=_sample(missing),
        extra_sample=_sample(extra),
    )
