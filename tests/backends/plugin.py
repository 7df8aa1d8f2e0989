"""pytest plugin: the `cluster` fixture, one parametrised run per broker backend.

KCTL_TEST_BROKERS (comma list) selects backends; the default is `bundled`:

  kafka           a real single-node Apache Kafka 4.x from Maven Central jars
  kafka3          three real Kafka nodes on loopback (ISR, replication, node failures)
  kafka39         a real single-node Apache Kafka 3.9 (KRaft), for the tests marked
                  `kafka39`: what users of 3.x clusters run, and what 3.9 lacks
  testcontainers  testcontainers' Kafka module, when a Docker engine is reachable
  external        whatever KCTL_TEST_BOOTSTRAP points at
  bundled         kctl's own broker (`python -m kctl.broker`), a child process

Each backend starts once per session, on first use, and is stopped at session end. A
backend that cannot start skips its tests with the reason (and the brokers' log tails),
or fails them when KCTL_REQUIRE_BROKERS=1, as CI runs.

A test runs on every selected backend but one: with kafka3 selected, `kafka` runs only
the tests marked `single_node`. kafka3 is Apache Kafka as production runs it (leaders,
coordinators and replicas on other nodes than the one bootstrapped from), so the same
test on a single node of the same version would only repeat it (it did: 200 s of every
CI run); the single node serves the tests that cannot run on three.
`@pytest.mark.min_nodes(3)` skips a test on backends with fewer nodes.
`@pytest.mark.single_node` leaves kafka3 out of a test's backends (and keeps `kafka` in):
tests that compare the bundled broker with Apache Kafka node for node, or that need a
node of their own. A test that would only skip on kafka3 must not start three JVMs to
do it. Such tests still skip on an `external` cluster of many nodes.
`@pytest.mark.kafka39` puts a test in the 3.9 compatibility subset; the kafka39 backend
runs only those.
`unique_name("t")` gives each test its own topic and group names.
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

BACKENDS = ("kafka", "kafka3", "kafka39", "testcontainers", "external", "bundled")


@dataclass
class Cluster:
    backend: str
    bootstrap: str
    nodes: int
    # The KafkaCluster behind kafka/kafka3 (stop and start nodes, run Kafka's tools).
    kafka: Any = None
    # The BrokerProcess behind `bundled` (restart or kill it).
    bundled: Any = None


class BackendUnavailable(Exception):
    pass


def selected_backends() -> list[str]:
    names = [b.strip() for b in os.environ.get("KCTL_TEST_BROKERS", "bundled").split(",") if b.strip()]
    unknown = [b for b in names if b not in BACKENDS]
    if unknown:
        raise pytest.UsageError(f"KCTL_TEST_BROKERS: unknown backend(s) {unknown}; choose from {list(BACKENDS)}")
    return names


def _required() -> bool:
    return os.environ.get("KCTL_REQUIRE_BROKERS", "").strip().lower() in ("1", "true", "yes")


def _unavailable(what: str, why: object) -> NoReturn:
    """Skip the test because `what` could not start (`why`); fail it instead with
    KCTL_REQUIRE_BROKERS=1, as CI runs."""
    if _required():
        pytest.fail(f"KCTL_REQUIRE_BROKERS=1 and {what} failed: {why}", pytrace=False)
    pytest.skip(f"{what}: {why}")


class Backends:
    """Starts backends lazily, remembers failures, stops everything at the end."""

    def __init__(self, basetemp: Path):
        self.basetemp = basetemp
        self.started: dict[str, Cluster | BackendUnavailable] = {}
        self.paused: set[str] = set()
        self._stoppers: list[Any] = []

    def get(self, backend: str) -> Cluster:
        if backend not in self.started:
            try:
                self.started[backend] = self._start(backend)
            except BackendUnavailable as exc:
                self.started[backend] = exc
        result = self.started[backend]
        if isinstance(result, BackendUnavailable):
            raise result
        self.resume(backend)
        return result

    def pause(self, backend: str) -> None:
        """Stop an Apache Kafka backend whose tests are done on this worker: its JVMs
        idling until the session ends cost CPU that the other workers' tests wait for
        on two cores. Its data and ports are kept; `resume` starts it again."""
        cluster = self.started.get(backend)
        if isinstance(cluster, Cluster) and cluster.kafka is not None and backend not in self.paused:
            self.paused.add(backend)
            cluster.kafka.stop()

    def resume(self, backend: str) -> None:
        """Start a paused backend again (the same nodes, data and ports: a Cluster handed
        out before stays valid)."""
        cluster = self.started.get(backend)
        if backend in self.paused and isinstance(cluster, Cluster) and cluster.kafka is not None:
            self.paused.discard(backend)
            cluster.kafka.start()

    def _start(self, backend: str) -> Cluster:
        if backend in ("kafka", "kafka3"):
            return self._start_kafka(backend, nodes=1 if backend == "kafka" else 3)
        if backend == "kafka39":
            from tests.backends.jars import KAFKA_39

            return self._start_kafka(backend, nodes=1, version=KAFKA_39)
        if backend == "testcontainers":
            return self._start_testcontainers()
        if backend == "external":
            bootstrap = os.environ.get("KCTL_TEST_BOOTSTRAP")
            if not bootstrap:
                raise BackendUnavailable("external: set KCTL_TEST_BOOTSTRAP=host:port")
            return Cluster("external", bootstrap, _count_brokers(bootstrap))
        return self._start_bundled()

    def _start_bundled(self) -> Cluster:
        from kctl.broker.process import BrokerProcess, BrokerProcessError

        process = BrokerProcess(self.basetemp / "broker-bundled")
        self._stoppers.append(process.stop)
        try:
            bootstrap = process.start()
        except BrokerProcessError as exc:
            raise BackendUnavailable(f"bundled: {exc}") from exc
        return Cluster("bundled", bootstrap, 1, bundled=process)

    def _start_kafka(self, backend: str, nodes: int, version: str | None = None) -> Cluster:
        from tests.backends.jars import JarResolutionError
        from tests.backends.kafka import TEST_TOOL_JVM_OPTIONS, KafkaCluster, KafkaStartError

        workdir = self.basetemp / f"broker-{backend}"
        try:
            # kafka3 has an authorizer (everyone a super user) so ACL commands run on it;
            # kafka has none, as most development clusters, for the SECURITY_DISABLED path.
            cluster = KafkaCluster(nodes=nodes, workdir=workdir, authorizer=nodes > 1, version=version,
                                   tool_jvm_options=TEST_TOOL_JVM_OPTIONS)
            self._stoppers.append(cluster.stop)
            cluster.start()
        except (JarResolutionError, KafkaStartError, OSError) as exc:
            raise BackendUnavailable(f"{backend}: {exc}") from exc
        return Cluster(backend, cluster.bootstrap, nodes, kafka=cluster)

    def _start_testcontainers(self) -> Cluster:
        try:
            import docker

            docker.from_env(timeout=5).ping()
        except Exception as exc:  # noqa: BLE001 - any failure means no engine
            raise BackendUnavailable(f"testcontainers: no Docker engine reachable ({type(exc).__name__}: {exc})") from exc
        from testcontainers.kafka import KafkaContainer

        container = KafkaContainer().with_kraft()
        container.start()
        self._stoppers.append(container.stop)
        return Cluster("testcontainers", container.get_bootstrap_server(), 1)

    def stop_all(self) -> None:
        for stop in reversed(self._stoppers):
            try:
                stop()
            except Exception:  # noqa: BLE001 - keep stopping the others
                pass


def _count_brokers(bootstrap: str) -> int:
    from confluent_kafka.admin import AdminClient

    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the future resolves
        return len(admin.describe_cluster(request_timeout=10).result().nodes)
    except Exception as exc:  # noqa: BLE001
        raise BackendUnavailable(f"external: cannot describe the cluster at {bootstrap}: {exc}") from exc


def pytest_configure(config):
    config.addinivalue_line("markers", "min_nodes(n): needs a cluster of at least n brokers")
    config.addinivalue_line("markers", "single_node: not run on kafka3, the backend known to have many nodes")
    config.addinivalue_line("markers", "integration: needs a running Kafka cluster (the `cluster` fixture)")
    config.addinivalue_line("markers", "needs_kafka(reason): why the `kafka_cluster` fixture skips on other backends")
    config.addinivalue_line("markers", "kafka39: in the compatibility subset the kafka39 backend (Apache Kafka 3.9) runs")


def pytest_generate_tests(metafunc):
    if "cluster" in metafunc.fixturenames:
        backends = selected_backends()
        if metafunc.definition.get_closest_marker("single_node"):
            backends = [b for b in backends if b != "kafka3"]
        elif "kafka3" in backends:
            backends = [b for b in backends if b != "kafka"]  # kafka3 stands in for it (above)
        if not metafunc.definition.get_closest_marker("kafka39"):
            backends = [b for b in backends if b != "kafka39"]
        metafunc.parametrize("cluster", backends, indirect=True, scope="session")


# This session's backends (the `_backends` fixture's), for the hooks below.
_session_backends: Backends | None = None


@pytest.fixture(scope="session")
def _backends(tmp_path_factory):
    global _session_backends
    backends = _session_backends = Backends(tmp_path_factory.mktemp("brokers"))
    yield backends
    _session_backends = None
    backends.stop_all()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A test of a paused backend (`pause_when_its_group_ends`) starts it again: pytest
    hands out the Cluster it cached, which must then be running."""
    backend = item.callspec.params.get("cluster") if hasattr(item, "callspec") else None
    if _session_backends is not None and backend in _session_backends.paused:
        _session_backends.resume(backend)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """On an xdist worker, the tests of one Apache Kafka backend run as one group
    (tests/support/xdist_groups.py): when its last test has run here, its JVMs stop
    rather than idle for the rest of the run (the three-node cluster's group ended ~450 s
    into a ~1,000 s run)."""
    if _session_backends is None or nextitem is None or "KCTL_TEST_GROUPS_DIR" not in os.environ:
        return
    from tests.support.xdist_groups import group_of

    group = group_of(item)
    if group not in ("kafka", "kafka3", "kafka39") or group_of(nextitem) == group:
        return
    following = nextitem.callspec.params.get("cluster") if hasattr(nextitem, "callspec") else None
    if following != group:
        _session_backends.pause(group)


