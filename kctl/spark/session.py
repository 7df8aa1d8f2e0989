"""Starting (or reusing) the SparkSession a kctl job runs in, and choosing the engine.

Spark's defaults are tuned for notebooks and clusters; a CLI wants UTC timestamps,
no progress bars or UI, no speculative duplicate tasks (a replay must not write a
partition twice at once), and Python workers that run the interpreter kctl runs in.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kctl.errors import ConfigError, KctlError
from kctl.spark import jvm_archive

if TYPE_CHECKING:
    from types import FrameType

    from pyspark.sql import SparkSession

DEFAULTS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.speculation": "false",
    # Readable by pyarrow as timestamp[us, tz=UTC] (INT96 reads back as naive nanoseconds).
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # kctl writes _SUCCESS itself, after the manifest: a dump is complete only then.
    "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
    "spark.sql.sources.partitionOverwriteMode": "static",
}
LOCAL_DEFAULTS = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
}
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
# Spark's own default: kctl never sizes shuffles above what Spark would use.
MAX_SHUFFLE_PARTITIONS = 200


# Set by Ctrl-C during a Spark command: whatever the job then raises (a cancelled job's
# error, KeyboardInterrupt) is the interruption.
INTERRUPTED = threading.Event()


class SparkUnavailable(KctlError):
    """pyspark or Java is missing."""

    exit_code = ConfigError.exit_code


def parse_conf(pairs: Sequence[str]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(action=f"parse --spark-conf {pair!r}", cause="expected key=value")
        conf[key.strip()] = value
    return conf


def check_requirements() -> None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise SparkUnavailable(
            action="start Spark", cause=f"{exc.name} is not installed",
            hint="pip install 'kctl[spark]' installs pyspark and pyarrow",
        ) from None
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        raise SparkUnavailable(
            action="start Spark", cause="no Java runtime found (java is not on PATH and JAVA_HOME is unset)",
            hint="Spark 4 needs Java 17 or newer, e.g. apt-get install openjdk-17-jre-headless",
        )


def resolved_master(master: str | None) -> str:
    """The master a new session would use: --master, $KCTL_SPARK_MASTER, local[*]."""
    return master or os.environ.get("KCTL_SPARK_MASTER") or "local[*]"


def spark_session(master: str | None, conf: dict[str, str], *, packages: Sequence[str] = (), quiet: bool = True,
                  shipped_env: Path | None = None, class_archive: bool = True) -> SparkSession:
    """The active SparkSession if there is one (spark-submit, tests), else a new one.

    shipped_env: an archive of this environment (kctl.spark.shipenv) for the executors
    to run their Python from, on a cluster master.
    class_archive: start the driver JVM from kctl.spark.jvm_archive's class archive
    (writing it when there is none). A JVM that lives on, like a test session's, would
    hold the archive's writing for its whole life: pass False.
    """
    check_requirements()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        for key, value in conf.items():
            if active.conf.get(key, None) == value:
                continue  # already so; static settings cannot be set again even to their value
            try:
                active.conf.set(key, value)
            except Exception as exc:  # a static setting (spark.jars, memory) is fixed at start-up
                raise ConfigError(action=f"set --spark-conf {key} on the running Spark session", cause=f"{str(exc).splitlines()[0]}") from None
        active._kctl_conf = set(conf)  # type: ignore[attr-defined]  # kctl's note on the session
        _register(active)
        return active
    builder = SparkSession.builder.appName("kctl")
    settings = dict(DEFAULTS)
    jvm_directory = None
    if under_spark_submit():
        # spark-submit chose the master and started the JVM; its settings stand.
        master = master or "spark-submit"
    else:
        master = resolved_master(master)
        builder = builder.master(master)
        if master.startswith("local"):
            # Workers must run this interpreter (the one with kctl and pyarrow installed).
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            settings.update(LOCAL_DEFAULTS)
        elif shipped_env is not None:
            from kctl.spark import shipenv

            jvm_directory = shipenv.driver_directory(cache_dir())
            # PySpark gives every Python function the interpreter PYSPARK_PYTHON names.
            os.environ["PYSPARK_PYTHON"] = shipenv.EXECUTOR_PYTHON
            archives = [a for a in (conf.get("spark.archives"), shipenv.archive_setting(shipped_env)) if a]
            conf = {**conf, "spark.archives": ",".join(archives)}
    if packages:
        settings["spark.jars.packages"] = ",".join(packages)
    settings.update(conf)
    for key, value in settings.items():
        builder = builder.config(key, value)
    if not under_spark_submit():
        java_options = conf.get("spark.driver.extraJavaOptions", "")
        if quiet:
            java_options = _log4j_option(java_options)
        if class_archive:
            java_options = jvm_archive.driver_options(java_options, cache_dir(), conf.get("spark.driver.extraClassPath", ""))
        if java_options:
            builder = builder.config("spark.driver.extraJavaOptions", java_options)
    try:
        # The JVM keeps the working directory it starts in (see shipenv.driver_directory).
        working_directory = contextlib.chdir(jvm_directory) if jvm_directory else contextlib.nullcontext()
        with _jvm_output_to(log_path() if quiet and not under_spark_submit() else None), working_directory:
            session = builder.getOrCreate()
    except Exception as exc:  # py4j and the launcher raise plain exceptions
        text = str(exc).strip()
        raise SparkUnavailable(
            action=f"start Spark ({master})", cause=f"{text.splitlines()[0] if text else type(exc).__name__}",
            hint=f"Spark's log: {log_path()}" if quiet else None,
        ) from exc
    jvm_archive.started(getattr(getattr(session.sparkContext._gateway, "proc", None), "pid", None))
    if quiet:
        session.sparkContext.setLogLevel("ERROR")
        # py4j logs a connection torn down by Ctrl-C with a traceback on the root logger
        # (logging.exception, which gives root a stderr handler when it has none). A
        # handler that drops records keeps that off stderr without touching any logger's
        # level.
        root = logging.getLogger()
        if not root.handlers:
            root.addHandler(logging.NullHandler())
    _cancel_on_interrupt(session)
    session._kctl_conf = set(conf)  # type: ignore[attr-defined]  # what the user chose, for size_shuffles
    _register(session)
    return session


def _cancel_on_interrupt(session: SparkSession) -> None:
    """Ctrl-C during a job cancels Spark's jobs and ends in KeyboardInterrupt, cleanly.

    PySpark's own SIGINT handler calls cancelAllJobs on the main thread while that thread
    waits in a py4j call on the same connection: py4j fails with "reentrant call" and the
    user gets ~40 lines of tracebacks. Here the cancel runs on another thread (its own
    py4j connection) and goes on cancelling whatever job the main thread starts next: the
    cancelled job's error unwinds the command through its own handlers (a dump or replay
    marks its manifest partial there), and INTERRUPTED makes that error the interruption.
    No KeyboardInterrupt is thrown into the main thread from outside: one landed inside
    those handlers (turning a Py4JJavaError into text calls the JVM) and left a manifest
    saying `running`. A Ctrl-C while the main thread is not waiting on the JVM raises at
    once, as does a second one.
    """
    import signal

    if threading.current_thread() is not threading.main_thread():
        return

    def cancel() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):  # the context may be stopping
                session.sparkContext.cancelAllJobs()
            time.sleep(0.05)

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if INTERRUPTED.is_set() or not _waiting_on_jvm(frame):
            INTERRUPTED.set()
            raise KeyboardInterrupt
        INTERRUPTED.set()
        threading.Thread(target=cancel, name="kctl-spark-cancel", daemon=True).start()

    signal.signal(signal.SIGINT, on_sigint)


def _waiting_on_jvm(frame: FrameType | None) -> bool:
    while frame is not None:
        if f"{os.sep}py4j{os.sep}" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


def size_shuffles(spark: SparkSession, input_partitions: int) -> int | None:
    """Set spark.sql.shuffle.partitions from the data unless the user chose it (with
    --spark-conf or spark-submit --conf, both of which land in the SparkConf).

    kctl's shuffles are keyed by topic partition (audit's per-partition windows and
    counts) or spread one topic's records (--compare-to's join), so more shuffle
    partitions than max(topic partitions, cores) are empty tasks: with Spark's default
    of 200, an audit of a 4-partition topic on a 2-core standalone cluster ran ~605
    tasks and took twice as long. Returns the number set, None when left as it was.
    """
    if SHUFFLE_PARTITIONS in getattr(spark, "_kctl_conf", ()) or spark.sparkContext.getConf().contains(SHUFFLE_PARTITIONS):
        return None
    count = max(1, min(MAX_SHUFFLE_PARTITIONS, max(input_partitions, spark.sparkContext.defaultParallelism)))
    spark.conf.set(SHUFFLE_PARTITIONS, str(count))
    return count


def under_spark_submit() -> bool:
    """Whether spark-submit started this process (and its JVM) for kctl.spark.submit."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/kctl/spark: packed environments for --ship-env, the driver JVM's
    class archive (kctl.spark.jvm_archive)."""
    from kctl.config.file import cache_dir as kctl_cache

    return kctl_cache(os.environ) / "spark"


def log_path() -> Path:
    """Where the JVM's own output goes: $XDG_STATE_HOME/kctl/spark.log."""
    from kctl.config.file import state_dir

    return state_dir(os.environ) / "spark.log"


