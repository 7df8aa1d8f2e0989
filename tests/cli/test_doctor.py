"""kctl doctor (issue 70): each finding made to happen on a real cluster and found, with
its evidence, and its NEXT command run as printed; the checks also on facts made by hand."""

from __future__ import annotations

import json
import shlex

import pytest

from kctl.admin.cluster.partitions import PartitionHealth, PartitionSnapshot
from kctl.admin.cluster.transactions import OpenTransaction
from kctl.admin.doctor import checks, spread, trends
from kctl.admin.doctor.findings import CRITICAL, HIGH, INFO, WARNING, Finding, ordered, status
from kctl.admin.groups.models import GroupLag, PartitionLag
from kctl.errors import ExitCode
from tests.support import hanging_producer


def _partition(topic="t", partition=0, *, replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, min_isr=2, **flags) -> PartitionHealth:
    conditions = {k: flags.get(k, False) for k in ("under_replicated", "under_min_isr", "at_min_isr", "unavailable", "offline",
                                                  "elr_recoverable", "elr_unrecoverable")}
    return PartitionHealth(topic=topic, partition=partition, leader=leader, replicas=tuple(replicas), isr=tuple(isr),
                           offline_replicas=tuple(flags.get("offline_replicas", ())), min_isr=min_isr, **conditions)


def _checks_of(findings: list[Finding]) -> list[tuple[str, str, str]]:
    return [(f.severity, f.check, f.resource) for f in findings]


def test_partition_conditions_are_one_finding_per_topic_and_worst_first():
    snapshot = PartitionSnapshot(live_brokers=(1, 2), partitions=(
        _partition("a", 0, leader=None, isr=(), offline=True, under_replicated=True, under_min_isr=True, offline_replicas=(3,)),
        _partition("a", 1, isr=(1,), under_min_isr=True, under_replicated=True),
        _partition("b", 0, isr=(1, 2), under_replicated=True, at_min_isr=True),
        _partition("c", 0, replicas=(1,), isr=(1,), min_isr=1, at_min_isr=True),  # one replica: nothing to say
        _partition("d", 0, leader=2, replicas=(1, 2, 3)),  # led by its second replica
    ))
    found = ordered(checks.partitions(snapshot) + checks.offline_brokers(snapshot) + checks.preferred_leaders(snapshot))
    assert _checks_of(found) == [
        (CRITICAL, "offline-partitions", "topic a"), (CRITICAL, "under-min-isr", "topic a"), (HIGH, "broker-down", "broker 3"),
        (WARNING, "at-min-isr", "topic b"), (WARNING, "leader-not-preferred", "cluster"), (WARNING, "under-replicated", "topic b"),
    ]
    under_min = found[1]
    assert under_min.evidence["partitions"] == "0,1" and under_min.next == "kctl partition list a --under-min-isr"
    assert found[4].next == "kctl replication elect-leaders --preferred --all"
    assert status(found) == "CRITICAL" and status(found[3:]) == "WARNING" and status([]) == "OK"
    assert status([], complete=False) == "UNKNOWN" and status(found, complete=False) == "CRITICAL"


def test_durability_settings():
    facts = [checks.TopicFacts(topic="pay", replication_factor=3, min_isr=3, unclean_leader_election=True, retention_ms=None),
             checks.TopicFacts(topic="ok", replication_factor=3, min_isr=2, unclean_leader_election=False, retention_ms=None),
             checks.TopicFacts(topic="one", replication_factor=1, min_isr=1, unclean_leader_election=False, retention_ms=None)]
    assert _checks_of(ordered(checks.durability(facts, 3))) == [
        (HIGH, "min-isr-not-below-rf", "topic pay"), (HIGH, "unclean-leader-election", "topic pay"), (WARNING, "single-replica", "cluster")]
    [single] = checks.durability(facts[2:], 1)
    assert (single.severity, single.evidence) == (INFO, {"topics": 1, "brokers": 1})  # one broker: one info line, not one per topic
    fix = next(f for f in checks.durability(facts, 3) if f.check == "min-isr-not-below-rf")
    assert fix.next == "kctl config alter topic pay --set min.insync.replicas=2"


def _lag(group, topic, partition, *, committed, log_start, log_end, lag_seconds=None, flags=()) -> GroupLag:
    row = PartitionLag(group=group, topic=topic, partition=partition, committed=committed, log_start=log_start, log_end=log_end,
                       raw_lag=log_end - committed, lag=log_end - max(committed, log_start), flags=tuple(flags), member_id=None,
                       client_id=None, lag_seconds=lag_seconds)
    return GroupLag(group=group, state="Empty", members=0, lag_sum=row.lag or 0, lag_max=row.lag or 0, lag_seconds_max=lag_seconds,
                    partitions_without_commit=0, partitions=(row,))


