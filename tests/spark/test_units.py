"""The parts of kctl spark that need no SparkSession: option parsing, planning,
Kafka's partitioner, manifests, and reading a range into Arrow (against a real broker)."""

from __future__ import annotations

import json

import pytest

from kctl.errors import InvalidError, UsageError
from kctl.partitioner import murmur2, partition_for
from kctl.spark import options as source_options
from kctl.spark.manifest import DUMP_MANIFEST, SUCCESS, new_dump_manifest, read_dump_manifest, write_json
from kctl.spark.options import OptionError
from kctl.spark.planning import OffsetRange, PartitionBounds, split

BOOTSTRAP = {"kafka.bootstrap.servers": "localhost:9092"}


def test_options_use_the_jvm_connector_names_in_any_case():
    parsed = source_options.parse({**BOOTSTRAP, "SUBSCRIBE": "a, b", "startingOffsets": '{"a":{"0":5,"1":-2}}', "includeHeaders": "TRUE",
                                   "minPartitions": "8", "kafka.security.protocol": "SSL", "kctl.arrowBatchSize": "500"})
    assert parsed.subscribe == ("a", "b")
    assert parsed.starting_offsets == {"a": {0: 5, 1: -2}}
    assert parsed.ending_offsets == "latest"
    assert parsed.include_headers and parsed.min_partitions == 8 and parsed.arrow_batch_size == 500
    assert parsed.kafka == {"bootstrap.servers": "localhost:9092", "security.protocol": "SSL"}


