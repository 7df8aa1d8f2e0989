"""kctl export, diff and apply against real brokers: export | diff is clean, a manual
change shows as exactly that change (exit 2), apply converges (also after a partial
failure), --prune deletes only when confirmed, a replication-factor change runs as a
throttled reassignment on kafka3, and ACLs and quotas exported, removed and applied
again are what Kafka's own tools saw before. Bad files are refused offline (65) with
file, line and key."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from kctl.errors import ExitCode
from tests.support.eventually import eventually

pytestmark = [pytest.mark.integration, pytest.mark.kafka39]


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def kafka_topics_describe(tools, bootstrap, topic) -> tuple[int, int, dict[str, str]]:
    """(partitions, replication factor, configs) as kafka-topics --describe prints them
    (its configs include the broker's static ones that differ from Kafka's defaults)."""
    proc = tools.run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap, "--describe", "--topic", topic)
    assert proc.returncode == 0, proc.stderr
    head = re.search(r"PartitionCount: (\d+)\s+ReplicationFactor: (\d+)\s+Configs: ?(.*)$", proc.stdout, re.M)
    configs = dict(item.split("=", 1) for item in head.group(3).strip().split(",") if item)
    return int(head.group(1)), int(head.group(2)), configs


def test_export_diff_apply_round_trip(kctl, cluster, unique_name, tmp_path):
    b = ("-b", cluster.bootstrap)
    prefix = unique_name("decl")
    scope = ("--topic-regex", re.escape(prefix) + ".*")
    assert kctl(*b, "topic", "create", f"{prefix}-a", "-p", "2", "--rf", "1", "-c", "retention.ms=3600000", "-c", "cleanup.policy=compact,delete").exit_code == 0
    assert kctl(*b, "topic", "create", f"{prefix}-b", "-p", "1", "--rf", "1").exit_code == 0

    exported = kctl(*b, "export", "--kind", "topic", *scope)
    assert exported.exit_code == 0, exported.stderr
    assert list(yaml.safe_load_all(exported.stdout)) == [
        {"api_version": "kctl/v1", "kind": "Topic", "metadata": {"name": f"{prefix}-a"},
         "spec": {"partitions": 2, "replication_factor": 1, "configs": {"cleanup.policy": "compact,delete", "retention.ms": "3600000"}}},
        {"api_version": "kctl/v1", "kind": "Topic", "metadata": {"name": f"{prefix}-b"}, "spec": {"partitions": 1, "replication_factor": 1}},
    ]
    path = write(tmp_path, "topics.yaml", exported.stdout)
    clean = kctl(*b, "diff", "-f", path, *scope)
    assert (clean.exit_code, clean.stdout, clean.stderr) == (0, "", "no changes: the cluster matches the files\n")
    assert kctl(*b, "apply", "-f", "-", *scope, input=exported.stdout).stderr == "no changes: the cluster matches the files\n"

    # A change made by hand is exactly what the diff shows.
    assert kctl(*b, "topic", "alter-config", f"{prefix}-b", "--set", "retention.ms=5000").exit_code == 0
    drift = kctl(*b, "diff", "-f", path, *scope)
    assert (drift.exit_code, drift.stdout, drift.stderr) == (
        ExitCode.CRITICAL,
        f"ACTION\tKIND\tNAME\tDETAIL\nalter-config\tTopic\t{prefix}-b\tretention.ms 5000 -> (default)\n",
        "plan: 1 to change\n",
    )
    (change,) = json.loads(kctl(*b, "diff", "-f", path, *scope, "-o", "json").stdout)
    assert change == {
        "action": "alter-config", "kind": "Topic", "name": f"{prefix}-b", "detail": "retention.ms 5000 -> (default)",
        "source": f"{path}:13", "reason": None, "data": {"set": {}, "delete": {"retention.ms": "5000"}}, "context": None,
    }
    applied = kctl(*b, "apply", "-f", path, *scope, "--yes")
    assert (applied.exit_code, applied.stdout) == (0, f"ACTION\tKIND\tNAME\tSTATUS\tERROR\nalter-config\tTopic\t{prefix}-b\tapplied\t\n")
    eventually(lambda: _clean(kctl(*b, "diff", "-f", path, *scope)))


def _clean(result):
    assert result.exit_code == 0, result.stdout + result.stderr


def test_apply_creates_alters_grows_and_converges_after_a_partial_failure(kctl, cluster, kafka_tools, unique_name, tmp_path):
    b = ("-b", cluster.bootstrap)
    prefix = unique_name("conv")
    scope = ("--topic-regex", re.escape(prefix) + ".*")
    assert kctl(*b, "topic", "create", f"{prefix}-old", "-p", "2", "--rf", "1", "-c", "retention.ms=1000").exit_code == 0
    text = f"""
