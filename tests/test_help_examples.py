"""Every `Examples:` line of every command's `--help` runs as written: a documented example
that fails is a failing test, and so is one that prints something else than it printed
when recorded in tests/support/help_outputs (tests/support/help_outputs.py: what is normalised, what is
not compared, and how the files are written).

One test per command runs its examples in order, in a fresh home (HOME and XDG dirs) and a
fresh working directory, against a cluster holding the world the examples talk about
(tests/support/help_world.py: orders, payments, logs... with records; groups billing, audit...).
The bundled broker (a new one per command) serves most commands; the commands in
THREE_BROKERS need replicas to move (or an authorizer) and run on the kafka3 backend, reset to
the same world (its ACLs deleted).
Each line must exit 0 unless its trailing comment says otherwise, as in README.md:
`# exit N`, or `# Ctrl-C stops it (exit N)` (the line runs until it has settled into its
work, tests/support/processes.py, then gets SIGINT).

What an example assumes but does not show is set up in BEFORE (files it reads, a broker it
stops, a context it uses), and these parts of the text are replaced, because a test cannot
own them: the address localhost:9092 (the test's broker), absolute directories (/data/,
/mnt/shared/, /var/lib/node_exporter/, /tmp/kafka2: directories under the working
directory), port 19092 (a free port) and spark://spark:7077 (a Spark standalone master
and worker this test starts; an example that names one runs when KCTL_TEST_SPARK selects
`standalone`, tests/spark/selection.py, and otherwise the test ends in a skip saying it
left it out). The count of examples run is printed and must equal the count in the help
texts.

A line that is one plain `kctl` command runs in this process (through main(), as the
console script runs it), in the shell's working directory, HOME and XDG dirs; `kctl
spark` lines on a local master then use the test session's local SparkSession (as under
spark-submit): a JVM start per line made these examples six minutes of CI, and a Python
start per line another two. Lines with pipes, redirections or `;`, `kctl local`, lines
that wait for Ctrl-C, and Spark lines with --master or --spark-conf run in bash, as the
README's blocks all do; tests/spark/test_cluster.py runs `kctl spark` in its own process.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.backends.plugin import BackendUnavailable, _required, selected_backends
from tests.spark import selection
from tests.support import help_outputs, help_world
from tests.support.eventually import eventually
from tests.support.help_outputs import NOT_COMPARED
from tests.support.terminal import kctl_noun
from tests.test_readme import Shell, commands, expected_exit, fresh_env, spark_ready

pytestmark = pytest.mark.integration

# Commands whose examples move replicas or name brokers 2 and 3.
THREE_BROKERS = {
    (), ("topic", "create"), ("topic", "add-partitions"), ("topic", "set-replication-factor"),
    ("replication", "elect-leaders"), ("replication", "reassign", "cancel"), ("replication", "reassign", "execute"),
    ("replication", "reassign", "generate"), ("replication", "reassign", "list"), ("replication", "reassign", "verify"),
    ("config", "alter"), ("config", "describe"), ("broker", "balance"),
    # Eligible leader replicas: the bundled broker reports none (its ELR filters exit 65).
    ("partition", "list"),
    # ACLs need an authorizer; kafka3 runs Kafka's StandardAuthorizer (the bundled broker has none).
    ("acl", "list"), ("acl", "create"), ("acl", "delete"),
    # SCRAM credentials live in KRaft's metadata log; the bundled broker has no SCRAM APIs.
    ("user", "list"), ("user", "describe"), ("user", "set-password"), ("user", "delete"),
    # The bundled broker has no quota APIs.
    ("quota", "list"), ("quota", "describe"), ("quota", "set"), ("quota", "delete"),
    # The bundled broker has no transaction coordinator.
    ("transaction", "list"), ("transaction", "describe"), ("transaction", "find-hanging"), ("transaction", "abort"),
    ("transaction", "force-terminate"),
    ("producer", "list"),
    # The bundled broker has no feature flags, metadata quorum or client-metrics subscriptions.
    ("feature", "list"), ("feature", "upgrade"), ("feature", "downgrade"), ("cluster", "quorum"), ("config", "delete"),
}

# A transaction left open on payments:0 from offset 0 by a producer killed with SIGKILL
# (tests/support/hanging_producer.py; it writes "open" once the transaction is open).
HANGING = (
    f"(PYTHONPATH={Path(__file__).resolve().parents[1]} python -m tests.support.hanging_producer localhost:9092 payments {{id}} > {{id}}.out 2>&1 & "
    "for _ in $(seq 150); do grep -q open {id}.out && break; sleep 0.2; done; kill -9 $! && grep -q open {id}.out)"
)

SET_ALICE_AND_BOB = (
    "printf 'alice-pw\\n' | kctl user set-password alice -m scram-sha-256 -m scram-sha-512 --password-stdin && "
    "printf 'bob-pw\\n' | kctl user set-password bob --password-stdin"
)

PLAN = "kctl replication reassign generate -t orders --brokers 2,3 > plan.json"
DUMP = "kctl spark dump -t orders --out data/orders"
BOTH_SUBSCRIPTIONS = ("kctl config alter client-metrics producers --set metrics=org.apache.kafka.producer. && "
                      "kctl config alter client-metrics kcat --set metrics='*' --set match=client_software_name=kcat")
# Examples that read what a line before them wrote: kafka3's brokers apply the metadata
# log each on its own, a moment apart, and a read goes to any of them (a CI run found no
# `kcat` right after creating that client-metrics subscription; another counted orders'
# 8 partitions right after `--to 12`, so `--add 3` asked for 11). The example with its
# BEFORE line, and its AFTER line, are run again until they succeed; each leaves the same
# state however often it runs (a refused partition increase changes nothing).
RETRIED = {
    "kctl config delete client-metrics producers --dry-run",
    "kctl config delete client-metrics producers kcat --yes",
    "kctl config alter client-metrics kcat --set metrics='*' --set match=client_software_name=kcat",
    "kctl topic add-partitions orders payments --add 3 --dry-run",
    "kctl topic add-partitions orders --add 2 --replica-assignment 1:2,2:3",
}
# Example text -> shell lines run just before it (what the example assumes exists), one
# per line, each exiting 0 unless its `# exit N` says otherwise.
# Commands that change the voters of a dynamic quorum (KIP-853), drain or unregister
# brokers: run on the operated cluster (tests/backends/plugin.py: node 2 a controller
# observing node 1's quorum, brokers 1, 3 and 4), the world on two replicas for the drains.
DYNAMIC_QUORUM = {("cluster", "add-controller"), ("cluster", "remove-controller")}
# cluster balance: brokers to balance (the operated cluster's: 1 and 4 once 3 is unregistered).
OPERATED = DYNAMIC_QUORUM | {("broker", "drain"), ("broker", "unregister"), ("cluster", "balance")}
# Nodes of the operated cluster an example assumes stopped (and its broker drained).
STOPPED_BEFORE = {"kctl broker unregister 3 --yes": 3}

BEFORE = {
    # A dead-letter topic as Kafka Connect writes one: each record names its topic in a header.
    "kctl record redrive orders-dlq --dry-run":
        "kctl topic create orders-dlq > /dev/null && printf '%s\\n' "
        "'__connect.errors.topic=orders,__connect.errors.exception.message=timeout\to-900\t{\"order_id\":\"o-900\",\"status\":\"failed\"}' "
        "'__connect.errors.topic=orders\to-901\t{\"order_id\":\"o-901\",\"status\":\"paid\"}' "
        "| kctl record produce orders-dlq --format '%h\\t%k\\t%v'",
    # A second cluster to copy to (port 19092 is replaced by a free one; kctl local stops after).
    "kctl record copy payments payments --to-context localhost:19092 --from @-1h --rate 1000 --source-header":
        "kctl local start --data-dir kafka2 --port 19092 --no-context > /dev/null && "
        "kctl -b localhost:19092 topic create payments -p 3 > /dev/null",
    # Each command's examples start from node 2 observing (add) or voting (remove).
    "kctl cluster add-controller 2 --dry-run": "kctl cluster remove-controller 2 --yes > /dev/null 2>&1 || true",
    "kctl cluster remove-controller 2 --dry-run": "kctl cluster add-controller 2 --yes > /dev/null 2>&1 || true",
    "kctl connect create -f orders-sink.json": "kctl connect delete orders-sink --yes",
    # A failback needs the group moved to the target first.
    "kctl mirror failback billing --source primary --target backup --fallback timestamp":
        "kctl mirror failover billing --source primary --target backup --execute --yes",
    "kctl connect create -f file-source.properties --initial-state paused": "kctl connect delete file-source --yes",
    "kctl topic create orders --partitions 6 --replication-factor 3 -c retention.ms=86400000":
        "kctl topic delete orders --yes",
    "kctl topic create orders": "kctl topic delete orders payments --if-exists --yes",
    "kctl topic create orders payments -p 12 --rf 3 -c cleanup.policy=compact":
        "kctl topic delete orders payments --if-exists --yes",
    "kctl topic create orders -p 6 --dry-run": "kctl topic delete orders payments --yes",
    "kctl topic create orders --replica-assignment 1:2,2:3,3:1": "kctl topic delete orders --if-exists --yes",
    "kctl replication reassign cancel plan.json --yes": PLAN,
    "kctl replication reassign execute plan.json --throttle 50MB --yes": PLAN,
    "kctl replication reassign verify plan.json": f"{PLAN} && kctl replication reassign execute plan.json --wait --yes",
    "kctl group reset-offsets billing --from-file offsets.csv --execute --backup before.csv":
        "printf 'topic,partition,offset\\norders,0,1\\norders,1,2\\n' > offsets.csv",
    # A share group that starts at the log start (its members would otherwise wait at the end).
    "kctl record consume orders --share-group workers --reject-where 'value.status == \"failed\"'":
        "kctl config alter group workers --set share.auto.offset.reset=earliest > /dev/null",
    "kctl record produce orders -K : --file orders.txt": "printf 'o-100:{\"status\":\"new\"}\\no-101:{\"status\":\"new\"}\\n' > orders.txt",
    "kctl record produce orders --format '%k\\t%v{base64}' -z zstd < dump.tsv": "printf 'o-102\\taGVsbG8=\\n' > dump.tsv",
    "kctl local purge --yes": "kctl local stop",
    "kctl local logs": "kctl local start",
    "kctl local status": "kctl local start",
    "kctl local start --foreground": "kctl local stop",
    "kctl spark audit --dump /data/orders --json --key-path '$.order_id'": DUMP,
    "kctl spark sql 'SELECT count(*) AS n FROM dump.`/data/orders` JOIN orders USING (partition, offset)'": DUMP,
    "kctl spark audit -t orders --json-schema order.schema.json":
        """printf '{"type":"object","required":["order_id","status"]}' > order.schema.json""",
    "kctl spark audit --dump /data/orders --compare-to orders-copy -o json": f"test -d data/orders || {DUMP}",
    "kctl spark replay --from-dump /data/orders --to-topic orders --since 2026-11-01T00:00Z --until 2026-11-02T00:00Z": DUMP,
    # An interrupted replay (the fault injection of tests/spark) for --resume to finish.
    "kctl spark replay --to-topic orders --resume":
        "KCTL_SPARK_FAIL_AFTER_RECORDS=5 kctl spark replay --from-dump data/orders --to-topic orders  # exit 1\n"
        "jq -e '.status == \"partial\"' ~/.local/state/kctl/replays/orders.json",
    "kctl acl create --file acls.json":
        "kctl acl create --principal User:carol --operation read --topic orders && kctl acl list -o json > acls.json",
    "kctl user set-password alice --password-stdin < alice.pass": "printf 'alice-pw\\n' > alice.pass",
    "kctl context set prod --password-stdin < prod.pass": "printf 'prod-pw\\n' > prod.pass",
    "kctl user set-password bob -m scram-sha-256 -m scram-sha-512 --iterations 4096 --password-stdin < bob.pass":
        "printf 'bob-pw\\n' > bob.pass",
    "kctl user describe alice": SET_ALICE_AND_BOB,
    "kctl user delete alice --yes": SET_ALICE_AND_BOB,
    "kctl user delete alice -m scram-sha-256 --yes": SET_ALICE_AND_BOB,
    "kctl quota delete --user alice --quota producer_byte_rate --yes":
        "kctl quota set --user alice --set producer_byte_rate=1MiB",
    "kctl quota delete --user alice --client-id billing-app --dry-run":
        "kctl quota set --user alice --client-id billing-app --set request_percentage=50",
    "kctl quota delete --ip 10.0.0.7 --yes": "kctl quota set --ip 10.0.0.7 --set connection_creation_rate=20",
    "kctl transaction describe payments-tx-1": HANGING.format(id="payments-tx-1") + " && " + HANGING.format(id="payments-tx-2"),
    "kctl transaction abort payments:0": HANGING.format(id="payments-tx-3"),
    "kctl transaction abort payments:0 --yes": HANGING.format(id="payments-tx-4"),
    "kctl transaction force-terminate payments-tx-5 --yes": HANGING.format(id="payments-tx-5"),
    "kctl config delete client-metrics producers --dry-run":
        "kctl config alter client-metrics producers --set metrics=org.apache.kafka.producer.",
    "kctl config delete client-metrics producers kcat --yes": BOTH_SUBSCRIPTIONS,
    "kctl --context prod top --interval 5 --window 1h": "kctl context set prod -b localhost:9092",
    "kctl --context prod export | kctl --context staging diff -f -":
        "kctl context set prod -b localhost:9092 && kctl context set staging -b localhost:9092",
    "kctl diff -f cluster.yaml": "kctl export > cluster.yaml",
    "kctl diff -f state/ -o json": "kctl export --dir state/",
    "kctl apply -f cluster.yaml --validate": "kctl export > cluster.yaml",
    "kctl apply -f state/ --throttle 50MB/s --yes": "kctl export --dir state/",
    "kctl context delete old-cluster --yes": "kctl context set old-cluster -b old:9092",
    "kctl context show prod -o json": "kctl context set prod -b b1:9092",
    "kctl --context prod -X client.id=me context show": "kctl context set prod -b b1:9092",
    "kctl context use prod": "kctl context set prod -b b1:9092",
    "kctl schema delete old-orders-value --version 2 --yes":
        "kctl schema register old-orders-value --file order.avsc && kctl schema register old-orders-value --file order-v2.avsc",
}
# Example text -> shell lines run after it, to leave a shared cluster as it was.
AFTER = {
    "kctl config alter broker 1 --set log.cleaner.threads=2": "kctl config alter broker 1 --delete log.cleaner.threads",
    "kctl config alter broker-default --set message.max.bytes=2097152":
        "kctl config alter broker-default --delete message.max.bytes",
    "kctl config alter broker-logger 1 --set kafka.server.ReplicaManager=DEBUG":
        "kctl config alter broker-logger 1 --set kafka.server.ReplicaManager=INFO",
    "kctl config alter group billing --set consumer.session.timeout.ms=60000":
        "kctl config alter group billing --delete consumer.session.timeout.ms",
    "kctl config alter client-metrics kcat --set metrics='*' --set match=client_software_name=kcat":
        f"{BOTH_SUBSCRIPTIONS} && kctl config delete client-metrics producers kcat --yes",
    "kctl feature downgrade --feature eligible.leader.replicas.version=0 --yes":
        "kctl feature upgrade --feature eligible.leader.replicas.version=1 --yes",
}
DIRECTORIES = {"/data/": "data/", "/mnt/shared/": "shared/", "/var/lib/node_exporter/": "node_exporter/",
               "/tmp/kafka2": "kafka2"}


@dataclass
class Example:
    path: tuple[str, ...]
    text: str
    comment: str


def examples_of(help_text: str) -> list[tuple[str, str]]:
    """(command, trailing comment) for each example line after `Examples:`; a line ending in
    a backslash goes on on the next."""
    if "Examples:" not in help_text:
        return []
    lines, joined = help_text.split("Examples:", 1)[1].splitlines(), []
    for line in lines:
        if line.strip() in ("", "\b"):
            continue
        if not line.startswith(" "):
            break
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1].rstrip() + " " + line.strip()
        else:
            joined.append(line.strip())
    return commands("\n".join(joined))


def all_examples() -> dict[tuple[str, ...], list[Example]]:
    from kctl.devtools.tree import walk

    found = {}
    for info in walk():
        listed = [Example(info.path, text, comment) for text, comment in examples_of(info.help)]
        if listed:
            found[info.path] = listed
    # The mirror examples share one MM2 world: those that only read it (status waits for
    # every group to be checkpointed at its commits) run before those that move groups
    # (failover, failback): a failback undone after MM2 checkpointed it midway leaves the
    # group ahead of its newest checkpoint for good, and status waited its 300 s for it.
    readers = [path for path in found if path in (("mirror", "status"), ("mirror", "translate"))]
    return {**{path: found[path] for path in readers}, **{path: v for path, v in found.items() if path not in readers}}


EXAMPLES = all_examples()


@functools.cache
def second_port() -> int:
    """The free port that stands for 19092, the examples' second local broker."""
    from tests.backends.kafka import free_port

    return free_port()


