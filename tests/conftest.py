"""Shared fixtures: `kctl` runs the real CLI in-process; broker backends come from the
plugin in tests/backends/plugin.py."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest_plugins = ["tests.backends.plugin", "tests.security.fake_signer.fixture"]

# Scratch files in memory. The tests write brokers' logs (fsync'd by the bundled broker),
# dumps, virtualenvs and packed environments by the gigabyte, and on a VM's disk they
# waited for it: the 10,000-partition test took 66 s in a CI run on disk, 34 s in
# memory. So the session's temporary directory (pytest's tmp_path, tempfile, Spark's local
# dirs) is under /dev/shm when it has room (KCTL_TEST_ON_DISK=1 keeps it on disk). Each
# session removes what it made when it passed or ran in CI (a failed one elsewhere keeps
# it for a look: memory, until the next session removes what dead sessions left).
SCRATCH_ROOT = Path("/dev/shm")
SCRATCH_ROOM = 8 << 30


def _in_memory_scratch() -> None:
    if os.environ.get("KCTL_TEST_ON_DISK") or not SCRATCH_ROOT.is_dir() or not os.access(SCRATCH_ROOT, os.W_OK):
        return
    for old in SCRATCH_ROOT.glob("kctl-test-*"):
        owner = old.name.split("-")[2]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            shutil.rmtree(old, ignore_errors=True)
    if shutil.disk_usage(SCRATCH_ROOT).free < SCRATCH_ROOM:
        return
    scratch = tempfile.mkdtemp(prefix=f"kctl-test-{os.getpid()}-", dir=SCRATCH_ROOT)
    os.environ["TMPDIR"] = os.environ["SPARK_LOCAL_DIRS"] = os.environ["KCTL_TEST_SCRATCH"] = scratch
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again


if "PYTEST_XDIST_WORKER" not in os.environ:
    _in_memory_scratch()

# One cache for every kctl the tests start (the Spark driver's class archive, environments
# packed for --ship-env), made once a session as a user's is made once; never the
# user's own. pytest-xdist's workers inherit the one their controller made.
if "PYTEST_XDIST_WORKER" not in os.environ:
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="kctl-test-cache-")
    # The Spark drivers the tests start run as tests/spark/jvm.py says.
    from tests.spark.jvm import use_for_drivers

    use_for_drivers()


def pytest_unconfigure(config):
    if "PYTEST_XDIST_WORKER" not in os.environ:
        shutil.rmtree(os.environ["XDG_CACHE_HOME"], ignore_errors=True)
        scratch = os.environ.get("KCTL_TEST_SCRATCH")
        if scratch and (getattr(config, "_kctl_passed", False) or os.environ.get("CI")):
            shutil.rmtree(scratch, ignore_errors=True)


def pytest_sessionfinish(session, exitstatus):
    session.config._kctl_passed = exitstatus == 0


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def config_home(tmp_path, monkeypatch):
    """An empty XDG_CONFIG_HOME, so no test reads or writes the user's config."""
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    # Lag history and reset journals go here, not into the user's state directory.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    for name in ("KCTL_CONFIG", "KCTL_CONTEXT", "KCTL_BOOTSTRAP_SERVERS", "KCTL_OUTPUT", "KCTL_TIMEOUT", "KCTL_DEBUG", "NO_COLOR",
                 "KCTL_CONNECT", "KCTL_CONNECT_URL", "KCTL_CONNECT_BASIC_AUTH", "KCTL_CONNECT_BEARER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    # No test reaches the user's own keyring: the keyring tests bring a Secret Service of
    # their own (tests/support/secret_service.py) and pass its address.
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    # The terminal type of the shell running the tests (TERM=dumb in some) must not decide
    # whether a test's "terminal" gets colours.
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return home


@pytest.fixture
def kctl(config_home, monkeypatch):
    """Run `kctl ARGS...` in-process through main(), as the console script does.

    `tty=True` makes stdout count as a terminal (auto format = table), the way it is
    on a user's screen; everything else is real.
    """

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None, tty: bool = False) -> Run:
        from kctl.cli import _app
        from kctl.cli.main import main

        with monkeypatch.context() as patch:
            if tty:
                patch.setattr(_app.App, "stdout_is_tty", property(lambda self: True))
            runner = CliRunner()
            with runner.isolation(input=input, env=env) as (out, err, _):
                try:
                    main(list(args))
                    code = 0
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
                stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
        return Run(code, stdout, stderr)

    return run