kind: Topic
metadata: {{name: {prefix}-new}}
spec:
  partitions: 3
  replication_factor: 1
  configs: {{cleanup.policy: compact, min.cleanable.dirty.ratio: 0.2}}
---
kind: Topic
metadata: {{name: {prefix}-old}}
spec:
  partitions: 1
  configs: {{retention.ms: 7200000}}
"""
    path = write(tmp_path, "topics.yaml", text)
    # Two partitions cannot become one: refused, and everything else is still done.
    first = kctl(*b, "apply", "-f", path, *scope, "--yes")
    assert first.exit_code == ExitCode.PARTIAL_FAILURE
    assert first.stdout == (
        "ACTION\tKIND\tNAME\tSTATUS\tERROR\n"
        f"create\tTopic\t{prefix}-new\tapplied\t\n"
        f"alter-config\tTopic\t{prefix}-old\tapplied\t\n"
        f"refused\tTopic\t{prefix}-old\trefused\tpartitions 2 -> 1: Kafka cannot remove partitions\n"
    )
    assert first.stderr.splitlines() == [
        f"error: Topic {prefix}-old: refused: partitions 2 -> 1: Kafka cannot remove partitions",
        "error: unable to apply the plan: 1 of 3 change(s) not made",
        "hint: fix the cause and run apply again: it plans only what is left",
    ]
    write(tmp_path, "topics.yaml", text.replace("partitions: 1\n", "partitions: 4\n"))
    second = kctl(*b, "apply", "-f", path, *scope, "--yes")
    assert (second.exit_code, second.stdout) == (0, f"ACTION\tKIND\tNAME\tSTATUS\tERROR\nadd-partitions\tTopic\t{prefix}-old\tapplied\t\n")
    eventually(lambda: _clean(kctl(*b, "diff", "-f", path, *scope)))
    # What Kafka's own tool sees.
    partitions, rf, configs = kafka_topics_describe(kafka_tools, cluster.bootstrap, f"{prefix}-new")
    assert (partitions, rf) == (3, 1) and {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.2"}.items() <= configs.items()
    partitions, rf, configs = kafka_topics_describe(kafka_tools, cluster.bootstrap, f"{prefix}-old")
    assert (partitions, rf, configs.get("retention.ms")) == (4, 1, "7200000")


def test_prune_deletes_only_what_the_files_drop_and_only_when_confirmed(kctl, cluster, unique_name, tmp_path):
    b = ("-b", cluster.bootstrap)
    prefix = unique_name("prune")
    outside = unique_name("keep")
    for name in (f"{prefix}-listed", f"{prefix}-dropped", outside):
        assert kctl(*b, "topic", "create", name).exit_code == 0
    path = write(tmp_path, "t.yaml", f"kind: Topic\nmetadata: {{name: {prefix}-listed}}\nspec: {{partitions: 1}}\n")
    scope = ("--topic-regex", re.escape(prefix) + ".*")
    plain = kctl(*b, "diff", "-f", path, *scope)
    assert (plain.exit_code, plain.stderr) == (0, "no changes: the cluster matches the files\n")
    shown = kctl(*b, "diff", "-f", path, *scope, "--prune")
    assert (shown.exit_code, shown.stdout) == (ExitCode.CRITICAL, f"ACTION\tKIND\tNAME\tDETAIL\ndelete\tTopic\t{prefix}-dropped\tnot in the files (--prune)\n")
    refused = kctl(*b, "apply", "-f", path, *scope, "--prune")
    assert (refused.exit_code, refused.stderr) == (
        ExitCode.ABORTED, "error: unable to apply the plan: confirmation required and stdin is not a terminal\nhint: pass --yes to confirm\n",
    )
    assert kctl(*b, "apply", "-f", path, *scope, "--prune", "--dry-run").exit_code == 0
    assert kctl(*b, "topic", "describe", f"{prefix}-dropped").exit_code == 0
    pruned = kctl(*b, "apply", "-f", path, *scope, "--prune", "--yes")
    assert (pruned.exit_code, pruned.stdout) == (0, f"ACTION\tKIND\tNAME\tSTATUS\tERROR\ndelete\tTopic\t{prefix}-dropped\tapplied\t\n")
    names = {t["name"] for t in json.loads(kctl(*b, "topic", "list", "-o", "json").stdout)}
    assert {f"{prefix}-listed", outside} <= names and f"{prefix}-dropped" not in names


@pytest.mark.min_nodes(3)
def test_a_replication_factor_change_is_a_throttled_reassignment(kctl, cluster, unique_name, tmp_path):
    from tests.cli.test_replication import configs, partitions

    b = ("-b", cluster.bootstrap)
    topic = unique_name("rf")
    assert kctl(*b, "topic", "create", topic, "-p", "2", "--rf", "1").exit_code == 0
    path = write(tmp_path, "t.yaml", f"kind: Topic\nmetadata: {{name: {topic}}}\nspec: {{partitions: 2, replication_factor: 3}}\n")
    planned = json.loads(kctl(*b, "diff", "-f", path, "-o", "json").stdout)
    assert [(c["action"], c["detail"]) for c in planned] == [("reassign", "replication factor 1 -> 3 (2 partition(s) move)")]
    applied = kctl(*b, "apply", "-f", path, "--throttle", "10MB", "--yes")
    assert applied.exit_code == 0, applied.stderr
    assert "reassignment: 2/2 partition(s) done" in applied.stderr
    assert all(sorted(p["replicas"]) == [1, 2, 3] for p in partitions(kctl, cluster, topic))

    def unthrottled():
        assert configs(kctl, cluster, "topic", topic, "leader.replication.throttled.replicas")["leader.replication.throttled.replicas"][1] == "DEFAULT_CONFIG"
        for broker in ("1", "2", "3"):
            rate = configs(kctl, cluster, "broker", broker, "leader.replication.throttled.rate").get("leader.replication.throttled.rate", (None, "DEFAULT_CONFIG"))
            assert rate[1] == "DEFAULT_CONFIG"

    eventually(unthrottled)
    eventually(lambda: _clean(kctl(*b, "diff", "-f", path)))
    too_many = write(tmp_path, "t.yaml", f"kind: Topic\nmetadata: {{name: {topic}}}\nspec: {{partitions: 2, replication_factor: 4}}\n")
    refused = kctl(*b, "diff", "-f", too_many)
    assert refused.stdout.splitlines()[1] == f"refused\tTopic\t{topic}\treplication factor 3 -> 4: larger than the 3 broker(s) available"


@pytest.mark.min_nodes(3)
def test_acls_and_quotas_exported_removed_and_applied_again(kctl, cluster, unique_name, tmp_path):
    """kafka3 runs Kafka's StandardAuthorizer: ACLs and quotas of fresh principals are
    exported, deleted, and re-created by applying the export; Kafka's tools agree."""
    from tests.cli.test_acl import kafka_acls_list
    from tests.cli.test_quota import kafka_configs

    b = ("-b", cluster.bootstrap)
    user = unique_name("u")
    principal = f"User:{user}"
    assert kctl(*b, "acl", "create", "--producer", "--principal", principal, "--topic", user).exit_code == 0
    assert kctl(*b, "quota", "set", "--user", user, "--set", "producer_byte_rate=1MiB", "--set", "request_percentage=25").exit_code == 0
    acls_before = eventually(lambda: _three(kafka_acls_list(cluster, "--principal", principal)))
    quotas_before = eventually(lambda: _two(kafka_configs(cluster, "--entity-type", "users", "--entity-name", user)))

    exported = kctl(*b, "export", "--kind", "acl,quota")
    assert exported.exit_code == 0, exported.stderr
    mine = [d for d in yaml.safe_load_all(exported.stdout) if d["metadata"]["name"] in (principal, f"user {user}")]
    assert [(d["kind"], d["metadata"]["name"]) for d in mine] == [("Acl", principal), ("Quota", f"user {user}")]
    assert mine[1]["spec"] == {"entity": {"user": user}, "quotas": {"producer_byte_rate": 1048576, "request_percentage": 25}}
    path = write(tmp_path, "mine.yaml", yaml.safe_dump_all(mine))
    eventually(lambda: _clean(kctl(*b, "diff", "-f", path)))

    assert kctl(*b, "acl", "delete", "--principal", principal, "--yes").exit_code == 0
    assert kctl(*b, "quota", "delete", "--user", user, "--yes").exit_code == 0
    eventually(lambda: _same(kafka_acls_list(cluster, "--principal", principal), set()))
    drift = eventually(lambda: _drifted(kctl(*b, "diff", "-f", path, "-o", "json")))
    assert sorted(c["action"] for c in drift) == ["add-acl", "add-acl", "add-acl", "set-quota"]

    applied = kctl(*b, "apply", "-f", path, "--yes")
    assert applied.exit_code == 0, applied.stderr
    eventually(lambda: _same(kafka_acls_list(cluster, "--principal", principal), acls_before))
    eventually(lambda: _same(kafka_configs(cluster, "--entity-type", "users", "--entity-name", user), quotas_before))
    eventually(lambda: _clean(kctl(*b, "diff", "-f", path)))