def localised(text: str, bootstrap: str, spark_master: str | None) -> str:
    text = text.replace("localhost:9092", bootstrap)
    for absolute, relative in DIRECTORIES.items():
        text = text.replace(absolute, relative)
    if "19092" in text:  # one free port per test, the same in its BEFORE lines and its examples
        text = text.replace("--port 19092", f"--port {second_port()}").replace("localhost:19092", f"localhost:{second_port()}")
    if spark_master:
        text = text.replace("spark://spark:7077", spark_master)
    return text


class InProcessShell(Shell):
    """A Shell that runs a line that is one plain `kctl` command in this process (see the
    module's doc); anything else, in bash."""

    def __init__(self, shell: Shell, kctl, monkeypatch):
        super().__init__(shell.cwd, shell.env)
        self.kctl, self.monkeypatch = kctl, monkeypatch

    def run(self, command: str, comment: str, where: str, timeout: float = 600) -> subprocess.CompletedProcess:
        if not in_process(command, comment):
            return super().run(command, comment, where, timeout)
        assignments, command = split_assignments(command)
        env = {k: v for k, v in self.env.items()
               if k in ("HOME", "TMP", "PAGER", "MANPAGER", "LANG") or k.startswith(("XDG_", "KCTL_"))}
        with self.monkeypatch.context() as patch:
            patch.chdir(self.cwd)
            result = self.kctl(*shlex.split(command)[1:], env={**env, **assignments})
        assert result.exit_code == expected_exit(comment), \
            f"{where}: `{command}` exited {result.exit_code}, expected {expected_exit(comment)}\n{result.stdout}\n{result.stderr}"
        return subprocess.CompletedProcess(command, result.exit_code, result.stdout, result.stderr)


