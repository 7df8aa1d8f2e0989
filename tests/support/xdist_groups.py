"""How README's test command (`pytest -n 3`) splits the suite between pytest-xdist's
workers: much of a test's time is spent waiting on brokers and JVMs, so on two cores two
workers left a quarter of the machine idle and three keep it ~80% busy, provided each
expensive thing still starts once.

Each test belongs to a group that runs whole on one worker: the tests of one Kafka
cluster (`kafka`, `kafka3`, `kafka39`) or of one kind of Spark (`spark`,
`spark-cluster`), so only that worker starts those JVMs (and stops a Kafka cluster's when
its group is done: tests/backends/plugin.py); a test of tests/spark with no in-process
session is a group of its own; any other test goes with the rest of its module, whose
module fixtures then start once. The long groups are handed out first, longest first,
and the many small ones fill in around them (a long group handed out last would end the
run alone).

The group is worked out on the workers, which have the test items (fixtures and
parameters), and reaches the controller's scheduler in a file: pytest 9 no longer lets
a plugin rename a node id, which is how xdist's own `--dist loadgroup` passes it on.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pytest

# Seconds per group in a full run with three workers (2026-11-27), for the order only
# (the default run leaves Spark's standalone cluster and processes out: shorter groups).
LONG_GROUPS = (
    "kafka3",  # ~390 s: tests on the three-node Apache Kafka cluster
    # ~390 s: tests of the in-process SparkSession, and the spark --help examples, which
    # use the same session (a second one on another worker was ~30 s of CPU)
    "spark",
    "spark-cluster",  # ~320 s: the Spark standalone cluster's tests and README's blocks
    "mirror",  # ~130 s: tests/mirror, MirrorMaker 2 between bundled brokers and from a Kafka node
    "kafka",  # ~100 s: tests on the single Apache Kafka node, and on the secured one
    "kafka39",  # ~90 s: tests on the Apache Kafka 3.9 node
    # ~90 s: issue 57's dynamic-quorum cluster (brokers stopped and drained) and the
    # tiered storage node
    "tests/cli/test_kafka4_operations.py",
    "tests/cli/test_balance.py",  # ~30 s: four Kafka brokers in two racks (cluster balance)
    "connect-help",  # ~60 s: the `kctl connect` --help examples, on one Connect worker
    "mirror-help",  # ~50 s: the `kctl mirror` --help examples, on one MirrorMaker 2
    "connect",  # ~40 s: tests/connect on the bundled broker, one Connect worker at a time
    "secured-bundled",  # ~20 s: tests on the secured bundled broker (SASL, ACLs)
    # ~180 s: the other --help examples, one world and one registry (collected among the
    # last, it ended runs alone)
    "tests/test_help_examples.py",
)


def group_of(item: pytest.Item) -> str:
    """The group `item` runs with (see above)."""
    params = item.callspec.params if hasattr(item, "callspec") else {}
    module = item.path.relative_to(item.config.rootpath).as_posix()
    example = params.get("path") if module == "tests/test_help_examples.py" else None
    if module in ("tests/spark/test_cluster.py", "tests/test_readme.py"):
        return "spark-cluster"
    if example and example[:1] == ("spark",):
        return "spark"
    if "spark" in item.fixturenames:
        return "spark"
    if module.startswith("tests/spark/"):
        # No in-process session: a `kctl spark` process of its own (tens of seconds) or
        # none, on whichever worker is free.
        return item.nodeid
    if example is not None:
        from tests.test_help_examples import THREE_BROKERS

        if example in THREE_BROKERS:
            return "kafka3"
        if example[:1] == ("connect",):
            return "connect-help"  # one Connect worker for them all (connect_world)
        if example[:1] == ("mirror",):
            return "mirror-help"  # one MirrorMaker 2 for them all (mirror_world)
    if params.get("cluster") in ("kafka", "kafka3", "kafka39"):
        return params["cluster"]
    if module.startswith("tests/mirror/"):
        return "mirror"  # each pair of clusters and its MirrorMaker 2 started once
    if module.startswith("tests/connect/") and params.get("cluster") == "bundled":
        # One worker runs them, its bundled broker started once for them all.
        return "connect"
    # (`secured` and test_mutual_tls's `mutual` take the secured Kafka node by name, at run time)
    if "secured_kafka" in item.fixturenames or "kafka" in (params.get("secured"), params.get("mutual")):
        return "kafka"
    if params.get("secured") == "bundled" or "secured_bundled" in item.fixturenames:
        return "secured-bundled"  # one secured bundled broker for them all
    return module


def _ours(config) -> bool:
    """-n's default distribution (or loadgroup): a --dist the user chose is left alone."""
    return getattr(config.option, "dist", "no") in ("load", "loadgroup")


