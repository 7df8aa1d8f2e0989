"""Cluster and broker information (DescribeCluster, DescribeQuorum)."""

from __future__ import annotations

from dataclasses import dataclass

from kctl.admin.client.session import AdminSession
from kctl.errors import KctlError


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerInfo:
    id: int
    host: str
    port: int
    rack: str | None
    # True for the active controller (the KRaft metadata quorum leader) in combined mode.
    is_controller: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterInfo:
    cluster_id: str | None
    controller_id: int | None
    brokers: tuple[BrokerInfo, ...]


def active_controller(session: AdminSession, reported: int | None) -> int | None:
    """The node id of the active controller.

    In KRaft clusters DescribeCluster names a random live broker as "controller" (the
    real controllers are hidden from clients), so the metadata quorum's leader is asked
    for instead. Clusters without DescribeQuorum (ZooKeeper-era Kafka, some compatibles)
    report their real controller through DescribeCluster, which is used then.
    """
    try:
        quorum = session.run_kafka_python(lambda c: c.describe_metadata_quorum(), "describe metadata quorum")
    except KctlError as exc:
        if exc.kafka_error == "UNSUPPORTED_VERSION":
            return reported
        return None
    for topic in quorum.get("topics", []):
        for partition in topic.get("partitions", []):
            leader = partition.get("leader_id")
            if leader is not None and leader >= 0:
                return leader
    return None


def describe_cluster(session: AdminSession) -> ClusterInfo:
    result = session.wait(
        session.client.describe_cluster(request_timeout=session.timeout),
        "describe cluster",
    )
    reported = result.controller.id if result.controller is not None else None
    controller_id = active_controller(session, reported)
    brokers = tuple(
        sorted(
            (
                BrokerInfo(
                    id=node.id,
                    host=node.host,
                    port=node.port,
                    rack=node.rack or None,
                    is_controller=node.id == controller_id,
                )
                for node in result.nodes
            ),
            key=lambda b: b.id,
        )
    )
    return ClusterInfo(cluster_id=result.cluster_id, controller_id=controller_id, brokers=brokers)