def test_group_checks():
    lost = _lag("billing", "orders", 2, committed=10, log_start=25, log_end=40, flags=("BELOW_LOG_START",))
    [finding] = checks.unread_losses([lost])
    assert (finding.severity, finding.evidence["records"], finding.next) == (CRITICAL, 15, "kctl group lag billing -t orders")
    hour = 3_600_000
    groups = [_lag("slow", "orders", 0, committed=1, log_start=0, log_end=9, lag_seconds=3000),    # 83%: high
              _lag("late", "orders", 0, committed=1, log_start=0, log_end=9, lag_seconds=2000),    # 56%: warning
              _lag("fine", "orders", 0, committed=1, log_start=0, log_end=9, lag_seconds=600),     # 17%: nothing
              _lag("forever", "logs", 0, committed=1, log_start=0, log_end=9, lag_seconds=9e9)]    # retention.ms -1
    found = checks.retention_ahead(groups, {"orders": hour, "logs": None})
    assert _checks_of(found) == [(HIGH, "lag-nears-retention", "group slow on orders"), (WARNING, "lag-nears-retention", "group late on orders")]
    assert found[0].evidence == {"lag_seconds": 3000, "retention_ms": hour, "seconds_left": 600, "partition": 0}


def test_disk_and_quorum_checks():
    from kctl.admin.cluster.features import Quorum, QuorumReplica
    from kctl.admin.cluster.logdirs import LogDir

    def log_dir(broker, usable, error=None):
        return LogDir(broker=broker, log_dir="/data", size_bytes=1, replicas=1, total_bytes=100, usable_bytes=usable, error=error)

    found = checks.log_dirs([log_dir(1, 50), log_dir(2, 12), log_dir(3, 4), log_dir(4, None, "KAFKA_STORAGE_ERROR"),
                             LogDir(broker=5, log_dir="/d", size_bytes=1, replicas=1, total_bytes=None, usable_bytes=None, error=None)])
    assert _checks_of(ordered(found)) == [(CRITICAL, "log-dir-offline", "broker 4 log dir /data"),
                                          (HIGH, "disk-nearly-full", "broker 3 log dir /data"),
                                          (WARNING, "disk-nearly-full", "broker 2 log dir /data")]
    assert found[0].next == "kctl broker log-dirs --broker 2"

    def placed(broker, name, cordoned):
        return LogDir(broker=broker, log_dir=name, size_bytes=1, replicas=1, total_bytes=None, usable_bytes=None, error=None,
                      cordoned=cordoned)

    found = checks.log_dirs([placed(1, "/a", False), placed(2, "/a", True), placed(2, "/b", False), placed(3, "/a", True),
                             placed(3, "/b", True)])
    assert _checks_of(ordered(found)) == [(WARNING, "log-dir-cordoned", "broker 3"), (INFO, "log-dir-cordoned", "broker 2 log dir /a")]
    whole = ordered(found)[0]
    assert whole.evidence == {"cordoned": ["/a", "/b"], "log_dirs": 2}
    assert whole.next == "kctl config alter broker 3 --delete cordoned.log.dirs"

    def voter(node, lag, caught_up):
        return QuorumReplica(node, "Follower", None, 100 - lag, lag, None, caught_up, ())

    now = 1_000_000
    quorum = Quorum(1, 3, 100, 40, 0, (voter(1, 0, now), voter(2, 40, now - 60_000), voter(3, 5, now - 1_000)), ())
    [behind] = checks.quorum(quorum, now)
    assert (behind.resource, behind.evidence) == ("controller 2", {"lag": 40, "ms_since_caught_up": 60_000, "leader_id": 1})
    [leaderless] = checks.quorum(Quorum(-1, 3, 100, 0, 0, (), ()), now)
    assert (leaderless.severity, leaderless.next) == (CRITICAL, "kctl cluster quorum --replication")


def test_hanging_transaction_check():
    open_ = OpenTransaction("pay", 0, 7, 0, 0, 4, 0, 7_200_000, 4, 6, None, None)
    [finding] = checks.hanging_transactions([open_])
    assert finding.next == "kctl transaction abort pay:0 --producer-id 7 --start-offset 4"
    assert finding.evidence["age_ms"] == 7_200_000 and finding.summary.endswith("for 2.0h")