def _groups_file() -> Path:
    return Path(os.environ["KCTL_TEST_GROUPS_DIR"]) / "groups.json"


class WorkerGroups:
    """Registered by conftest.py when pytest-xdist is installed."""

    @pytest.hookimpl
    def pytest_configure(self, config):
        if "PYTEST_XDIST_WORKER" not in os.environ and _ours(config):  # workers inherit the directory
            os.environ["KCTL_TEST_GROUPS_DIR"] = tempfile.mkdtemp(prefix="kctl-test-groups-")
            # The groups are handed out in the order the workers' items are in (sorted
            # below), not xdist's own (most tests first).
            config.option.loadscopereorder = False

    @pytest.hookimpl(tryfirst=True)  # before xdist's worker sends the collection
    def pytest_collection_finish(self, session):
        if "PYTEST_XDIST_WORKER" not in os.environ or "KCTL_TEST_GROUPS_DIR" not in os.environ:
            return  # not a worker, or not our scheduler
        groups = {item.nodeid: group_of(item) for item in session.items}
        rank = {group: index for index, group in enumerate(LONG_GROUPS)}

        def order(item: pytest.Item) -> int:
            group = groups[item.nodeid]
            if group in rank:
                return rank[group]
            # Then the Spark processes' tests, which are long too, then the rest.
            return len(rank) + (0 if group.startswith("tests/spark/") else 1)

        session.items.sort(key=order)
        # Every worker collects the same (xdist checks); the last to write wins.
        temporary = _groups_file().with_suffix(f".{os.environ['PYTEST_XDIST_WORKER']}")
        temporary.write_text(json.dumps(groups))
        temporary.replace(_groups_file())

    @pytest.hookimpl
    def pytest_xdist_make_scheduler(self, config, log):
        if not _ours(config):
            return None  # a --dist of the user's choice
        from xdist.scheduler import LoadScopeScheduling

        class ByGroup(LoadScopeScheduling):
            groups: dict[str, str] | None = None

            def _split_scope(self, nodeid: str) -> str:
                if self.groups is None:  # read once every worker has collected
                    self.groups = json.loads(_groups_file().read_text())
                return self.groups.get(nodeid, nodeid)

        return ByGroup(config, log)

    # What each worker did and when it ended, and the longest groups: printed at the end
    # of a run, for the order of LONG_GROUPS (a long group handed out late ends the run).
    busy: dict[str, float] | None = None

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report):
        node = getattr(report, "node", None)  # set on the controller for a worker's report
        if node is None or "KCTL_TEST_GROUPS_DIR" not in os.environ:
            return
        if self.busy is None:
            self.busy, self.ended, self.group_seconds, self.started = {}, {}, {}, time.monotonic() - report.duration
        worker = node.gateway.id
        self.busy[worker] = self.busy.get(worker, 0.0) + report.duration
        self.ended[worker] = time.monotonic()
        if not hasattr(self, "groups"):
            self.groups = json.loads(_groups_file().read_text()) if _groups_file().exists() else {}
        group = self.groups.get(report.nodeid, report.nodeid)
        self.group_seconds[group] = self.group_seconds.get(group, 0.0) + report.duration

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter):
        if not self.busy:
            return
        terminalreporter.write_sep("-", "workers and the longest groups")
        for worker in sorted(self.busy):
            terminalreporter.write_line(f"{worker}: {self.busy[worker]:.0f} s in tests, its last ended {self.ended[worker] - self.started:.0f} s in")
        for group, seconds in sorted(self.group_seconds.items(), key=lambda g: -g[1])[:12]:
            terminalreporter.write_line(f"{seconds:6.0f} s  {group}")

    @pytest.hookimpl
    def pytest_unconfigure(self, config):
        directory = os.environ.pop("KCTL_TEST_GROUPS_DIR", None)
        if directory and "PYTEST_XDIST_WORKER" not in os.environ:
            import shutil

            shutil.rmtree(directory, ignore_errors=True)
