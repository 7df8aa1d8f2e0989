"""Fixtures for kctl spark (the local SparkSession, `spark`, is in tests/conftest.py:
the --help examples use it too)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _single_node(request):
    """Spark jobs need one cluster to read from: the single-node backends cover them."""
    if "cluster" in request.fixturenames and request.getfixturevalue("cluster").nodes > 1:
        pytest.skip("kctl spark is tested on single-node backends")
