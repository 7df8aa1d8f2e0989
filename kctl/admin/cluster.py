"""Cluster and broker information (DescribeCluster)."""

from __future__ import annotations

from kctl.admin.models import BrokerInfo, ClusterInfo
from kctl.admin.session import AdminSession


def describe_cluster(session: AdminSession) -> ClusterInfo:
    result = session.wait(
        session.client.describe_cluster(request_timeout=session.timeout),
        "describe cluster",
    )
    controller_id = result.controller.id if result.controller is not None else None
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
