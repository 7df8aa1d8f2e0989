"""kctl spark on a real Spark standalone cluster whose worker has no kctl (see
tests/spark/standalone.py): with --ship-env the jobs run on the executor and give what
the local run gives; without it, one line naming the missing module and the flag.

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
from tests.spark.standalone import event_log_options, task_executors
from tests.spark.records import content, read_dump, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.single_node]


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


def test_dump_replay_audit_on_the_cluster_equal_the_local_runs(spark, kctl, on_cluster, cluster, source, make_topic, tmp_path):
    if cluster.backend != "bundled":
        pytest.skip("the exactly-once replay covers the kafka backend on the cluster")
    b = cluster.bootstrap
    local_dump, cluster_dump = tmp_path / "local", tmp_path / "cluster"
    assert kctl("-b", b, "spark", "dump", "-t", source, "--out", str(local_dump)).exit_code == 0
    proc = on_cluster("spark", "dump", "-t", source, "--out", str(cluster_dump), "--ship-env", "-o", "json", events=tmp_path / "dump-events")
    assert proc.returncode == 0, proc.stderr
    ran_on_executors(tmp_path / "dump-events")
    assert read_dump(cluster_dump) == read_dump(local_dump)
    local_manifest, cluster_manifest = (json.loads((d / "_kctl_manifest.json").read_text()) for d in (local_dump, cluster_dump))
    assert cluster_manifest["partitions"] == local_manifest["partitions"] and cluster_manifest["status"] == "complete"

    local_copy, cluster_copy = make_topic("local-copy"), make_topic("cluster-copy")
    assert kctl("-b", b, "spark", "replay", "--from-dump", str(local_dump), "--to-topic", local_copy,
                "--manifest", str(tmp_path / "local.json")).exit_code == 0
    proc = on_cluster("spark", "replay", "--from-dump", str(cluster_dump), "--to-topic", cluster_copy, "--ship-env",
                      "--manifest", str(tmp_path / "cluster.json"), events=tmp_path / "replay-events")
    assert proc.returncode == 0, proc.stderr
    ran_on_executors(tmp_path / "replay-events")
    assert content(read_topic(b, cluster_copy, 3)) == content(read_topic(b, local_copy, 3)) == content(read_topic(b, source, 3))

    # audit --compare-to with a start-up-only setting (one session for both inputs).
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    local = kctl("-b", b, "spark", "audit", "-t", source, "--compare-to", cluster_copy, "-o", "json")
    assert local.exit_code == 0, local.stderr
    stages = {s for job in set(tracker.getJobIdsForGroup(None)) - before for s in tracker.getJobInfo(job).stageIds}
    local_tasks = sum(tracker.getStageInfo(s).numTasks for s in stages if tracker.getStageInfo(s) is not None)
    proc = on_cluster("spark", "audit", "-t", source, "--compare-to", cluster_copy, "--ship-env",
                      "--spark-conf", "spark.executor.memory=1g", "-o", "json", events=tmp_path / "audit-events")
    assert proc.returncode == 0, proc.stderr
    cluster_tasks = ran_on_executors(tmp_path / "audit-events")
    assert json.loads(proc.stdout) == json.loads(local.stdout)
    # Shuffles sized from the topic on the cluster too (Spark's default 200 made it ~600).
    assert cluster_tasks <= 2 * local_tasks, (cluster_tasks, local_tasks)


def test_exactly_once_replay_on_the_cluster(on_cluster, cluster, source, make_topic, tmp_path):
    if cluster.backend != "kafka":
        pytest.skip("exactly-once on the cluster is tested against Apache Kafka")
    copy = make_topic("eos-cluster")
    proc = on_cluster("spark", "replay", "--from-topic", source, "--to-topic", copy, "--exactly-once", "--ship-env",
                      "--manifest", str(tmp_path / "m.json"), "-o", "json", events=tmp_path / "events")
    assert proc.returncode == 0, proc.stderr
    ran_on_executors(tmp_path / "events")
    assert json.loads(proc.stdout)["records"] == 85
    assert content(read_topic(cluster.bootstrap, copy, 3, "read_committed")) == content(read_topic(cluster.bootstrap, source, 3))