def split_assignments(command: str) -> tuple[dict[str, str], str]:
    """The plain `NAME=value` assignments a line starts with, as a shell would set them in
    the command's environment, and the command after them."""
    match = re.fullmatch(r"((?:[A-Za-z_]\w*=[^\s'\"$`\\;&|<>]*\s+)*)(.*)", command, re.S)
    return dict(part.split("=", 1) for part in match.group(1).split()), match.group(2)


def in_process(command: str, comment: str) -> bool:
    """One `kctl` command (after plain variable assignments) with nothing else for a shell
    to do, that neither waits for Ctrl-C or a terminal's answer, nor starts a broker
    (`kctl local`) or a JVM of its own (--master and --spark-conf choose how Spark starts)."""
    command = split_assignments(command)[1]
    unquoted = re.sub(r"'[^']*'", "''", command)  # what is in single quotes is literal
    return (command.startswith("kctl ") and not re.search(r"[|;&<>$`\"\\]|--master|--spark-conf", unquoted)
            and not command.startswith("kctl local") and kctl_noun(command) != "top" and not re.search(r"Ctrl-C|asks first", comment))


def fresh_shell(tmp_path: Path) -> Shell:
    home, work = tmp_path / "home", tmp_path / "work"
    for directory in (home, work, work / "data", work / "shared", work / "node_exporter", tmp_path / "tmp"):
        directory.mkdir(parents=True, exist_ok=True)
    return Shell(work, dict(fresh_env(home), TMP=str(tmp_path / "tmp")))