@pytest.fixture(scope="session")
def cluster(request, _backends) -> Cluster:
    backend = request.param
    try:
        return _backends.get(backend)
    except BackendUnavailable as exc:
        if _required():
            pytest.fail(f"KCTL_REQUIRE_BROKERS=1 and backend {exc}", pytrace=False)
        pytest.skip(str(exc))


@pytest.fixture
def kafka_cluster(cluster, request) -> Cluster:
    """`cluster` when it is Apache Kafka (`cluster.kafka` runs Kafka's own tools); on
    other backends the test is skipped with its module's `needs_kafka` reason."""
    if cluster.kafka is None:
        marker = request.node.get_closest_marker("needs_kafka")
        pytest.skip(marker.args[0] if marker else "needs Apache Kafka and its own tools")
    return cluster


@pytest.fixture(scope="session")
def secured_kafka(tmp_path_factory):
    """A single Kafka node with SASL and ACLs: PLAIN users admin (super user) and alice
    (no ACLs), SCRAM user bob (no ACLs), OAUTHBEARER with unsecured JWTs (sessions of at
    most 10 s). Started only when a test asks and the `kafka` backend is selected."""
    if "kafka" not in selected_backends():
        pytest.skip("the secured cluster runs with the kafka backend")
    from tests.backends.jars import JarResolutionError
    from tests.backends.kafka import TEST_TOOL_JVM_OPTIONS, KafkaCluster, KafkaStartError, free_port
    from tests.support.certificates import mutual_tls_listener

    # OAUTHBEARER sessions end after 10 s unless the client authenticates again (KIP-368), as
    # production listeners set it: a client that fetched one token and kept it is cut off.
    workdir = tmp_path_factory.mktemp("broker-secured")
    cluster = KafkaCluster(nodes=1, workdir=workdir, sasl_users=SECURED_PLAIN_USERS,
                           scram_users=SECURED_SCRAM_USERS, tool_jvm_options=TEST_TOOL_JVM_OPTIONS,
                           overrides={"listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms": "10000",
                                      # Delegation tokens (KIP-48) on: tests/cli/test_token.py.
                                      "delegation.token.secret.key": DELEGATION_TOKEN_SECRET})
    # And an SSL listener requiring client certificates (`.mutual_tls`: tests/broker/test_mutual_tls.py).
    node, ssl_port = cluster.nodes[0], free_port()
    cluster.mutual_tls, listener = mutual_tls_listener(workdir, ssl_port, workdir / "mtls-server")
    cluster.overrides.update(listener)
    cluster.overrides.update({
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{node.port},SSL://127.0.0.1:{ssl_port},"
                     f"CONTROLLER://127.0.0.1:{node.controller_port}",
        "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{node.port},SSL://127.0.0.1:{ssl_port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL",
    })
    try:
        cluster.start()
    except (JarResolutionError, KafkaStartError, OSError) as exc:
        cluster.stop()
        _unavailable("the secured cluster", exc)
    cluster.backend = "kafka"
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def kerberos_kafka(tmp_path_factory):
    """A real MIT Kerberos realm (krb5kdc on loopback) and a Kafka node with GSSAPI
    listeners (tests.support.kerberos.KerberosKafka). Started only when a test asks and the
    `kafka` backend is selected; skipped where the binding or the KDC's packages are missing
    (a failure with KCTL_REQUIRE_BROKERS=1)."""
    if "kafka" not in selected_backends():
        pytest.skip("the Kerberos cluster runs with the kafka backend")
    from tests.backends.jars import JarResolutionError
    from tests.backends.kafka import KafkaStartError
    from tests.support.kerberos import start_kerberos_kafka, unavailable

    why = unavailable()
    if why:
        _unavailable("the Kerberos tests", why)
    try:
        kerberos = start_kerberos_kafka(tmp_path_factory.mktemp("kerberos"))
    except (JarResolutionError, KafkaStartError, RuntimeError, OSError) as exc:
        _unavailable("the Kerberos Kafka node", exc)
    yield kerberos
    kerberos.stop()


