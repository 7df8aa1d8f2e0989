"""kctl's tables of Kafka's metadata versions and of each release's feature levels
(kctl/admin/cluster/features.py) match the Kafka jars the tests run: a newer Kafka with a new
metadata version or release makes this fail until the tables are updated."""

from __future__ import annotations

from pathlib import Path

import pytest

from kctl.admin.cluster.features import METADATA_VERSIONS, RELEASES

SOURCE = Path(__file__).resolve().parent.parent / "backends" / "FeatureLevels.java"


@pytest.fixture(scope="module")
def kafka_levels() -> list[str]:
    from tests.backends.jars import run_java_source

    return run_java_source(SOURCE).splitlines()


def test_metadata_version_names(kafka_levels):
    theirs = {int(line.split()[1]): line.split()[2] for line in kafka_levels if line.startswith("mv ")}
    assert dict(METADATA_VERSIONS) == theirs


def test_release_feature_levels(kafka_levels):
    theirs = {}
    for line in kafka_levels:
        if line.startswith("release "):
            _, release, *levels = line.split()
            theirs[release] = {name: int(level) for name, level in (item.split("=") for item in levels)}
    assert {release: dict(levels) for release, levels in RELEASES.items()} == theirs
