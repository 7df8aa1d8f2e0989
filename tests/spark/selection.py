"""Which Spark the tests start beyond the local SparkSession they share in-process, as
KCTL_TEST_BROKERS chooses brokers: KCTL_TEST_SPARK is a comma list of

  processes   the tests that run `kctl spark` (or spark-submit) in a process of its own,
              each with a driver JVM of its own: Ctrl-C, retried tasks, the JVM engine,
              spark-submit, the class archive, README's Spark block
  standalone  a Spark standalone master and worker: jobs on a cluster, --ship-env, and
              the examples that name one (implies `processes`)

Every job's logic runs in the default run on the in-process session; these add ~25 driver
JVMs and a cluster's daemons, which were half of the default run's CPU on two cores. CI
selects both; a run that leaves some out says at its end how many tests that skipped and
how to run them (tests/backends/plugin.py)."""

from __future__ import annotations

import os

import pytest

KINDS = ("processes", "standalone")
VARIABLE = "KCTL_TEST_SPARK"
WHAT = {
    "processes": "runs kctl spark in a process of its own (a driver JVM)",
    "standalone": "needs a Spark standalone cluster",
}


def selected() -> set[str]:
    names = {name.strip() for name in os.environ.get(VARIABLE, "").split(",") if name.strip()}
    unknown = names - set(KINDS)
    if unknown:
        raise pytest.UsageError(f"{VARIABLE}: unknown name(s) {sorted(unknown)}; choose from {list(KINDS)}")
    if "standalone" in names:
        names.add("processes")  # a cluster's jobs run in processes of their own
    return names


def runs(kind: str) -> bool:
    return kind in selected()


def reason(*kinds: str) -> str:
    """A skip reason naming what the test needs and the setting that runs it (the run's
    closing summary counts skips by it)."""
    return f"{' and '.join(WHAT[kind] for kind in kinds)}: {VARIABLE}={','.join(kinds)} runs it"