@pytest.fixture(scope="module")
def kafka3(_backends):
    if "kafka3" not in selected_backends():
        pytest.skip("these examples need three brokers: KCTL_TEST_BROKERS=kafka3")
    try:
        return _backends.get("kafka3")
    except BackendUnavailable as exc:
        if _required():
            pytest.fail(f"KCTL_REQUIRE_BROKERS=1 and backend {exc}", pytrace=False)
        pytest.skip(str(exc))


@pytest.fixture
def bundled(tmp_path):
    from kctl.broker.process import BrokerProcess

    process = BrokerProcess(tmp_path / "world-broker")
    bootstrap = process.start()
    yield bootstrap
    process.stop()


@pytest.fixture
def token_world(tmp_path):
    """A bundled broker with SASL/SCRAM (user admin) and delegation tokens on."""
    from kctl.broker.process import BrokerProcess

    process = BrokerProcess(tmp_path / "token-broker", extra_args=[
        "--sasl", "scram-sha-256,scram-sha-512", "--user=admin:admin-secret", "--config=delegation.token.secret.key=examples"])
    bootstrap = process.start()
    yield bootstrap
    process.stop()


@pytest.fixture(scope="module")
def connect_world(tmp_path_factory):
    """A bundled broker and a Connect worker on it, shared by the `kctl connect` examples
    (a worker takes seconds to start); each command's connectors are made anew on them
    (help_world.connect_world: kept when a command left them as they were)."""
    from kctl.broker.process import BrokerProcess
    from tests.backends.plugin import start_connect

    process = BrokerProcess(tmp_path_factory.mktemp("connect-world-broker"))
    bootstrap = process.start()
    # The examples read no topic and change none: the topics are made once, not per command.
    help_world.reset(bootstrap, 1)
    try:
        workers = start_connect(tmp_path_factory.mktemp("connect-world"), bootstrap, where="the examples' broker")
    except BaseException:
        process.stop()
        raise
    # The connectors' own files (the sink's output, the source's input), kept from one
    # command to the next with the connectors (help_world.connect_world).
    yield bootstrap, workers, tmp_path_factory.mktemp("connect-data")
    workers.stop()
    process.stop()