SECURED_PLAIN_USERS = {"admin": "admin-secret", "alice": "alice-secret"}
SECURED_SCRAM_USERS = {"bob": "bob-secret"}
DELEGATION_TOKEN_SECRET = "kctl-tests-token-secret"


@pytest.fixture(scope="session")
def secured_bundled(tmp_path_factory):
    """The bundled broker secured as the secured Kafka node is: a SASL_PLAINTEXT listener
    with users admin (super user), alice and bob (no ACLs), OAUTHBEARER with unsecured JWTs
    (sessions of at most 10 s), the authorizer with
    allow.everyone.if.no.acl.found off; and a PLAINTEXT listener beside it where the
    ANONYMOUS principal is a super user (`.plaintext`, as the kafka3 backend's authorizer).
    It is a KafkaCluster that is never started, pointed at the bundled broker, so client
    settings and Kafka's tools (`run_tool`, when the jars are there) work as on Kafka."""
    if "bundled" not in selected_backends():
        pytest.skip("the secured bundled broker runs with the bundled backend")
    from kctl.broker.process import BrokerProcess, BrokerProcessError
    from tests.backends.kafka import TEST_TOOL_JVM_OPTIONS, KafkaCluster

    users = {**SECURED_PLAIN_USERS, **SECURED_SCRAM_USERS}
    # OAUTHBEARER's sessions end after 10 s, as the secured Kafka node's (KIP-368).
    process = BrokerProcess(tmp_path_factory.mktemp("broker-secured-bundled") / "data", extra_args=[
        "--sasl", "plain,scram-sha-256,scram-sha-512,oauthbearer", *[f"--user={u}:{p}" for u, p in users.items()],
        "--config=listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms=10000",
        f"--config=delegation.token.secret.key={DELEGATION_TOKEN_SECRET}",
        "--listener", "PLAINTEXT://127.0.0.1:0", "--authorizer",
        "--super-user", "User:admin", "--super-user", "User:ANONYMOUS"])
    try:
        bootstrap = process.start()
    except BrokerProcessError as exc:
        _unavailable("the secured bundled broker", exc)
    secured = KafkaCluster(nodes=1, workdir=tmp_path_factory.mktemp("secured-bundled-tools"),
                           ports=[int(bootstrap.rsplit(":", 1)[1])], sasl_users=SECURED_PLAIN_USERS,
                           scram_users=SECURED_SCRAM_USERS, tool_jvm_options=TEST_TOOL_JVM_OPTIONS)
    secured.backend = "bundled"
    secured.bundled = process
    secured.plaintext = process.listeners[0].split("://", 1)[1]
    yield secured
    process.stop()


