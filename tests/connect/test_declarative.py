"""The Connector kind of kctl export, diff and apply, against a real Connect cluster:
export -> delete -> apply -> diff clean; a connector's topic created before it; its
secrets never in the file; --prune."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.connect.test_connect import SINK, SOURCE, _assert_state, rest, status
from tests.support.eventually import eventually


def _assert(condition: bool) -> None:
    assert condition

pytestmark = [pytest.mark.integration, pytest.mark.single_node]


def connectors_of(text: str, names: set[str]) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d and d["kind"] == "Connector" and d["metadata"]["name"] in names]


def test_export_delete_apply_and_the_diff_is_clean(kctl, connect, env, unique_name, tmp_path):
    topic, sink, source = unique_name("events"), unique_name("sink"), unique_name("source")
    assert kctl("topic", "create", topic, env=env).exit_code == 0
    (tmp_path / "in.txt").write_text("a\n")
    for name, config in ((sink, {"connector.class": SINK, "topics": topic, "file": str(tmp_path / "out.txt"), "db.password": "hunter2",
                                 "token": "${file:/etc/kctl/secrets.properties:token}"}),
                         (source, {"connector.class": SOURCE, "topic": topic, "file": str(tmp_path / "in.txt")})):
        assert rest(connect, "POST", "/connectors", {"name": name, "config": config})[0] == 201
    eventually(lambda: _assert_state(connect, source, "RUNNING"), timeout=30)
    assert kctl("connect", "pause", source, env=env).exit_code == 0

    exported = kctl("export", "--kind", "connector", env=env)
    assert exported.exit_code == 0, exported.stderr
    assert "hunter2" not in exported.stdout
    documents = {d["metadata"]["name"]: d["spec"] for d in connectors_of(exported.stdout, {sink, source})}
    secret = f"{sink}_DB_PASSWORD".upper().replace("-", "_")
    assert documents[sink]["secrets"] == {"db.password": secret}
    assert documents[sink]["config"]["token"] == "${file:/etc/kctl/secrets.properties:token}"  # a provider's reference stays
    assert documents[source]["state"] == "paused"
    files = tmp_path / "connectors.yaml"
    files.write_text(yaml.safe_dump_all([d for d in yaml.safe_load_all(exported.stdout) if d and d["metadata"]["name"] in (sink, source)]))
    assert kctl("diff", "-f", str(files), env=env).exit_code == 0

    for name in (sink, source):
        assert kctl("connect", "delete", name, "--yes", env=env).exit_code == 0
    # Without the secret's variable, creating the sink is refused (and the source made).
    refused = kctl("apply", "-f", str(files), "--yes", env=env)
    assert refused.exit_code == 4 and f"${secret}" in refused.stderr
    applied = kctl("apply", "-f", str(files), "--yes", env={**env, secret: "hunter2"})
    assert applied.exit_code == 0, applied.stderr
    # Connect may answer the first GET mid-rebalance (a loaded CI run got a body without the config).
    eventually(lambda: _assert(rest(connect, "GET", f"/connectors/{sink}/config")[1].get("db.password") == "hunter2"), timeout=30)
    eventually(lambda: _assert_state(connect, source, "PAUSED"), timeout=30)
    clean = kctl("diff", "-f", str(files), env={**env, secret: "hunter2"})
    assert clean.exit_code == 0, clean.stdout

    # Drift: a changed key and a state are reported (exit 2), then put back.
    assert kctl("connect", "patch", sink, "--set", "tasks.max=2", env=env).exit_code == 0
    assert kctl("connect", "resume", source, env=env).exit_code == 0
    drift = kctl("diff", "-f", str(files), "-o", "json", env=env)
    assert drift.exit_code == 2
    assert {(c["action"], c["name"]) for c in json.loads(drift.stdout)} == {("alter-config", sink), ("set-state", source)}
    assert kctl("apply", "-f", str(files), "--yes", env={**env, secret: "hunter2"}).exit_code == 0
    assert kctl("diff", "-f", str(files), env={**env, secret: "hunter2"}).exit_code == 0
    assert status(connect, source)["connector"]["state"] == "PAUSED"
    for name in (sink, source):
        assert kctl("connect", "delete", name, "--yes", env=env).exit_code == 0


def test_a_connectors_topic_is_created_before_it_and_prune_removes_the_unlisted(kctl, connect, env, unique_name, tmp_path):
    topic, sink, stray = unique_name("made"), unique_name("sink"), unique_name("stray")
    # (A sink's consumer creates a missing topic it subscribes to: the stray reads another.)
    assert rest(connect, "POST", "/connectors", {"name": stray, "config": {"connector.class": SINK, "topics": unique_name("other"),
                                                                           "file": str(tmp_path / "stray.txt")}})[0] == 201
    files = tmp_path / "state.yaml"
    files.write_text(yaml.safe_dump_all([
        {"kind": "Connector", "metadata": {"name": sink}, "spec": {"config": {"connector.class": SINK, "topics": topic, "file": str(tmp_path / "out.txt")}}},
        {"kind": "Topic", "metadata": {"name": topic}, "spec": {"partitions": 2}},
    ]))
    planned = kctl("diff", "-f", str(files), "--prune", "-o", "json", env=env)
    rows = [(c["action"], c["kind"], c["name"]) for c in json.loads(planned.stdout)]
    mine = [r for r in rows if r[2] in (topic, sink, stray)]
    assert mine == [("create", "Topic", topic), ("create", "Connector", sink), ("delete", "Connector", stray)]
    # Other connectors of the shared worker are pruned too in that plan: apply only ours.
    assert kctl("apply", "-f", str(files), "--yes", env=env).exit_code == 0
    eventually(lambda: _assert_state(connect, sink, "RUNNING"), timeout=30)
    for name in (sink, stray):
        assert kctl("connect", "delete", name, "--yes", env=env).exit_code == 0


def test_connector_documents_are_checked_offline(kctl, tmp_path):
    files = tmp_path / "bad.yaml"
    files.write_text(yaml.safe_dump_all([
        {"kind": "Connector", "metadata": {"name": "a"}, "spec": {"config": {"topics": "t", "connection.password": "clear"}, "state": "asleep"}},
    ]))
    result = kctl("apply", "-f", str(files), "--validate")
    assert result.exit_code == 65
    assert "state: 'asleep' is not one of" in result.stderr
    files.write_text(yaml.safe_dump({"kind": "Connector", "metadata": {"name": "a"}, "spec": {"config": {"topics": "t", "connection.password": "clear"}}}))
    result = kctl("apply", "-f", str(files), "--validate")
    assert result.exit_code == 65
    assert "needs connector.class" in result.stderr and "connection.password looks like a secret" in result.stderr