@pytest.fixture(scope="module")
def mirror_world(tmp_path_factory):
    """Two bundled brokers, primary (the world of help_world.reset) and backup, with a
    MirrorMaker 2 between them both ways on orders and payments, shared by the `kctl
    mirror` examples; returned once MM2 has checkpointed the world's groups."""
    from kctl.broker.process import BrokerProcess
    from tests.backends.plugin import start_mirror

    primary = BrokerProcess(tmp_path_factory.mktemp("mirror-primary"))
    backup = BrokerProcess(tmp_path_factory.mktemp("mirror-backup"))
    try:
        source, target = primary.start(), backup.start()
        # billing caught up: MM2 4.3 may never checkpoint an offset before its only offset
        # sync of a partition. It sends at most 10 syncs at once; a partition's first sync
        # still waiting at the next offset commit is replaced by the newest (9 -> 9), and
        # billing's 8 there cannot be translated until billing commits past 9 (a CI run's
        # `status -g billing --watch --exit-when-healthy` waited its 300 s).
        help_world.reset(source, 1, billing_behind=0)
        mm2 = start_mirror(tmp_path_factory.mktemp("mirror-world"), {"primary": source, "backup": target},
                           flows=[("primary", "backup"), ("backup", "primary")], topics="orders|payments")
        try:
            help_world.mirror_world(source, target)
            yield source, target
        finally:
            mm2.stop()
    finally:
        backup.stop()
        primary.stop()