@pytest.fixture(params=["bundled", "kafka"])
def secured(request):
    """The secured cluster on each backend: the bundled broker's and Apache Kafka's
    (`secured_bundled`, `secured_kafka`); `.backend` says which."""
    return request.getfixturevalue(f"secured_{request.param}")


def start_connect(workdir: Path, bootstrap: str, *, workers: int = 1, replication: int = 1,
                  basic_auth: dict[str, str] | None = None, where: str = "the test cluster"):
    """Kafka Connect workers on `bootstrap`, started, or the test skipped (failed with
    KCTL_REQUIRE_BROKERS=1) when they cannot start. The caller stops them."""
    from tests.backends.connect import ConnectCluster, ConnectStartError
    from tests.backends.jars import JarResolutionError

    started = ConnectCluster(workdir, bootstrap, workers=workers, replication=replication, basic_auth=basic_auth)
    try:
        started.start()
    except (ConnectStartError, JarResolutionError, OSError) as exc:
        started.stop()
        _unavailable(f"Kafka Connect on {where}", exc)
    return started


def start_connect_on(cluster: Cluster, workdir: Path, *, workers: int = 1):
    """start_connect on a backend: on Apache Kafka the workers ask for basic
    authentication (user admin, password admin-secret), so every test there goes through it."""
    return start_connect(workdir, cluster.bootstrap, workers=workers, replication=min(3, cluster.nodes), where=cluster.backend,
                         basic_auth={"admin": "admin-secret"} if cluster.kafka is not None else None)


