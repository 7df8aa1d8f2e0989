"""kctl cluster info and kctl broker list against real brokers."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient

pytestmark = [pytest.mark.integration, pytest.mark.kafka39]


_LEADERS: dict[str, int] = {}


def quorum_leader(cluster) -> int:
    """The active controller, as Kafka's own kafka-metadata-quorum tool reports it."""
    if cluster.bootstrap not in _LEADERS:
        if cluster.kafka is None:
            pytest.skip("needs Apache Kafka's own tools")
        proc = cluster.kafka.run_tool(
            "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server", cluster.bootstrap, "describe", "--status"
        )
        assert proc.returncode == 0, proc.stderr
        (line,) = [line for line in proc.stdout.splitlines() if line.startswith("LeaderId:")]
        _LEADERS[cluster.bootstrap] = int(line.split()[-1])
    return _LEADERS[cluster.bootstrap]


def assert_quorum_leader(cluster, reported: int) -> None:
    """`reported` was the quorum's leader when kctl asked: the tool's answer from before
    kctl ran, or (leadership moves when the leader stalls past the 2 s quorum fetch
    timeout, as on a loaded machine) the tool's answer from after it."""
    if reported != quorum_leader(cluster):
        del _LEADERS[cluster.bootstrap]
        assert reported == quorum_leader(cluster)


def _expected_brokers(cluster):
    client = AdminClient({"bootstrap.servers": cluster.bootstrap})
    result = client.describe_cluster(request_timeout=10).result()
    return result, sorted(result.nodes, key=lambda n: n.id)


def test_cluster_info_json(kctl, cluster):
    quorum_leader(cluster)  # asked before kctl: see assert_quorum_leader
    result = kctl("-b", cluster.bootstrap, "cluster", "info", "-o", "json")
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    expected, nodes = _expected_brokers(cluster)
    assert info["cluster_id"] == expected.cluster_id
    assert_quorum_leader(cluster, info["controller_id"])
    assert [(b["id"], b["host"], b["port"], b["rack"]) for b in info["brokers"]] == [(n.id, n.host, n.port, n.rack) for n in nodes]
    assert len(info["brokers"]) == cluster.nodes
    assert sum(b["is_controller"] for b in info["brokers"]) == 1


def test_cluster_info_text(kctl, cluster):
    expected, nodes = _expected_brokers(cluster)
    quorum_leader(cluster)
    result = kctl("-b", cluster.bootstrap, "cluster", "info")
    assert result.exit_code == 0, result.stderr
    leader = int(result.stdout.splitlines()[1].split("\t")[1])
    assert_quorum_leader(cluster, leader)
    lines = [f"CLUSTER-ID\t{expected.cluster_id}", f"CONTROLLER-ID\t{leader}", "", "BROKERS", "ID\tHOST\tPORT\tRACK\tCONTROLLER"]
    lines += [f"{n.id}\t{n.host}\t{n.port}\t\t{'true' if n.id == leader else 'false'}" for n in nodes]
    assert result.stdout == "\n".join(lines) + "\n"


def test_broker_list_terminal_and_piped(kctl, cluster):
    expected, nodes = _expected_brokers(cluster)
    quorum_leader(cluster)
    piped = kctl("-b", cluster.bootstrap, "broker", "list", "--no-headers")
    (leader,) = [int(row.split("\t")[0]) for row in piped.stdout.splitlines() if row.endswith("\ttrue")]
    assert_quorum_leader(cluster, leader)
    assert piped.stdout == "".join(f"{n.id}\t{n.host}\t{n.port}\t\t{'true' if n.id == leader else 'false'}\n" for n in nodes)
    table = kctl("-b", cluster.bootstrap, "broker", "list", tty=True, env={"NO_COLOR": "1"})
    assert table.exit_code == 0
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["ID", "HOST", "PORT", "RACK", "CONTROLLER"]
    (leader,) = [int(row.split()[0]) for row in rows if row.split()[-1] == "yes"]
    assert_quorum_leader(cluster, leader)
    assert [r.split() for r in rows] == [[str(n.id), n.host, str(n.port), "-", "yes" if n.id == leader else "no"] for n in nodes]


def test_bootstrap_from_environment_and_context(kctl, cluster):
    assert kctl("broker", "list", env={"KCTL_BOOTSTRAP_SERVERS": cluster.bootstrap}).exit_code == 0
    kctl("context", "set", "here", "-b", cluster.bootstrap)
    result = kctl("--context", "here", "broker", "list", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(result.stdout)) == cluster.nodes