def needs_spark(path: tuple[str, ...]) -> bool:
    return path[:1] == ("spark",)


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """A schema registry of the examples' own: they name schema id 1, which must be the
    world's first schema (help_world.registry_world)."""
    from tests.backends.registry import RegistryError, SchemaRegistry

    started = SchemaRegistry(tmp_path_factory.mktemp("registry"))
    try:
        started.start()
    except (OSError, RegistryError) as exc:
        (pytest.fail if _required() else pytest.skip)(f"the schema registry did not start: {exc}")
    help_world.registry_world(started.url)
    yield started
    started.stop()


@pytest.mark.parametrize("path", list(EXAMPLES), ids=lambda path: "-".join(path) or "kctl")
def test_help_examples_run(path, request, tmp_path, spark_standalone):
    if needs_spark(path) and not spark_ready():
        if os.environ.get("KCTL_REQUIRE_SPARK"):
            pytest.fail("needs pyspark and Java")
        pytest.skip("needs pyspark and Java")
    connect = mirror = None
    if path in THREE_BROKERS:
        cluster = request.getfixturevalue("kafka3")
        bootstrap, nodes = cluster.bootstrap, cluster.nodes
    elif path in OPERATED:
        operated = request.getfixturevalue("operated_kafka")
        bootstrap, nodes = operated.bootstrap, 2
    elif path[:1] == ("connect",):
        (bootstrap, connect, connect_data), nodes = request.getfixturevalue("connect_world"), 1
    elif path[:1] == ("mirror",):
        (bootstrap, mirror), nodes = request.getfixturevalue("mirror_world"), 1
    elif path[:1] == ("token",):
        bootstrap, nodes = request.getfixturevalue("token_world"), 1
    else:
        bootstrap, nodes = request.getfixturevalue("bundled"), 1
    if path in OPERATED:
        if path not in DYNAMIC_QUORUM:  # changing voters needs no topics
            help_world.reset(bootstrap, nodes, acls=False)
    elif connect is None and mirror is None and path[:1] != ("token",):  # the token examples read no topic
        help_world.reset(bootstrap, nodes)
    if needs_spark(path):
        request.getfixturevalue("spark")  # the local session the in-process lines share
    shell = InProcessShell(fresh_shell(tmp_path), request.getfixturevalue("kctl"), request.getfixturevalue("monkeypatch"))
    if path[:1] == ("token",):
        # Logged in as admin (SCRAM), with a token made for the examples that name one.
        shell.run(f"printf 'admin-secret\\n' | kctl context set examples -b {bootstrap} -X security.protocol=SASL_PLAINTEXT "
                  "-X sasl.mechanism=SCRAM-SHA-512 -X sasl.username=admin --password-stdin --use", "", "setup")
        made = shell.run("kctl token create -o json", "", "setup")
        (token,) = json.loads(made.stdout)
        shell.env.update(TOKEN_ID=token["token_id"], HMAC=token["hmac"])
    else:
        shell.run(f"kctl context set examples -b {bootstrap} --use", "", "setup")
    if mirror is not None:  # the contexts the mirror examples name
        shell.run(f"kctl context set primary -b {bootstrap} && kctl context set backup -b {mirror}", "", "setup")
    if path[:1] == ("schema",) or path in (("record", "consume"), ("record", "produce"), ("spark", "dump"), ("spark", "sql")):
        url = request.getfixturevalue("registry").url
        help_world.schema_world(url, shell.cwd, bootstrap)
        shell.env["KCTL_SCHEMA_REGISTRY_URL"] = url
    if connect is not None:
        help_world.connect_world(connect.url, shell.cwd, connect_data, bootstrap)
        shell.env["KCTL_CONNECT_URL"] = connect.url
    on_a_cluster = [e.text for e in EXAMPLES[path] if "spark://" in e.text]
    # Those need a Spark standalone cluster, which KCTL_TEST_SPARK may leave out.
    master = spark_standalone().url if on_a_cluster and selection.runs("standalone") else None
    where = f"kctl {' '.join(path)} --help"
    directories = {str(shell.cwd): ".", shell.env["HOME"]: "~", shell.env["TMP"]: "$TMP"}
    if connect is not None:  # the worker's address, in URLs and as a worker id; the connectors' files
        directories[connect.url.removeprefix("http://")] = "localhost:8083"
        directories[str(connect_data)] = "/srv/connect"
    printed = []
    try:
        for example in EXAMPLES[path]:
            if example.text in on_a_cluster and master is None:
                continue

            def run_example(example=example):
                if example.text in STOPPED_BEFORE:
                    stop_drained(shell, operated, STOPPED_BEFORE[example.text])
                for line, comment in commands(localised(BEFORE.get(example.text, ""), bootstrap, master)):
                    shell.run(line, comment, f"{where}: before `{example.text}`")
                text = localised(example.text, bootstrap, master)
                if connect is not None:
                    text = text.replace("http://localhost:8083", connect.url)
                return shell.run(text, example.comment, f"{where}: `{example.text}`")

            def run_after(example=example):
                shell.run(AFTER[example.text], "", f"{where}: after `{example.text}`")

            retried = example.text in RETRIED
            result = eventually(run_example, timeout=30) if retried else run_example()
            output = help_outputs.normalised(result.stdout, bootstrap=bootstrap, directories=directories)
            if example.path == ("record", "consume"):
                # Records of several partitions arrive in no order Kafka defines (a CI run
                # interleaved them differently): which lines were printed is compared.
                output = "\n".join(sorted(output.splitlines()))
            printed.append((example.text, NOT_COMPARED + reason if (reason := never_the_same(example)) else output))
            if example.text in AFTER and retried:
                eventually(run_after, timeout=30)
            elif example.text in AFTER:
                run_after()
    finally:
        stop_local_brokers(shell)
    if help_outputs.updating():
        help_outputs.save(path, help_outputs.merged(help_outputs.load(path), printed))
        return
    expected = dict(help_outputs.load(path))
    differing = [f"$ {text}\n--- expected ({help_outputs.file_for(path).name})\n{expected[text]}\n--- printed\n{output}"
                 for text, output in printed if text in expected and not expected[text].startswith(NOT_COMPARED)
                 and expected[text] != output]
    assert not differing, f"{where}: output differs from tests/support/help_outputs (KCTL_UPDATE_HELP_OUTPUTS=1 records it anew)\n" + "\n".join(differing)
    if on_a_cluster and master is None:
        # The others ran and passed; the test says what it left out rather than pass.
        pytest.skip(f"{len(on_a_cluster)} of {len(EXAMPLES[path])} examples not run: {selection.reason('standalone')}")