def _group(name, rows, *, members=1, state="Stable") -> GroupLag:
    """A group's lag: rows of (partition, committed, log end) on topic t."""
    partitions = tuple(PartitionLag(group=name, topic="t", partition=p, committed=c, log_start=0, log_end=e, raw_lag=e - c, lag=e - c,
                                    flags=(), member_id=None, client_id=None) for p, c, e in rows)
    return GroupLag(group=name, state=state, members=members, lag_sum=sum(p.lag or 0 for p in partitions),
                    lag_max=max((p.lag or 0 for p in partitions), default=0), lag_seconds_max=None, partitions_without_commit=0,
                    partitions=partitions)


def _sample(taken, groups=(), *, isr=None, log_end=None, stable=None) -> trends.Sample:
    return trends.Sample(taken=taken, isr=isr or {}, log_end=log_end or {}, stable=stable or {}, groups={g.group: g for g in groups})


def test_trends_judge_groups_as_burrow_does():
    """Between two looks: stalled (members, lag, committed offset unmoved), rewound,
    falling behind (lag grew while it consumed), stuck rebalancing; a group that kept up,
    or one without members, is not judged stalled."""
    first = _sample(0, [_group("stuck", [(0, 5, 10)]), _group("back", [(0, 8, 10)], members=0), _group("slow", [(0, 5, 10), (1, 0, 4)]),
                        _group("fine", [(0, 5, 10)]), _group("idle", [(0, 5, 10)], members=0),
                        _group("joining", [], state="PreparingRebalance"), _group("done", [], state="Assigning")])
    second = _sample(30, [_group("stuck", [(0, 5, 12)]), _group("back", [(0, 3, 10)], members=0), _group("slow", [(0, 7, 20), (1, 1, 9)]),
                          _group("fine", [(0, 12, 12)]), _group("idle", [(0, 5, 10)], members=0),
                          _group("joining", [], state="PreparingRebalance"), _group("done", [], state="Stable")])
    found = ordered(trends.compare(first, second))
    assert _checks_of(found) == [(WARNING, "group-rewound", "group back"), (WARNING, "group-stalled", "group stuck"),
                                 (WARNING, "lag-growing", "group slow"), (WARNING, "rebalance-stuck", "group joining")]
    rewound, stalled, growing, stuck = found
    assert rewound.evidence["partitions"] == "t:0 8->3" and stalled.evidence["lag"] == 7
    assert growing.evidence == {"lag_before": 9, "lag_after": 21, "consumed_per_second": 0.1, "produced_per_second": 0.5,
                                "window_seconds": 30}
    assert stuck.evidence["state"] == "PreparingRebalance" and stuck.summary.endswith("for at least 30s")


def test_trends_of_partitions():
    """A last stable offset unmoved below the log end, an ISR that changed, topics
    without writes (internal ones aside)."""
    a, b, c = ("pay", 0), ("pay", 1), ("logs", 0)
    first = _sample(0, isr={a: (1, 2, 3), b: (1, 2, 3), c: (1, 2)}, log_end={a: 10, b: 10, c: 5, ("__consumer_offsets", 0): 1},
                    stable={a: 4, b: 10, c: 5})
    second = _sample(60, isr={a: (1, 2, 3), b: (1, 3), c: (2, 1)}, log_end={a: 12, b: 11, c: 5, ("__consumer_offsets", 0): 1},
                     stable={a: 4, b: 11, c: 5})
    found = ordered(trends.compare(first, second))
    assert _checks_of(found) == [(WARNING, "isr-flapping", "topic pay"), (WARNING, "lso-stuck", "topic pay"), (INFO, "no-writes", "cluster")]
    flapping, stuck, idle = found
    assert flapping.evidence["isr"] == {"1": {"before": [1, 2, 3], "after": [1, 3]}}  # the same replicas in another order: no change
    assert stuck.evidence["last_stable_offset"] == {"0": 4} and stuck.next == "kctl producer list pay:0"
    assert idle.evidence["examples"] == "logs" and idle.summary == "1 topic(s) had no writes in 60s"


