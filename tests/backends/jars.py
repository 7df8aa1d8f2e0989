"""Apache Kafka's runtime classpath, resolved from Maven Central by `mvn` and cached.

The cache lives in $KCTL_TEST_CACHE or ~/.cache/kctl-test, in a directory named after a
hash of pom.xml, so editing the POM (a new Kafka version) resolves afresh. A marker
file is written only after a complete copy, and a file lock keeps concurrent pytest
and benchmark processes from resolving twice.

    python -m tests.backends.jars      # resolve now (CI's install step); prints the directory

The POM's version is the newest Kafka (the `kafka` and `kafka3` backends); KAFKA_39 is the
3.x release the `kafka39` backend runs, resolved from the same POM without Kafka Streams.
It also fetches Spark's JVM Kafka connector (for `--engine jvm` tests and benchmarks).
Resolutions take a file lock, so two pytest workers on a fresh home run mvn once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

POM = Path(__file__).with_name("pom.xml")
_MARKER = "RESOLVED"
# The newest 3.x release, for clusters not yet on 4.x (the kafka39 backend).
KAFKA_39 = "3.9.2"


class JarResolutionError(RuntimeError):
    pass


def kafka_version(version: str | None = None) -> str:
    """`version`, or the POM's (the newest Kafka) without one."""
    if version:
        return version
    match = re.search(r"<kafka.version>([^<]+)</kafka.version>", POM.read_text())
    assert match, "pom.xml names no kafka.version"
    return match.group(1)


def _base() -> Path:
    return Path(os.environ.get("KCTL_TEST_CACHE") or Path.home() / ".cache" / "kctl-test")


# The newest release whose LocalTieredStorage (kafka-storage's test jar) Maven Central
# serves: the tiered storage tests run it.
KAFKA_TIERED = "4.3.1"


def _mvn_args(version: str | None, tiered_storage: bool = False) -> list[str]:
    """What mvn is told beyond the POM: nothing for the POM's own (newest) version, which
    gets Kafka Streams; an older release is pinned and resolved without it; with
    `tiered_storage`, Kafka's LocalTieredStorage too."""
    args = [] if kafka_version(version) == kafka_version() else [f"-Dkafka.version={version}", "-Dno.streams.examples"]
    return args + (["-Dtiered.storage"] if tiered_storage else [])


def cache_dir(version: str | None = None, tiered_storage: bool = False) -> Path:
    # The key covers everything that decides the jars (the POM, the version, mvn's
    # arguments): one directory per resolution, whichever of them runs first on an empty cache.
    key = POM.read_bytes() + kafka_version(version).encode() + " ".join(_mvn_args(version, tiered_storage)).encode()
    digest = hashlib.sha256(key).hexdigest()[:12]
    return _base() / f"kafka-{kafka_version(version)}-{digest}"


def resolve_classpath(version: str | None = None, tiered_storage: bool = False) -> list[Path]:
    """Every jar of Kafka's broker and tools runtime (`version`, or the newest), resolving
    them on first use; with `tiered_storage`, LocalTieredStorage's test jar too."""
    return resolve_pom(POM, cache_dir(version, tiered_storage), f"Apache Kafka {kafka_version(version)}",
                       _mvn_args(version, tiered_storage))


def resolve_pom(pom: Path, target: Path, what: str, args: list[str] | tuple[str, ...] = ()) -> list[Path]:
    """The runtime jars of `pom` (mvn `args` added), copied into target/libs once: the
    marker is written after a complete copy, under a file lock."""
    libs = target / "libs"
    if not (target / _MARKER).exists():
        target.mkdir(parents=True, exist_ok=True)
        with open(target / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (target / _MARKER).exists():
                if libs.exists():
                    shutil.rmtree(libs)
                proc = _mvn("dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={libs}", *args, "-f", str(pom))
                if proc.returncode != 0:
                    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
                    raise JarResolutionError(f"mvn could not resolve {what}:\n{tail}")
                (target / _MARKER).write_text(what + "\n")
    jars = sorted(libs.glob("*.jar"))
    if not jars:
        raise JarResolutionError(f"no jars in {libs}; delete {target} and retry")
    return jars


def _mvn(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    if shutil.which("mvn") is None:
        raise JarResolutionError("mvn is not installed: Apache Kafka's jars come from Maven Central through mvn")
    # Batch mode and no colour: a failure's lines end up in a skip reason, readable.
    return subprocess.run(["mvn", "-q", "-B", "-Dstyle.color=never", *args], capture_output=True, text=True, timeout=timeout)


# Spark's JVM Kafka connector and the jars it needs beyond Spark's own (its POM's compile
# scope). 4.0.0 is the newest version Maven Central serves here; it runs on Spark 4.3.
SPARK_CONNECTOR_VERSION = "4.0.0"
_SPARK_CONNECTOR = (
    "org.apache.spark:spark-sql-kafka-0-10_2.13:{v}",
    "org.apache.spark:spark-token-provider-kafka-0-10_2.13:{v}",
    "org.apache.kafka:kafka-clients:3.9.0",
    "org.apache.commons:commons-pool2:2.12.0",
)


def spark_connector_jars(version: str = SPARK_CONNECTOR_VERSION) -> list[Path]:
    """The connector's jars, copied by mvn into the cache once (Spark's own Ivy resolution
    of --packages fails here on a transitive download). Copied rather than looked up in
    ~/.m2: mvn's repository is under the account's home, which need not be $HOME."""
    target = _base() / f"spark-connector-{version}"
    jars = [target / f"{c.format(v=version).split(':')[1]}-{c.format(v=version).split(':')[2]}.jar" for c in _SPARK_CONNECTOR]
    if all(jar.exists() for jar in jars):
        return jars
    _base().mkdir(parents=True, exist_ok=True)
    # One mvn at a time: two workers fetching at once failed a fresh home's run.
    with open(_base() / ".spark-connector.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for coordinate, jar in zip((c.format(v=version) for c in _SPARK_CONNECTOR), jars):
            if not jar.exists():
                proc = _mvn("dependency:copy", f"-Dartifact={coordinate}", f"-DoutputDirectory={target}", timeout=600)
                if proc.returncode != 0 or not jar.exists():
                    raise JarResolutionError(f"mvn could not fetch {coordinate}: {(proc.stdout + proc.stderr).strip()[-500:]}")
    return jars


if __name__ == "__main__":
    try:
        jars = resolve_classpath()
        jars_39 = resolve_classpath(KAFKA_39)
        connector = spark_connector_jars()
    except JarResolutionError as exc:
        sys.exit(f"error: {exc}")
    print(f"Apache Kafka {kafka_version()}: {len(jars)} jars in {cache_dir() / 'libs'}")
    print(f"Apache Kafka {KAFKA_39}: {len(jars_39)} jars in {cache_dir(KAFKA_39) / 'libs'}")
    print(f"Spark's Kafka connector {SPARK_CONNECTOR_VERSION}: {len(connector)} jars in {connector[0].parent}")


def run_java_source(source: Path) -> str:
    """What a single-file Java program prints, run on Kafka's jars (skipped without them,
    unless KCTL_REQUIRE_BROKERS=1): how tests check kctl's tables against Kafka's own."""
    import os
    import subprocess

    import pytest

    try:
        classpath = os.pathsep.join(str(p) for p in resolve_classpath())
    except JarResolutionError as exc:
        if os.environ.get("KCTL_REQUIRE_BROKERS") == "1":
            raise
        pytest.skip(f"Kafka's jars: {exc}")
    proc = subprocess.run(["java", "-cp", classpath, str(source)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
