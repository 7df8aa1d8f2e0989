"""Two Kafka Connect workers on three Apache Kafka nodes: tasks spread over both, and a
failed task restarted where it runs."""

from __future__ import annotations

import json

import pytest

from tests.backends.plugin import start_connect_on
from tests.connect.test_connect import SINK, status
from tests.support.eventually import eventually

pytestmark = [pytest.mark.integration, pytest.mark.min_nodes(3)]


@pytest.fixture
def workers(cluster, tmp_path):
    started = start_connect_on(cluster, tmp_path / "connect", workers=2)
    yield started
    started.stop()


def test_a_failed_task_is_restarted_where_it_runs(kctl, workers, cluster, unique_name, tmp_path):
    """Two workers share the tasks; a sink writing into a directory that is not there
    fails, and once the directory exists, a restart of what failed brings it back."""
    connect = workers
    env = {"KCTL_CONNECT_URL": connect.url, "KCTL_CONNECT_BASIC_AUTH": "admin:admin-secret", "KCTL_BOOTSTRAP_SERVERS": cluster.bootstrap}
    name, topic = unique_name("sink"), unique_name("spread")
    assert kctl("topic", "create", topic, "--partitions", "2", env=env).exit_code == 0
    missing = tmp_path / "later"
    spec = tmp_path / "sink.json"
    spec.write_text(json.dumps({"name": name, "config": {"connector.class": SINK, "topics": topic, "file": str(missing / "out.txt"), "tasks.max": "2"}}))
    assert kctl("connect", "create", "-f", str(spec), env=env).exit_code == 0

    def failed() -> dict:
        listed = {c["name"]: c for c in json.loads(kctl("connect", "list", "-o", "json", env=env).stdout)}
        assert listed.get(name, {}).get("tasks_failed") == 2, listed.get(name)
        return listed[name]
    eventually(failed, timeout=60)
    described = kctl("connect", "describe", name, "--trace", env=env)
    assert "\nTRACE (task 0)\n" in described.stdout and "Couldn't find or create file" in described.stdout
    used = {t["worker_id"] for t in status(connect, name)["tasks"]}
    assert used == {u.removeprefix("http://") for u in connect.urls}  # one task on each worker

    missing.mkdir()
    restarted = kctl("connect", "restart", name, "--include-tasks", "--only-failed", "-o", "json", env=env)
    assert restarted.exit_code == 0, restarted.stderr
    eventually(lambda: _assert_tasks(connect, name, "RUNNING"), timeout=60)
    assert kctl("connect", "delete", name, "--yes", env=env).exit_code == 0


def _assert_tasks(connect, name: str, state: str) -> None:
    assert [t["state"] for t in status(connect, name)["tasks"]] == [state, state]
