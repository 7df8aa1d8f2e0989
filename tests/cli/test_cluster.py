"""kctl cluster info and kctl broker list against real brokers."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient

pytestmark = pytest.mark.integration


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


def _expected_brokers(cluster):
    client = AdminClient({"bootstrap.servers": cluster.bootstrap})
    result = client.describe_cluster(request_timeout=10).result()
    return result, sorted(result.nodes, key=lambda n: n.id)


def test_cluster_info_json(kctl, cluster):
    result = kctl("-b", cluster.bootstrap, "cluster", "info", "-o", "json")
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    expected, nodes = _expected_brokers(cluster)
    assert info["cluster_id"] == expected.cluster_id
    assert info["controller_id"] == quorum_leader(cluster)
    assert [(b["id"], b["host"], b["port"], b["rack"]) for b in info["brokers"]] == [(n.id, n.host, n.port, n.rack) for n in nodes]
    assert len(info["brokers"]) == cluster.nodes
    assert sum(b["is_controller"] for b in info["brokers"]) == 1


def test_cluster_info_text(kctl, cluster):
    expected, nodes = _expected_brokers(cluster)
    result = kctl("-b", cluster.bootstrap, "cluster", "info")
    assert result.exit_code == 0, result.stderr
    lines = [f"CLUSTER-ID\t{expected.cluster_id}", f"CONTROLLER-ID\t{quorum_leader(cluster)}", "", "BROKERS", "ID\tHOST\tPORT\tRACK\tCONTROLLER"]
    lines += [f"{n.id}\t{n.host}\t{n.port}\t\t{'true' if n.id == quorum_leader(cluster) else 'false'}" for n in nodes]
    assert result.stdout == "\n".join(lines) + "\n"


def test_broker_list_terminal_and_piped(kctl, cluster):
    expected, nodes = _expected_brokers(cluster)
    piped = kctl("-b", cluster.bootstrap, "broker", "list", "--no-headers")
    assert piped.stdout == "".join(
        f"{n.id}\t{n.host}\t{n.port}\t\t{'true' if n.id == quorum_leader(cluster) else 'false'}\n" for n in nodes
    )
    table = kctl("-b", cluster.bootstrap, "broker", "list", tty=True, env={"NO_COLOR": "1"})
    assert table.exit_code == 0
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["ID", "HOST", "PORT", "RACK", "CONTROLLER"]
    assert [r.split() for r in rows] == [
        [str(n.id), n.host, str(n.port), "-", "yes" if n.id == quorum_leader(cluster) else "no"] for n in nodes
    ]


def test_bootstrap_from_environment_and_context(kctl, cluster):
    assert kctl("broker", "list", env={"KCTL_BOOTSTRAP_SERVERS": cluster.bootstrap}).exit_code == 0
    kctl("context", "set", "here", "-b", cluster.bootstrap)
    result = kctl("--context", "here", "broker", "list", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(result.stdout)) == cluster.nodes
