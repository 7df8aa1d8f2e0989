"""kctl spark dump|replay|audit against real brokers (bundled and Kafka) on a real local
SparkSession, checked record by record with a confluent-kafka consumer and pyarrow."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kctl.errors import ExitCode
from kctl.partitioner import partition_for
from tests.spark.records import BASE_MS, MINUTE, content, produce, read_dump, read_topic, records_for
from tests.support.eventually import until, within

pytestmark = [pytest.mark.integration, pytest.mark.single_node]

def test_dump_replay_audit_round_trip(spark, kctl, cluster, source, make_topic, tmp_path):
    b = cluster.bootstrap
    original = read_topic(b, source, 3)
    out = tmp_path / "dump"
    result = kctl("-b", b, "spark", "dump", "-t", source, "--out", str(out), "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"dumped 85 record(s) from 3 partition(s) to {out}\n"  # piped: the summary alone
    manifest = json.loads((out / "_kctl_manifest.json").read_text())
    assert manifest["status"] == "complete" and (out / "_SUCCESS").exists()
    assert manifest["records"] == 85 == json.loads(result.stdout)["records"]
    counts = {p["partition"]: (p["start_offset"], p["end_offset"], p["records"]) for p in manifest["partitions"]}
    assert counts == {0: (0, 60, 60), 1: (0, 25, 25), 2: (0, 0, 0)}
    # Byte-identical keys, values, headers (order, repeats, nulls) and timestamps.
    assert read_dump(out) == {p: rows for p, rows in original.items() if rows}
    import pyarrow.parquet as pq

    for part in out.glob("topic=*/partition=*/*.parquet"):  # written in offset order, not sorted later
        offsets = pq.read_table(part, columns=["offset"]).column("offset").to_pylist()
        assert offsets == sorted(offsets)

    copy = make_topic("copy")
    manifest_file = tmp_path / "replay.json"
    result = kctl("-b", b, "spark", "replay", "--from-dump", str(out), "--to-topic", copy, "--manifest", str(manifest_file))
    assert result.exit_code == 0, result.stderr
    assert content(read_topic(b, copy, 3)) == content(original)
    replayed = json.loads(manifest_file.read_text())
    assert replayed["status"] == "complete" and replayed["records"] == 85
    assert {r["partition"]: (r["start_offset"], r["end_offset"]) for r in replayed["destination"]["ranges"]} == {0: (0, 60), 1: (0, 25)}

    result = kctl("-b", b, "spark", "audit", "-t", source, "--compare-to", copy, "-o", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] and report["records"] == 85
    assert report["comparison"]["missing"] == report["comparison"]["extra"] == 0
    by_partition = {p["partition"]: p for p in report["partitions"]}
    assert by_partition[0]["null_keys"] == sum(1 for i in range(60) if i % 7 == 3)
    assert by_partition[0]["tombstones"] == sum(1 for i in range(60) if i % 11 == 5)
    assert by_partition[0]["gaps"] == by_partition[0]["holes"] == 0


def test_jsonl_dump_replays_identically(spark, kctl, cluster, source, make_topic, tmp_path):
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for the JSON Lines format")
    b = cluster.bootstrap
    out = tmp_path / "jsonl"
    assert kctl("-b", b, "spark", "dump", "-t", source, "--out", str(out), "--format", "jsonl").exit_code == 0
    files = list(out.glob("topic=*/partition=0/*.json.gz"))
    assert files
    import gzip

    first = json.loads(gzip.decompress(files[0].read_bytes()).splitlines()[0])
    assert first["offset"] == 0 and first["timestamp_ms"] == BASE_MS and first["timestamp"] == "2026-09-21T14:13:20.000Z"
    # Record 0's value is not UTF-8: base64 only; every key is on every line.
    assert first["value"] is None and first["value_b64"] == "AP8A" and first["key_b64"] == "azA="
    assert first["headers"] == [{"key": "trace", "value_b64": "dDA="}, {"key": "trace", "value_b64": "YWdhaW4="}, {"key": "empty", "value_b64": None}]
    copy = make_topic("copy")
    result = kctl("-b", b, "spark", "replay", "--from-dump", str(out), "--to-topic", copy, "--manifest", str(tmp_path / "m.json"))
    assert result.exit_code == 0, result.stderr
    assert content(read_topic(b, copy, 3)) == content(read_topic(b, source, 3))
    assert kctl("-b", b, "spark", "audit", "--dump", str(out), "--compare-to", copy).exit_code == 0


def test_time_range_replay_with_hash_partitioning(spark, kctl, cluster, make_topic, tmp_path):
    b = cluster.bootstrap
    # gzip: the bundled broker finds records by time inside gzip batches, not zstd ones.
    source = make_topic("src")
    produce(b, source, records_for(0, 60) + records_for(1, 25), compression="gzip")
    copy = make_topic("hash", 4)
    since, until = BASE_MS + 10 * MINUTE, BASE_MS + 20 * MINUTE  # records 10..19 of each partition
    result = kctl("-b", b, "spark", "replay", "--from-topic", source, "--to-topic", copy, "--since", str(since), "--until", str(until),
                  "--partition-map", "hash", "--manifest", str(tmp_path / "m.json"))
    assert result.exit_code == 0, result.stderr
    got = read_topic(b, copy, 4)
    assert sum(len(rows) for rows in got.values()) == 20
    for partition, rows in got.items():
        for _, key, _, _, ts in rows:
            assert since <= ts < until
            if key is not None:
                assert partition == partition_for(key, 4)  # where a Java producer puts the key
    # Each source partition's order survives in every destination partition.
    for rows in got.values():
        seen: dict[str, list[int]] = {}
        for _, _, value, _, _ in rows:
            if value is not None and value.startswith(b"{"):
                src, i = json.loads(value)["id"].split("-")
                seen.setdefault(src, []).append(int(i))
        assert all(order == sorted(order) for order in seen.values())


def test_timestamps_shift_and_modulo(spark, kctl, cluster, source, make_topic, tmp_path):
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for rewriting timestamps and partitions")
    b = cluster.bootstrap
    copy = make_topic("shift", 1)
    result = kctl("-b", b, "spark", "replay", "--from-topic", source, "--to-topic", copy, "--partition-map", "modulo",
                  "--timestamps", "shift:+1d", "--manifest", str(tmp_path / "m.json"))
    assert result.exit_code == 0, result.stderr
    rows = read_topic(b, copy, 1)[0]
    original = read_topic(b, source, 3)
    # Partition 0's records, then partition 1's (one task writes them in source order).
    assert [r[1:4] for r in rows] == [r[1:4] for r in original[0] + original[1]]
    assert [r[4] for r in rows] == [r[4] + 86_400_000 for r in original[0] + original[1]]


def test_interrupted_replay_resumes_without_duplicates(spark, kctl, cluster, source, make_topic, tmp_path, monkeypatch):
    b = cluster.bootstrap
    copy = make_topic("resume")
    manifest = tmp_path / "m.json"
    monkeypatch.setenv("KCTL_SPARK_FAIL_AFTER_RECORDS", "20")  # fault injection: every task dies after 20 records
    result = kctl("-b", b, "spark", "replay", "--from-topic", source, "--to-topic", copy, "--manifest", str(manifest))
    assert result.exit_code != 0
    assert "injected failure" in result.stderr
    assert json.loads(manifest.read_text())["status"] == "partial"
    delivered = read_topic(b, copy, 3)
    assert 0 < sum(len(r) for r in delivered.values()) < 85
    monkeypatch.delenv("KCTL_SPARK_FAIL_AFTER_RECORDS")
    produce(b, source, records_for(2, 5))  # written after the replay began: not part of it
    result = kctl("-b", b, "spark", "replay", "--to-topic", copy, "--resume", "--manifest", str(manifest), "--from-topic", source)
    assert result.exit_code == ExitCode.USAGE and "plan comes from the replay manifest" in result.stderr
    result = kctl("-b", b, "spark", "replay", "--to-topic", copy, "--resume", "--manifest", str(manifest), "-o", "json")
    assert result.exit_code == 0, result.stderr
    done = json.loads(result.stdout)
    assert done["status"] == "complete" and done["skipped"] == sum(len(r) for r in delivered.values())
    original = read_topic(b, source, 3)
    original[2] = []
    assert content(read_topic(b, copy, 3)) == content(original)
    result = kctl("-b", b, "spark", "replay", "--to-topic", copy, "--resume", "--manifest", str(manifest))
    assert result.exit_code == ExitCode.INVALID and "already complete" in result.stderr


def test_dump_replay_with_window_shift_and_resume(spark, kctl, cluster, source, make_topic, tmp_path, monkeypatch):
    # A Parquet dump into the same partitions is replayed by tasks that read the dump's
    # files themselves: the window, the shifted timestamps and a resume after a failure
    # must come out as the DataFrame path's do.
    b = cluster.bootstrap
    out = tmp_path / "dump"
    assert kctl("-b", b, "spark", "dump", "-t", source, "--out", str(out)).exit_code == 0
    copy = make_topic("window")
    manifest = tmp_path / "m.json"
    since, until = BASE_MS + 10 * MINUTE, BASE_MS + 40 * MINUTE  # records 10..39 of partition 0, 10..24 of 1
    args = ["-b", b, "spark", "replay", "--from-dump", str(out), "--to-topic", copy, "--since", str(since), "--until", str(until),
            "--timestamps", "shift:-1h", "--manifest", str(manifest)]
    monkeypatch.setenv("KCTL_SPARK_FAIL_AFTER_RECORDS", "8")
    result = kctl(*args)
    assert result.exit_code != 0 and "injected failure" in result.stderr
    assert json.loads(manifest.read_text())["status"] == "partial"
    delivered = sum(len(rows) for rows in read_topic(b, copy, 3).values())
    assert 0 < delivered < 45
    monkeypatch.delenv("KCTL_SPARK_FAIL_AFTER_RECORDS")
    result = kctl("-b", b, "spark", "replay", "--to-topic", copy, "--resume", "--manifest", str(manifest), "-o", "json")
    assert result.exit_code == 0, result.stderr
    done = json.loads(result.stdout)
    assert done["status"] == "complete" and done["records"] == 45 and done["skipped"] == delivered
    original = read_topic(b, source, 3)
    expected = {p: [(k, v, h, ts - 3_600_000) for _, k, v, h, ts in rows if since <= ts < until] for p, rows in original.items()}
    assert content(read_topic(b, copy, 3)) == {p: rows for p, rows in expected.items() if rows}


def test_exactly_once_replay(spark, kctl, cluster, source, make_topic, tmp_path):
    b = cluster.bootstrap
    copy = make_topic("eos")
    result = kctl("-b", b, "spark", "replay", "--from-topic", source, "--to-topic", copy, "--exactly-once", "--manifest", str(tmp_path / "m.json"))
    assert result.exit_code == 0, result.stderr
    assert content(read_topic(b, copy, 3, "read_committed")) == content(read_topic(b, source, 3))
    # Commit markers take offsets: gaps that the audit expects, not holes.
    result = kctl("-b", b, "spark", "audit", "-t", copy, "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["records"] == 85


def test_compacted_topic_with_gaps(spark, kctl, cluster, make_topic, tmp_path):
    b = cluster.bootstrap
    if cluster.backend == "bundled":  # the test Kafka's cleaner back-off: look for work every second
        assert kctl("-b", b, "config", "alter", "broker-default", "--set", "log.cleaner.backoff.ms=1000").exit_code == 0
    topic = make_topic("compact", 1, "cleanup.policy=compact", "segment.ms=100", "min.cleanable.dirty.ratio=0.01", "delete.retention.ms=0")
    for round_ in range(3):
        produce(b, topic, [{"partition": 0, "key": f"k{i}".encode(), "value": f"v{round_}-{i}".encode(), "headers": None, "timestamp": BASE_MS + round_ * MINUTE + i} for i in range(5)])
        time.sleep(0.3)  # the point: segment.ms passes, so each round rolls a segment of its own
    rolls: list[int] = []

    def compacted() -> list[int] | None:  # the cleaner runs every second; the active segment is never cleaned
        rolls.append(len(rolls) + 1)
        produce(b, topic, [{"partition": 0, "key": b"roll", "value": b"x", "headers": None, "timestamp": BASE_MS + 10 * MINUTE + rolls[-1]}])
        offsets = [r[0] for r in read_topic(b, topic, 1)[0]]
        return offsets if offsets[-1] + 1 > len(offsets) else None

    offsets = until(compacted, timeout=60, interval=1)
    out = tmp_path / "dump"
    assert kctl("-b", b, "spark", "dump", "-t", topic, "--out", str(out)).exit_code == 0
    result = kctl("-b", b, "spark", "audit", "--dump", str(out), "-o", "json")
    assert result.exit_code == 0, result.stderr
    partition = json.loads(result.stdout)["partitions"][0]
    # The cleaner may have removed more since: the dump's own counts are what the audit checks.
    assert partition["gaps"] > 0 and partition["missing_offsets"] > 0 and partition["holes"] == 0
    assert partition["records"] == partition["expected_records"] <= len(offsets)


def test_audit_finds_duplicates_and_invalid_json(spark, kctl, cluster, make_topic, tmp_path):
    b = cluster.bootstrap
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object", "required": ["id"], "properties": {"id": {"type": "integer", "maximum": 2}}}))
    topic = make_topic("dups", 1)
    rows = [{"partition": 0, "key": b"a", "value": json.dumps({"id": i % 4}).encode(), "headers": None, "timestamp": BASE_MS + i} for i in range(6)]
    rows.append({"partition": 0, "key": b"a", "value": b"not json", "headers": None, "timestamp": BASE_MS - 5000})
    produce(b, topic, rows)
    result = kctl("-b", b, "spark", "audit", "-t", topic, "--json", "--key-path", "$.id", "--json-schema", str(schema), "-o", "json")
    assert result.exit_code == ExitCode.CRITICAL, result.stderr
    report = json.loads(result.stdout)
    assert not report["ok"]
    p = report["partitions"][0]
    assert p["duplicates"] == 2 and p["invalid_json"] == 1 and p["timestamp_regressions"] == 1
    assert p["schema_mismatches"] == 2  # "not json" and {"id": 3}
    assert any("not JSON" in problem for problem in report["problems"])
    assert any("do not match the JSON schema" in problem for problem in report["problems"])
    schema.write_text('{"$ref": "#/definitions/order"}')
    result = kctl("-b", b, "spark", "audit", "-t", topic, "--json-schema", str(schema))
    assert (result.exit_code, result.stderr) == (ExitCode.INVALID, f"error: unable to use --json-schema {schema}: not a valid JSON Schema: "
                                                 "$ref '#/definitions/order' does not resolve inside the schema\n")


def test_bad_input(spark, kctl, cluster, source, make_topic, unique_name, tmp_path):
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for refusing bad input")
    b = cluster.bootstrap
    missing = unique_name("nope")
    result = kctl("-b", b, "spark", "dump", "-t", missing, "--out", str(tmp_path / "x"))
    assert result.exit_code == ExitCode.NOT_FOUND and "does not exist" in result.stderr
    assert not (tmp_path / "x").exists()

    result = kctl("-b", b, "spark", "dump", "-t", source, "--out", "s3a://bucket/dump")
    assert result.exit_code == ExitCode.USAGE and "local or shared file system" in result.stderr

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("keep me")
    result = kctl("-b", b, "spark", "dump", "-t", source, "--out", str(foreign))
    assert result.exit_code == ExitCode.ALREADY_EXISTS and "--overwrite" in result.stderr
    result = kctl("-b", b, "spark", "dump", "-t", source, "--out", str(foreign), "--overwrite")
    assert result.exit_code == ExitCode.INVALID and "not a kctl dump" in result.stderr
    assert (foreign / "precious.txt").read_text() == "keep me"
    result = kctl("-b", b, "spark", "replay", "--from-dump", str(foreign), "--to-topic", source)
    assert result.exit_code == ExitCode.INVALID and "not a kctl dump" in result.stderr

    out = tmp_path / "dump"
    result = kctl("-b", b, "spark", "dump", "-t", source, "--out", str(out), "--engine", "jvm")
    assert result.exit_code == ExitCode.INVALID and "connector is not on Spark's classpath" in result.stderr
    assert not out.exists()
    assert kctl("-b", b, "spark", "dump", "-t", source, "--out", str(out)).exit_code == 0
    assert kctl("-b", b, "spark", "dump", "-t", source, "--out", str(out), "--overwrite").exit_code == 0
    small = make_topic("small", 1)
    result = kctl("-b", b, "spark", "replay", "--from-dump", str(out), "--to-topic", small)
    assert result.exit_code == ExitCode.INVALID and "needs 2 partitions" in result.stderr
    result = kctl("-b", b, "spark", "replay", "--from-dump", str(out), "--to-topic", missing)
    assert result.exit_code == ExitCode.NOT_FOUND
    for args in (["-t", missing], ["-t", source, "--compare-to", missing], ["--dump", str(out), "--compare-to", missing]):
        result = kctl("-b", b, "spark", "audit", *args)
        assert (result.exit_code, result.stderr) == (ExitCode.NOT_FOUND, f"error: unable to audit {missing}: topic '{missing}' does not exist\n")

    for part in out.glob("topic=*/partition=0/*.parquet"):
        part.write_bytes(b"garbage, not parquet")
    result = kctl("-b", b, "spark", "audit", "--dump", str(out))
    assert result.exit_code == ExitCode.INVALID and "corrupt" in result.stderr
    assert "Traceback" not in result.stderr
    manifest = json.loads((out / "_kctl_manifest.json").read_text())
    manifest["status"] = "partial"
    (out / "_kctl_manifest.json").write_text(json.dumps(manifest))
    result = kctl("-b", b, "spark", "replay", "--from-dump", str(out), "--to-topic", small, "--partition-map", "modulo")
    assert result.exit_code == ExitCode.INVALID and "incomplete" in result.stderr


def test_an_unreachable_cluster_is_one_line_before_spark_starts(kctl, tmp_path):
    """Every command that reads or writes a topic asks kctl's admin client first: exit 69
    at once with kctl's usual line, not the planner consumer's 30 s and librdkafka's log."""
    import time

    dump = tmp_path / "dump"
    dump.mkdir()
    for args in (["audit", "-t", "orders"], ["audit", "--dump", str(dump), "--compare-to", "orders"],
                 ["replay", "--from-topic", "orders", "--to-topic", "copy"], ["replay", "--from-dump", str(dump), "--to-topic", "copy"]):
        began = time.monotonic()
        result = kctl("-b", "127.0.0.1:1", "--timeout", "5", "spark", *args)
        assert result.exit_code == ExitCode.UNREACHABLE, (args, result.stderr)
        assert "cluster unreachable at 127.0.0.1:1" in result.stderr.splitlines()[0] and len(result.stderr.splitlines()) == 2, result.stderr
        assert time.monotonic() - began < 5, args