def never_the_same(example: Example) -> str | None:
    """Why an example's output cannot be compared, whatever the run, or None."""
    if re.search(r"Ctrl-C", example.comment):
        return "stopped by Ctrl-C, wherever it got to"
    if example.path == ("record", "consume") and re.search(r"--grep .* -n \d", example.text):
        # A CI run printed o-10, o-20, o-30... where the recording has o-0, o-10, o-20...
        return "the first matches of several partitions arrive in no order Kafka defines"
    if example.path[:1] == ("local",):
        return "a broker's own directory, port and process"
    if example.path in (("connect", "info"), ("connect", "logger", "list"), ("connect", "plugins")):
        return "a Connect worker's commit, its cluster's id, the loggers its JVM has made"
    if example.path[:1] == ("mirror",):
        return "MM2's checkpoints, offset syncs and heartbeats depend on when it ran"
    if example.path in DYNAMIC_QUORUM:
        return "directory ids and ports are the test cluster's own"
    if example.path in (("broker", "drain"), ("cluster", "balance")):
        return "which brokers take the replicas depends on where the topics were placed"
    if example.path[:1] == ("token",):
        return "a token's id, HMAC and times are new each run"
    if example.path == ("cluster", "usage"):
        return "the disks' capacity and free space are the machine's"
    if example.path == ("top",):
        return "a full-screen terminal application (run in a pseudo-terminal until its first data, then q)"
    if example.path in THREE_BROKERS and example.path[:1] in ((), ("topic",), ("replication",), ("broker",)):
        return "three brokers place leaders and replicas at random"
    if example.path in THREE_BROKERS and example.path[:1] != ("acl",):
        # help_world.reset() clears the world's topics, groups and ACLs; not what the other
        # kafka3 tests leave (quotas, users, configs, transactions, producer ids).
        return "the three brokers are shared with the other kafka3 tests"
    return None