def start_mirror(workdir: Path, clusters: dict[str, str], *, where: str = "the test clusters", **kwargs):
    """A MirrorMaker 2 (tests/backends/mirror.py) between `clusters`, started, or the test
    skipped (failed with KCTL_REQUIRE_BROKERS=1) when it cannot start. The caller stops it."""
    from tests.backends.jars import JarResolutionError
    from tests.backends.mirror import MirrorMaker, MirrorStartError

    mm2 = MirrorMaker(workdir, clusters, **kwargs)
    try:
        mm2.start()
    except (MirrorStartError, JarResolutionError, OSError) as exc:
        mm2.stop()
        _unavailable(f"MirrorMaker 2 on {where}", exc)
    return mm2


@pytest.fixture(scope="package")
def connect(cluster, tmp_path_factory):
    """A Kafka Connect worker on `cluster` for a package's tests (tests/connect/, which
    tests/support/xdist_groups.py keeps on one worker), stopped after them: a worker takes seconds
    to start, and idle still a few percent of a core."""
    started = start_connect_on(cluster, tmp_path_factory.mktemp(f"connect-{cluster.backend}"))
    yield started
    started.stop()


def _start_dedicated(what: str, cluster):
    """Start a dedicated Kafka cluster for a module's tests (skipped, or failed with
    KCTL_REQUIRE_BROKERS=1, when it cannot start)."""
    from tests.backends.jars import JarResolutionError
    from tests.backends.kafka import KafkaStartError

    try:
        cluster.start()
    except (JarResolutionError, KafkaStartError, OSError) as exc:
        cluster.stop()
        _unavailable(what, exc)
    cluster.backend = "kafka"
    return cluster