def test_kctl_kafka_data_source_directly(spark, cluster, source):
    """Used as spark.read.format("kctl_kafka"), with the JVM connector's option names."""
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for the data source's options")
    reader = spark.read.format("kctl_kafka").option("kafka.bootstrap.servers", cluster.bootstrap)
    frame = (reader.option("assign", json.dumps({source: [0, 1]}))
             .option("startingOffsets", json.dumps({source: {"0": 10, "1": -2}}))
             .option("endingOffsets", json.dumps({source: {"0": 50, "1": -1}}))
             .option("minPartitions", "6").load())
    assert frame.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]  # headers only when asked
    assert frame.rdd.getNumPartitions() >= 6  # big ranges are cut into several tasks
    rows = frame.orderBy("partition", "offset").select("partition", "offset").collect()
    assert [(r["partition"], r["offset"]) for r in rows] == [(0, o) for o in range(10, 50)] + [(1, o) for o in range(25)]
    with pytest.raises(Exception, match="kafka.bootstrap.servers is required"):
        spark.read.format("kctl_kafka").option("subscribe", source).load().collect()
    with pytest.raises(Exception, match="does not exist"):
        spark.read.format("kctl_kafka").option("kafka.bootstrap.servers", cluster.bootstrap).option("subscribe", source + "-missing").load().collect()


