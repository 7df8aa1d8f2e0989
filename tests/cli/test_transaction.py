"""kctl transaction and producer against real Kafka and the bundled broker: a hanging
transaction made for real (a transactional producer killed with SIGKILL mid-transaction),
found as kafka-transactions finds it, aborted, after which a read_committed consumer gets
past it."""

from __future__ import annotations

import json
import re

import pytest
from confluent_kafka import Producer

from kctl.errors import ExitCode
from tests.support import hanging_producer
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration


@pytest.fixture
def kafka_cluster(cluster):
    """Apache Kafka or the bundled broker (its transaction coordinator)."""
    if cluster.nodes != 1 and cluster.kafka is None:
        pytest.skip("single nodes")
    return cluster


def as_json(kctl, cluster, *args):
    result = kctl("-b", cluster.bootstrap, *args, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def kafka_transactions(tools, cluster, *args) -> list[list[str]]:
    """Rows (split on whitespace, header first) of Kafka's own kafka-transactions."""
    proc = tools.run_tool("org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", cluster.bootstrap, *args)
    assert proc.returncode == 0, proc.stderr
    return [re.split(r"\s{2,}|\t", line.strip()) for line in proc.stdout.splitlines() if line.strip()]


@pytest.fixture
def hanging(kafka_cluster, kctl, unique_name):
    """A topic whose partition 0 holds 3 committed records, then 2 of a transaction whose
    producer was killed (offsets 4-5), then one plain record written after it."""
    topic, transactional_id = unique_name("txn"), unique_name("tx")
    assert kctl("-b", kafka_cluster.bootstrap, "topic", "create", topic, "-p", "2").exit_code == 0
    hanging_producer.abandon(kafka_cluster.bootstrap, topic, transactional_id)
    plain = Producer({"bootstrap.servers": kafka_cluster.bootstrap})
    plain.produce(topic, value=b"after", partition=0)
    assert plain.flush(30) == 0
    return topic, transactional_id


def test_a_killed_producers_transaction_is_found_and_aborted(kctl, kafka_cluster, hanging, kafka_tools):
    c, (topic, transactional_id) = kafka_cluster, hanging
    b = ("-b", c.bootstrap)

    listed = {t["transactional_id"]: t for t in as_json(kctl, c, "transaction", "list")}
    assert listed[transactional_id]["state"] == "Ongoing"
    theirs = {row[0]: row for row in kafka_transactions(kafka_tools, c, "list")[1:]}
    assert theirs[transactional_id][2:4] == [str(listed[transactional_id]["producer_id"]), "Ongoing"]

    described, = as_json(kctl, c, "transaction", "describe", transactional_id)
    assert (described["state"], described["partitions"], described["transaction_timeout_ms"]) == ("Ongoing", [f"{topic}:0"], 900000)
    producer_id = described["producer_id"]

    producers = as_json(kctl, c, "producer", "list", f"{topic}:0")
    open_ = [p for p in producers if p["producer_id"] == producer_id]
    assert [(p["producer_epoch"], p["current_transaction_start_offset"]) for p in open_] == [(described["producer_epoch"], 4)]
    theirs = kafka_transactions(kafka_tools, c, "describe-producers", "--topic", topic, "--partition", "0")
    assert [row[0] for row in theirs[1:]] == [str(p["producer_id"]) for p in producers]
    assert [row for row in theirs[1:] if row[0] == str(producer_id)][0][-1] == "4"

    # read_committed stops at the open transaction, and says where to look.
    stuck = kctl(*b, "record", "consume", f"{topic}:0", "--isolation", "read_committed", "--format", "%v\\n")
    assert stuck.stdout == "committed-0\ncommitted-1\ncommitted-2\n"
    assert (f"note: {topic}:0: read_committed stops at offset 4, 3 before the log end: an open transaction holds it "
            f"(kctl transaction find-hanging -t {topic})") in stuck.stderr

    # A read_committed group read everything it can (offset 3 is the first transaction's
    # commit marker, which lag counts as Kafka's tools do), and is stuck there.
    group = f"{transactional_id}-g"
    assert kctl(*b, "record", "consume", f"{topic}:0", "--group", group, "--isolation", "read_committed").exit_code == 0
    lag = kctl(*b, "group", "lag", group, "--isolation", "read_committed", "-o", "json")
    assert lag.exit_code == 0, lag.stderr
    assert [(p["partition"], p["committed"], p["log_end"], p["lag"]) for p in json.loads(lag.stdout)[0]["partitions"]] == [(0, 3, 4, 1)]
    assert (f"note: {topic}:0: read_committed stops at offset 4, 3 before the log end: an open transaction holds it "
            f"(kctl transaction find-hanging -t {topic})") in lag.stderr

    # The transaction is younger than transaction.max.timeout.ms: not reported by default.
    assert kctl(*b, "transaction", "find-hanging", "-t", topic).exit_code == 0
    found = kctl(*b, "transaction", "find-hanging", "-t", topic, "--max-age", "1s", "-o", "json")
    assert found.exit_code == ExitCode.CRITICAL, found.stderr
    row, = json.loads(found.stdout)
    assert {k: row[k] for k in ("partition", "producer_id", "start_offset", "last_stable_offset", "log_end_offset", "transactional_id", "coordinator_state")} == {
        "partition": 0, "producer_id": producer_id, "start_offset": 4, "last_stable_offset": 4, "log_end_offset": 7,
        "transactional_id": transactional_id, "coordinator_state": "Ongoing",
    }

    refused = kctl(*b, "transaction", "abort", f"{topic}:0")
    assert refused.exit_code == ExitCode.ABORTED
    aborted = kctl(*b, "transaction", "abort", f"{topic}:0", "--producer-id", str(producer_id), "--start-offset", "4", "--yes")
    assert (aborted.exit_code, aborted.stderr) == (
        0, f"aborted the transaction of producer {producer_id} (epoch {described['producer_epoch']}) on {topic}:0 from offset 4\n"
    )

    def past_it():
        read = kctl(*b, "record", "consume", f"{topic}:0", "--isolation", "read_committed", "--format", "%v\\n")
        assert read.stdout == "committed-0\ncommitted-1\ncommitted-2\nafter\n", read.stderr
        assert "note:" not in read.stderr

    eventually(past_it)
    assert kctl(*b, "transaction", "find-hanging", "-t", topic, "--max-age", "1s").exit_code == 0
    again = kctl(*b, "transaction", "abort", f"{topic}:0", "--yes")
    assert (again.exit_code, again.stderr) == (
        ExitCode.NOT_FOUND, f"error: unable to abort a transaction on {topic}:0: no open transaction matches (open: none)\n"
    )


def test_transaction_bad_input(kctl, kafka_cluster, unique_name):
    b = ("-b", kafka_cluster.bootstrap)
    unknown = kctl(*b, "transaction", "describe", unique_name("none"))
    assert unknown.exit_code == ExitCode.NOT_FOUND
    assert unknown.stderr.endswith(": no such transactional id\n")
    missing = kctl(*b, "producer", "list", unique_name("none"))
    assert missing.exit_code == ExitCode.NOT_FOUND, missing.stderr
    whole = kctl(*b, "transaction", "abort", "orders", "--yes")
    assert (whole.exit_code, whole.stderr.splitlines()[0]) == (ExitCode.USAGE, "error: unable to parse 'orders': expected one TOPIC:PARTITION, e.g. payments:0")
    age = kctl(*b, "transaction", "find-hanging", "--max-age", "soon")
    assert (age.exit_code, age.stderr.splitlines()[0]) == (ExitCode.USAGE, "error: unable to parse duration 'soon': expected e.g. 30s, 15m, 2h, 1d, PT1H")


@pytest.mark.kafka39
def test_list_filters_as_kafka_transactions_does(kctl, kafka_cluster, hanging, kafka_tools):
    """--state, --producer-id, --duration and --id-pattern keep what Kafka's own
    kafka-transactions list keeps with --duration-filter and --transactional-id-pattern;
    on Kafka 3.9 (no pattern filter in its ListTransactions) kctl applies the pattern and
    says so."""
    c, (_topic, transactional_id) = kafka_cluster, hanging
    prefix = transactional_id.rsplit("-", 1)[0]

    def ids(*args: str) -> set[str]:
        result = kctl("-b", c.bootstrap, "transaction", "list", *args, "-o", "json")
        assert result.exit_code == 0, result.stderr
        return {t["transactional_id"] for t in json.loads(result.stdout)}

    producer_id = next(t["producer_id"] for t in as_json(kctl, c, "transaction", "list") if t["transactional_id"] == transactional_id)
    assert transactional_id in ids("--state", "Ongoing", "--producer-id", str(producer_id))
    assert transactional_id not in ids("--state", "CompleteCommit")
    assert ids("--producer-id", str(producer_id)) == {transactional_id}
    assert transactional_id in ids("--duration", "0s")
    assert transactional_id not in ids("--duration", "1d")
    assert transactional_id in ids("--id-pattern", re.escape(prefix) + "-.*")
    assert transactional_id not in ids("--id-pattern", re.escape(prefix))  # the whole id must match

    pattern = re.escape(transactional_id)
    mine = kctl("-b", c.bootstrap, "transaction", "list", "--id-pattern", pattern, "--duration", "0s", "-o", "json")
    assert mine.exit_code == 0, mine.stderr
    if c.kafka is not None and not c.kafka.version.startswith("3."):
        assert mine.stderr == ""  # both filters sent to the brokers
        theirs = kafka_transactions(kafka_tools, c, "list", "--transactional-id-pattern", pattern, "--duration-filter", "0")
        assert [row[0] for row in theirs[1:]] == [t["transactional_id"] for t in json.loads(mine.stdout)] == [transactional_id]
    elif c.kafka is not None:  # Kafka 3.9: the duration filter is the broker's, the pattern kctl's
        assert "predates --id-pattern: applied by kctl" in mine.stderr, mine.stderr
        assert [t["transactional_id"] for t in json.loads(mine.stdout)] == [transactional_id]


def test_list_filters_bad_input(kctl, kafka_cluster):
    b = ("-b", kafka_cluster.bootstrap)
    state = kctl(*b, "transaction", "list", "--state", "Running")
    assert state.exit_code == ExitCode.USAGE and "'Running' is not one of" in state.stderr, state.stderr
    pattern = kctl(*b, "transaction", "list", "--id-pattern", "(")
    assert pattern.exit_code == ExitCode.USAGE and "not a valid regular expression" in pattern.stderr, pattern.stderr
    duration = kctl(*b, "transaction", "list", "--duration", "soon")
    assert (duration.exit_code, duration.stderr.splitlines()[0]) == (ExitCode.USAGE, "error: unable to parse duration 'soon': expected e.g. 30s, 15m, 2h, 1d, PT1H")


def test_force_terminate_fences_the_producer_and_aborts_its_transaction(kctl, kafka_cluster, hanging):
    """The killed producer's transaction ended by taking its transactional id over (as
    kafka-transactions forceTerminateTransaction does): the coordinator aborts it, the
    partition's last stable offset moves past it, and the id has a new producer epoch."""
    c, (topic, transactional_id) = kafka_cluster, hanging
    b = ("-b", c.bootstrap)
    (before,) = as_json(kctl, c, "transaction", "describe", transactional_id)
    assert before["state"] == "Ongoing"

    refused = kctl(*b, "transaction", "force-terminate", transactional_id)
    assert refused.exit_code == ExitCode.ABORTED  # asks first; no terminal here
    done = kctl(*b, "transaction", "force-terminate", transactional_id, "--yes", "-o", "json")
    assert done.exit_code == 0, done.stderr
    (row,) = json.loads(done.stdout)
    assert (row["transactional_id"], row["status"]) == (transactional_id, "terminated")
    assert row["producer_id"] == before["producer_id"] and row["producer_epoch"] > before["producer_epoch"]

    def past_it():
        (after,) = as_json(kctl, c, "transaction", "describe", transactional_id)
        assert after["state"] in ("CompleteAbort", "Empty"), after
        read = kctl(*b, "record", "consume", f"{topic}:0", "--isolation", "read_committed", "--format", "%v\\n")
        assert read.stdout == "committed-0\ncommitted-1\ncommitted-2\nafter\n", read.stderr

    eventually(past_it)
    unknown = kctl(*b, "transaction", "force-terminate", transactional_id + "-not-there", "--yes")
    assert unknown.exit_code == ExitCode.NOT_FOUND, unknown.stderr  # refused, not made by taking it over
    assert unknown.stderr == f"error: unable to terminate the transaction of {transactional_id}-not-there: no such transactional id\n"