@pytest.fixture(scope="module")
def operated_kafka(tmp_path_factory):
    """A Kafka 4.x cluster to operate on (issue 57): a dynamic quorum (KIP-853) formed by
    node 1 (broker and controller, formatted --standalone), node 2 a controller that runs
    as an observer until added as a voter, nodes 3 and 4 brokers only. Internal topics have
    two replicas, so one broker can be drained and unregistered. Started for the module
    that asks, when the `kafka` backend is selected; tests stop and restart its brokers."""
    if "kafka" not in selected_backends():
        pytest.skip("the operated cluster runs with the kafka backend")
    from tests.backends.kafka import TEST_TOOL_JVM_OPTIONS, KafkaCluster

    two = {key: "2" for key in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor",
                                "share.coordinator.state.topic.replication.factor", "default.replication.factor")}
    cluster = KafkaCluster(nodes=4, workdir=tmp_path_factory.mktemp("operated"), standalone=True,
                           roles={2: "controller", 3: "broker", 4: "broker"}, tool_jvm_options=TEST_TOOL_JVM_OPTIONS, overrides=two)
    yield _start_dedicated("the operated cluster (a dynamic quorum)", cluster)
    cluster.stop()


@pytest.fixture(scope="module")
def racked_kafka(tmp_path_factory):
    """Four Kafka 4.x brokers in two racks (1 and 3 in rack a, 2 and 4 in rack b) for
    `kctl cluster balance` (issue 71): node 1 is also the controller (a dynamic quorum
    of one, formatted --standalone), the others are brokers only. Started for the module
    that asks, when the `kafka` backend is selected."""
    if "kafka" not in selected_backends():
        pytest.skip("the four-broker cluster runs with the kafka backend")
    from tests.backends.kafka import TEST_TOOL_JVM_OPTIONS, KafkaCluster

    cluster = KafkaCluster(nodes=4, workdir=tmp_path_factory.mktemp("racked"), standalone=True,
                           roles={2: "broker", 3: "broker", 4: "broker"}, racks={1: "a", 2: "b", 3: "a", 4: "b"},
                           tool_jvm_options=TEST_TOOL_JVM_OPTIONS)
    yield _start_dedicated("four brokers in two racks", cluster)
    cluster.stop()


@pytest.fixture(scope="module")
def tiered_kafka(tmp_path_factory):
    """A Kafka node with tiered storage (KIP-405): Kafka's LocalTieredStorage in a local
    directory and the topic-based remote log metadata manager. Kafka 4.3.1, the newest
    release whose LocalTieredStorage Maven Central serves (tests.backends.jars.KAFKA_TIERED)."""
    if "kafka" not in selected_backends():
        pytest.skip("the tiered storage cluster runs with the kafka backend")
    from tests.backends.jars import KAFKA_TIERED
    from tests.backends.kafka import TEST_TOOL_JVM_OPTIONS, KafkaCluster

    cluster = KafkaCluster(nodes=1, workdir=tmp_path_factory.mktemp("tiered"), version=KAFKA_TIERED, tiered_storage=True,
                           tool_jvm_options=TEST_TOOL_JVM_OPTIONS)
    yield _start_dedicated("the tiered storage cluster", cluster)
    cluster.stop()


