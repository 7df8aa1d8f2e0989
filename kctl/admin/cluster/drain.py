"""Decommissioning brokers: moving every replica off them (a drain), and removing the
registration of a broker that is gone (UnregisterBroker, KIP-631).

A drain is a reassignment that places every partition holding a drained broker on the
other live brokers, keeping its replication factor and rack spread, choosing the least
loaded brokers (kctl.admin.cluster.replication.generate over the whole cluster, so the
load counted is every partition's); partitions without a drained broker do not move.
Leadership leaves with the replicas: a partition whose leader is removed from its replica
set elects the next preferred replica.

It is resumable: planned again while it runs, a partition whose in-progress reassignment
already leaves the drained brokers is waited for, not moved a second time.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kctl.admin.client.errors import for_kafka_code
from kctl.admin.client.session import AdminSession
from kctl.admin.cluster.replication import PartitionMove, assignments, generate, list_reassignments
from kctl.errors import InvalidError, NotFoundError
from kctl.messages import apis


@dataclass(frozen=True, kw_only=True)
class DrainPlan:
    brokers: tuple[int, ...]
    # Partitions to reassign now.
    moves: tuple[PartitionMove, ...]
    # Partitions whose in-progress reassignment already takes them off the brokers.
    moving: tuple[PartitionMove, ...]


# While moves are in flight, how often (and how long apart) the layout is read again
# before a partition wider than the brokers left is taken as real.
_SETTLE_ATTEMPTS = 5
_SETTLE_PAUSE_S = 0.5


def plan_drain(session: AdminSession, brokers: Sequence[int]) -> DrainPlan:
    """The reassignment that leaves `brokers` without replicas."""
    drained = tuple(sorted(set(brokers)))
    action = f"drain broker(s) {', '.join(map(str, drained))}"
    for attempt in range(_SETTLE_ATTEMPTS):
        # The moves in flight first, then the layout: a move that ends in between shows
        # its final replicas in the layout, not the wider set it has while it runs.
        in_flight = {(r.topic, r.partition): r for r in list_reassignments(session)}
        current, racks = assignments(session)
        known = set(racks) | {b for replicas in current.values() for b in replicas}
        unknown = [b for b in drained if b not in known]
        if unknown:
            raise NotFoundError(action=action, cause=f"broker(s) {', '.join(map(str, unknown))} not in the cluster "
                                                    f"(brokers: {', '.join(map(str, sorted(racks)))})")
        targets = {b: rack for b, rack in racks.items() if b not in drained}
        moving, settled = _split(current, in_flight, drained)
        affected = {key: replicas for key, replicas in settled.items() if set(replicas) & set(drained)}
        needed = max((len(r) for r in affected.values()), default=0)
        if needed <= len(targets):
            break
        if not in_flight or attempt == _SETTLE_ATTEMPTS - 1:
            raise InvalidError(action=action, cause=f"a partition has {needed} replica(s) and only {len(targets)} other live broker(s) "
                                                    "would be left to hold them", hint=_no_room_hint(needed, len(targets)))
        # A move that has just ended may still show its wider replica set in the brokers'
        # metadata for a moment: look again before refusing.
        time.sleep(_SETTLE_PAUSE_S)
    # Targets are chosen by the load of every partition, but only the affected ones move.
    load = Counter(b for key, replicas in settled.items() if key not in affected for b in replicas)
    planned = generate(affected, targets, base_load=load) if affected else []
    moves = tuple(m for m in planned if m.target != m.current)
    return DrainPlan(brokers=drained, moves=moves, moving=tuple(sorted(moving, key=lambda m: (m.topic, m.partition))))


def _split(current: dict, in_flight: dict, drained: tuple[int, ...]) -> tuple[list[PartitionMove], dict]:
    """(partitions whose move in flight already leaves `drained`, every other partition's
    replicas: for one in flight, those it had before its move)."""
    moving, settled = [], {}
    for key, replicas in current.items():
        flight = in_flight.get(key)
        if flight is not None:
            move = flight.move
            if not set(move.target) & set(drained):
                moving.append(move)
                continue
            replicas = move.current
        settled[key] = replicas
    return moving, settled


def unregister(session: AdminSession, broker: int, *, force: bool = False, confirm: Callable[[], None] | None = None) -> None:
    """Remove `broker`'s registration (UnregisterBroker, Kafka 3.0+ in KRaft mode). Refused,
    unless `force`, for a broker that is alive or still named as a replica; `confirm` is
    called once those checks pass, before anything changes."""
    from kctl.admin.cluster.brokers import registered_brokers

    action = f"unregister broker {broker}"
    try:
        registered = {b.id: b.state for b in registered_brokers(session)}
    except InvalidError:
        registered = None  # before Kafka 4.0 only the live ones are listed
    metadata = session.metadata(action)
    if not force:
        if broker in metadata.brokers or (registered is not None and registered.get(broker) == "unfenced"):
            raise InvalidError(action=action, cause=f"broker {broker} is alive",
                               hint="stop it first: a running broker registers again at once")
        holding = sum(1 for t in metadata.topics.values() for p in t.partitions.values() if broker in p.replicas)
        if holding:
            raise InvalidError(action=action, cause=f"broker {broker} still holds replicas of {holding} partition(s)",
                               hint="drain it first; {force} unregisters it anyway, and those replicas stay offline")
    if registered is not None and broker not in registered:
        raise NotFoundError(action=action, cause=f"broker {broker} is not registered")
    if confirm is not None:
        confirm()
    answer = session.ask(action, apis.UNREGISTER_BROKER, {"broker_id": broker}, 0, 0,
                         needs="unregistering brokers (UnregisterBroker, Kafka 3.0+ in KRaft mode)")
    if answer.error_code:
        raise for_kafka_code(answer.error_code, answer.error_message, action)


def _no_room_hint(needed: int, others: int) -> str:
    """What makes room for the drained brokers' replicas (`needed` per partition, more than
    the `others` left): a replication factor can be lowered to what they can hold, never
    below 1."""
    if not others:
        return "no other broker would be left to move the replicas to: add a broker first"
    return f"add brokers, or lower the replication factor of those topics to {others} first (kctl replication reassign)"
