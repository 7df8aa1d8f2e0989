"""Fixtures for kctl spark (the local SparkSession, `spark`, is in tests/conftest.py:
the --help examples use it too)."""

from __future__ import annotations

import pytest

from tests.spark.records import produce, records_for


@pytest.fixture(autouse=True)
def _single_node(request):
    """Spark jobs need one cluster to read from: the single-node backends cover them."""
    if "cluster" in request.fixturenames and request.getfixturevalue("cluster").nodes > 1:
        pytest.skip("kctl spark is tested on single-node backends")


@pytest.fixture
def make_topic(kctl, cluster, unique_name):
    def make(prefix: str = "sp", partitions: int = 3, *configs: str) -> str:
        name = unique_name(prefix)
        args = ["-b", cluster.bootstrap, "topic", "create", name, "-p", str(partitions), "-c", "retention.ms=-1"]
        for config in configs:
            args += ["-c", config]
        result = kctl(*args)
        assert result.exit_code == 0, result.stderr
        return name

    return make


@pytest.fixture
def source(cluster, make_topic):
    """A 3-partition topic of 60/25/0 records, written with zstd-compressed batches."""
    topic = make_topic("src")
    produce(cluster.bootstrap, topic, records_for(0, 60) + records_for(1, 25), compression="zstd")
    return topic