def _three(found):
    assert len(found) == 3
    return found


def _two(found):
    assert len(found) == 2
    return found


def _same(found, expected):
    assert found == expected


def _drifted(result):
    assert result.exit_code == ExitCode.CRITICAL, result.stderr
    changes = json.loads(result.stdout)
    assert len(changes) == 4
    return changes


def test_bad_files_are_refused_offline_with_file_line_and_key(kctl, tmp_path):
    """No cluster is contacted: the bootstrap address is a closed port."""
    b = ("-b", "127.0.0.1:1", "--timeout", "1")
    one = write(tmp_path, "one.yaml", "kind: Topic\nmetadata: {name: a}\nspec:\n  partitions: 1\n  configs:\n    retention.mss: 1\n")
    for command in (("apply", "--validate"), ("diff",), ("apply", "--yes")):
        result = kctl(*b, *command, "-f", one)
        assert (result.exit_code, result.stdout, result.stderr) == (
            ExitCode.INVALID, "", f"error: invalid resource file: {one}:6: Topic a: config retention.mss: unknown topic config (did you mean retention.ms?)\n",
        ), command
    many = write(tmp_path, "many.yaml", "kind: Topics\nmetadata: {name: a}\nspec: {}\n---\nkind: Topic\nmetadata: {name: b}\nspec:\n  partitions: 1\n  configs: {cleanup.policy: archive}\n")
    result = kctl(*b, "apply", "--validate", "-f", many)
    assert (result.exit_code, result.stderr) == (
        ExitCode.INVALID,
        f"error: {many}:1: Topics a: kind: unknown kind 'Topics'; accepted: Topic, ClusterConfig, Acl, Quota, User, Connector\n"
        f"error: {many}:9: Topic b: config cleanup.policy: must be [compact, delete], not 'archive'\n"
        "error: invalid resource files: 2 problems (each on a line above)\n",
    )
    good = write(tmp_path, "good.yaml", "kind: Topic\nmetadata: {name: a}\nspec: {partitions: 1}\n---\n")
    assert kctl(*b, "apply", "--validate", "-f", str(tmp_path / "good.yaml")).stderr == "1 resource(s) valid\n"
    assert kctl(*b, "apply", "--validate", "-f", good, "-f", str(tmp_path / "none.yaml")).stderr == f"error: unable to read {tmp_path / 'none.yaml'}: no such file\n"
    unreachable = kctl(*b, "diff", "-f", good)
    assert unreachable.exit_code == ExitCode.UNREACHABLE and len(unreachable.stderr.splitlines()) <= 2
    assert kctl(*b, "export", "--kind", "topics,bogus").stderr.startswith("error: unknown kind 'bogus'; accepted: Topic, ClusterConfig, Acl, Quota, User, Connector")