@pytest.fixture(scope="session")
def kafka_tools(tmp_path_factory):
    """Kafka's own command-line tools (`.run_tool(main_class, *args)`), from the jars the
    kafka backend uses, to run against any broker, the bundled one included."""
    from tests.backends.jars import JarResolutionError
    from tests.backends.kafka import TEST_TOOL_JVM_OPTIONS, KafkaCluster

    tools = KafkaCluster(nodes=1, workdir=tmp_path_factory.mktemp("kafka-tools"), tool_jvm_options=TEST_TOOL_JVM_OPTIONS)
    try:
        _ = tools.classpath
    except (JarResolutionError, OSError) as exc:
        _unavailable("resolving Kafka's jars (for Kafka's tools)", exc)
    return tools


@pytest.fixture(autouse=True)
def _min_nodes(request):
    marker = request.node.get_closest_marker("min_nodes")
    if marker is None or "cluster" not in request.fixturenames:
        return
    cluster = request.getfixturevalue("cluster")
    if cluster.nodes < marker.args[0]:
        pytest.skip(f"needs {marker.args[0]} brokers; {cluster.backend} has {cluster.nodes}")


@pytest.fixture
def unique_name(request):
    """unique_name(prefix) -> a name no other test uses, valid for topics and groups."""
    slug = re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name)[:60].strip("-")

    def make(prefix: str = "t") -> str:
        return f"{prefix}-{slug}-{uuid.uuid4().hex[:6]}"

    return make


# Skip reasons by the backend that would run the test (the reasons are the tests' own).
_SKIPPED_FOR = (
    ("kafka39", re.compile(r"kafka39 backend")),
    ("kafka3", re.compile(r"three brokers|needs 3 brokers|kafka3 backend")),
    ("kafka", re.compile(r"kafka backend|Apache Kafka|its own single node")),
)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter):
    """One line per backend not selected whose tests were skipped, with the variable
    that runs them, after pytest's own summary (just above the final count); one more for
    the Spark tests KCTL_TEST_SPARK left out."""
    result = yield
    counts: dict[str, int] = {}
    reasons = []
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reasons.append(reason)
        backend = next((name for name, pattern in _SKIPPED_FOR if pattern.search(reason)), None)
        if backend is not None:
            counts[backend] = counts.get(backend, 0) + 1
    selected = selected_backends()
    for backend, _pattern in _SKIPPED_FOR:
        # A selected backend runs them in its own variants; the skipped ones are the others'.
        if counts.get(backend) and backend not in selected:
            wanted = ",".join(dict.fromkeys([*selected, backend]))
            terminalreporter.write_line(f"{backend}: {counts[backend]} test(s) skipped; KCTL_TEST_BROKERS={wanted} runs them")
    _spark_summary(terminalreporter, reasons)
    return result


def _spark_summary(terminalreporter, reasons: list[str]) -> None:
    """The same line for the Spark that KCTL_TEST_SPARK left out (tests/spark/selection.py)."""
    from tests.spark import selection

    wanted: dict[str, None] = {}
    skipped = 0
    for reason in reasons:
        names = [name for value in re.findall(rf"{selection.VARIABLE}=([\w,]+)", reason) for name in value.split(",")]
        if names:
            skipped += 1
            wanted.update(dict.fromkeys(names))
    if skipped:
        value = ",".join(kind for kind in selection.KINDS if kind in wanted or kind in selection.selected())
        terminalreporter.write_line(f"spark: {skipped} test(s) skipped; {selection.VARIABLE}={value} runs them")
