"""kctl spark on a real Spark standalone cluster whose worker has no kctl (see
tests/spark/standalone.py): with --ship-env the jobs run on the executor and give what
the topic holds, as the local runs do; without it, one line naming the missing module
and the flag.

Each command runs in its own process, as on a user's machine (the in-process tests
share one local SparkSession, which a cluster job must not reuse).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kctl.errors import ExitCode
from tests.spark.jvm import EXECUTOR_CONF
from tests.spark.records import content, read_dump, read_topic
from tests.spark.standalone import event_log_options, task_executors

pytestmark = [pytest.mark.integration, pytest.mark.single_node, pytest.mark.spark_standalone]


@pytest.fixture
def on_cluster(spark_standalone, cluster, tmp_path):
    """on_cluster(*args, events=DIR) -> `kctl -b BOOTSTRAP ARGS --master spark://...` in its
    own process, with Spark's event log written to DIR."""
    master = spark_standalone().url

    def run(*args: str, events=None) -> subprocess.CompletedProcess:
        # The session's XDG_CACHE_HOME (tests/conftest.py): the environment is packed once.
        env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
        # The in-process tests' local session sets PYSPARK_PYTHON in this process; a
        # user's shell has none, so executors would run the worker's own python3.
        env.pop("PYSPARK_PYTHON", None)
        argv = [sys.executable, "-m", "kctl", "-b", cluster.bootstrap, *args, "--master", master,
                "--spark-conf", "spark.driver.memory=512m", "--spark-conf", EXECUTOR_CONF, *(event_log_options(events) if events else [])]
        return subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)

    return run


def ran_on_executors(events) -> int:
    executors = task_executors(events)
    assert executors and "driver" not in executors, executors
    return len(executors)


def test_without_ship_env_a_missing_module_is_one_line(on_cluster, cluster, source, tmp_path):
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for the executors' environment")
    out = tmp_path / "dump"
    proc = on_cluster("spark", "dump", "-t", source, "--out", str(out), "-q")
    assert proc.returncode == ExitCode.CONFIG, proc.stderr
    line, hint = proc.stderr.splitlines()
    assert line in {f"error: unable to dump {source}: the executors' Python has no module named '{module}' "
                    "(--ship-env ships this environment to them)" for module in ("pyarrow", "kctl")}, proc.stderr
    assert hint.startswith("hint: or install kctl[spark] on every worker")
    assert json.loads((out / "_kctl_manifest.json").read_text())["status"] == "partial"


def test_dump_replay_audit_on_the_cluster(on_cluster, cluster, source, make_topic, tmp_path):
    """Each job on the executors gives what the topic holds: the same reference as the
    local runs' tests (tests/spark/test_jobs.py), without a local Spark beside the
    cluster's in this process."""
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for the executors (Apache Kafka's side: tests/spark/test_jobs.py)")
    b = cluster.bootstrap
    written = read_topic(b, source, 3)
    dump = tmp_path / "cluster"
    proc = on_cluster("spark", "dump", "-t", source, "--out", str(dump), "--ship-env", "-o", "json", events=tmp_path / "dump-events")
    assert proc.returncode == 0, proc.stderr
    ran_on_executors(tmp_path / "dump-events")
    assert read_dump(dump) == {p: rows for p, rows in written.items() if rows}
    manifest = json.loads((dump / "_kctl_manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["records"] == 85
    counts = {p["partition"]: (p["start_offset"], p["end_offset"], p["records"]) for p in manifest["partitions"]}
    assert counts == {0: (0, 60, 60), 1: (0, 25, 25), 2: (0, 0, 0)}

    # Exactly-once on the executors: their transactional producers, from the shipped
    # environment (the local exactly-once replay: tests/spark/test_jobs.py, on both backends).
    copy = make_topic("cluster-copy")
    proc = on_cluster("spark", "replay", "--from-dump", str(dump), "--to-topic", copy, "--ship-env", "--exactly-once",
                      "--manifest", str(tmp_path / "cluster.json"), "-o", "json", events=tmp_path / "replay-events")
    assert proc.returncode == 0, proc.stderr
    ran_on_executors(tmp_path / "replay-events")
    assert json.loads(proc.stdout)["records"] == 85
    assert content(read_topic(b, copy, 3, "read_committed")) == content(written)

    # audit --compare-to with a start-up-only setting (one session for both inputs).
    proc = on_cluster("spark", "audit", "-t", source, "--compare-to", copy, "--ship-env",
                      "--spark-conf", "spark.executor.memory=1g", "-o", "json", events=tmp_path / "audit-events")
    assert proc.returncode == 0, proc.stderr
    tasks = ran_on_executors(tmp_path / "audit-events")
    report = json.loads(proc.stdout)
    assert (report["records"], report["problems"]) == (85, [])
    assert {k: report["comparison"][k] for k in ("records", "other_records", "missing", "extra")} == \
        {"records": 85, "other_records": 85, "missing": 0, "extra": 0}
    # Shuffles sized from the topic on the cluster too: ~100 tasks here, ~600 with
    # Spark's default of 200 shuffle partitions.
    assert tasks < 200, tasks


def test_sql_on_the_cluster(on_cluster, cluster, source, make_topic, tmp_path):
    """kctl spark sql on the executors: a two-topic join with a time window gives what a
    plain Python scan gives, the window pushed down to the executors' reads."""
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for the executors")
    from tests.spark.records import BASE_MS, MINUTE, produce

    customers = make_topic("customers", 1)
    produce(cluster.bootstrap, customers, [{"partition": 0, "key": f"k{i}".encode(), "value": f"customer {i}".encode(), "headers": None,
                                            "timestamp": BASE_MS} for i in (1, 2)])
    low = BASE_MS + 10 * MINUTE
    records = [(p, *r) for p, rows in read_topic(cluster.bootstrap, source, 3).items() for r in rows]
    expected = {}
    for partition, _offset, key, _value, _headers, ms in records:
        if ms >= low and key in (b"k1", b"k2"):
            expected[partition] = expected.get(partition, 0) + 1
    query = (f"SELECT s.partition, count(*) AS n FROM `{source}` s JOIN `{customers}` c ON s.key = c.key "
             f"WHERE s.timestamp >= timestamp_millis({low}) GROUP BY s.partition ORDER BY s.partition")
    proc = on_cluster("spark", "sql", query, "--ship-env", "-o", "json", events=tmp_path / "sql-events")
    assert proc.returncode == 0, proc.stderr
    ran_on_executors(tmp_path / "sql-events")
    assert json.loads(proc.stdout) == [{"partition": p, "n": n} for p, n in sorted(expected.items())] and expected
    # The read tasks run on this machine's worker, so their counts reach the driver: the
    # window's 65 of the source's 85 records, and the 2 customers.
    assert proc.stderr.splitlines()[-1] == f"{len(expected)} row(s); read 67 of 87 record(s) in 2 topic scan(s)"