def test_spread_over_brokers():
    from kctl.admin.cluster.logdirs import LogDir, ReplicaSize

    # Broker 1 leads and holds every partition of "hot" on top of an even spread.
    even = [_partition("even", i, replicas=(1 + i % 3, 1 + (i + 1) % 3), leader=1 + i % 3, isr=(1 + i % 3, 1 + (i + 1) % 3)) for i in range(30)]
    hot = [_partition("hot", i, replicas=(1,), isr=(1,), leader=1) for i in range(10)]
    snapshot = PartitionSnapshot(live_brokers=(1, 2, 3), partitions=tuple(even + hot))
    gib = 1 << 30
    dirs = [LogDir(broker=b, log_dir="/d", size_bytes=size, replicas=1, total_bytes=None, usable_bytes=None, error=None)
            for b, size in ((1, 10 * gib), (2, 10 * gib), (3, 14 * gib))]
    found = ordered(spread.skew(snapshot, dirs))
    assert _checks_of(found) == [(WARNING, "disk-skew", "broker 3"), (WARNING, "leader-skew", "broker 1"), (WARNING, "replica-skew", "broker 1")]
    assert found[2].evidence == {"brokers_above": [1], "by_broker": {"1": 30, "2": 20, "3": 20}, "mean": 23.3, "threshold": 1.1}
    assert found[1].next == "kctl replication elect-leaders --preferred --all" and found[2].next == found[0].next == "kctl cluster balance"
    # Small differences are not skew: one replica more, a few bytes more on an empty cluster.
    small = PartitionSnapshot(live_brokers=(1, 2), partitions=(_partition("x", 0, replicas=(1,), isr=(1,)),))
    assert spread.skew(small, dirs[:2]) == [] and spread.skew(PartitionSnapshot(live_brokers=(1,), partitions=tuple(hot)), dirs) == []
    [large] = spread.large_partitions([ReplicaSize(broker=1, log_dir="/d", topic="big", partition=3, size_bytes=60 * gib, offset_lag=0,
                                                   is_future=False),
                                       ReplicaSize(broker=2, log_dir="/d", topic="big", partition=4, size_bytes=gib, offset_lag=0,
                                                   is_future=False)])
    assert (large.severity, large.evidence["partitions"], large.next) == (INFO, "3", "kctl broker log-dirs -t big --replicas")
    same = {0: (0, 9), 1: (0, 17)}
    assert spread.versions_differ({1: same, 2: dict(same)}) == []
    [differ] = spread.versions_differ({1: same, 2: {0: (0, 9), 1: (0, 16)}, 3: {0: (0, 9)}})
    assert differ.evidence["apis"] == {"Fetch": {"1": "0-17", "2": "0-16", "3": "-"}}


def test_groups_without_members_or_topics():
    idle = _group("idle", [(0, 5, 10)], members=0, state="Empty")
    kctl_own = _group("kctl-redrive-abc", [(0, 5, 10)], members=0, state="Empty")
    [finding] = checks.lag_without_members([idle, kctl_own, _group("busy", [(0, 5, 10)])])
    assert (finding.resource, finding.evidence, finding.next) == ("group idle", {"lag": 5, "state": "Empty", "topics": "t"}, "kctl group lag idle")
    [missing] = checks.missing_subscriptions({"app": {"m1": ("orders", "ordrs"), "m2": ("orders",)}, "ok": {"m": ("orders",)}}, ["orders"])
    assert (missing.resource, missing.evidence) == ("group app", {"topics": "ordrs", "members": 1})


# -- on a real broker ----------------------------------------------------------------------------


@pytest.fixture
def fresh(tmp_path):
    """A bundled broker of this test's own: the verdict is of the whole cluster."""
    from kctl.broker.process import BrokerProcess

    process = BrokerProcess(tmp_path / "data")
    process.start()
    yield process.bootstrap
    process.stop()


def doctor(kctl, bootstrap, *args):
    result = kctl("-b", bootstrap, "doctor", *args, "-o", "json")
    assert "Traceback" not in result.stderr
    return result.exit_code, json.loads(result.stdout), result.stderr


@pytest.mark.integration
def test_a_healthy_broker_is_ok(kctl, fresh):
    code, report, stderr = doctor(kctl, fresh)
    # The bundled broker runs no controller quorum: said as information, the verdict OK.
    assert (code, report["status"], report["unread"]) == (0, "OK", {}), stderr
    assert [(f["severity"], f["check"], f["evidence"]["part"]) for f in report["findings"]] == [("info", "not-supported", "controller quorum")]
    assert stderr.startswith("OK: 1 info in ")
    assert kctl("-b", fresh, "topic", "create", "orders").exit_code == 0
    code, report, _ = doctor(kctl, fresh)
    assert code == 0 and [(f["severity"], f["check"]) for f in report["findings"]] == [("info", "not-supported"), ("info", "single-replica")]
    assert set(report) == {"status", "findings", "unread", "seconds", "window_seconds"}
    assert set(report["findings"][0]) == {"severity", "check", "resource", "summary", "evidence", "why", "next"}


