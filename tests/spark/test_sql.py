"""kctl spark sql against real brokers on the local SparkSession: results equal a plain
Python scan of the same records (read back with a confluent-kafka consumer); push-down is
proven by the records the read tasks counted; bad input is one line and its exit status.
(Decoded Avro in a WHERE: tests/spark/test_decode.py; on a standalone cluster:
tests/spark/test_cluster.py.)"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from confluent_kafka import Producer

from kctl.errors import ExitCode
from tests.spark.records import BASE_MS, MINUTE, produce, read_topic, records_for
from tests.support.eventually import within

pytestmark = [pytest.mark.integration, pytest.mark.single_node]


def one_backend(cluster) -> None:
    """The query layer is the same whatever the broker: kctl_kafka's reads against Apache
    Kafka are covered by test_filters_and_aggregates_equal_a_python_scan (and tests/spark)."""
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for this part of kctl spark sql")


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def _read(stderr: str) -> tuple[int, int]:
    """(records read, records in the topics) from the summary line."""
    found = re.search(r"read ([\d,]+) of ([\d,]+) record\(s\)", stderr)
    assert found, stderr
    return int(found.group(1).replace(",", "")), int(found.group(2).replace(",", ""))


def test_filters_and_aggregates_equal_a_python_scan(spark, kctl, cluster, source):
    b = cluster.bootstrap
    records = [(p, *r) for p, rows in read_topic(b, source, 3).items() for r in rows]  # (partition, offset, key, value, headers, ms)

    def sql(query: str, *extra: str):
        result = kctl("-b", b, "spark", "sql", query, "-o", "json", *extra)
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout), result.stderr

    # A filter on a value's text and the key, inside a time window: only the window is read.
    low, high = BASE_MS + 10 * MINUTE, BASE_MS + 20 * MINUTE
    rows, stderr = sql(f"SELECT partition, offset, CAST(value AS STRING) AS v FROM `{source}` "
                       f"WHERE timestamp >= '{_iso(low)}' AND timestamp < '{_iso(high)}' AND key = CAST('k1' AS BINARY) "
                       "ORDER BY partition, offset")
    expected = [{"partition": p, "offset": o, "v": v.decode() if v is not None else None}
                for p, o, k, v, _h, ms in sorted(records) if low <= ms < high and k == b"k1"]
    assert rows == expected and expected
    # 10 records a partition in those 10 minutes (partition 2 is empty), of 85.
    assert _read(stderr) == (20, 85)
    assert stderr.splitlines()[-1] == f"{len(expected)} row(s); read 20 of 85 record(s) in 1 topic scan(s)"

    # An aggregate over everything: null keys grouped too.
    rows, stderr = sql(f"SELECT CAST(key AS STRING) AS k, count(*) AS n, max(offset) AS last FROM `{source}` GROUP BY k ORDER BY k NULLS FIRST")
    counts = Counter(k.decode() if k is not None else None for _p, _o, k, *_ in records)
    lasts = {}
    for _p, o, k, *_ in records:
        key = k.decode() if k is not None else None
        lasts[key] = max(lasts.get(key, -1), o)
    assert rows == [{"k": k, "n": counts[k], "last": lasts[k]} for k in sorted(counts, key=lambda k: (k is not None, k or ""))]
    assert _read(stderr) == (85, 85)

    # Partition and offset bounds, and BETWEEN on time, cut the ranges the same way.
    rows, stderr = sql(f"SELECT count(*) AS n FROM `{source}` WHERE partition = 1 AND offset >= 20")
    assert rows == [{"n": 5}] and _read(stderr) == (5, 85)
    rows, stderr = sql(f"SELECT count(*) AS n FROM `{source}` WHERE timestamp BETWEEN '{_iso(BASE_MS + 50 * MINUTE)}' AND '{_iso(BASE_MS + 55 * MINUTE)}'")
    assert rows == [{"n": 6}] and _read(stderr) == (6, 85)
    # now() - INTERVAL is folded before it is pushed: the records are from 2026-09, so none.
    rows, stderr = sql(f"SELECT count(*) AS n FROM `{source}` WHERE timestamp >= now() - INTERVAL 1 HOUR")
    assert rows == [{"n": 0}] and _read(stderr) == (0, 85)
    # An OR is not pushed (Spark hands a source conjuncts only): a full read, the same answer.
    rows, stderr = sql(f"SELECT count(*) AS n FROM `{source}` WHERE partition = 1 OR offset < 2")
    assert rows == [{"n": 25 + 2}] and _read(stderr) == (85, 85)
    # --from/--to bound a topic from the command line, and the query narrows it further.
    rows, stderr = sql(f"SELECT min(offset) AS first, max(offset) AS last FROM `{source}` WHERE partition = 0 AND offset < 40",
                       "--from", f"{source}=@{BASE_MS + 30 * MINUTE}")
    assert rows == [{"first": 30, "last": 39}] and _read(stderr) == (10, 85)

    # --explain: the ranges, before reading anything.
    result = kctl("-b", b, "spark", "sql", f"SELECT * FROM `{source}` WHERE timestamp >= '{_iso(low)}' AND timestamp < '{_iso(high)}'", "--explain", "-o", "json")
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert (plan["records"], plan["available"]) == (20, 85)
    assert {p["partition"]: (p["start_offset"], p["end_offset"]) for p in plan["partitions"]} == {0: (10, 20), 1: (10, 20), 2: (0, 0)}
    assert plan["partitions"][0]["pushed"] == f"timestamp >= {_iso(low)[:-5]}Z AND timestamp < {_iso(high)[:-5]}Z"

    # A table on a terminal-less stdout: binary as text when it is UTF-8.
    result = kctl("-b", b, "spark", "sql", f"SELECT key, offset FROM `{source}` WHERE partition = 0 AND offset < 2 ORDER BY offset")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split() == ["key", "offset", "k0", "0", "k1", "1"]


def test_joins_unions_and_dumps(spark, kctl, cluster, source, make_topic, tmp_path):
    one_backend(cluster)
    b = cluster.bootstrap
    payments = make_topic("pay", 2)
    produce(b, payments, [{**r, "partition": r["partition"] % 2} for r in records_for(0, 9) + records_for(1, 4)])
    orders = [r for rows in read_topic(b, source, 3).values() for r in rows]
    paid = [r for rows in read_topic(b, payments, 2).values() for r in rows]
    paid_keys = {r[1] for r in paid if r[1] is not None}

    def count(query: str) -> int:
        result = kctl("-b", b, "spark", "sql", query, "-o", "json")
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)[0]["n"]

    # Keys in orders without a matching payment (null keys match nothing).
    assert count(f"SELECT count(*) AS n FROM `{source}` o LEFT ANTI JOIN `{payments}` p ON o.key = p.key") == \
        sum(1 for r in orders if r[1] not in paid_keys)
    assert count(f"SELECT count(*) AS n FROM `{source}` o JOIN `{payments}` p ON o.key = p.key") == \
        sum(1 for o in orders for p in paid if o[1] is not None and o[1] == p[1])
    assert count(f"SELECT count(*) AS n FROM (SELECT key FROM `{source}` UNION ALL SELECT key FROM `{payments}`)") == len(orders) + len(paid)

    # A dump is a table too: dump.`DIR`, joined with the topic it came from.
    out = tmp_path / "orders"
    assert kctl("-b", b, "spark", "dump", "-t", source, "--out", str(out)).exit_code == 0
    assert count(f"SELECT count(*) AS n FROM dump.`{out}` d JOIN `{source}` t ON d.partition = t.partition AND d.offset = t.offset "
                 "AND d.value <=> t.value AND d.key <=> t.key") == 85
    # A query of dumps alone needs no cluster; one naming a topic says the cluster is unreachable.
    result = kctl("-b", "127.0.0.1:9", "spark", "sql", f"SELECT count(*) AS n FROM dump.`{out}`", "-o", "json")
    assert (result.exit_code, json.loads(result.stdout or "null")) == (0, [{"n": 85}]), result.stderr
    result = kctl("-b", "127.0.0.1:9", "spark", "sql", f"SELECT count(*) AS n FROM dump.`{out}` JOIN `{source}`")
    assert result.exit_code == ExitCode.UNREACHABLE and len(result.stderr.splitlines()) <= 2, result.stderr
    assert result.stderr.startswith("error: unable to run the query: "), result.stderr
    # A relative name is a directory under the working directory.
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert count("SELECT count(*) AS n FROM dump.orders WHERE partition = 1") == 25
    finally:
        os.chdir(cwd)


def test_json_values_become_columns(spark, kctl, cluster, source):
    one_backend(cluster)
    b = cluster.bootstrap
    records = [(p, *r) for p, rows in read_topic(b, source, 3).items() for r in rows]
    expected = sorted(json.loads(v)["n"] for _p, _o, _k, v, _h, _ms in records if v is not None and v.startswith(b"{") and json.loads(v)["n"] > 40)
    query = f"SELECT value_decoded.n AS n FROM `{source}` WHERE value_decoded.n > 40 ORDER BY n"
    result = kctl("-b", b, "spark", "sql", query, "--value-format", "json", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert [r["n"] for r in json.loads(result.stdout)] == expected
    assert f"{source}: value_decoded typed from" in result.stderr and "struct<id:string,n:bigint>" in result.stderr
    result = kctl("-b", b, "spark", "sql", query, "--value-format", "json", "--schema", "id STRING, n INT", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert [r["n"] for r in json.loads(result.stdout)] == expected
    assert "typed from" not in result.stderr


def test_out_writes_files_and_a_manifest(spark, kctl, cluster, source, tmp_path):
    one_backend(cluster)
    b = cluster.bootstrap
    query = f"SELECT partition, offset, CAST(key AS STRING) AS k FROM `{source}` WHERE partition = 0 AND offset < 30"
    out = tmp_path / "result"
    result = kctl("-b", b, "spark", "sql", query, "--out", str(out))
    assert result.exit_code == 0, result.stderr
    manifest = json.loads((out / "_kctl_sql.json").read_text())
    assert (manifest["status"], manifest["rows"], manifest["query"]) == ("complete", 30, query)
    assert (out / "_SUCCESS").exists()
    import pyarrow.dataset as ds

    assert sorted(r["offset"] for r in ds.dataset(str(out), format="parquet").to_table().to_pylist()) == list(range(30))
    # Not over an earlier result without --overwrite; CSV with a header row.
    result = kctl("-b", b, "spark", "sql", query, "--out", str(out), "--format", "csv")
    assert result.exit_code == ExitCode.ALREADY_EXISTS, result.stderr
    result = kctl("-b", b, "spark", "sql", query, "--out", str(out), "--format", "csv", "--overwrite")
    assert result.exit_code == 0, result.stderr
    lines = [line for part in sorted(out.glob("part-*.csv")) for line in part.read_text().splitlines()]
    assert sorted(line for line in lines if line != "partition,offset,k")[:2] == ["0,0,k0", "0,1,k1"]
    assert sum(1 for line in lines if line != "partition,offset,k") == 30
    # Never over a directory kctl did not write.
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "keep.txt").write_text("mine")
    result = kctl("-b", b, "spark", "sql", query, "--out", str(stranger), "--overwrite")
    assert result.exit_code == ExitCode.INVALID, result.stderr
    assert (stranger / "keep.txt").read_text() == "mine"


def test_bad_input(spark, kctl, cluster, source, unique_name, tmp_path):
    one_backend(cluster)
    b = cluster.bootstrap

    def fails(status, line, *args):
        result = kctl("-b", b, "spark", "sql", *args)
        assert (result.exit_code, result.stderr.splitlines()[0]) == (status, f"error: {line}"), result.stderr
        assert "Traceback" not in result.stderr
        return result

    fails(ExitCode.USAGE, "unable to run the query: Syntax error at or near 'SELEC'. (line 1, column 1)", "SELEC 1")
    result = kctl("-b", b, "spark", "sql", f"SELECT key\n FROM `{source}` WHERE nope = 1")
    column = len(f" FROM `{source}` WHERE ") + 1
    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert re.fullmatch(r"error: unable to run the query: A column, variable, or function parameter with name `nope` cannot be resolved\. "
                        rf"Did you mean one of the following\? \[.*\]\. \(line 2, column {column}\)\n", result.stderr), result.stderr
    missing = unique_name("missing")
    fails(ExitCode.NOT_FOUND, f"unable to run the query: topic '{missing}' does not exist (line 1, column 15)", f"SELECT * FROM `{missing}`")
    fails(ExitCode.NOT_FOUND, f"unable to run the query: no dump directory {tmp_path / 'nodump'} (line 1, column 22)",
          f"SELECT count(*) FROM dump.`{tmp_path / 'nodump'}`")
    result = fails(ExitCode.USAGE, "unable to run the query: kctl spark sql only reads (SELECT, WITH, VALUES, TABLE, FROM ... |>), "
                   "and this statement does more (InsertIntoStatement)", f"INSERT INTO `{source}` SELECT * FROM `{source}`")
    assert result.stderr.splitlines()[1] == "hint: kctl spark replay writes records to a topic; --out writes the query's result to files"
    fails(ExitCode.USAGE, "unable to run the query: kctl spark sql only reads (SELECT, WITH, VALUES, TABLE, FROM ... |>), "
          "and this statement does more (SetCommand)", "SET spark.sql.ansi.enabled=false")
    # Two topics differing only in case (in a subquery too): Spark would read one for both.
    fails(ExitCode.USAGE, f"unable to run the query: it names {source.upper()} and {source}, which Spark cannot tell apart (its table names ignore case)",
          f"SELECT * FROM `{source}` WHERE key IN (SELECT key FROM `{source.upper()}`)")
    result = fails(ExitCode.ABORTED, "unable to run the query: it would read 85 records from topics, more than --max-records 50",
                   f"SELECT count(*) FROM `{source}`", "--max-records", "50")
    # Within the bound once the query narrows it.
    result = kctl("-b", b, "spark", "sql", f"SELECT count(*) AS n FROM `{source}` WHERE partition = 1", "--max-records", "50", "-o", "json")
    assert (result.exit_code, json.loads(result.stdout)) == (0, [{"n": 25}]), result.stderr
    fails(ExitCode.USAGE, "unable to run the query: --limit bounds the rows printed, and --out writes them all (put a LIMIT in the query)",
          f"SELECT * FROM `{source}`", "--limit", "3", "--out", str(tmp_path / "o"))
    fails(ExitCode.USAGE, "unable to run the query: --schema types JSON values (--value-format json)", "SELECT 1", "--schema", "a INT")
    assert kctl("-b", b, "spark", "sql", "SELECT 1", "--value-format", "json", "--schema", "a INT,, b").exit_code == ExitCode.USAGE
    fails(ExitCode.USAGE, "unable to run the query: it is empty", " ")
    # --limit: what is printed.
    result = kctl("-b", b, "spark", "sql", f"SELECT offset FROM `{source}` WHERE partition = 0 ORDER BY offset", "--limit", "3", "-o", "json")
    assert [r["offset"] for r in json.loads(result.stdout)] == [0, 1, 2], result.stderr


@pytest.mark.spark_processes
def test_ctrl_c_leaves_no_result_claiming_to_be_complete(cluster, make_topic, tmp_path, config_home):
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for the interrupt")
    topic = make_topic("sqlint", 2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 50, "compression.type": "lz4"})
    for i in range(20_000):
        producer.produce(topic, value=b"v" * 1000, key=str(i).encode(), partition=i % 2)
        if i % 5_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    out = tmp_path / "result"
    # Hashing each value repeated 100 times (2 GB in all) keeps the job busy for seconds
    # after it starts writing, and the live bar below drawing.
    query = f"SELECT key, sha2(repeat(CAST(value AS STRING), 100), 512) AS h FROM `{topic}`"
    argv = [sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "spark", "sql", query, "--out", str(out),
            "--master", "local[2]", "--spark-conf", "spark.driver.memory=512m"]
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    within(lambda: (out / "_temporary").exists() or proc.poll() is not None, timeout=120, interval=0.02)  # Spark's writers have started
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == ExitCode.INTERRUPTED, stderr
    assert stderr == f"error: interrupted: the result in {out} is partial (its _kctl_sql.json says so)\n" \
                     "hint: run the same command with --overwrite\n"
    assert json.loads((out / "_kctl_sql.json").read_text())["status"] == "partial"
    assert not (out / "_SUCCESS").exists()
    # Again on a terminal: a live bar of the records read of the planned total and the
    # partitions read to their end, then the summary line.
    from tests.cli.test_progress import run as run_on_terminal

    status, _, shown = run_on_terminal([*argv[3:], "--overwrite"], {**env, "TERM": "xterm"}, stderr_tty=True)
    assert status == 0, shown
    assert re.search(r"^sql .*/20,000 records.* [0-2]/2 partitions", shown, re.M), shown
    assert shown.strip().splitlines()[-1] == f"20,000 row(s) to {out}; read 20,000 of 20,000 record(s) in 1 topic scan(s)"
    assert json.loads((out / "_kctl_sql.json").read_text())["status"] == "complete" and (out / "_SUCCESS").exists()
