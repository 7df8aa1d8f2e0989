"""kctl.admin.cluster.balance on layouts made by hand: each goal, its limits, and the
figure of merit (bytes moved against the lower bound). The plans run on real brokers in
tests/cli/test_balance.py."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from kctl.admin.cluster.balance import Options, plan_balance, rack_excess
from kctl.admin.cluster.layout import BrokerFacts, PartitionFacts
from kctl.admin.cluster.replication import PartitionMove
from kctl.admin.cluster.stepwise import steps

MB = 1 << 20


def brokers(racks: dict[int, str | None], capacity: dict[int, tuple[int, int]] | None = None) -> dict[int, BrokerFacts]:
    capacity = capacity or {}
    return {b: BrokerFacts(id=b, rack=rack, capacity_bytes=capacity.get(b, (None, None))[0], used_bytes=capacity.get(b, (None, None))[1])
            for b, rack in racks.items()}


def skewed(seed: int = 7, partitions: int = 400) -> tuple[dict[int, BrokerFacts], list[PartitionFacts]]:
    """Six brokers in three racks: 1-4 hold everything (large topics on 1-2), 5-6 are new."""
    rnd = random.Random(seed)
    racks = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
    found = []
    for i in range(partitions):
        large = i % 4 == 0
        pool = [(1, 2), (2, 1)] if large else [(1, 3), (3, 4), (2, 4), (4, 3), (3, 2)]
        replicas = rnd.choice(pool)
        size = rnd.randint(50, 150) * MB if large else rnd.randint(0, 5) * MB
        found.append(PartitionFacts(topic=f"t{i % 7}", partition=i // 7, replicas=replicas, leader=replicas[0], size_bytes=size))
    return brokers(racks), found


def after(partitions: list[PartitionFacts], plan) -> dict[tuple[str, int], tuple[int, ...]]:
    targets = {(m.topic, m.partition): m.target for m in plan.moves}
    return {(p.topic, p.partition): targets.get((p.topic, p.partition), p.replicas) for p in partitions}


def per_broker(partitions, layout, live) -> tuple[Counter, Counter, Counter]:
    size = {(p.topic, p.partition): p.size_bytes for p in partitions}
    on, count, lead = Counter({b: 0 for b in live}), Counter({b: 0 for b in live}), Counter({b: 0 for b in live})
    for key, replicas in layout.items():
        for b in replicas:
            on[b] += size[key]
            count[b] += 1
        lead[replicas[0]] += 1
    return on, count, lead


def within(counter: Counter, low: float, high: float) -> bool:
    mean = sum(counter.values()) / len(counter)
    return all(low * mean <= v <= high * mean for v in counter.values())


def test_new_brokers_get_their_share_moving_no_more_than_the_lower_bound():
    racks, partitions = skewed()
    plan = plan_balance(racks, partitions)
    layout = after(partitions, plan)
    on, count, lead = per_broker(partitions, layout, racks)
    assert within(on, 0.90, 1.10), on
    assert within(count, 0.75, 1.25), count
    assert within(lead, 0.75, 1.25), lead
    assert plan.bytes_moved <= 1.1 * plan.lower_bound_bytes, (plan.bytes_moved, plan.lower_bound_bytes)
    assert all(not rack_excess(r, {b: f.rack for b, f in racks.items()}, 3) for r in layout.values())
    assert not plan.unmet
    # Every replica set keeps its size; a broker holds at most one replica of a partition.
    assert all(len(layout[k]) == len(set(layout[k])) == len(p.replicas) for k, p in ((k, p) for p in partitions for k in [(p.topic, p.partition)]))
    skew = {s.measure: s for s in plan.skew}
    assert skew["bytes"].after < skew["bytes"].before and skew["bytes"].after <= 1.10
    rows = {r.broker: r for r in plan.brokers}
    assert rows[5].bytes_before == 0 and rows[5].bytes_after == on[5] and rows[5].bytes_in == on[5]


def test_the_same_cluster_gives_the_same_plan_whatever_the_order_it_is_read_in():
    racks, partitions = skewed()
    shuffled = list(partitions)
    random.Random(3).shuffle(shuffled)
    assert plan_balance(racks, partitions) == plan_balance(dict(reversed(list(racks.items()))), shuffled)


def test_a_partition_with_two_replicas_in_one_rack_is_fixed_first():
    racks = brokers({1: "a", 2: "a", 3: "b", 4: "b"})
    partitions = [PartitionFacts(topic="t", partition=0, replicas=(1, 2), leader=1, size_bytes=10 * MB),
                  PartitionFacts(topic="t", partition=1, replicas=(3, 1), leader=3, size_bytes=10 * MB),
                  PartitionFacts(topic="t", partition=2, replicas=(4, 2), leader=4, size_bytes=10 * MB),
                  PartitionFacts(topic="t", partition=3, replicas=(2, 3), leader=2, size_bytes=10 * MB)]
    plan = plan_balance(racks, partitions)
    moved = {(m.topic, m.partition): m for m in plan.moves}
    assert moved[("t", 0)].reason == "rack"
    assert {racks[b].rack for b in moved[("t", 0)].target} == {"a", "b"}
    # No move makes a safe partition unsafe.
    assert all(not rack_excess(r, {b: f.rack for b, f in racks.items()}, 2) for r in after(partitions, plan).values())


def test_no_broker_goes_over_the_disk_threshold_and_a_full_one_is_offloaded():
    # Broker 1's disk is 95% used; broker 3's would pass 80% with one more 30 MB replica.
    racks = brokers({1: None, 2: None, 3: None}, {1: (1000 * MB, 950 * MB), 2: (1000 * MB, 300 * MB), 3: (1000 * MB, 780 * MB)})
    partitions = [PartitionFacts(topic="t", partition=i, replicas=(1,), leader=1, size_bytes=30 * MB) for i in range(10)]
    plan = plan_balance(racks, partitions)
    rows = {r.broker: r for r in plan.brokers}
    assert rows[3].bytes_in == 0
    assert rows[1].used_bytes_after <= 0.8 * 1000 * MB
    assert rows[2].used_bytes_after <= 0.8 * 1000 * MB
    assert any(m.reason == "disk-limit" for m in plan.moves)


def test_a_broker_that_cannot_be_offloaded_is_said():
    racks = brokers({1: None, 2: None}, {1: (1000 * MB, 950 * MB), 2: (1000 * MB, 790 * MB)})
    partitions = [PartitionFacts(topic="t", partition=0, replicas=(1,), leader=1, size_bytes=100 * MB)]
    plan = plan_balance(racks, partitions)
    assert not plan.moves
    assert any(line.startswith("disk limit: broker 1") for line in plan.unmet)


def test_only_the_brokers_named_receive_and_only_the_topics_named_move():
    racks, partitions = skewed()
    plan = plan_balance(racks, partitions, Options(destinations=frozenset({5}), topics=frozenset({"t1", "t2"})))
    assert plan.moves
    for m in plan.moves:
        assert m.topic in ("t1", "t2")
        assert set(m.adding if hasattr(m, "adding") else m.move.adding) <= {5}


def test_max_move_stops_the_plan_short():
    racks, partitions = skewed()
    whole = plan_balance(racks, partitions)
    budget = whole.bytes_moved // 3
    plan = plan_balance(racks, partitions, Options(max_move_bytes=budget))
    assert 0 < plan.bytes_moved <= budget
    assert any("within --max-move" in line for line in plan.unmet)


def test_leaders_alone_reorders_replicas_and_moves_no_data():
    racks = brokers({1: None, 2: None, 3: None})
    partitions = [PartitionFacts(topic="t", partition=i, replicas=(1, 2, 3), leader=1, size_bytes=MB) for i in range(9)]
    plan = plan_balance(racks, partitions, Options(goals=("leaders",)))
    assert plan.bytes_moved == 0
    assert all(set(m.target) == set(m.current) for m in plan.moves)
    lead = Counter(m.target[0] for m in plan.moves) + Counter({1: 9 - len(plan.moves)})
    assert lead == Counter({1: 3, 2: 3, 3: 3})
    assert set(plan.elect) == {(m.topic, m.partition) for m in plan.moves}


def test_one_broker_and_partitions_that_cannot_move_are_left_alone():
    assert not plan_balance(brokers({1: None}), [PartitionFacts(topic="t", partition=0, replicas=(1,), leader=1, size_bytes=MB)]).moves
    racks = brokers({1: None, 2: None})
    partitions = [PartitionFacts(topic="t", partition=0, replicas=(1,), leader=None, size_bytes=MB),  # offline
                  PartitionFacts(topic="t", partition=1, replicas=(1, 9), leader=1, size_bytes=MB),  # broker 9 is dead
                  PartitionFacts(topic="t", partition=2, replicas=(1,), leader=1, size_bytes=MB, moving=True)]
    plan = plan_balance(racks, partitions)
    assert not plan.moves and plan.left_alone == 3


@pytest.mark.parametrize(("current", "target", "racks", "expected"), [
    ((1, 2, 3), (4, 2, 5), {1: "a", 4: "a", 3: "c", 5: "c"}, [(4, 2, 3), (4, 2, 5)]),
    # Same racks pair up: 6 (rack b) replaces 3 (rack b); the last step takes the plan's order.
    ((1, 3), (6, 5), {1: "a", 3: "b", 5: "a", 6: "b"}, [(1, 6), (6, 5)]),
    ((1, 2), (2, 1), {}, [(2, 1)]),
])
def test_a_move_runs_one_new_replica_at_a_time(current, target, racks, expected):
    found = steps(PartitionMove(topic="t", partition=0, current=current, target=target), racks)
    assert found[-1] == target
    assert all(len(set(a) - set(b)) <= 1 for a, b in zip(found, [current, *found]))
    assert found == expected
