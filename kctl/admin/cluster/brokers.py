"""Cluster and broker information (DescribeCluster, DescribeQuorum)."""

from __future__ import annotations

from kctl.admin.client.session import AdminSession
from kctl.errors import KctlError
from kctl.messages import apis
from kctl.values import Value

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any

    from kctl.messages.api import Api



class BrokerInfo(Value):
    __slots__ = ("id", "host", "port", "rack", "is_controller")

    def __init__(self, *, id: int, host: str, port: int, rack: str | None, is_controller: bool):
        self.id = id
        self.host = host
        self.port = port
        self.rack = rack
        # True for the active controller (the KRaft metadata quorum leader) in combined mode.
        self.is_controller = is_controller


class BrokerState(Value):
    """A registered broker and whether the controller has fenced it (KIP-1073: a broker
    that stopped heartbeating, or is starting or shutting down, is registered but fenced)."""

    __slots__ = ("id", "host", "port", "rack", "is_controller", "state")

    def __init__(self, *, id: int, host: str, port: int, rack: str | None, is_controller: bool, state: str):
        self.id = id
        self.host = host
        self.port = port
        self.rack = rack
        self.is_controller = is_controller
        # fenced | unfenced
        self.state = state


class ClusterInfo(Value):
    __slots__ = ("cluster_id", "controller_id", "brokers")

    def __init__(self, *, cluster_id: str | None, controller_id: int | None, brokers: tuple[BrokerInfo, ...]):
        self.cluster_id = cluster_id
        self.controller_id = controller_id
        self.brokers = brokers


# DescribeQuorum of the metadata log's one partition, and its API key.
_QUORUM = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
# Only the quorum's leader is read here: version 1 at most, as version 2 adds the voters'
# directory ids, whose decoding imports uuid (and platform: ~2.5 ms of `cluster info`).
_QUORUM_VERSIONS = (0, 1)
_DESCRIBE_QUORUM = 55


def active_controller(session: AdminSession, reported: int | None, quorum: Any = None) -> int | None:
    """The node id of the active controller.

    In KRaft clusters DescribeCluster names a random live broker as "controller" (the
    real controllers are hidden from clients), so the metadata quorum's leader is asked
    for instead (`quorum`: a DescribeQuorum answer the caller already has). Clusters
    without DescribeQuorum (ZooKeeper-era Kafka, some compatibles, kctl's bundled broker)
    report their real controller through DescribeCluster, which is used then.
    """
    if quorum is None:
        if not _has_quorum(session):
            return reported
        wire = session.wire
        try:
            (quorum,) = wire.call("describe metadata quorum", lambda: wire.fan_out([(None, apis.DESCRIBE_QUORUM, _QUORUM, *_QUORUM_VERSIONS)], wire.deadline()))
        except KctlError:
            return None
    if quorum.error_code:
        return None  # not authorised to describe the cluster, say: not known
    for topic in quorum.topics:
        for partition in topic.partitions:
            if not partition.error_code and partition.leader_id >= 0:
                return partition.leader_id
    return None


def _has_quorum(session: AdminSession) -> bool:
    try:
        return _DESCRIBE_QUORUM in session.api_versions
    except KctlError:
        return False


def describe_cluster(session: AdminSession) -> ClusterInfo:
    """The cluster id, the active controller and the brokers (DescribeCluster and
    DescribeQuorum through kctl's wire client: no client library to import)."""
    from kctl.admin.client.errors import for_kafka_code

    wire = session.wire

    def ask() -> list[Any]:
        # Both asked at once (one round trip, not two) where the cluster has DescribeQuorum;
        # whether it has is the bootstrap connection's to say (beside ApiVersions when
        # kctl's cache knows the broker: no round trip of its own).
        deadline = wire.deadline()
        requests: list[tuple[int | None, Api[Any, Any], Any, int, int]] = [(None, apis.DESCRIBE_CLUSTER, {}, 0, 2)]
        if wire.bootstrap(deadline).supports("DescribeQuorum", *_QUORUM_VERSIONS):
            requests.append((None, apis.DESCRIBE_QUORUM, _QUORUM, *_QUORUM_VERSIONS))
        return wire.fan_out(requests, deadline)

    result, *quorum = wire.call("describe cluster", ask)
    if result.error_code:
        raise for_kafka_code(result.error_code, result.error_message, "describe cluster")
    reported = result.controller_id if result.controller_id >= 0 else None
    controller_id = active_controller(session, reported, quorum[0]) if quorum else reported
    brokers = tuple(
        sorted(
            (
                BrokerInfo(
                    id=node.broker_id,
                    host=node.host,
                    port=node.port,
                    rack=node.rack or None,
                    is_controller=node.broker_id == controller_id,
                )
                for node in result.brokers
            ),
            key=lambda b: b.id,
        )
    )
    return ClusterInfo(cluster_id=result.cluster_id, controller_id=controller_id, brokers=brokers)


def registered_brokers(session: AdminSession) -> list[BrokerState]:
    """Every registered broker, fenced ones included (DescribeCluster v2, Kafka 4.0+: the
    answer `kafka-cluster list-endpoints --include-fenced-brokers` prints)."""
    from kctl.admin.client.errors import for_kafka_code

    action = "list brokers with the fenced ones"
    result = session.ask(action, apis.DESCRIBE_CLUSTER, {"include_fenced_brokers": True}, 2, 2,
                         needs="listing fenced brokers (DescribeCluster v2, Kafka 4.0+)")
    if result.error_code:
        raise for_kafka_code(result.error_code, result.error_message, action)
    controller_id = active_controller(session, result.controller_id if result.controller_id >= 0 else None)
    return sorted((BrokerState(id=node.broker_id, host=node.host, port=node.port, rack=node.rack or None,
                               is_controller=node.broker_id == controller_id, state="fenced" if node.is_fenced else "unfenced")
                   for node in result.brokers), key=lambda b: b.id)