@pytest.mark.integration
def test_each_finding_is_found_and_its_next_command_runs(kctl, fresh):
    """Records deleted before a group read them, a group whose next record retention will
    soon delete, unclean leader election, a hanging transaction: each found with its
    evidence; each NEXT command runs as printed; and once fixed, the finding is gone."""
    b = fresh
    for topic, configs in (("lost", ()), ("old", ("-c", "retention.ms=3600000")), ("pay", ("-c", "unclean.leader.election.enable=true"))):
        assert kctl("-b", b, "topic", "create", topic, *configs).exit_code == 0
    assert kctl("-b", b, "record", "produce", "lost", input="".join(f"{i}\n" for i in range(10))).exit_code == 0
    assert kctl("-b", b, "group", "reset-offsets", "reader", "-t", "lost", "--to-offset", "2", "--allow-new-group",
                "--execute", "--yes").exit_code == 0
    assert kctl("-b", b, "record", "delete", "lost", "--before", "6", "--yes").exit_code == 0
    # Written 50 minutes ago (CreateTime): 83% of the topic's hour of retention.
    assert kctl("-b", b, "record", "produce", "old", "--timestamp", "-50m", input="a\nb\n").exit_code == 0
    assert kctl("-b", b, "group", "reset-offsets", "slow", "-t", "old", "--to-earliest", "--allow-new-group",
                "--execute", "--yes").exit_code == 0
    hanging_producer.abandon(b, "pay", "tx-doctor")

    code, report, stderr = doctor(kctl, b, "--transaction-age", "0s")
    found = {(f["check"], f["resource"]): f for f in report["findings"]}
    assert (code, report["status"]) == (ExitCode.CRITICAL, "CRITICAL"), stderr
    lost = found[("records-lost-unread", "group reader on lost")]
    assert (lost["severity"], lost["evidence"]) == ("critical", {"records": 4, "partitions": "0"})
    old = found[("lag-nears-retention", "group slow on old")]
    assert old["severity"] == "high" and 2950 <= old["evidence"]["lag_seconds"] < 3100 and old["evidence"]["retention_ms"] == 3_600_000
    assert found[("unclean-leader-election", "topic pay")]["severity"] == "high"
    hanging = found[("hanging-transaction", "partition pay:0")]
    assert hanging["evidence"]["start_offset"] == 4 and hanging["evidence"]["last_stable_offset"] == 4  # after 3 records and a marker
    assert report["findings"][0]["severity"] == "critical"  # worst first

    for finding in report["findings"]:
        argv = shlex.split(finding["next"])
        assert argv[0] == "kctl"
        ran = kctl("-b", b, *argv[1:])
        # `transaction abort` asks first: without a terminal it refuses, having changed nothing.
        expected = ExitCode.ABORTED if argv[1:3] == ["transaction", "abort"] else 0
        assert ran.exit_code == expected, (finding["next"], ran.stderr)
    # The fixes, as printed (the abort confirmed): those findings are gone.
    for finding in report["findings"]:
        if finding["check"] in ("hanging-transaction", "unclean-leader-election"):
            argv = shlex.split(finding["next"])[1:]
            assert kctl("-b", b, *argv, *(["--yes"] if argv[0] == "transaction" else [])).exit_code == 0
    _code, after, _ = doctor(kctl, b, "--transaction-age", "0s")
    left = {f["check"] for f in after["findings"]}
    assert "hanging-transaction" not in left and "unclean-leader-election" not in left and "records-lost-unread" in left


@pytest.mark.integration
def test_replication_settings_on_several_brokers(kctl, cluster, unique_name):
    """min.insync.replicas equal to the replication factor, and one replica on a cluster of
    three brokers (a shared cluster: only this test's topics are looked at)."""
    if cluster.nodes < 3:
        pytest.skip("needs 3 brokers")
    strict, single = unique_name("strict"), unique_name("single")
    assert kctl("-b", cluster.bootstrap, "topic", "create", strict, "--rf", "2", "-c", "min.insync.replicas=2").exit_code == 0
    assert kctl("-b", cluster.bootstrap, "topic", "create", single, "--rf", "1").exit_code == 0
    try:
        _check_replication_settings(kctl, cluster, strict)
    finally:
        # Its partitions sit at min.insync.replicas: the shared cluster's health is WARNING
        # until they are gone, and other tests judge it.
        assert kctl("-b", cluster.bootstrap, "topic", "delete", strict, single, "--yes").exit_code == 0


def _check_replication_settings(kctl, cluster, strict: str) -> None:
    _code, report, stderr = doctor(kctl, cluster.bootstrap)
    found = {(f["check"], f["resource"]): f for f in report["findings"]}
    strict_finding = found[("min-isr-not-below-rf", f"topic {strict}")]
    assert strict_finding["evidence"] == {"min.insync.replicas": 2, "replication_factor": 2}, stderr
    assert strict_finding["next"] == f"kctl config alter topic {strict} --set min.insync.replicas=1"
    replicas = found[("single-replica", "cluster")]
    assert replicas["severity"] == "warning" and replicas["next"].startswith("kctl replication reassign generate")
    plan = kctl("-b", cluster.bootstrap, *shlex.split(replicas["next"])[1:])
    assert plan.exit_code == 0, plan.stderr


