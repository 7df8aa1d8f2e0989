"""kctl doctor (issue 70): each finding made to happen on a real cluster and found, with
its evidence, and its NEXT command run as printed; the checks also on facts made by hand."""

from __future__ import annotations

import json
import shlex

import pytest

from kctl.admin.cluster.partitions import PartitionHealth, PartitionSnapshot
from kctl.admin.cluster.transactions import OpenTransaction
from kctl.admin.doctor import checks
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
    assert set(report) == {"status", "findings", "unread", "seconds"}
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
    bad = kctl("-b", "127.0.0.1:1", "doctor", "--transaction-age", "soon")
    assert bad.exit_code == ExitCode.USAGE and "Traceback" not in bad.stderr


def test_the_help_lists_every_check():
    """`kctl doctor --help` names each check the library has (and its man page with it)."""
    import ast
    from pathlib import Path

    from kctl.cli.doctor import doctor as command

    source = Path(checks.__file__).read_text()
    names = {node.value.value for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.keyword) and node.arg == "check" and isinstance(node.value, ast.Constant)}
    names |= {c[2] for c in checks._PARTITION_CONDITIONS}
    assert len(names) >= 13
    assert [n for n in sorted(names) if n not in (command.help or "")] == []