def _log4j_option(existing: str) -> str:
    """Spark's log4j set to errors only (no native-hadoop or loopback warnings)."""
    if "log4j2.configurationFile" in existing:
        return existing
    from importlib.resources import files

    return f"{existing} -Dlog4j2.configurationFile={files('kctl.spark').joinpath('log4j2.properties')}".strip()


@contextlib.contextmanager
def _jvm_output_to(path: Path | None) -> Iterator[None]:
    """The JVM (and the Python workers it starts) inherit stdout and stderr when the
    gateway is launched: point file descriptors 1 and 2 at a log file for that moment, so
    the JVM's console chatter (and anything the JVM prints on stdout, like a crash report)
    lands there while kctl's own output and messages still reach the terminal."""
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for fd in saved:
            os.dup2(log, fd)
        yield
    finally:
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        os.close(log)


def _register(session: SparkSession) -> None:
    """Register kctl's data sources once per session: each registration pickles the
    class and round-trips to the JVM, and a command may ask for its session twice."""
    if getattr(session, "_kctl_sources", False):
        return
    from kctl.spark.source import DumpDataSource, KafkaDataSource

    session.dataSource.register(KafkaDataSource)
    session.dataSource.register(DumpDataSource)
    session._kctl_sources = True  # type: ignore[attr-defined]  # kctl's note on the session


def has_jvm_connector(session: SparkSession) -> bool:
    """Whether Spark can find its `kafka` data source (spark-sql-kafka-0-10 added with
    --packages or spark.jars); asked the way Spark itself looks formats up."""
    try:
        jvm: Any = session._jvm  # py4j's JVMView (untyped); None before a context starts, caught below
        jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource("kafka", session._jsparkSession.sessionState().conf())
        return True
    except Exception:  # py4j wraps the AnalysisException for a missing source
        return False