@pytest.mark.integration
def test_bad_input_and_an_unreachable_cluster(kctl):
    unreachable = kctl("-b", "127.0.0.1:1", "--timeout", "2", "doctor")
    assert unreachable.exit_code == ExitCode.UNREACHABLE and len(unreachable.stderr.splitlines()) <= 2
    assert unreachable.stderr.startswith("error: ")
    # Watching, each examination that fails is one line and judged: the last one's status.
    watched = kctl("-b", "127.0.0.1:1", "--timeout", "1", "doctor", "--watch", "--interval", "0.2s", "--max-wait", "0.5")
    assert watched.exit_code == ExitCode.CRITICAL and watched.stderr.splitlines()[0].startswith("error: unable to examine"), watched.stderr
    assert "Traceback" not in watched.stderr
    bad = kctl("-b", "127.0.0.1:1", "doctor", "--transaction-age", "soon")
    assert bad.exit_code == ExitCode.USAGE and "Traceback" not in bad.stderr


def test_the_help_lists_every_check():
    """`kctl doctor --help` names each check the library has (and its man page with it)."""
    import ast
    from pathlib import Path

    from kctl.cli.doctor import doctor as command

    names = set()
    for module in (checks, trends, spread):
        names |= {node.value.value for node in ast.walk(ast.parse(Path(module.__file__).read_text()))
                  if isinstance(node, ast.keyword) and node.arg == "check" and isinstance(node.value, ast.Constant)}
    names |= {c[2] for c in checks._PARTITION_CONDITIONS} | {f"{m}-skew" for m in ("replica", "leader", "disk")}
    assert len(names) >= 30
    assert [n for n in sorted(names) if n not in (command.help or "")] == []


def _consumer(bootstrap: str, group: str, topics: list[str], **settings):
    """A member of `group` that has been assigned its partitions and commits nothing by
    itself (polled until it holds an assignment)."""
    from confluent_kafka import Consumer

    from tests.support.eventually import within

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", **settings})
    consumer.subscribe(topics)
    within(lambda: consumer.poll(0.2) is not None and consumer.assignment(), timeout=60, interval=0)
    return consumer


@pytest.mark.integration
def test_two_looks_judge_what_moved(kctl, fresh):
    """Between two examinations (the library's, so nothing races the window): a group
    rewound, one falling behind while it consumes, one stalled with a member, an open
    transaction holding the last stable offset, topics without writes; and at one look,
    a member subscribed to a topic that does not exist, a group with lag and no member."""
    from kctl.admin.client.session import AdminSession
    from kctl.admin.doctor.examine import examine
    from kctl.config.model import ClientSettings

    b = fresh
    for topic in ("work", "busy", "kept", "pay"):
        assert kctl("-b", b, "topic", "create", topic).exit_code == 0
    for topic in ("work", "busy", "kept"):
        assert kctl("-b", b, "record", "produce", topic, input="".join(f"{i}\n" for i in range(20))).exit_code == 0
    for group, topic, offset in (("stuck", "work", 0), ("growing", "busy", 0), ("back", "kept", 10)):
        assert kctl("-b", b, "group", "reset-offsets", group, "-t", topic, "--to-offset", str(offset), "--allow-new-group",
                    "--execute", "--yes").exit_code == 0
    hanging_producer.abandon(b, "pay", "tx-trend")
    # KIP-848 heartbeats carry the subscription as given (librdkafka's classic JoinGroup
    # lists only the topics it found).
    stuck = _consumer(b, "stuck", ["work", "no-such-topic"], **{"group.protocol": "consumer"})
    growing = _consumer(b, "growing", ["busy"], **{"group.protocol": "consumer"})
    session = AdminSession(ClientSettings(bootstrap_servers=b, properties={}, timeout=30, context=None))
    try:
        first, sample = examine(session, sampled=True)
        assert first.window_seconds is None
        at_once = {(f.check, f.resource): f for f in first.findings}
        assert at_once[("subscribed-topic-missing", "group stuck")].evidence == {"topics": "no-such-topic", "members": 1}
        assert at_once[("lag-without-members", "group back")].evidence["lag"] == 10
        assert not {"group-stalled", "lso-stuck", "no-writes"} & {f.check for f in first.findings}  # one look judges no trend

        assert kctl("-b", b, "group", "reset-offsets", "back", "-t", "kept", "--to-offset", "4", "--execute", "--yes").exit_code == 0
        assert kctl("-b", b, "record", "produce", "busy", input="".join(f"{i}\n" for i in range(30))).exit_code == 0
        from confluent_kafka import TopicPartition

        growing.commit(offsets=[TopicPartition("busy", 0, 5)], asynchronous=False)
        second, _ = examine(session, previous=sample, sampled=True)
    finally:
        session.close()
        stuck.close()
        growing.close()
    assert second.window_seconds is not None
    found = {(f.check, f.resource): f for f in second.findings}
    assert found[("group-rewound", "group back")].evidence["partitions"] == "kept:0 10->4"
    behind = found[("lag-growing", "group growing")].evidence
    assert (behind["lag_before"], behind["lag_after"]) == (20, 45)
    assert found[("group-stalled", "group stuck")].evidence["lag"] == 20
    lso = found[("lso-stuck", "topic pay")]
    assert lso.evidence["last_stable_offset"] == {"0": 4} and lso.evidence["log_end_offset"] == {"0": 6}
    assert "busy" not in found[("no-writes", "cluster")].evidence["examples"]
    for finding in second.findings:
        ran = kctl("-b", b, *shlex.split(finding.next)[1:])
        assert ran.exit_code == 0, (finding.next, ran.stderr)