@pytest.mark.spark_processes
def test_spark_submit_runs_the_job_module(cluster, source, tmp_path, config_home):
    """spark-submit starts the JVM and picks the master; kctl.spark.submit runs inside it."""
    import os
    import subprocess
    import sys

    import kctl.spark.submit

    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for the launcher")
    spark_submit = Path(sys.executable).parent / "spark-submit"
    if not spark_submit.exists():
        pytest.skip("pyspark's spark-submit is not installed beside this interpreter")
    out = tmp_path / "dump"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run(
        [str(spark_submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false", "--driver-memory", "512m",
         kctl.spark.submit.__file__, "dump", "-t", source, "--out", str(out), "-b", cluster.bootstrap, "-o", "json"],
        capture_output=True, text=True, timeout=240, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # spark-submit merges the Python driver's stderr (kctl's notes) into its stdout.
    assert json.loads(proc.stdout.strip().splitlines()[-1])["records"] == 85
    assert json.loads((out / "_kctl_manifest.json").read_text())["status"] == "complete"


@pytest.mark.spark_processes
def test_jvm_engine_dumps_the_same_records(cluster, source, tmp_path, config_home):
    """--engine jvm: Spark's own Kafka connector reads, the same code writes. Its own
    process, since the connector must be on the classpath when the JVM starts."""
    import os
    import subprocess
    import sys

    from tests.backends.jars import JarResolutionError, spark_connector_jars

    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for the engine switch")
    try:
        jars = ",".join(str(p) for p in spark_connector_jars())
    except (JarResolutionError, OSError) as exc:
        if os.environ.get("KCTL_REQUIRE_SPARK") == "1":
            pytest.fail(f"KCTL_REQUIRE_SPARK=1 and the JVM connector could not be resolved: {exc}")
        pytest.skip(f"JVM connector: {exc}")
    out = tmp_path / "jvm"
    proc = subprocess.run(
        [sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "spark", "dump", "-t", source, "--out", str(out), "--engine", "jvm",
         "--master", "local[1]", "--spark-conf", f"spark.jars={jars}", "--spark-conf", "spark.driver.memory=512m", "-o", "json"],
        capture_output=True, text=True, timeout=240, env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")},
    )
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads(proc.stdout)
    assert manifest["engine"] == "jvm" and manifest["records"] == 85
    assert read_dump(out) == {p: rows for p, rows in read_topic(cluster.bootstrap, source, 3).items() if rows}


@pytest.mark.spark_processes
def test_retried_tasks_do_not_duplicate(cluster, source, make_topic, tmp_path, config_home):
    """On a master that retries failed tasks (local[2,3]), every task's first attempt dies
    after 20 delivered records; the retries skip what arrived and deliver the rest."""
    import os
    import subprocess
    import sys

    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for task retries")
    copy = make_topic("retry")
    env = {**os.environ, "KCTL_SPARK_FAIL_AFTER_RECORDS": "20", "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.run(
        [sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "spark", "replay", "--from-topic", source, "--to-topic", copy,
         "--master", "local[2,3]", "--spark-conf", "spark.driver.memory=512m", "--manifest", str(tmp_path / "m.json"), "-o", "json"],
        capture_output=True, text=True, timeout=240, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["records"] == 85 and report["skipped"] == 40  # two tasks retried after 20 records each
    assert content(read_topic(cluster.bootstrap, copy, 3)) == content(read_topic(cluster.bootstrap, source, 3))


@pytest.mark.spark_processes
def test_retried_dump_tasks_replace_their_files(cluster, source, tmp_path, config_home):
    """Every dump task's first attempt dies after its first range is written and renamed
    into place; the retries write the same files again: the dump is exact, no copies, no
    temporary files left."""
    import os
    import subprocess
    import sys

    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for task retries")
    out = tmp_path / "dump"
    env = {**os.environ, "KCTL_SPARK_FAIL_AFTER_RECORDS": "20"}
    proc = subprocess.run([sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "spark", "dump", "-t", source, "--out", str(out),
                           "--master", "local[2,3]", "--spark-conf", "spark.driver.memory=512m", "-o", "json"],
                          capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["records"] == 85
    assert read_dump(out) == {p: rows for p, rows in read_topic(cluster.bootstrap, source, 3).items() if rows}
    assert sorted(p.name for p in out.glob("topic=*/partition=*/*")) == ["part-00000000000000000000-0000.zstd.parquet"] * 2


def test_shuffles_are_sized_from_the_topic(spark, kctl, cluster, make_topic):
    """Spark's default of 200 shuffle partitions made an audit of a 4-partition topic run
    ~600 tasks on a 2-core cluster: kctl sizes shuffles from the topic instead (here 4
    partitions on local[2]: 4), unless --spark-conf sets them."""
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for Spark's shuffle sizing")
    b = cluster.bootstrap
    topic = make_topic("shuffle", 4)
    for partition in range(4):
        produce(b, topic, records_for(partition, 5))
    tracker = spark.sparkContext.statusTracker()

    def audit_tasks(*options: str) -> int:
        before = set(tracker.getJobIdsForGroup(None))
        assert kctl("-b", b, "spark", "audit", "-t", topic, *options).exit_code == 0
        stages = {s for job in set(tracker.getJobIdsForGroup(None)) - before for s in tracker.getJobInfo(job).stageIds}
        return sum(tracker.getStageInfo(s).numTasks for s in stages if tracker.getStageInfo(s) is not None)

    sized = audit_tasks()
    assert spark.conf.get("spark.sql.shuffle.partitions") == "4"
    assert sized <= 40, sized  # 37 on pyspark 4.x: a few jobs of 4 read and 4 shuffle tasks
    # A setting of the user's wins: each of the audit's ~4 shuffles then runs 40 tasks
    # (181 in all; 821 with Spark's default of 200, which cost this test 25 s of CI).
    assert audit_tasks("--spark-conf", "spark.sql.shuffle.partitions=40") > 3 * sized


@pytest.mark.spark_processes
def test_ctrl_c_cancels_the_job_in_one_line(cluster, make_topic, tmp_path, config_home):
    """SIGINT while Spark writes: the job is cancelled, stderr is one line saying what is
    left and how to go on (no py4j tracebacks), exit 130, the manifest says partial; the
    command run again (--overwrite) dumps everything, with a live bar on a terminal and
    one summary line when piped."""
    import os
    import signal
    import subprocess
    import sys

    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for the interrupt")
    topic = make_topic("sigint", 2)
    # Enough for the job to outlast the signal (sent within ~20 ms of its first file) and
    # for the bar, read every 0.25 s, to move (a third of the 150,000 it had, for CI time).
    RECORDS = 60_000  # noqa: N806
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 50, "compression.type": "lz4",
                         "queue.buffering.max.messages": 1_000_000})  # all of them queued at once
    for i in range(RECORDS):
        producer.produce(topic, value=b"v" * 1000, key=str(i).encode(), partition=i % 2)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    out = tmp_path / "dump"
    argv = [sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "spark", "dump", "-t", topic, "--out", str(out),
            "--master", "local[2]", "--spark-conf", "spark.driver.memory=512m"]
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # The read tasks' first files, still under their temporary names.
    within(lambda: list(out.glob("topic=*/partition=*/.part-*")) or proc.poll() is not None, timeout=120, interval=0.02)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == ExitCode.INTERRUPTED, stderr
    assert stderr == f"error: interrupted: the dump in {out} is partial (its manifest says so)\n" \
                     "hint: run the same command with --overwrite to dump again\n"
    assert json.loads((out / "_kctl_manifest.json").read_text())["status"] == "partial"
    # Again on a terminal: a live bar counts the records dumped of the planned total while
    # the job runs (Spark itself reports them only as tasks end); the summary line stays.
    # On a tenth of the records: the bar is drawn from the start, and a full dump and an
    # audit of 60 MB were a minute of CI's two cores.
    from tests.cli.test_progress import run as run_on_terminal

    small, SMALL = make_topic("sigint-bar", 2), RECORDS // 10  # noqa: N806
    for i in range(SMALL):
        producer.produce(small, value=b"v" * 1000, key=str(i).encode(), partition=i % 2)
    assert producer.flush(60) == 0
    argv = [*argv[:argv.index("-t") + 1], small, *argv[argv.index("-t") + 2:]]
    status, _, shown = run_on_terminal([*argv[3:], "--overwrite"], {**env, "TERM": "xterm"}, stderr_tty=True)
    assert status == 0, shown
    counts = {int(n.replace(",", "")) for n in re.findall(r"^dump .*?([\d,]+)/6,000 records", shown, re.M)}
    # The bar counts records of the planned total. Whether a frame catches a count between
    # 0 and the end depends on how its 0.25 s refresh falls against two tasks that can read
    # their records within one refresh (a loaded CI run drew only 0, and once not even the
    # end); the tasks' reporting is tested on its own
    # (test_units.py: test_read_tasks_report_their_progress_as_batches_pass).
    assert counts and all(0 <= n <= SMALL for n in counts), shown
    assert shown.strip().splitlines()[-1] == f"dumped 6,000 record(s) from 2 partition(s) to {out}"
    # (Piped, the summary line is all: test_dump_replay_audit_round_trip.)
    # An audit's bar counts the records it read of the topic's.
    status, _, shown = run_on_terminal([*argv[3:5], "spark", "audit", "-t", small, "--master", "local[2]"], {**env, "TERM": "xterm"}, stderr_tty=True)
    assert status == 0, shown
    assert re.search(r"^audit .*/6,000 records", shown, re.M), shown
    assert shown.strip().splitlines()[-1] == f"audit of {small}: 6,000 record(s), no problems found"


def test_audit_counts_what_an_at_least_once_copy_wrote_twice(spark, kctl, cluster, make_topic, tmp_path):
    """`record copy` without a group, run twice, writes every record twice. `spark audit`
    finds them: by content in an exact copy (the source's own alike records counted
    too), and by source position when the copy carried --source-header (the
    kctl-copy-source header), which tells records alike in the source apart."""
    b = cluster.bootstrap
    source, exact, marked = make_topic("cp-src", 2), make_topic("cp-exact", 2), make_topic("cp-marked", 2)
    # Two records alike in everything but their offset, in each partition.
    rows = [{"partition": i % 2, "key": b"same", "value": b"same", "headers": None, "timestamp": BASE_MS} for i in range(4)]
    rows += [{"partition": i % 2, "key": f"k{i}".encode(), "value": f"v{i}".encode(), "headers": None, "timestamp": BASE_MS + i}
             for i in range(20)]
    produce(b, source, rows)
    for target, flags in ((exact, ()), (marked, ("--source-header",))):
        for _ in range(2):
            run = kctl("-b", b, "record", "copy", source, target, *flags)
            assert run.exit_code == 0, run.stderr
            assert f"kctl spark audit {target} finds them" in run.stderr, run.stderr
    once = kctl("-b", b, "spark", "audit", "-t", source, "-o", "json")
    assert json.loads(once.stdout)["duplicates"] == 2  # the source's alike records
    for target, duplicates in ((exact, 26), (marked, 24)):
        twice = kctl("-b", b, "spark", "audit", "-t", target, "-o", "json")
        assert twice.exit_code == ExitCode.CRITICAL, twice.stderr
        assert json.loads(twice.stdout)["duplicates"] == duplicates, target
