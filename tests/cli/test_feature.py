"""kctl feature, kctl cluster quorum and client-metrics subscriptions against real Kafka,
cross-checked with Kafka's own kafka-features, kafka-metadata-quorum and
kafka-client-metrics from the same jars; the bundled broker, which has none of these
APIs, answers each in one line."""

from __future__ import annotations

import json
import re

import pytest

from kctl.admin.cluster.features import METADATA_VERSIONS, RELEASES
from kctl.errors import ExitCode
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration




def as_json(kctl, cluster, *args):
    result = kctl("-b", cluster.bootstrap, *args, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def tool(cluster, main_class: str, *args: str) -> str:
    proc = cluster.kafka.run_tool(f"org.apache.kafka.tools.{main_class}", "--bootstrap-server", cluster.bootstrap, *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def kafka_features(cluster) -> dict[str, dict[str, str]]:
    """kafka-features describe, as {feature: {SupportedMinVersion: ..., ...}}."""
    rows = {}
    for line in tool(cluster, "FeatureCommand", "describe").splitlines():
        fields = dict(re.findall(r"(\w+): (\S+)", line))
        if "Feature" in fields:
            rows[fields.pop("Feature")] = fields
    return rows


def _named(feature: str, level: int) -> str:
    return METADATA_VERSIONS[level] if feature == "metadata.version" else str(level)


def test_feature_list_matches_kafka_features(kctl, kafka_cluster):
    ours = {f["name"]: f for f in as_json(kctl, kafka_cluster, "feature", "list")}
    theirs = kafka_features(kafka_cluster)
    assert set(ours) == set(theirs)
    for name, row in theirs.items():
        mine = ours[name]
        assert (_named(name, mine["supported_min_level"]), _named(name, mine["supported_max_level"]), _named(name, mine["finalized_level"])) == (
            row["SupportedMinVersion"], row["SupportedMaxVersion"], row["FinalizedVersionLevel"]
        ), name
        assert mine["brokers_differ"] is False
    assert ours["metadata.version"]["finalized_version"] == theirs["metadata.version"]["FinalizedVersionLevel"]

    table = kctl("-b", kafka_cluster.bootstrap, "feature", "list")
    assert table.stdout.splitlines()[0] == "FEATURE\tFINALIZED\tSUPPORTED-MIN\tSUPPORTED-MAX"
    level = ours["metadata.version"]["finalized_level"]
    assert f"metadata.version\t{level} ({METADATA_VERSIONS[level]})\t7 (3.3-IV3)\t" in table.stdout


def test_feature_downgrade_and_upgrade(kctl, kafka_cluster):
    b = ("-b", kafka_cluster.bootstrap)
    before = {f["name"]: f["finalized_level"] for f in as_json(kctl, kafka_cluster, "feature", "list")}
    assert before["eligible.leader.replicas.version"] == 1

    dry = kctl(*b, "feature", "downgrade", "--feature", "eligible.leader.replicas.version=0", "--dry-run")
    assert (dry.exit_code, dry.stdout) == (0, "FEATURE\tFROM\tTO\tTYPE\tSTATUS\neligible.leader.replicas.version\t1\t0\tsafe-downgrade\tvalidated\n"), dry.stderr
    refused = kctl(*b, "feature", "downgrade", "--feature", "eligible.leader.replicas.version=0")
    assert refused.exit_code == ExitCode.ABORTED
    try:
        done = kctl(*b, "feature", "downgrade", "--feature", "eligible.leader.replicas.version=0", "--yes")
        assert done.exit_code == 0, done.stderr
        assert "\tupdated\n" in done.stdout
        eventually(lambda: _finalized_by_kafka(kafka_cluster, "eligible.leader.replicas.version", "0"))
    finally:
        back = kctl(*b, "feature", "upgrade", "--feature", "eligible.leader.replicas.version=1", "--yes", "-o", "json")
    assert back.exit_code == 0, back.stderr
    assert [(u["feature"], u["from_level"], u["to_level"], u["status"]) for u in json.loads(back.stdout)] == [
        ("eligible.leader.replicas.version", 0, 1, "updated")
    ]
    eventually(lambda: _finalized_by_kafka(kafka_cluster, "eligible.leader.replicas.version", "1"))
    again = kctl(*b, "feature", "upgrade", "--feature", "eligible.leader.replicas.version=1")
    assert again.exit_code == 0 and "nothing to change" in again.stderr

    # The cluster's own release, validated by the controller: nothing changes. Until the
    # controller has heard from every voter (~2 s after three nodes start) it refuses
    # kraft.version 1 "because not all of the voters support it": asked again until then.
    newest = list(RELEASES)[-1]
    release = eventually(lambda: as_json(kctl, kafka_cluster, "feature", "upgrade", "--release-version", newest, "--dry-run"), timeout=60)
    assert {u["feature"]: u["to_level"] for u in release} == {k: max(v, before[k]) for k, v in RELEASES[newest].items()}
    assert {u["status"] for u in release} <= {"validated", "unchanged"}
    assert {f["name"]: f["finalized_level"] for f in as_json(kctl, kafka_cluster, "feature", "list")} == before


def _finalized_by_kafka(cluster, feature: str, level: str) -> None:
    assert kafka_features(cluster)[feature]["FinalizedVersionLevel"] == level


def test_feature_bad_input(kctl, kafka_cluster):
    b = ("-b", kafka_cluster.bootstrap)
    cases = [
        (("upgrade", "--feature", "metadata.version=9.9"), ExitCode.USAGE, f"error: unable to parse metadata.version '9.9': give a level (7-{max(METADATA_VERSIONS)}), a release (3.3, "),
        (("upgrade", "--feature", "group.version"), ExitCode.USAGE, "error: unable to parse --feature 'group.version': expected NAME=LEVEL"),
        (("upgrade", "--feature", "no.such.version=1"), ExitCode.INVALID, "error: unable to update features: the cluster does not know feature 'no.such.version' (known: "),
        (("upgrade", "--feature", "group.version=0"), ExitCode.INVALID, "error: unable to upgrade group.version to 0: it is finalized at 1; use `kctl feature downgrade`"),
        (("upgrade", "--release-version", "2.8"), ExitCode.USAGE, "error: unable to upgrade to release '2.8': kctl knows 3.3, "),
        (("upgrade",), ExitCode.USAGE, "error: unable to upgrade features: give --feature NAME=LEVEL (repeatable) or --release-version X.Y"),
        (("downgrade", "--feature", "metadata.version=4.2", "--dry-run"), ExitCode.INVALID,
         "error: unable to validate feature updates: INVALID_UPDATE_VERSION: The update failed for all features since the following feature had an error: Unsupported metadata.version downgrade"),
        (("upgrade", "--feature", "group.version=5", "--dry-run"), ExitCode.INVALID,
         "error: unable to validate feature updates: INVALID_UPDATE_VERSION: "),
    ]
    for args, code, message in cases:
        result = kctl(*b, "feature", *args)
        assert (result.exit_code, result.stderr.startswith(message)) == (code, True), (args, result.stderr)
        assert result.stderr.count("\n") <= 2, result.stderr


def test_quorum_matches_kafka_metadata_quorum(kctl, kafka_cluster):
    for _ in range(3):  # both asked within one leader epoch (an election on a loaded machine moves the leader)
        quorum = as_json(kctl, kafka_cluster, "cluster", "quorum")
        status = dict(line.split(":", 1) for line in tool(kafka_cluster, "MetadataQuorumCommand", "describe", "--status").splitlines() if ":" in line)
        if quorum["leader_epoch"] == int(status["LeaderEpoch"]):
            break
    assert quorum["leader_id"] == int(status["LeaderId"])
    assert quorum["leader_epoch"] == int(status["LeaderEpoch"])
    voters = json.loads(status["CurrentVoters"])
    assert [v["node_id"] for v in quorum["voters"]] == sorted(v["id"] for v in voters) == list(range(1, kafka_cluster.nodes + 1))
    assert [v["endpoints"] for v in quorum["voters"]] == [v["endpoints"] for v in sorted(voters, key=lambda v: v["id"])]
    assert quorum["observers"] == json.loads(status["CurrentObservers"]) == []
    assert quorum["high_watermark"] > 0

    rows = [line.split() for line in tool(kafka_cluster, "MetadataQuorumCommand", "describe", "--replication").splitlines()[1:]]
    theirs = {int(r[0]): r[-1] for r in rows}
    replication = kctl("-b", kafka_cluster.bootstrap, "cluster", "quorum", "--replication", "-o", "json")
    assert {r["node_id"]: r["status"] for r in json.loads(replication.stdout)} == theirs
    assert sum(status == "Leader" for status in theirs.values()) == 1


@pytest.mark.min_nodes(3)
def test_quorum_of_three_shows_a_stopped_voter_falling_behind(kctl, cluster, unique_name):
    if cluster.kafka is None:
        pytest.skip("needs Apache Kafka")
    quorum = as_json(kctl, cluster, "cluster", "quorum")
    assert [(v["node_id"], v["status"]) for v in quorum["voters"]] == [
        (n, "Leader" if n == quorum["leader_id"] else "Follower") for n in (1, 2, 3)
    ]
    follower = max(n for n in (1, 2, 3) if n != quorum["leader_id"])
    cluster.kafka.stop_node(follower)
    try:
        # Metadata keeps being written (topics, the leader's own heartbeats); the stopped
        # voter's log end stays where it was.
        assert kctl("-b", cluster.bootstrap, "topic", "create", unique_name("q")).exit_code == 0

        def behind():
            voters = {v["node_id"]: v for v in as_json(kctl, cluster, "cluster", "quorum")["voters"]}
            assert voters[follower]["lag"] > 0
            text = kctl("-b", cluster.bootstrap, "cluster", "quorum", "--replication")
            row = [line.split("\t") for line in text.stdout.splitlines() if line.startswith(f"{follower}\t")][0]
            assert row[1] == "Follower" and int(row[3]) > 0, text.stdout

        eventually(behind, timeout=30)
    finally:
        cluster.kafka.start_node(follower)

    def caught_up():
        assert {v["node_id"]: v["lag"] for v in as_json(kctl, cluster, "cluster", "quorum")["voters"]}[follower] < 5

    eventually(caught_up, timeout=30)
    # Leave the cluster as the next tests expect it: every replica back in sync.
    healthy = kctl("-b", cluster.bootstrap, "cluster", "health", "--watch", "--interval", "1", "--exit-when-healthy", "--max-wait", "90")
    assert healthy.exit_code == 0, healthy.stdout


def test_client_metrics_subscriptions(kctl, kafka_cluster, unique_name):
    b = ("-b", kafka_cluster.bootstrap)
    name = unique_name("cm")
    created = kctl(*b, "config", "alter", "client-metrics", name, "--set", "metrics=org.apache.kafka.producer.,org.apache.kafka.consumer.",
                   "--set", "interval.ms=60000", "--set", "match=client_software_name=kcat,client_id=app-.*")
    assert created.exit_code == 0, created.stderr

    def listed():
        assert name in tool(kafka_cluster, "ClientMetricsCommand", "--list").split()
        assert name in [d["entity_name"] for d in as_json(kctl, kafka_cluster, "config", "describe", "client-metrics")]

    eventually(listed)
    described, = as_json(kctl, kafka_cluster, "config", "describe", "client-metrics", name)
    ours = {c["name"]: c["value"] for c in described["configs"]}
    theirs = dict(line.strip().split("=", 1) for line in tool(kafka_cluster, "ClientMetricsCommand", "--describe", "--name", name).splitlines()[1:])
    assert ours == theirs == {
        "interval.ms": "60000", "metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.", "match": "client_software_name=kcat,client_id=app-.*"
    }
    assert {c["source"] for c in described["configs"]} == {"DYNAMIC_CLIENT_METRICS_CONFIG"}

    bad = kctl(*b, "config", "alter", "client-metrics", name, "--set", "interval.ms=10")
    assert bad.exit_code == ExitCode.INVALID, bad.stderr
    assert bad.stderr == f"error: unable to alter configs of client-metrics subscription {name}: INVALID_REQUEST: Invalid value 10 for interval.ms, interval must be between 100 and 3600000 (1 hour)\n"

    unknown = kctl(*b, "config", "describe", "client-metrics", name + "-none")
    assert (unknown.exit_code, unknown.stderr) == (
        ExitCode.NOT_FOUND, f"error: unable to describe configs of client-metrics subscription {name}-none: no such subscription\n"
    )
    assert kctl(*b, "config", "delete", "client-metrics", name).exit_code == ExitCode.ABORTED
    dry = kctl(*b, "config", "delete", "client-metrics", name, "--dry-run")
    assert (dry.exit_code, dry.stdout.splitlines()[1]) == (0, f"client-metrics\t{name}\tvalidated\t-interval.ms -match -metrics"), dry.stderr
    deleted = kctl(*b, "config", "delete", "client-metrics", name, name + "-none", "--yes")
    assert deleted.exit_code == ExitCode.PARTIAL_FAILURE, deleted.stderr
    assert f"{name}\taltered\t" in deleted.stdout

    def gone():
        assert name not in tool(kafka_cluster, "ClientMetricsCommand", "--list").split()

    eventually(gone)


def test_group_configs(kctl, kafka_cluster, unique_name):
    b = ("-b", kafka_cluster.bootstrap)
    group = unique_name("g")
    assert kctl(*b, "config", "alter", "group", group, "--set", "consumer.session.timeout.ms=50000").exit_code == 0

    def applied():
        described, = as_json(kctl, kafka_cluster, "config", "describe", "group", group)
        assert [(c["name"], c["value"], c["source"]) for c in described["configs"]] == [("consumer.session.timeout.ms", "50000", "DYNAMIC_GROUP_CONFIG")]

    eventually(applied)
    proc = kafka_cluster.kafka.run_tool(kafka_cluster.kafka.config_command, "--bootstrap-server", kafka_cluster.bootstrap,
                                        "--describe", "--entity-type", "groups", "--entity-name", group)
    assert "consumer.session.timeout.ms=50000" in proc.stdout, proc.stdout + proc.stderr


def test_bundled_broker_has_no_features_or_quorum(kctl, cluster):
    if cluster.backend != "bundled":
        pytest.skip("the bundled broker's answers")
    b = ("-b", cluster.bootstrap)
    listed = kctl(*b, "feature", "list")
    assert (listed.exit_code, listed.stdout, listed.stderr) == (0, "FEATURE\tFINALIZED\tSUPPORTED-MIN\tSUPPORTED-MAX\n", "the cluster reports no feature flags\n")
    quorum = kctl(*b, "cluster", "quorum")
    assert (quorum.exit_code, quorum.stderr) == (
        ExitCode.INVALID,
        "error: unable to describe the metadata quorum: the cluster does not support the KRaft metadata quorum (DescribeQuorum, Kafka 3.3+ "
        "in KRaft mode; kctl's bundled broker runs no quorum)\n",
    )
    metrics = kctl(*b, "config", "describe", "client-metrics")
    assert (metrics.exit_code, metrics.stderr) == (
        ExitCode.INVALID, "error: unable to list client-metrics subscriptions: the cluster does not support client metrics (KIP-714, Kafka 3.7+)\n"
    )


def test_quorum_says_whether_it_is_dynamic(kctl, kafka_cluster, tmp_path):
    """kraft.version as Kafka's FeatureCommand describes it: 0 (static) on the suite's
    clusters, formatted with controller.quorum.voters; 1 (dynamic) on a node formatted
    --standalone (KIP-853)."""
    def kraft_version(cluster) -> int:
        described = cluster.run_tool("org.apache.kafka.tools.FeatureCommand", "--bootstrap-server", cluster.bootstrap, "describe")
        assert described.returncode == 0, described.stderr
        line = next(line for line in described.stdout.splitlines() if "kraft.version" in line)
        return int(re.search(r"FinalizedVersionLevel:\s*(\d+)", line).group(1))

    static = as_json(kctl, kafka_cluster, "cluster", "quorum")
    assert (static["kraft_version"], static["dynamic"]) == (kraft_version(kafka_cluster.kafka), False)
    if kafka_cluster.kafka.version < "3.9":
        return
    from tests.backends.kafka import TEST_TOOL_JVM_OPTIONS, KafkaCluster

    dynamic = KafkaCluster(nodes=1, workdir=tmp_path / "standalone", standalone=True, tool_jvm_options=TEST_TOOL_JVM_OPTIONS,
                           version=kafka_cluster.kafka.version)
    try:
        dynamic.start()
        quorum = kctl("-b", dynamic.bootstrap, "cluster", "quorum")
        assert quorum.exit_code == 0, quorum.stderr
        assert "KRAFT-VERSION\t1\nDYNAMIC\ttrue\n" in quorum.stdout, quorum.stdout
        assert kraft_version(dynamic) == 1
    finally:
        dynamic.stop()