def test_a_file_names_its_context_and_the_command_line_overrides_it(kctl, cluster, unique_name, tmp_path):
    b = ("-b", cluster.bootstrap)
    topic = unique_name("ctx")
    assert kctl("context", "set", "here", "-b", cluster.bootstrap).exit_code == 0
    assert kctl("context", "set", "nowhere", "-b", "127.0.0.1:1", "--timeout", "1").exit_code == 0
    path = write(tmp_path, "t.yaml", f"kind: Topic\nmetadata: {{name: {topic}, context: here}}\nspec: {{partitions: 1}}\n")
    planned = kctl("context", "use", "nowhere") and kctl("diff", "-f", path, "-o", "json")
    assert planned.exit_code == ExitCode.CRITICAL, planned.stderr
    assert [(c["action"], c["context"]) for c in json.loads(planned.stdout)] == [("create", "here")]
    assert kctl("apply", "-f", path, "--yes").exit_code == 0
    assert kctl(*b, "topic", "describe", topic).exit_code == 0
    # --context wins over the file's: the unreachable context is tried.
    assert kctl("--context", "nowhere", "diff", "-f", path).exit_code == ExitCode.UNREACHABLE


def test_scram_users_from_files_with_the_password_from_the_environment(kctl, secured, unique_name, tmp_path):
    from tests.cli.test_security import sasl_flags
    from tests.cli.test_user import kafka_configs_users, login

    admin = sasl_flags(secured)
    user = unique_name("dana")
    path = write(tmp_path, "u.yaml", f"kind: User\nmetadata: {{name: {user}}}\nspec:\n  credentials: [{{mechanism: SCRAM-SHA-256, iterations: 4096}}]\n  password_env: DANA_PASSWORD\n")
    planned = kctl(*admin, "diff", "-f", path)
    assert (planned.exit_code, planned.stdout.splitlines()[1:]) == (
        ExitCode.CRITICAL, [f"set-password\tUser\t{user}\tSCRAM-SHA-256 (4096 iterations), password from $DANA_PASSWORD"],
    )
    missing = kctl(*admin, "apply", "-f", path, "--yes")
    assert missing.exit_code == ExitCode.PARTIAL_FAILURE
    assert f"error: User {user}: set-password failed: unable to set the SCRAM-SHA-256 credential of {user}: $DANA_PASSWORD is not set" in missing.stderr
    applied = kctl(*admin, "apply", "-f", path, "--yes", env={"DANA_PASSWORD": "d4na-secret"})
    assert applied.exit_code == 0, applied.stderr
    assert "d4na-secret" not in applied.stdout + applied.stderr
    eventually(lambda: _has(kafka_configs_users(secured), (user, "SCRAM-SHA-256", 4096)))
    eventually(lambda: _clean(login(kctl, secured, user, "d4na-secret", "SCRAM-SHA-256")))
    eventually(lambda: _clean(kctl(*admin, "diff", "-f", path)))
    exported = [d for d in yaml.safe_load_all(kctl(*admin, "export", "--kind", "user").stdout) if d["metadata"]["name"] == user]
    assert exported[0]["spec"] == {"credentials": [{"mechanism": "SCRAM-SHA-256", "iterations": 4096}]}