@pytest.mark.min_nodes(3)
def test_broker_list_includes_fenced_brokers_as_kafka_cluster_does(kctl, cluster):
    """A stopped broker leaves `broker list` once the controller fences it; `--include-fenced`
    still lists it, STATE fenced, as Kafka's `kafka-cluster list-endpoints
    --include-fenced-brokers` does; once restarted it is unfenced again."""
    from tests.support.eventually import eventually

    if cluster.kafka is None:
        pytest.skip("needs Apache Kafka")
    stopped = 3

    def states() -> dict[int, str]:
        run = kctl("-b", cluster.bootstrap, "broker", "list", "--include-fenced", "-o", "json")
        assert run.exit_code == 0, run.stderr
        return {b["id"]: b["state"] for b in json.loads(run.stdout)}

    def theirs() -> dict[int, str]:
        proc = cluster.kafka.run_tool("org.apache.kafka.tools.ClusterTool", "list-endpoints", "--bootstrap-server", cluster.bootstrap,
                                      "--include-fenced-brokers")
        assert proc.returncode == 0, proc.stderr
        header, *rows = [line.split() for line in proc.stdout.splitlines() if line.strip()]
        return {int(row[0]): row[header.index("STATE")] for row in rows}

    cluster.kafka.stop_node(stopped)
    try:
        def fenced() -> dict[int, str]:
            listed = kctl("-b", cluster.bootstrap, "broker", "list", "-o", "json")
            ids = [b["id"] for b in json.loads(listed.stdout)]
            found = states()
            assert stopped not in ids and found[stopped] == "fenced", (ids, found)
            return found
        found = eventually(fenced, timeout=60)
        assert found == {1: "unfenced", 2: "unfenced", 3: "fenced"}
        assert theirs() == found
    finally:
        cluster.kafka.start_node(stopped)

    def unfenced() -> None:
        assert states() == {1: "unfenced", 2: "unfenced", 3: "unfenced"}
    eventually(unfenced, timeout=60)


def test_broker_list_include_fenced_on_a_cluster_without_it_is_one_line(kctl, cluster):
    if cluster.kafka is None or not cluster.kafka.version.startswith("3."):
        pytest.skip("Kafka 4.x and the bundled broker list fenced brokers")
    run = kctl("-b", cluster.bootstrap, "broker", "list", "--include-fenced")
    assert run.exit_code == 65 and len(run.stderr.splitlines()) == 1, run.stderr
    assert "the cluster does not support listing fenced brokers (DescribeCluster v2, Kafka 4.0+)" in run.stderr


def _kafka_api_versions(kafka_tools, cluster) -> dict[int, set[tuple[str, int, int, int]]]:
    """{broker: {(API, key, min, max)}} as Kafka's own kafka-broker-api-versions prints it
    (APIs the broker lacks, UNSUPPORTED, left out)."""
    import re

    proc = kafka_tools.run_tool("org.apache.kafka.tools.BrokerApiVersionsCommand", "--bootstrap-server", cluster.bootstrap)
    assert proc.returncode == 0, proc.stderr
    found: dict[int, set[tuple[str, int, int, int]]] = {}
    broker = None
    for line in proc.stdout.splitlines():
        if (head := re.match(r"\S+ \(id: (\d+) ", line)) is not None:
            broker = int(head.group(1))
            found[broker] = set()
        elif (api := re.match(r"\s+(\w+)\((\d+)\): (\d+)(?: to (\d+))? \[", line)) is not None:  # "0 to 4 [usable...", or "0 [usable..."
            assert broker is not None
            low = int(api.group(3))
            found[broker].add((api.group(1), int(api.group(2)), low, int(api.group(4) or low)))
    return found


def test_api_versions_are_kafkas_own_tools(kctl, cluster, kafka_tools):
    """Every broker's APIs and their version ranges, as Kafka's kafka-broker-api-versions
    reports them; USABLE is within both ranges, empty only for APIs kctl has no codec of."""
    result = kctl("-b", cluster.bootstrap, "cluster", "api-versions", "-o", "json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    ours: dict[int, set[tuple[str, int, int, int]]] = {}
    for row in rows:
        ours.setdefault(row["broker"], set()).add((row["api"], row["key"], row["min_version"], row["max_version"]))
        if row["usable_version"] is not None:
            assert row["min_version"] <= row["usable_version"] <= row["max_version"], row
    theirs = _kafka_api_versions(kafka_tools, cluster)
    assert {b: {r[1:] for r in apis} for b, apis in ours.items()} == {b: {r[1:] for r in apis} for b, apis in theirs.items()}
    named = {b: {r for r in apis if not r[0].startswith("API ")} for b, apis in ours.items()}  # APIs newer than kctl's table
    assert all(named[b] <= theirs[b] for b in named)
    assert len(ours) == cluster.nodes
    usable = {row["api"]: row["usable_version"] for row in rows}
    assert usable["Metadata"] is not None and usable["ApiVersions"] is not None

    one = kctl("-b", cluster.bootstrap, "cluster", "api-versions", "--broker", str(rows[-1]["broker"]))
    assert one.exit_code == 0, one.stderr
    lines = one.stdout.splitlines()
    assert lines[0].split("\t") == ["BROKER", "API", "KEY", "MIN", "MAX", "USABLE"]
    assert {line.split("\t")[0] for line in lines[1:]} == {str(rows[-1]["broker"])}


def test_api_versions_of_a_broker_the_cluster_lacks_is_one_line(kctl, cluster):
    from kctl.errors import ExitCode

    result = kctl("-b", cluster.bootstrap, "cluster", "api-versions", "--broker", "99")
    assert result.exit_code == ExitCode.NOT_FOUND
    assert result.stderr.startswith("error: unable to describe API versions: broker 99 is not in the cluster"), result.stderr
    assert result.stdout == ""
