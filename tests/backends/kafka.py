"""Real Apache Kafka 4.x clusters on loopback, run from Maven Central jars (KRaft, combined
broker+controller nodes, static quorum), for tests and benchmarks.

    cluster = KafkaCluster(nodes=3, workdir=path)
    cluster.start()          # formats and starts every node, waits until all are registered
    cluster.bootstrap        # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
    cluster.stop_node(2); cluster.start_node(2)
    cluster.run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", ..., "--list")
    cluster.stop()

    python -m tests.backends.kafka --port 9092    # a single node in the foreground, for trying kctl

Ports are picked free at start. Every JVM runs in its own process group and is killed
at stop() or interpreter exit, even when start-up failed; each node's output is kept in
workdir/node-N.log and its tail is part of any start-up error.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import functools
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.backends.jars import kafka_version, resolve_classpath
from tests.support.eventually import within

# Faster start for tests: small heaps, C1 only, serial GC. Kafka's own scripts use G1
# and a 1 GiB heap; benchmarks that compare throughput pass jvm_options of their own.
TEST_JVM_OPTIONS = ("-Xms128m", "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto", "-Djava.awt.headless=true")
# What kafka-run-class.sh gives the command-line tools (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS):
# the benchmarks' anchors run as users run them.
TOOL_JVM_OPTIONS = (
    "-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
)

# Kafka's tools in the tests (their output is what is checked, not their speed) run as the
# test brokers do: a full run starts ~100 of them, and each took ~2.6 s of CPU with C2 and
# G1, ~1.6 s with these.
TEST_TOOL_JVM_OPTIONS = ("-Xmx256m", *TEST_JVM_OPTIONS[2:])
# ... and they map a class archive (Java's AppCDS) that the first of them writes as it
# exits: Kafka's classes loaded and verified once, not per run (a `kafka-topics --list`
# 1.15 -> 0.6 s of CPU, 0.95 -> 0.45 s). Logging off: a stale archive is ignored
# silently, not reported on the tool's stdout.
QUIET_JVM_LOGGING = ("-Xlog:disable", "-Xlog:all=error:stderr")

LOG4J2 = """\
status = error
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = out
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = INFO
logger.broker.name = kafka.server.BrokerServer
logger.broker.level = INFO
"""
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH_LOGIN = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
TOOLS_LOG4J2 = "status = error\nappender.err.type = Console\nappender.err.name = err\nappender.err.target = SYSTEM_ERR\nappender.err.layout.type = PatternLayout\nappender.err.layout.pattern = %p %m%n\nrootLogger.level = WARN\nrootLogger.appenderRef.err.ref = err\n"

_LIVE: set[KafkaCluster] = set()


class KafkaStartError(RuntimeError):
    pass


def free_port() -> int:
    """A free port below the kernel's ephemeral range (32768+ on Linux).

    Kafka binds its ports seconds after they are chosen; a port from the ephemeral range
    can meanwhile become the source port of some client connection (the tests open many),
    and Kafka then dies with "Address already in use".

    A port could also be chosen twice before anything binds it: by this process (seen in
    CI: a node's listener and controller drawn on one port, and Kafka refused to format
    the node), so a port is never handed out twice here; or by another pytest-xdist worker,
    so each worker draws from a slice of the range of its own.
    """
    import os
    import random

    low, high = 20000, 32000
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if worker.startswith("gw") and worker[2:].isdigit() and count > 1:
        size = (high - low) // count
        low = low + int(worker[2:]) % count * size
        high = low + size
    for _ in range(200):
        port = random.randrange(low, high)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            _HANDED_OUT.add(port)
            return port
    raise KafkaStartError(f"no free port found in {low}-{high}")


# Ports free_port has returned in this process.
_HANDED_OUT: set[int] = set()


def random_cluster_id() -> str:
    """A Kafka Uuid in its string form: 16 random bytes, URL-safe base64, no padding.

    Like Kafka's Uuid.randomUuid, never one starting with '-': command-line parsers
    (kafka-storage's among them) would take it for an option.
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass
class KafkaNode:
    node_id: int
    port: int
    controller_port: int
    directory: Path
    process: subprocess.Popen | None = None

    @property
    def log_path(self) -> Path:
        return self.directory.parent / f"node-{self.node_id}.log"

    @property
    def properties_path(self) -> Path:
        return self.directory.parent / f"node-{self.node_id}.properties"


class KafkaCluster:
    def __init__(
        self,
        nodes: int = 1,
        workdir: Path | None = None,
        *,
        ports: list[int] | None = None,
        jvm_options: tuple[str, ...] = TEST_JVM_OPTIONS,
        tool_jvm_options: tuple[str, ...] = TOOL_JVM_OPTIONS,
        overrides: dict[str, str] | None = None,
        sasl_users: dict[str, str] | None = None,
        scram_users: dict[str, str] | None = None,
        authorizer: bool = False,
        version: str | None = None,
        standalone: bool = False,
        roles: dict[int, str] | None = None,
        tiered_storage: bool = False,
        racks: dict[int, str] | None = None,
        node_overrides: dict[int, dict[str, str]] | None = None,
    ):
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="kctl-kafka-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.jvm_options = jvm_options
        self.tool_jvm_options = tool_jvm_options
        self.overrides = dict(overrides or {})
        # Properties of one node each, over `overrides` (its own advertised listener).
        self.node_overrides = {node: dict(values) for node, values in (node_overrides or {}).items()}
        # broker.rack of each node that has one.
        self.racks = dict(racks or {})
        # With users, clients authenticate with SASL (PLAIN for sasl_users, SCRAM-SHA-256
        # and -512 for scram_users, OAUTHBEARER with Kafka's unsecured JWTs for anyone) and
        # the StandardAuthorizer enforces ACLs; "admin" (the brokers' own identity) is the
        # only super user.
        self.sasl_users = dict(sasl_users or {})
        self.scram_users = dict(scram_users or {})
        # An authorizer on a plaintext cluster: ACL commands work, and every client (the
        # ANONYMOUS principal) is a super user, so nothing else changes.
        self.authorizer = authorizer
        # A dynamic quorum (KIP-853, kraft.version 1): one node formatted --standalone,
        # found through controller.quorum.bootstrap.servers instead of a static voter list.
        self.standalone = standalone
        # process.roles of the nodes that are not "broker,controller": with standalone, node
        # 1 forms the quorum and a "controller" node joins it as an observer (formatted
        # --no-initial-controllers, controller.quorum.auto.join.enable=false: the operator
        # decides when it becomes a voter); "broker" nodes find it through node 1.
        self.roles = dict(roles or {})
        if standalone and any(i not in self.roles for i in range(2, nodes + 1)):
            raise ValueError("a standalone (dynamic) quorum starts from node 1; name the others' roles")
        if not standalone and nodes != 1 and self.roles:
            raise ValueError("roles are for a standalone (dynamic) quorum")
        # Tiered storage (KIP-405) with Kafka's own LocalTieredStorage (the kafka-storage
        # test jar the POM adds) in one directory every broker shares, and the topic-based
        # remote log metadata manager; tasks run every second, so tests see uploads soon.
        self.tiered_storage = tiered_storage
        if self.sasl_users or self.scram_users:
            self.sasl_users.setdefault("admin", "admin-secret")
        self.nodes = [
            KafkaNode(
                node_id=i,
                port=(ports[i - 1] if ports else free_port()),
                controller_port=free_port(),
                directory=self.workdir / f"data-{i}",
            )
            for i in range(1, nodes + 1)
        ]
        self.cluster_id = random_cluster_id()
        self.version = kafka_version(version)  # the newest (pom.xml) unless told
        self._classpath: str | None = None

    # -- addresses -------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes if "broker" in self.role(n.node_id))

    @property
    def node_ids(self) -> list[int]:
        return [n.node_id for n in self.nodes]

    def node(self, node_id: int) -> KafkaNode:
        return next(n for n in self.nodes if n.node_id == node_id)

    def log_path(self, node_id: int) -> Path:
        return self.node(node_id).log_path

    # -- configuration ---------------------------------------------------------------------

    @property
    def classpath(self) -> str:
        if self._classpath is None:
            # Kafka 3.x brings SLF4J's reload4j binding beside the POM's log4j2 one: drop
            # it, so the log4j2 configuration written here is the one used.
            jars = [p for p in resolve_classpath(self.version, self.tiered_storage) if not p.name.startswith("slf4j-reload4j")]
            self._classpath = os.pathsep.join(str(p) for p in jars)
        return self._classpath

    def role(self, node_id: int) -> str:
        return self.roles.get(node_id, "broker,controller")

    @property
    def broker_ids(self) -> list[int]:
        return [n.node_id for n in self.nodes if "broker" in self.role(n.node_id)]

    def _properties(self, node: KafkaNode) -> dict[str, str]:
        replication = str(min(3, len(self.broker_ids)))
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
        properties = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(node.directory),
            "num.partitions": "1",
            "default.replication.factor": replication,
            "offsets.topic.replication.factor": replication,
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "3",
            "share.coordinator.state.topic.replication.factor": replication,
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # Tests stop nodes; let the controller notice within seconds, not 9 s.
            "broker.session.timeout.ms": "4000",
            "broker.heartbeat.interval.ms": "500",
            "replica.lag.time.max.ms": "5000",
            # Leaders move back to their preferred replica only when a test elects them:
            # Kafka's own check (every 300 s) once did it between a restarted broker's
            # return and the test's look at who leads (test_preferred_leader_election).
            "auto.leader.rebalance.enable": "false",
            "log.segment.bytes": str(16 * 1024 * 1024),
            # Compaction tests: clean a dirty compacted log within a second, not 15 s.
            "log.cleaner.backoff.ms": "1000",
            # Transaction timeout tests: abort an expired transaction within a second, not 10 s.
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        }
        if self.standalone:
            del properties["controller.quorum.voters"]
            properties["controller.quorum.bootstrap.servers"] = f"127.0.0.1:{self.nodes[0].controller_port}"
            role = self.role(node.node_id)
            properties["process.roles"] = role
            if role == "controller":
                properties.update({"listeners": f"CONTROLLER://127.0.0.1:{node.controller_port}",
                                   "advertised.listeners": f"CONTROLLER://127.0.0.1:{node.controller_port}",
                                   "controller.quorum.auto.join.enable": "false"})
                del properties["inter.broker.listener.name"]
            elif role == "broker":
                properties.update({"listeners": f"PLAINTEXT://127.0.0.1:{node.port}"})
        if self.tiered_storage:
            properties.update(
                {
                    "remote.log.storage.system.enable": "true",
                    "remote.log.storage.manager.class.name": "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
                    "rsm.config.dir": str(self.workdir / "remote-storage"),
                    "remote.log.metadata.manager.listener.name": "PLAINTEXT",
                    "rlmm.config.remote.log.metadata.topic.replication.factor": replication,
                    "rlmm.config.remote.log.metadata.topic.min.isr": "1",
                    "rlmm.config.remote.log.metadata.topic.num.partitions": "3",
                    "remote.log.manager.task.interval.ms": "1000",
                    "log.retention.check.interval.ms": "1000",
                }
            )
        if self.authorizer:
            properties.update(
                {
                    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                    "super.users": "User:ANONYMOUS",
                }
            )
        if self.sasl_users:
            users = " ".join(f'user_{u}="{p}"' for u, p in sorted(self.sasl_users.items()))
            jaas = f'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="{self.sasl_users["admin"]}" {users};'
            properties.update(
                {
                    "listeners": f"SASL_PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
                    "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{node.port}",
                    "inter.broker.listener.name": "SASL_PLAINTEXT",
                    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
                    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
                    "sasl.mechanism.inter.broker.protocol": "PLAIN",
                    "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
                    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": f"{SCRAM_LOGIN} required;",
                    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": f"{SCRAM_LOGIN} required;",
                    # No server callback handler: Kafka validates unsecured (alg "none") JWTs,
                    # OAUTHBEARER without an identity provider, which these machines lack.
                    "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": f'{OAUTH_LOGIN} required unsecuredLoginStringClaim_sub="admin";',
                    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                    "super.users": "User:admin;User:ANONYMOUS",
                    "allow.everyone.if.no.acl.found": "false",
                }
            )
        if node.node_id in self.racks:
            properties["broker.rack"] = self.racks[node.node_id]
        properties.update(self.overrides)
        properties.update(self.node_overrides.get(node.node_id, {}))
        return properties

    def client_config(self, user: str = "admin", mechanism: str | None = None) -> dict[str, str]:
        """librdkafka properties for a client of this cluster (SASL when users are set):
        PLAIN for sasl_users, SCRAM-SHA-512 for scram_users unless `mechanism` says."""
        config = {"bootstrap.servers": self.bootstrap}
        if not self.sasl_users:
            return config
        mechanism = mechanism or ("PLAIN" if user in self.sasl_users else "SCRAM-SHA-512")
        config.update({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism})
        if mechanism == "OAUTHBEARER":
            config.update({"enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": f"principal={user}"})
        else:
            password = self.sasl_users[user] if mechanism == "PLAIN" else self.scram_users[user]
            config.update({"sasl.username": user, "sasl.password": password})
        return config

    def tool_properties(self, user: str = "admin") -> Path:
        """A client properties file for Kafka's command-line tools (--command-config)."""
        path = self.workdir / f"tool-{user}.properties"
        lines = ["security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN"] if self.sasl_users else []
        if self.sasl_users:
            lines.append(
                f'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="{user}" password="{self.sasl_users[user]}";'
            )
        path.write_text("".join(f"{line}\n" for line in lines))
        return path

    def _write_config(self, node: KafkaNode) -> None:
        text = "".join(f"{k}={v}\n" for k, v in self._properties(node).items())
        node.properties_path.write_text(text)
        (self.workdir / "log4j2.properties").write_text(LOG4J2)
        (self.workdir / "tools-log4j2.properties").write_text(TOOLS_LOG4J2)

    def _java(self, jvm_options, log4j: str, main_class: str, *args: str) -> list[str]:
        return [
            "java", *jvm_options,
            f"-Dlog4j2.configurationFile={self.workdir / log4j}",
            "-cp", self.classpath, main_class, *args,
        ]

    @property
    def config_command(self) -> str:
        """kafka-configs.sh's class: Kafka 4.4 moved it from core to the tools module."""
        major, minor = (int(part) for part in self.version.split(".")[:2])
        return "org.apache.kafka.tools.ConfigCommand" if (major, minor) >= (4, 4) else "kafka.admin.ConfigCommand"

    def tool_command(self, main_class: str, *args: str, jvm_options: tuple[str, ...] = ()) -> list[str]:
        """argv running a Kafka command-line tool as kafka-run-class.sh would (with
        tool_jvm_options; the tests' options add the class archive once it exists)."""
        (self.workdir / "tools-log4j2.properties").write_text(TOOLS_LOG4J2)
        options = (*self.tool_jvm_options, *jvm_options)
        archive = self._tool_archive
        if not jvm_options and archive is not None and archive.exists():
            options = (*options, f"-XX:SharedArchiveFile={archive}", *QUIET_JVM_LOGGING)
        return self._java(options, "tools-log4j2.properties", main_class, *args)

    def run_tool(self, main_class: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        archive = self._tool_archive
        if archive is None or archive.exists():
            return subprocess.run(self.tool_command(main_class, *args), capture_output=True, text=True, timeout=timeout)
        # This run writes the archive, under a name of its own (workers may race to write
        # one; any of theirs will do), moved into place once complete.
        written = archive.with_name(f"{archive.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
        command = self.tool_command(main_class, *args, jvm_options=(f"-XX:ArchiveClassesAtExit={written}", *QUIET_JVM_LOGGING))
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except BaseException:
            written.unlink(missing_ok=True)  # a JVM killed while writing leaves part of one
            raise
        if written.exists():
            os.replace(written, archive)
        return proc

    @functools.cached_property
    def _tool_archive(self) -> Path | None:
        """The tests' tools' class archive, named by the Java and the class path it is
        valid for; None for other tool options (the benchmarks' anchors run as users
        run Kafka's tools)."""
        if self.tool_jvm_options != TEST_TOOL_JVM_OPTIONS:
            return None
        java = os.path.realpath(shutil.which("java") or "java")
        if not os.path.exists(java):
            return None
        first_jar = Path(self.classpath.split(os.pathsep)[0])
        stamp = hashlib.sha256(f"{java}:{os.stat(java).st_mtime_ns}:{self.classpath}".encode()).hexdigest()[:16]
        return first_jar.parent.parent / f"tools-{stamp}.jsa"

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, timeout: float = 90) -> None:
        _LIVE.add(self)
        try:
            for node in self.nodes:
                self._write_config(node)
            with ThreadPoolExecutor(len(self.nodes)) as pool:
                list(pool.map(self._format, self.nodes))
            for node in self.nodes:
                self._launch(node)
            self.wait_until_ready(timeout)
        except BaseException:
            self.stop()
            raise

    def _format(self, node: KafkaNode) -> None:
        if (node.directory / "meta.properties").exists():
            return
        command = self._java(
            TEST_JVM_OPTIONS, "tools-log4j2.properties", "kafka.tools.StorageTool",
            "format", "-t", self.cluster_id, "-c", str(node.properties_path),
            *self._scram_format_args(), *self._quorum_format_args(node),
        )
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise KafkaStartError(f"formatting node {node.node_id} failed:\n{proc.stdout}{proc.stderr}")

    def _quorum_format_args(self, node: KafkaNode) -> list[str]:
        if not self.standalone:
            return []
        if node is self.nodes[0]:
            return ["--standalone"]
        return ["--no-initial-controllers"] if self.role(node.node_id) == "controller" else []

    def _scram_format_args(self) -> list[str]:
        # SCRAM credentials live in the metadata log; formatting is the one way to have
        # them before the first client connects.
        args = []
        for user, password in sorted(self.scram_users.items()):
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                args += ["--add-scram", f"{mechanism}=[name={user},password={password}]"]
        return args

    def _launch(self, node: KafkaNode) -> None:
        command = self._java(self.jvm_options, "log4j2.properties", "kafka.Kafka", str(node.properties_path))
        log = open(node.log_path, "ab")
        node.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()

    def wait_until_ready(self, timeout: float = 90) -> None:
        """Until every running node is registered and answers Metadata."""
        from confluent_kafka.admin import AdminClient

        running = [n for n in self.nodes if n.process and n.process.poll() is None and "broker" in self.role(n.node_id)]
        deadline = time.monotonic() + timeout
        admin = AdminClient({**self.client_config(), "log_level": 0, "logger": _quiet_logger()})
        last_error = "no answer"

        def registered() -> bool:
            nonlocal last_error
            for node in self.nodes:
                if node.process and node.process.poll() is not None:
                    raise KafkaStartError(self._failure(f"node {node.node_id} exited with status {node.process.returncode}"))
            try:
                described = admin.describe_cluster(request_timeout=2).result()
            except Exception as exc:  # noqa: BLE001 - not up yet
                last_error = str(exc)
                return False
            last_error = f"{len(described.nodes)} of {len(running)} nodes registered"
            return len(described.nodes) >= len(running)

        if within(registered, deadline - time.monotonic()):
            return
        raise KafkaStartError(self._failure(f"not ready within {timeout:g}s ({last_error})"))

    def _failure(self, reason: str) -> str:
        parts = [f"Apache Kafka {self.version} ({len(self.nodes)} node(s), {self.workdir}): {reason}"]
        for node in self.nodes:
            try:
                tail = node.log_path.read_text(errors="replace").splitlines()[-60:]
            except OSError:
                tail = ["(no log)"]
            parts.append(f"--- {node.log_path} (last {len(tail)} lines)\n" + "\n".join(tail))
        return "\n".join(parts)

    def stop_node(self, node_id: int, timeout: float = 30) -> None:
        """Stop a node gracefully (SIGTERM), as an operator would."""
        self._signal(self.node(node_id), signal.SIGTERM, timeout)

    def kill_node(self, node_id: int) -> None:
        self._signal(self.node(node_id), signal.SIGKILL, 30)

    def start_node(self, *node_ids: int, timeout: float = 60) -> None:
        """Start stopped nodes again (all of them before waiting: a node still stopped
        counts as one that exited)."""
        for node_id in node_ids:
            self._launch(self.node(node_id))
        self.wait_until_ready(timeout)

    def _signal(self, node: KafkaNode, sig: int, timeout: float) -> None:
        process = node.process
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        """Stop every node; idempotent and safe after a failed start."""
        nodes = [n for n in self.nodes if n.process and n.process.poll() is None]
        for node in nodes:
            try:
                os.killpg(node.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for node in nodes:
            try:
                node.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(node.process.pid, signal.SIGKILL)
                node.process.wait(10)
        _LIVE.discard(self)


def stop_group(process: subprocess.Popen | None, timeout: float = 20) -> None:
    """Stop a JVM started in a process group of its own: SIGTERM to the group, SIGKILL
    after `timeout` seconds; nothing when it is not running."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=timeout)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def _quiet_logger():
    import logging

    logger = logging.getLogger("tests.backends.librdkafka")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


@atexit.register
def _stop_all() -> None:
    for cluster in list(_LIVE):
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="Run a real single-node Apache Kafka from Maven Central jars in the foreground.")
    parser.add_argument("--port", type=int, default=9092)
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, help="keep data here (default: a temporary directory)")
    args = parser.parse_args()
    ports = [args.port + 2 * i for i in range(args.nodes)]
    cluster = KafkaCluster(nodes=args.nodes, workdir=args.data_dir, ports=ports)
    print(f"starting Apache Kafka {cluster.version} in {cluster.workdir} ...", file=sys.stderr)
    cluster.start()
    print(f"ready: bootstrap servers {cluster.bootstrap} (Ctrl-C stops)", file=sys.stderr)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        within(lambda: any(n.process.poll() is not None for n in cluster.nodes), timeout=float("inf"), interval=1)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