@pytest.mark.integration
def test_sample_and_scopes_through_the_command(kctl, fresh):
    """`--sample` looks twice and judges a stalled group; `group G`, `topic T` and `broker
    N` report only what concerns them; a name that does not exist is one line, exit 5."""
    b = fresh
    for topic in ("work", "other"):
        assert kctl("-b", b, "topic", "create", topic).exit_code == 0
        assert kctl("-b", b, "record", "produce", topic, input="a\nb\nc\n").exit_code == 0
    for group, topic in (("stuck", "work"), ("idle", "other")):
        assert kctl("-b", b, "group", "reset-offsets", group, "-t", topic, "--to-earliest", "--allow-new-group",
                    "--execute", "--yes").exit_code == 0
    member = _consumer(b, "stuck", ["work"])
    try:
        code, report, stderr = doctor(kctl, b, "--sample", "1s")
        # A classic member's subscription, from its JoinGroup metadata.
        described = json.loads(kctl("-b", b, "group", "describe", "stuck", "-o", "json").stdout)
        assert [m["subscribed_topics"] for m in described[0]["members"]] == [["work"]]
    finally:
        member.close()
    assert code == 1 and report["window_seconds"] >= 1, stderr  # WARNING
    assert "looking again in 1s" in stderr
    checks_found = {(f["check"], f["resource"]) for f in report["findings"]}
    assert {("group-stalled", "group stuck"), ("lag-without-members", "group idle"), ("no-writes", "cluster")} <= checks_found

    _code, quiet, _ = doctor(kctl, b, "--ignore-group", "id.*", "--ignore-group", "stuck")
    assert [f["resource"] for f in quiet["findings"] if f["resource"].startswith("group")] == []
    _code, partly, _ = doctor(kctl, b, "--ignore-group", "id")  # a whole id, not a part of one
    assert ("lag-without-members", "group idle") in {(f["check"], f["resource"]) for f in partly["findings"]}
    _code, group, _ = doctor(kctl, b, "group", "idle")
    assert [(f["check"], f["resource"]) for f in group["findings"]] == [("lag-without-members", "group idle"), ("single-replica", "cluster")]
    _code, topic, _ = doctor(kctl, b, "topic", "work")
    assert {f["resource"] for f in topic["findings"]} == {"group stuck", "cluster"}  # the groups on it; no quorum note
    _code, broker, _ = doctor(kctl, b, "broker", "1")
    assert "group" not in " ".join(f["resource"] for f in broker["findings"])
    for args, code in ((("group", "nope"), ExitCode.NOT_FOUND), (("topic", "nope"), ExitCode.NOT_FOUND),
                       (("broker", "9"), ExitCode.NOT_FOUND), (("broker", "one"), ExitCode.USAGE), (("topic",), ExitCode.USAGE),
                       (("--ignore-group", "(",), ExitCode.USAGE)):
        result = kctl("-b", b, "doctor", *args)
        assert result.exit_code == code and len(result.stderr.splitlines()) <= 2 and "Traceback" not in result.stderr, (args, result.stderr)


