"""Fixtures for kctl spark: one small local SparkSession for the whole test session.

The CLI reuses the active session (as it would under spark-submit), so each test pays
for its jobs, not for a JVM start. Without pyspark or Java the tests skip, unless
KCTL_REQUIRE_SPARK=1 (as CI sets) makes that a failure.
"""

from __future__ import annotations

import os
import shutil

import pytest


def _required() -> bool:
    return os.environ.get("KCTL_REQUIRE_SPARK") == "1"


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    missing = None
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        missing = f"{exc.name} is not installed (pip install -e '.[spark]')"
    if missing is None and shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        missing = "no Java runtime"
    if missing:
        if _required():
            pytest.fail(f"KCTL_REQUIRE_SPARK=1 and {missing}", pytrace=False)
        pytest.skip(missing)
    from kctl.spark.session import spark_session

    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("spark-state"))
    try:
        # No spark.sql.shuffle.partitions: kctl sizes shuffles itself (size_shuffles).
        session = spark_session("local[2]", {"spark.default.parallelism": "2", "spark.driver.memory": "1g"})
    finally:
        if saved is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = saved
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _single_node(request):
    """Spark jobs need one cluster to read from: the single-node backends cover them."""
    if "cluster" in request.fixturenames and request.getfixturevalue("cluster").nodes > 1:
        pytest.skip("kctl spark is tested on single-node backends")