def _has(found, item):
    assert item in found


def kafka_configs_broker_default(tools, bootstrap) -> dict[str, str]:
    """The cluster-wide dynamic broker configs as kafka-configs --describe prints them."""
    proc = tools.run_tool(tools.config_command, "--bootstrap-server", bootstrap, "--describe", "--entity-type", "brokers", "--entity-default")
    assert proc.returncode == 0, proc.stderr
    return dict(re.findall(r"^\s+(\S+?)=(\S*) sensitive=", proc.stdout, re.M))


def test_cluster_configs_from_files(kctl, cluster, kafka_tools, tmp_path):
    b = ("-b", cluster.bootstrap)
    exported = kctl(*b, "export", "--kind", "clusterconfig")
    assert exported.exit_code == 0, exported.stderr
    docs = list(yaml.safe_load_all(exported.stdout))
    default = next((d for d in docs if d["metadata"]["name"] == "default"), None)
    before = dict(default["spec"]["configs"]) if default else {}
    assert before == kafka_configs_broker_default(kafka_tools, cluster.bootstrap)
    # A key no other test sets on the shared broker (the compaction tests and the config
    # tests set log.cleaner.backoff.ms; a CI run once read theirs here).
    wanted = {**before, "log.cleaner.io.buffer.size": 1048576}
    path = write(tmp_path, "c.yaml", yaml.safe_dump({"kind": "ClusterConfig", "metadata": {"name": "default"}, "spec": {"configs": wanted}}))
    planned = kctl(*b, "diff", "-f", path)
    assert planned.stdout.splitlines()[1:] == ["alter-config\tClusterConfig\tdefault\tlog.cleaner.io.buffer.size (default) -> 1048576"]
    try:
        assert kctl(*b, "apply", "-f", path, "--yes").exit_code == 0
        eventually(lambda: _same(kafka_configs_broker_default(kafka_tools, cluster.bootstrap).get("log.cleaner.io.buffer.size"), "1048576"))
        eventually(lambda: _clean(kctl(*b, "diff", "-f", path)))
    finally:
        # The file without the key resets it: a document owns its entity's dynamic configs.
        write(tmp_path, "c.yaml", yaml.safe_dump({"kind": "ClusterConfig", "metadata": {"name": "default"}, "spec": {"configs": before}}))
        assert kctl(*b, "apply", "-f", path, "--yes").exit_code == 0
    eventually(lambda: _same(kafka_configs_broker_default(kafka_tools, cluster.bootstrap), before))
    missing = write(tmp_path, "b.yaml", "kind: ClusterConfig\nmetadata: {name: '99'}\nspec: {configs: {log.cleaner.threads: 2}}\n")
    refused = kctl(*b, "diff", "-f", missing)
    assert refused.stdout.splitlines()[1].startswith("refused\tClusterConfig\t99\tthe cluster has no broker 99 (brokers: ")