@pytest.mark.integration
def test_replicas_and_leaders_piled_on_one_broker(kctl, cluster, unique_name):
    """A topic whose every replica and leader is on broker 1: replica-skew and
    leader-skew name it; `doctor broker 1` has them, `doctor broker 2` not."""
    if cluster.nodes < 3:
        pytest.skip("needs 3 brokers")
    hot = unique_name("hot")
    assert kctl("-b", cluster.bootstrap, "topic", "create", hot, "--replica-assignment", ",".join(["1"] * 120)).exit_code == 0
    try:
        _code, report, stderr = doctor(kctl, cluster.bootstrap, "broker", "1")
        found = {f["check"]: f for f in report["findings"]}
        assert found["replica-skew"]["evidence"]["brokers_above"] == [1], stderr
        assert found["leader-skew"]["evidence"]["brokers_above"] == [1]
        assert found["replica-skew"]["next"] == "kctl cluster balance"
        assert kctl("-b", cluster.bootstrap, "cluster", "balance").exit_code == 0
        _code, other, _ = doctor(kctl, cluster.bootstrap, "broker", "2")
        assert not {"replica-skew", "leader-skew"} & {f["check"] for f in other["findings"]}
    finally:
        assert kctl("-b", cluster.bootstrap, "topic", "delete", hot, "--yes").exit_code == 0


def test_quotas_check():
    [finding] = checks.quotas({"user alice": {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2e6},
                               "user bob": {"producer_byte_rate": 1000.0}, "ip 10.0.0.7": {"connection_creation_rate": 20.0}})
    assert (finding.severity, finding.evidence["entities"], finding.next) == (INFO, 2, "kctl quota list")
    assert finding.evidence["lowest"]["producer_byte_rate"] == {"value": 1000.0, "entity": "user bob"}
    assert checks.quotas({"ip 10.0.0.7": {"connection_creation_rate": 20.0}}) == []


@pytest.mark.integration
def test_client_quotas_that_throttle(kctl, cluster, unique_name):
    """A quota of one byte a second on a user: the lowest producer quota, said as info."""
    if cluster.nodes < 3:
        pytest.skip("the bundled broker keeps no quotas; kafka3 is the cluster with them")
    user = unique_name("slow")
    assert kctl("-b", cluster.bootstrap, "quota", "set", "--user", user, "--set", "producer_byte_rate=1").exit_code == 0
    try:
        _code, report, stderr = doctor(kctl, cluster.bootstrap)
        [finding] = [f for f in report["findings"] if f["check"] == "quotas-throttle"]
        assert finding["evidence"]["lowest"]["producer_byte_rate"] == {"value": 1.0, "entity": f"user {user}"}, stderr
        assert kctl("-b", cluster.bootstrap, *shlex.split(finding["next"])[1:]).exit_code == 0
    finally:
        assert kctl("-b", cluster.bootstrap, "quota", "delete", "--user", user, "--quota", "producer_byte_rate", "--yes").exit_code == 0


@pytest.mark.integration
def test_a_member_that_does_not_rejoin_holds_the_rebalance(kctl, fresh):
    """Classic group: a member that stops polling does not rejoin when a second one joins,
    and the group waits in PreparingRebalance (up to the first one's max.poll.interval.ms):
    two looks find it in that state both times."""
    from confluent_kafka import Consumer

    from kctl.admin.client.session import AdminSession
    from kctl.admin.doctor.examine import Scope, examine
    from kctl.config.model import ClientSettings
    from tests.support.eventually import eventually

    b = fresh
    assert kctl("-b", b, "topic", "create", "held-topic").exit_code == 0
    assert kctl("-b", b, "record", "produce", "held-topic", input="a\n").exit_code == 0
    first_member = _consumer(b, "held", ["held-topic"], **{"max.poll.interval.ms": 60_000})
    second_member = Consumer({"bootstrap.servers": b, "group.id": "held"})
    second_member.subscribe(["held-topic"])
    session = AdminSession(ClientSettings(bootstrap_servers=b, properties={}, timeout=30, context=None))
    scope = Scope(kind="group", name="held")
    try:
        def rebalancing():
            second_member.poll(0.1)  # its JoinGroup waits for the first member, which does not poll
            examination, sample = examine(session, scope=scope, sampled=True)
            assert sample.groups["held"].state == "PreparingRebalance", sample.groups["held"].state
            return sample
        earlier = eventually(rebalancing, timeout=30)
        later, _ = examine(session, scope=scope, previous=earlier)
    finally:
        session.close()
        second_member.close()
        first_member.close()
    [stuck] = [f for f in later.findings if f.check == "rebalance-stuck"]
    assert (stuck.resource, stuck.evidence["state"], stuck.next) == ("group held", "PreparingRebalance", "kctl group describe held")