def pytest_configure(config):
    """A run started in the background by a shell without job control (`cmd &` in a
    script) inherits SIGINT ignored, and so would every process the tests start: the
    tests of Ctrl-C would send a signal no one hears. They model a terminal's Ctrl-C,
    so the run takes SIGINT back (children then start with the default, as from a shell)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config.addinivalue_line("markers", "spark_processes: runs kctl spark in a process of its own (KCTL_TEST_SPARK=processes)")
    config.addinivalue_line("markers", "spark_standalone: needs a Spark standalone cluster (KCTL_TEST_SPARK=standalone)")
    if config.pluginmanager.hasplugin("xdist"):
        from tests.support.xdist_groups import WorkerGroups

        config.pluginmanager.register(WorkerGroups(), "kctl-worker-groups")


def pytest_collection_modifyitems(config, items):
    """The Spark tests KCTL_TEST_SPARK leaves out (tests/spark/selection.py) are skipped
    before any fixture of theirs starts."""
    from tests.spark import selection

    left_out = [kind for kind in selection.KINDS if not selection.runs(kind)]
    for item in items:
        for kind in left_out:
            if item.get_closest_marker(f"spark_{kind}"):
                item.add_marker(pytest.mark.skip(reason=selection.reason(kind)))
                break


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory):
    """spark_standalone() -> a running Spark standalone cluster (tests/spark/standalone.py),
    started on first use and shared by the session; its worker has no kctl. Without
    pyspark or Java: a skip, or a failure under KCTL_REQUIRE_SPARK=1; unless
    KCTL_TEST_SPARK selects it (tests/spark/selection.py), a skip that says so."""
    from tests.spark import selection
    from tests.spark.standalone import StandaloneCluster

    started: list[StandaloneCluster] = []

    def start() -> StandaloneCluster:
        if started:
            return started[0]
        if not selection.runs("standalone"):
            pytest.skip(selection.reason("standalone"))
        from tests.test_readme import spark_ready

        required = os.environ.get("KCTL_REQUIRE_SPARK") == "1"
        if not spark_ready():
            (pytest.fail if required else pytest.skip)("the Spark standalone cluster needs pyspark and Java")
        cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"))
        started.append(cluster)
        try:
            cluster.start()
        except (OSError, RuntimeError) as exc:
            (pytest.fail if required else pytest.skip)(f"the Spark standalone cluster did not start: {exc}")
        return cluster

    yield start
    for cluster in started:
        cluster.stop()


@pytest.fixture(scope="session")
def schema_registry(tmp_path_factory):
    """A running schema registry (tests/backends/registry.py: Apicurio Registry speaking
    Confluent's API), shared by the session; its URL is `.url`. One that cannot start is
    a skip, or a failure under KCTL_REQUIRE_BROKERS=1."""
    from tests.backends.registry import RegistryError, SchemaRegistry

    registry = SchemaRegistry(tmp_path_factory.mktemp("schema-registry"))
    try:
        registry.start()
    except (OSError, RegistryError) as exc:
        required = os.environ.get("KCTL_REQUIRE_BROKERS") == "1"
        (pytest.fail if required else pytest.skip)(f"the schema registry did not start: {exc}")
    yield registry
    registry.stop()


# One small local SparkSession for the whole test session. The CLI reuses the active
# session (as it would under spark-submit), so each test pays for its jobs, not for a JVM
# start. Without pyspark or Java the tests skip, unless KCTL_REQUIRE_SPARK=1 (as CI
# sets) makes that a failure.
@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    missing = None
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        missing = f"{exc.name} is not installed (pip install -e '.[spark]')"
    if missing is None and shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        missing = "no Java runtime"
    if missing:
        if os.environ.get("KCTL_REQUIRE_SPARK") == "1":
            pytest.fail(f"KCTL_REQUIRE_SPARK=1 and {missing}", pytrace=False)
        pytest.skip(missing)
    from kctl.spark.session import spark_session

    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("spark-state"))
    try:
        # No spark.sql.shuffle.partitions: kctl sizes shuffles itself (size_shuffles).
        # No class archive: this JVM lives all session, and would hold the archive's
        # writing from the `kctl spark` processes that tests start.
        session = spark_session("local[2]", {"spark.default.parallelism": "2", "spark.driver.memory": "1g"}, class_archive=False)
    finally:
        if saved is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = saved
    yield session
    session.stop()