def stop_drained(shell: Shell, cluster, node_id: int) -> None:
    """Drain broker `node_id` of the operated cluster, stop it and wait until it is fenced."""
    shell.run(f"kctl broker drain {node_id} --execute --yes > /dev/null", "", "setup")
    cluster.stop_node(node_id)
    shell.run(f"for _ in $(seq 100); do kctl broker list --include-fenced -o plain --no-headers | grep -q '^{node_id}\t.*\tfenced$' "
              "&& break; sleep 0.3; done", "", "setup")


def stop_local_brokers(shell: Shell) -> None:
    """Brokers the `kctl local` examples started, in the default data dir or another."""
    for data_dir in ("", "--data-dir kafka2", f"--data-dir {shell.env['TMP']}", f"--data-dir {shell.env['TMP']}/sec",
                     f"--data-dir {shell.env['TMP']}/six"):
        subprocess.run(["bash", "-c", f"kctl local stop {data_dir}"], cwd=shell.cwd, env=shell.env,
                       capture_output=True, timeout=60)


def examples_in_the_source() -> int:
    """Example lines counted in the cli modules' text, not through --help and the parser
    above: every line of an `Examples:` block up to the docstring's end, a line ending in
    a backslash going on on the next (the hidden `__names` command is not in the tree)."""
    count = 0
    for module in sorted((Path(__file__).resolve().parent.parent / "kctl" / "cli").glob("*.py")):
        if module.name == "names.py":
            continue
        for block in re.findall(r'Examples:\n(.*?)"""', module.read_text(), re.S):
            continued = False
            for line in (line.strip() for line in block.splitlines()):
                if line in ("", "\\b"):
                    continued = False
                    continue
                count += not continued
                continued = line.endswith("\\")
    return count


def test_every_example_is_collected(capsys):
    """The examples the tests above run are every `Examples:` line there is."""
    from kctl.devtools.tree import walk

    in_help = sum(len(examples_of(info.help)) for info in walk())
    collected = sum(len(listed) for listed in EXAMPLES.values())
    in_source = examples_in_the_source()
    with capsys.disabled():
        print(f"\n--help: {collected} of {in_source} examples collected, in {len(EXAMPLES)} commands")
    assert collected == in_help == in_source
    assert all(text in (e.text for listed in EXAMPLES.values() for e in listed) for text in (*BEFORE, *AFTER, *RETRIED)), \
        "BEFORE/AFTER name an example that no longer exists"


def test_every_example_has_its_expected_output():
    """tests/support/help_outputs has a file per command listing exactly its examples (one written
    by KCTL_UPDATE_HELP_OUTPUTS=1), and no file of a command that is gone."""
    if help_outputs.updating():
        pytest.skip("the files are being written")
    stale = [" ".join(path) or "kctl" for path, listed in EXAMPLES.items()
             if [text for text, _ in help_outputs.load(path)] != [e.text for e in listed]]
    assert not stale, f"tests/support/help_outputs is stale for: {', '.join(stale)} (KCTL_UPDATE_HELP_OUTPUTS=1 pytest tests/test_help_examples.py)"
    kept = {help_outputs.file_for(path).name for path in EXAMPLES}
    assert sorted(p.name for p in help_outputs.DIRECTORY.glob("*.txt")) == sorted(kept)
    outputs = [output for path in EXAMPLES for _, output in help_outputs.load(path)]
    compared = sum(not output.startswith(NOT_COMPARED) for output in outputs)
    # 153 of 275 when they were first recorded (the rest: kafka3's, `kctl local`'s, Ctrl-C
    # lines and 19 that differed between runs): a normalisation that stopped working would
    # leave most of them `differs between runs`.
    assert compared * 2 >= len(outputs), f"only {compared} of {len(outputs)} outputs are compared"


def test_every_example_is_shown_as_written():
    """Every example line of every `--help` fits the page kctl lays help out on for a wide
    terminal (98 columns: click wraps nothing in an example, so a longer line runs past
    the edge). A continuation written with a lone backslash in a docstring joins two lines
    into one far longer: the length catches that too."""
    from kctl.cli.entry import WIDTHS

    width = max(WIDTHS)
    pages = (Path(__file__).parent.parent / "kctl" / "cli" / "pages" / f"help-{width}.txt").read_text().split("\f")[1:]
    too_long = []
    for page in pages:
        command, _, text = page.partition("\n")
        if "Examples:" not in text:
            continue
        for line in text.split("Examples:", 1)[1].splitlines():
            if line and not line.startswith(" "):
                break
            if len(line) > width:
                too_long.append(f"{command}: {line.strip()[:60]}... ({len(line)} columns)")
    assert not too_long, "\n".join(too_long)
