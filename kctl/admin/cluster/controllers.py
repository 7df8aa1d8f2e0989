"""KRaft controller membership (KIP-853): adding an observer controller to the voters of a
dynamic quorum, and removing a voter.

kafka-metadata-quorum add-controller needs the new controller's own config file and must
run where that file is; remove-controller needs the voter's directory id. Both are in the
cluster: DescribeQuorum names every voter and observer with its directory id, and
DescribeCluster asked of a voter's CONTROLLER listener (endpoint type 2, what
`kafka-cluster list-endpoints --bootstrap-controller` asks) lists every registered
controller with its endpoint, observers included. AddRaftVoter and RemoveRaftVoter go to
any broker, which forwards them to the active controller.
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass, replace

from kctl.admin.client.errors import for_kafka_code
from kctl.admin.client.session import AdminSession
from kctl.admin.cluster.features import Quorum, describe_quorum
from kctl.errors import AlreadyExistsError, InvalidError, KctlError, NotFoundError, TimeoutError_
from kctl.messages import apis

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from kctl.messages import types as t

NEEDS_DYNAMIC = "controller membership changes (KIP-853, Kafka 3.9+)"
_CONTROLLERS = 2  # DescribeCluster's endpoint type for controllers (KIP-919)


@dataclass(frozen=True, kw_only=True)
class VoterChange:
    # add | remove
    change: str
    node_id: int
    directory_id: str
    # The controller's endpoints (LISTENER://host:port) that the voters will use.
    endpoints: tuple[str, ...]
    # The voters before, and as they will be (planned) or are (after the change).
    voters_before: tuple[int, ...]
    voters: tuple[int, ...]
    # planned | added | removed | submitted (--no-wait: sent, not waited for)
    status: str = "planned"


def _dynamic(session: AdminSession, action: str) -> Quorum:
    """The quorum, or why its controllers cannot change (said as the change, `action`)."""
    try:
        quorum = describe_quorum(session)
    except KctlError as exc:
        raise exc.but(action=action) from exc
    if quorum.kraft_version is None:
        raise InvalidError(action=action, cause=f"the cluster does not support {NEEDS_DYNAMIC}")
    if not quorum.dynamic:
        raise InvalidError(action=action,
                           cause="the metadata quorum is static (kraft.version 0: its voters are fixed by controller.quorum.voters)",
                           hint="a quorum whose storage Kafka 3.9+ formatted with a standalone controller or initial controllers is "
                                "dynamic, and Kafka 4.1+ makes a static one dynamic when its kraft.version feature is upgraded to 1")
    return quorum


def _controller_endpoints(session: AdminSession, quorum: Quorum, node_id: int, action: str) -> tuple[str, ...]:
    """`node_id`'s controller endpoints, from DescribeCluster asked of a voter's controller
    listener (the voters' listener name: controllers share controller.listener.names)."""
    from kctl.admin.client.wire import split_address

    for voter in quorum.voters:
        for endpoint in voter.endpoints:
            listener, _, address = endpoint.partition("://")
            host, port = split_address(address)
            connection = session.wire.connect(host, port, action)
            try:
                answer = connection.request("DescribeCluster", connection.version("DescribeCluster", 1, 2),
                                            {"endpoint_type": _CONTROLLERS, "include_cluster_authorized_operations": False},
                                            session.wire.deadline())
            finally:
                connection.close()
            if answer.error_code:
                raise for_kafka_code(answer.error_code, answer.error_message, action)
            return tuple(f"{listener}://{c.host}:{c.port}" for c in answer.brokers if c.broker_id == node_id)
    return ()


def plan_add(session: AdminSession, node_id: int) -> VoterChange:
    """Adding observer controller `node_id` to the voters."""
    action = f"add controller {node_id}"
    quorum = _dynamic(session, action)
    voters = tuple(v.node_id for v in quorum.voters)
    if node_id in voters:
        raise AlreadyExistsError(action=action, cause=f"node {node_id} is already a voter (voters: {', '.join(map(str, voters))})")
    observer = next((o for o in quorum.observers if o.node_id == node_id), None)
    if observer is None:
        raise NotFoundError(action=action, cause=f"node {node_id} is not an observer of the metadata quorum",
                            hint="start it as a controller (process.roles=controller, its storage formatted without initial "
                                 "controllers, with controller.quorum.bootstrap.servers) and add it once it has caught up")
    endpoints = _controller_endpoints(session, quorum, node_id, action)
    if not endpoints:
        raise InvalidError(action=action, cause=f"node {node_id} is not a controller (it registered no controller endpoint: a broker "
                                                "observes the quorum too)")
    if observer.directory_id is None:
        raise InvalidError(action=action, cause=f"node {node_id} reports no directory id (a controller older than Kafka 3.9)")
    return VoterChange(change="add", node_id=node_id, directory_id=observer.directory_id, endpoints=endpoints,
                       voters_before=voters, voters=tuple(sorted((*voters, node_id))))


def plan_remove(session: AdminSession, node_id: int, directory_id: str | None = None) -> VoterChange:
    """Removing voter `node_id` (its directory id from the quorum unless given)."""
    action = f"remove controller {node_id}"
    quorum = _dynamic(session, action)
    voters = tuple(v.node_id for v in quorum.voters)
    voter = next((v for v in quorum.voters if v.node_id == node_id), None)
    if voter is None and directory_id is None:
        raise NotFoundError(action=action, cause=f"node {node_id} is not a voter (voters: {', '.join(map(str, voters))})")
    if voters == (node_id,):
        # Kafka answers this with an unclear VoterNotFoundException; say what it means.
        raise InvalidError(action=action, cause=f"node {node_id} is the last voter: the quorum would have no controller",
                           hint="add another controller first")
    found = directory_id or (voter.directory_id if voter else None)
    if not found:
        raise InvalidError(action=action, cause=f"the quorum reports no directory id for node {node_id}",
                           hint="give the controller's directory id (its meta.properties' directory.id)")
    return VoterChange(change="remove", node_id=node_id, directory_id=found, endpoints=voter.endpoints if voter else (),
                       voters_before=voters, voters=tuple(v for v in voters if v != node_id))


def _uuid_bytes(text: str) -> bytes:
    """A directory id as Kafka prints it (URL-safe base64, no padding) as its 16 bytes."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raw = b""
    if len(raw) != 16:
        from kctl.errors import UsageError

        raise UsageError(action=f"parse directory id {text!r}", cause="expected 22 characters of URL-safe base64, as Kafka prints it")
    return raw


def parse_directory_id(text: str) -> str:
    _uuid_bytes(text)
    return text


def apply(session: AdminSession, plan: VoterChange, *, wait: bool = True) -> VoterChange:
    """Send the change; with `wait`, until DescribeQuorum shows it (or --timeout)."""
    action = f"{plan.change} controller {plan.node_id}"
    cluster_id = _cluster_id(session)
    if plan.change == "add":
        listeners: list[t.AddRaftVoterRequestListener] = []
        for endpoint in plan.endpoints:
            name, _, address = endpoint.partition("://")
            host, _, port = address.rpartition(":")
            listeners.append({"name": name, "host": host.strip("[]"), "port": int(port)})
        adding: t.AddRaftVoterRequest = {
            "cluster_id": cluster_id, "timeout_ms": int(session.timeout * 1000), "voter_id": plan.node_id,
            "voter_directory_id": _uuid_bytes(plan.directory_id), "listeners": listeners, "ack_when_committed": True}
        answer: t.AddRaftVoterResponse | t.RemoveRaftVoterResponse = session.ask(action, apis.ADD_RAFT_VOTER, adding, 0, 1, needs=NEEDS_DYNAMIC)
    else:
        removing: t.RemoveRaftVoterRequest = {"cluster_id": cluster_id, "voter_id": plan.node_id,
                                              "voter_directory_id": _uuid_bytes(plan.directory_id)}
        answer = session.ask(action, apis.REMOVE_RAFT_VOTER, removing, 0, 0, needs=NEEDS_DYNAMIC)
    if answer.error_code:
        raise for_kafka_code(answer.error_code, getattr(answer, "error_message", None), action)
    if not wait:
        return replace(plan, status="submitted")
    deadline = time.monotonic() + session.timeout
    while True:
        voters = tuple(v.node_id for v in describe_quorum(session).voters)
        if voters == plan.voters:
            return replace(plan, status="added" if plan.change == "add" else "removed")
        if time.monotonic() >= deadline:
            raise TimeoutError_(action=action, cause=f"the quorum still has voters {', '.join(map(str, voters))} after {session.timeout:g}s",
                                hint="the change was sent; `kctl cluster quorum` shows when it is done")
        time.sleep(0.2)


def _cluster_id(session: AdminSession) -> str | None:
    from kctl.admin.cluster.brokers import describe_cluster

    return describe_cluster(session).cluster_id