@pytest.mark.parametrize(
    "options, message",
    [
        ({"subscribe": "a"}, "kafka.bootstrap.servers is required"),
        ({**BOOTSTRAP}, "exactly one of"),
        ({**BOOTSTRAP, "subscribe": "a", "assign": '{"a":[0]}'}, "exactly one of"),
        ({**BOOTSTRAP, "assign": "[0]"}, "option assign"),
        ({**BOOTSTRAP, "subscribePattern": "(("}, "subscribePattern"),
        ({**BOOTSTRAP, "subscribe": "a", "kafka.group.id": "g"}, "kafka.group.id is not supported"),
        ({**BOOTSTRAP, "subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "not supported"),
        ({**BOOTSTRAP, "subscribe": "a", "startingOffsets": "{not json"}, "not JSON"),
        ({**BOOTSTRAP, "subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'}, "not allowed"),
        ({**BOOTSTRAP, "subscribe": "a", "endingOffsets": "earliest"}, "not allowed"),
        ({**BOOTSTRAP, "subscribe": "a", "minPartitions": "0"}, "at least 1"),
        ({**BOOTSTRAP, "subscribe": "a", "failOnDataLoss": "maybe"}, "true or false"),
        ({**BOOTSTRAP, "subscribe": "a", "startingOffsetsByTimestampStrategy": "earliest"}, "error or latest"),
    ],
)
def test_bad_options_name_the_option(options, message):
    with pytest.raises(OptionError, match=message):
        source_options.parse(options)


def test_split_one_range_per_partition_and_proportional_cuts():
    bounds = [PartitionBounds("t", 0, 0, 900, 0, 900), PartitionBounds("t", 1, 0, 100, 0, 100), PartitionBounds("t", 2, 0, 0, 0, 0)]
    assert split(bounds) == [OffsetRange("t", 0, 0, 900), OffsetRange("t", 1, 0, 100)]
    cut = split(bounds, min_partitions=10)
    assert [r for r in cut if r.partition == 1] == [OffsetRange("t", 1, 0, 100)]
    assert len([r for r in cut if r.partition == 0]) == 9
    assert sum(r.size for r in cut) == 1000 and all(r.size > 0 for r in cut)
    capped = split(bounds, max_records=250)
    assert max(r.size for r in capped) == 250 and sum(r.size for r in capped) == 1000


def test_murmur2_matches_kafkas_java_partitioner():
    # Kafka's UtilsTest vectors.
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107
    assert all(0 <= partition_for(bytes([i]), 7) < 7 for i in range(256))


def test_replay_timestamp_modes():
    from kctl.spark.replay import parse_timestamps

    assert parse_timestamps("preserve") == "preserve"
    assert parse_timestamps("shift:+1d") == "shift:86400000"
    assert parse_timestamps("shift:-90s") == "shift:-90000"
    with pytest.raises(UsageError):
        parse_timestamps("later")
    with pytest.raises(UsageError):
        parse_timestamps("shift:+soon")


def test_partition_map_file(tmp_path):
    from kctl.spark.replay import load_partition_map

    good = tmp_path / "map.json"
    good.write_text('{"0": 2, "1": 0}')
    assert load_partition_map(str(good)) == {0: 2, 1: 0}
    for text in ('{"0": -1}', '[1, 2]', "{nope"):
        good.write_text(text)
        with pytest.raises(InvalidError):
            load_partition_map(str(good))
    with pytest.raises(InvalidError, match="unable to read"):
        load_partition_map(str(tmp_path / "missing.json"))


def test_dump_manifests_are_checked(tmp_path):
    with pytest.raises(InvalidError, match="no such directory"):
        read_dump_manifest(tmp_path / "absent")
    with pytest.raises(InvalidError, match="not a kctl dump"):
        read_dump_manifest(tmp_path)
    (tmp_path / DUMP_MANIFEST).write_text("{truncated")
    with pytest.raises(InvalidError, match="corrupt"):
        read_dump_manifest(tmp_path)
    (tmp_path / DUMP_MANIFEST).write_text(json.dumps({"kind": "something-else"}))
    with pytest.raises(InvalidError, match="not a kctl dump manifest"):
        read_dump_manifest(tmp_path)
    manifest = new_dump_manifest(format="parquet", partitions=[])
    write_json(tmp_path / DUMP_MANIFEST, manifest)
    with pytest.raises(InvalidError, match="incomplete"):
        read_dump_manifest(tmp_path)
    manifest["status"] = "complete"
    write_json(tmp_path / DUMP_MANIFEST, manifest)
    with pytest.raises(InvalidError, match="incomplete"):  # no _SUCCESS yet
        read_dump_manifest(tmp_path)
    (tmp_path / SUCCESS).write_bytes(b"")
    assert read_dump_manifest(tmp_path)["status"] == "complete"


@pytest.mark.integration
@pytest.mark.single_node
def test_read_range_yields_arrow_batches_of_exactly_the_range(cluster, kctl, unique_name):
    pytest.importorskip("pyarrow")
    from confluent_kafka import Producer

    from kctl.spark.reading import arrow_schema, read_range

    topic = unique_name("arrow")
    # Months-old timestamps: retention.ms=-1 keeps Kafka's retention check off them.
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic, "-p", "1", "-c", "retention.ms=-1").exit_code == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(250):
        producer.produce(topic, value=None if i == 7 else f"v{i}".encode(), key=f"k{i}".encode() if i % 2 else None, partition=0,
                         timestamp=1_790_000_000_000 + i, headers=[("h", str(i).encode())] if i % 5 == 0 else None)
    assert producer.flush(30) == 0
    parsed = source_options.parse({"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": topic, "includeHeaders": "true", "kctl.arrowBatchSize": "100"})
    batches = list(read_range(parsed, OffsetRange(topic, 0, 20, 230)))
    assert [b.num_rows for b in batches] == [100, 100, 10]
    assert all(b.schema.equals(arrow_schema(True)) for b in batches)
    rows = [row for b in batches for row in b.to_pylist()]
    assert [r["offset"] for r in rows] == list(range(20, 230))
    first = rows[0]
    assert first["key"] is None and first["value"] == b"v20" and first["headers"] == [{"key": "h", "value": b"20"}]
    assert first["timestampType"] == 0 and int(first["timestamp"].timestamp() * 1000) == 1_790_000_000_020
    assert rows[1]["headers"] is None and rows[1]["key"] == b"k21"
    assert list(read_range(parsed, OffsetRange(topic, 0, 250, 250))) == []


def test_missing_java_is_one_clear_line(tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env.update(PATH=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path))
    out = tmp_path / "dump"
    proc = subprocess.run([sys.executable, "-m", "kctl", "-b", "127.0.0.1:1", "spark", "dump", "-t", "orders", "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 78, proc.stderr
    assert proc.stderr.startswith("error: unable to start Spark: no Java runtime found")
    assert "Traceback" not in proc.stderr and not out.exists()


def test_json_schema_validation():
    from kctl.spark.audit import json_validator, load_json_schema

    schema = load_json_schema(json.dumps({
        "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "order",
        "type": "object", "required": ["id", "amount"], "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "pattern": "^o-[0-9]+$"},
            "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000},
            "status": {"enum": ["new", "paid"]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            "note": {"type": ["string", "null"], "maxLength": 5},
            "customer": {"$ref": "#/$defs/customer"},
        },
        "$defs": {"customer": {"type": "object", "required": ["email"], "properties": {"email": {"type": "string", "format": "email"}}}},
    }))
    check = json_validator(schema)
    assert check(b'{"id": "o-1", "amount": 5, "status": "paid", "tags": ["a"], "note": null, "customer": {"email": "a@b.c"}}') is True
    assert check(None) is None
    for bad in (b'{"id": "o-1"}', b'{"id": "x-1", "amount": 5}', b'{"id": "o-1", "amount": 0}', b'{"id": "o-1", "amount": 5, "extra": 1}',
                b'{"id": "o-1", "amount": 5, "status": "lost"}', b'{"id": "o-1", "amount": 5, "tags": ["a", "b", "c"]}',
                b'{"id": "o-1", "amount": true}', b'{"id": "o-1", "amount": 5, "note": "too long"}', b"[1]", b"not json", b"\xff",
                b'{"id": "o-1", "amount": 5, "customer": {}}', b'{"id": "o-1", "amount": 5, "customer": {"email": "nobody"}}'):
        assert check(bad) is False, bad
    assert json_validator(load_json_schema('{"oneOf": [{"type": "integer"}, {"minimum": 5}]}'))(b"3") is True
    assert json_validator(load_json_schema('{"oneOf": [{"type": "integer"}, {"minimum": 5}]}'))(b"7") is False
    assert json_validator(load_json_schema('{"not": {"const": 1}}'))(b"1.0") is False


def test_json_schema_drafts_are_told_apart():
    """Draft-04's boolean exclusiveMinimum excludes the bound (the hand-written validator
    kctl had accepted 5 here); in the newest draft a boolean there is not a schema."""
    from kctl.spark.audit import json_validator, load_json_schema

    draft4 = load_json_schema('{"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 5, "exclusiveMinimum": true}')
    assert [json_validator(draft4)(v) for v in (b"5", b"6")] == [False, True]


@pytest.mark.parametrize("text, message", [
    ('{"minimum": 5, "exclusiveMinimum": true}', "not a valid JSON Schema: at exclusiveMinimum: True is not of type 'number'"),
    ('{"required": "ab"}', "not a valid JSON Schema: at required: 'ab' is not of type 'array'"),
    ('{"properties": []}', "not a valid JSON Schema: at properties: [] is not of type 'object'"),
    ('{"type": "decimal"}', "not a valid JSON Schema: at type: 'decimal' is not valid under any of the given schemas"),
    ('{"$ref": "#/definitions/order"}', "not a valid JSON Schema: $ref '#/definitions/order' does not resolve inside the schema"),
    ('{"$ref": "https://example.com/order.json"}', "not a valid JSON Schema: $ref 'https://example.com/order.json' does not resolve inside the schema"),
    ("{nope", "not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
])
def test_a_bad_json_schema_is_one_line(text, message):
    from kctl.errors import ExitCode, InvalidError
    from kctl.spark.audit import load_json_schema

    with pytest.raises(InvalidError) as caught:
        load_json_schema(text)
    assert (caught.value.message, caught.value.exit_code) == (message, ExitCode.INVALID)


def test_executor_environment_failures_name_the_flag():
    """What a job on workers without kctl (or without the shipped env's Python) fails
    with, as Spark reports it: one line each, exit 78, naming what to do."""
    from kctl.errors import ExitCode
    from kctl.spark.frames import spark_failure

    missing = Exception("Job aborted due to stage failure: Task 0 in stage 1.0 failed 4 times\n"
                        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
                        "  File \"/work/0/pyspark.zip/pyspark/worker.py\", line 3, in main\n"
                        "ModuleNotFoundError: No module named 'pyarrow'\n\tat org.apache.spark...")
    error = spark_failure(missing, "dump orders")
    assert error.exit_code == ExitCode.CONFIG
    # The library names the setting; the command line says it as its flag.
    assert str(error) == "unable to dump orders: the executors' Python has no module named 'pyarrow' ({ship_env} ships this environment to them)"
    from kctl.cli._hints import in_flags

    assert str(in_flags(error, {"ship_env": "--ship-env"})) == (
        "unable to dump orders: the executors' Python has no module named 'pyarrow' (--ship-env ships this environment to them)")
    unrunnable = Exception('Job aborted: java.io.IOException: Cannot run program "./kctlenv/bin/python": error=2, No such file or directory')
    error = spark_failure(unrunnable, "dump orders")
    assert error.exit_code == ExitCode.CONFIG
    assert str(error).startswith("unable to dump orders: the executors cannot run the shipped Python: it needs /")
    # A failed write to Parquet names the py4j call `.parquet`: not a corrupt file.
    unrelated = Exception("An error occurred while calling o294.parquet.\n: org.apache.spark.SparkException: Job aborted: "
                          "java.lang.NoClassDefFoundError: org/apache/spark/internal/LogKeys$CONSUMER$")
    assert "corrupt" not in str(spark_failure(unrelated, "dump orders"))


def test_a_jvm_failure_names_its_cause_not_the_py4j_call():
    from kctl.spark.frames import spark_failure

    full = Exception("An error occurred while calling o231.cache.\n"
                     ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times\n"
                     "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)\n"
                     "Caused by: java.io.IOException: No space left on device\n"
                     "\tat java.base/java.io.FileOutputStream.writeBytes(Native Method)")
    assert str(spark_failure(full, "audit orders")) == "unable to audit orders: Spark job failed: java.io.IOException: No space left on device"
    bare = Exception("An error occurred while calling o12.save.\n: java.lang.IllegalStateException: SparkContext has been shut down")
    assert str(spark_failure(bare, "dump orders")) == "unable to dump orders: Spark job failed: java.lang.IllegalStateException: SparkContext has been shut down"


def test_ship_env_packs_what_executors_import_once(tmp_path):
    """--ship-env's archive: kctl (even installed editable) and its Spark jobs' libraries,
    with the interpreter's links; not pyspark, py4j or test tools; reused while the
    environment is unchanged."""
    import sys
    import tarfile

    from kctl.spark import shipenv

    if sys.prefix == sys.base_prefix:
        pytest.skip("needs a virtualenv")
    notes = []
    archive = shipenv.packed_environment(tmp_path, notes.append)
    assert len(notes) == 1 and "packing" in notes[0]
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    site = next(n for n in names if n.endswith("site-packages/kctl/cli/main.py")).rsplit("/kctl/", 1)[0]
    for module in ("kctl/spark/source.py", "pyarrow/__init__.py", "confluent_kafka/__init__.py"):
        assert f"{site}/{module}" in names, module
    assert {"bin/python", "pyvenv.cfg"} <= names
    assert not any(n.startswith((f"{site}/pyspark/", f"{site}/py4j/", f"{site}/_pytest/", f"{site}/pip/")) for n in names)
    assert not any("__editable__" in n for n in names)
    assert shipenv.packed_environment(tmp_path, notes.append) == archive and len(notes) == 1


def test_read_tasks_report_their_progress_as_batches_pass(tmp_path):
    """What the driver's live bar sums (kctl.spark.reading.reporting/read_progress): each
    read task's records and bytes so far, rewritten as its batches pass, not only at its
    end. (On a real job two tasks can read 60,000 records within one refresh of the bar;
    this is the part that does not depend on how fast they are.)"""
    import pyarrow as pa

    from kctl.spark.reading import read_progress, reporting

    def batch(rows: int) -> pa.RecordBatch:
        return pa.record_batch([pa.array([b"k"] * rows), pa.array([b"vv"] * rows)], names=["key", "value"])

    def size(*rows: int) -> int:
        return sum(batch(n).column(0).nbytes + batch(n).column(1).nbytes for n in rows)

    batches = reporting(iter([batch(3), batch(4), batch(5)]), str(tmp_path), "orders-0-0", every=0)
    next(batches)
    assert read_progress(str(tmp_path)) == (3, size(3))
    next(batches)
    assert read_progress(str(tmp_path)) == (7, size(3, 4))
    other = reporting(iter([batch(2)]), str(tmp_path), "orders-1-0", every=3600)
    next(other)
    assert read_progress(str(tmp_path)) == (7, size(3, 4))  # within `every`: not yet rewritten
    assert len(list(batches)) == 1 and list(other) == []
    assert read_progress(str(tmp_path)) == (14, size(3, 4, 5, 2))  # and at each task's end


def test_pushed_predicates_become_read_limits():
    """kctl spark sql's push-down (kctl.spark.pushdown): Spark's filters on partition,
    offset and timestamp as [low, end) limits, in whole milliseconds for time; others and
    ORs (never pushed as one filter) left alone; kctl's own `offset >= 0` not shown."""
    import datetime as dt

    from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan, LessThanOrEqual, Not, StringContains

    from kctl.spark.pushdown import Limits, limits_of, narrowed

    utc = dt.UTC
    at = dt.datetime(2026, 11, 1, 12, 0, 0, 250_500, tzinfo=utc)  # 250.5 ms past the second
    ms = int(dt.datetime(2026, 11, 1, 12, 0, tzinfo=utc).timestamp() * 1000) + 250
    limits = limits_of([
        GreaterThanOrEqual(("offset",), 0), In(("partition",), (0, 2, 5)), LessThan(("partition",), 5),
        GreaterThan(("offset",), 9), LessThanOrEqual(("offset",), 20), GreaterThanOrEqual(("timestamp",), at),
        LessThan(("timestamp",), at + dt.timedelta(hours=1)), StringContains(("topic",), "x"), Not(EqualTo(("partition",), 2)),
        EqualTo(("value", "nested"), 1),
    ])
    assert (limits.offset_low, limits.offset_end) == (10, 21)
    # >= 12:00:00.2505 admits 251 ms and later; < 13:00:00.2505 admits up to 250 ms.
    assert (limits.time_low_ms, limits.time_end_ms) == (ms + 1, ms + 3_600_000 + 1)
    assert [p for p in range(7) if limits.admits_partition(p)] == [0, 2]
    assert limits.pushed == ("partition IN (0, 2, 5)", "partition < 5", "offset > 9", "offset <= 20",
                             "timestamp >= 2026-11-01T12:00:00.250500Z", "timestamp < 2026-11-01T13:00:00.250500Z")
    assert limits_of([GreaterThan(("timestamp",), at), LessThanOrEqual(("timestamp",), at)]).time_low_ms == ms + 1
    exact = limits_of([EqualTo(("timestamp",), at.replace(microsecond=250_000))])
    assert (exact.time_low_ms, exact.time_end_ms) == (ms, ms + 1)
    assert limits_of([EqualTo(("partition",), 3), EqualTo(("partition",), 4)]).partitions == frozenset()
    # Cutting a partition's [start, end): offsets, then the offsets the times resolved to.
    assert narrowed(0, 100, 0, limits) == (10, 21)
    assert narrowed(0, 100, 0, limits, time_start=15, time_end=18) == (15, 18)
    assert narrowed(0, 100, 1, limits) == (0, 0)  # a partition no predicate admits
    assert narrowed(50, 100, 0, limits) == (50, 50)  # past the offsets admitted: empty
    assert narrowed(0, 100, 3, Limits()) == (0, 100)


@pytest.mark.parametrize(("fields", "cause"), [
    ({"query": " \n"}, "it is empty"),
    ({"out": "s3://bucket/result"}, "{out} is a directory on a local or shared file system"),
    ({"out": "result", "limit": 3}, "{limit} bounds the rows printed, and {out} writes them all (put a LIMIT in the query)"),
    ({"overwrite": True}, "{out_format} and {overwrite} are for {out}"),
    ({"out_format": "csv"}, "{out_format} and {overwrite} are for {out}"),
    ({"json_schema": "a INT"}, "{json_schema} types JSON values ({value_format} json)"),
    ({"registry_url": "http://registry"}, "{registry_url} is for {decode}"),
])
def test_a_sql_request_refuses_settings_that_contradict_each_other(fields, cause):
    """Refused when made, naming the settings (the CLI says them as its flags)."""
    from kctl.errors import UsageError
    from kctl.spark.sql import SqlRequest

    with pytest.raises(UsageError) as refused:
        SqlRequest(**{"query": "SELECT 1", **fields})
    assert refused.value.cause == cause
    made = SqlRequest(query="SELECT 1", value_format="json", json_schema="a INT", decode=True, registry_url="http://r",
                      out="result", out_format="csv", overwrite=True)
    assert made.json_values and made.out_path is not None and made.out_path.is_absolute()
