"""The KIP-848 coordinator with an injected clock, without a broker: reconciliation steps,
fencing, session and rebalance timeouts, static members, assignors and bad input."""

from __future__ import annotations

import pytest

from kctl.broker.coordinator.consumer import ConsumerGroupCoordinator, _range, _uniform
from kctl.broker.protocol import errors


class Clock:
    def __init__(self):
        self.now = 1_000_000

    def __call__(self):
        return self.now


class NoClassicGroups:
    groups: dict = {}


@pytest.fixture
def coordinator():
    clock = Clock()
    topics = {"orders": 4}
    return ConsumerGroupCoordinator(clock, lambda: topics, NoClassicGroups()), clock, topics


def beat(coordinator, member, epoch, owned=None, **extra):
    fields = dict(instance_id=None, rack_id=None, rebalance_timeout_ms=-1, subscribed_topic_names=None,
                  subscribed_topic_regex=None, server_assignor=None, owned=owned, client_id="c", client_host="/h")
    if epoch == 0:
        fields.update(rebalance_timeout_ms=30_000, subscribed_topic_names=["orders"])
    fields.update(extra)
    return coordinator.heartbeat("g", member, epoch, **fields)


def parts(assignment):
    return sorted(p for _t, p in assignment)


def test_a_second_member_gets_partitions_only_after_the_first_revokes(coordinator):
    c, clock, _topics = coordinator
    a = beat(c, "a", 0)
    assert (a.error, parts(a.assignment)) == (errors.NONE, [0, 1, 2, 3])
    b = beat(c, "b", 0)
    assert b.error == errors.NONE and b.assignment == set()  # a still owns them all
    group = c.groups["g"]
    assert group.state == "Reconciling"
    # a is told to keep two: revoking the others, at its old epoch.
    a2 = beat(c, "a", a.member_epoch, owned={("orders", p) for p in range(4)})
    assert (a2.member_epoch, len(a2.assignment)) == (a.member_epoch, 2)
    # b waits for them: still nothing.
    assert beat(c, "b", b.member_epoch, owned=set()).assignment in (None, set())
    # a confirms; it moves to the new epoch; then b gets the released partitions.
    a3 = beat(c, "a", a.member_epoch, owned=a2.assignment)
    assert a3.member_epoch == group.assignment_epoch
    b2 = beat(c, "b", b.member_epoch, owned=set())
    assert len(b2.assignment) == 2 and not b2.assignment & a2.assignment
    assert beat(c, "b", b2.member_epoch, owned=b2.assignment).error == errors.NONE
    assert group.state == "Stable"


def test_a_stale_epoch_is_fenced_and_rejoins(coordinator):
    c, _clock, _topics = coordinator
    a = beat(c, "a", 0)
    fenced = beat(c, "a", a.member_epoch + 5, owned=a.assignment)
    assert fenced.error == errors.FENCED_MEMBER_EPOCH
    assert beat(c, "ghost", 3).error == errors.UNKNOWN_MEMBER_ID
    assert beat(c, "a", 0).error == errors.NONE  # rejoining starts over


def test_sessions_and_revocations_time_out(coordinator):
    c, clock, _topics = coordinator
    a = beat(c, "a", 0)
    b = beat(c, "b", 0)
    beat(c, "a", a.member_epoch, owned=a.assignment)  # a must revoke two, and never confirms
    clock.now += 30_001  # its rebalance timeout
    c.tick()
    assert "a" not in c.groups["g"].members
    b2 = beat(c, "b", b.member_epoch, owned=set())
    assert parts(b2.assignment) == [0, 1, 2, 3]
    clock.now += 45_001  # b's session: no heartbeat since
    c.tick()
    assert c.groups["g"].members == {} and c.groups["g"].state == "Empty"


def test_a_static_member_gets_its_partitions_back(coordinator):
    c, clock, _topics = coordinator
    a = beat(c, "a", 0, instance_id="i-a")
    b = beat(c, "b", 0, instance_id="i-b")
    revoke = beat(c, "a", a.member_epoch, owned=a.assignment)
    beat(c, "a", a.member_epoch, owned=revoke.assignment)
    beat(c, "b", b.member_epoch, owned=set())
    kept = set(c.groups["g"].members["a"].assigned)
    assert len(kept) == 2
    assert beat(c, "a2", 0, instance_id="i-a").error == errors.UNRELEASED_INSTANCE_ID  # a is still there
    epoch = c.groups["g"].group_epoch
    assert beat(c, "a", -2, instance_id="i-a").error == errors.NONE
    back = beat(c, "a2", 0, instance_id="i-a")
    assert (back.error, back.assignment) == (errors.NONE, kept)
    assert c.groups["g"].group_epoch == epoch  # no rebalance for a returning static member


def test_bad_heartbeats(coordinator):
    c, _clock, _topics = coordinator
    assert beat(c, "a", 0, server_assignor="sticky").error == errors.UNSUPPORTED_ASSIGNOR
    assert beat(c, "a", 0, subscribed_topic_names=None, subscribed_topic_regex="(").error == errors.INVALID_REGULAR_EXPRESSION
    assert beat(c, "a", 0, subscribed_topic_names=None).error == errors.INVALID_REQUEST
    assert c.heartbeat("", "a", 0, None, None, 1000, ["orders"], None, None, None, "c", "/h").error == errors.INVALID_REQUEST


def test_new_partitions_move_the_epoch(coordinator):
    c, _clock, topics = coordinator
    a = beat(c, "a", 0)
    epoch = c.groups["g"].group_epoch
    topics["orders"] = 6
    a2 = beat(c, "a", a.member_epoch, owned=a.assignment)
    assert c.groups["g"].group_epoch == epoch + 1 and parts(a2.assignment) == [0, 1, 2, 3, 4, 5]


def test_assignors():
    subscribed = {"a": {"x", "y"}, "b": {"x"}, "c": {"x", "y"}}
    counts = {"x": 4, "y": 2}
    uniform = _uniform(subscribed, counts, {})
    assert sorted(len(v) for v in uniform.values()) == [2, 2, 2]
    assert sorted(tp for v in uniform.values() for tp in v) == [(t, p) for t in ("x", "y") for p in range(counts[t])]
    assert all(t in subscribed[m] for m, v in uniform.items() for t, _p in v)
    # Sticky: a member leaving moves only its own partitions.
    after = _uniform({"a": {"x", "y"}, "c": {"x", "y"}}, counts, uniform)
    assert uniform["a"] <= after["a"] and uniform["c"] <= after["c"]
    ranged = _range({"a": {"x"}, "b": {"x"}, "c": {"x"}}, {"x": 4}, {})
    assert ranged == {"a": {("x", 0), ("x", 1)}, "b": {("x", 2)}, "c": {("x", 3)}}
