"""Apache Kafka's runtime classpath, resolved from Maven Central by `mvn` and cached.

The cache lives in $KCTL_TEST_CACHE or ~/.cache/kctl-test, in a directory named after a
hash of pom.xml, so editing the POM (a new Kafka version) resolves afresh. A marker
file is written only after a complete copy, and a file lock keeps concurrent pytest
and benchmark processes from resolving twice.

    python -m tests.brokers.jars      # resolve now (CI's install step); prints the directory

It also fetches Spark's JVM Kafka connector (for `--engine jvm` tests and benchmarks).
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


class JarResolutionError(RuntimeError):
    pass


def kafka_version() -> str:
    match = re.search(r"<kafka.version>([^<]+)</kafka.version>", POM.read_text())
    assert match, "pom.xml names no kafka.version"
    return match.group(1)


def cache_dir() -> Path:
    base = Path(os.environ.get("KCTL_TEST_CACHE") or Path.home() / ".cache" / "kctl-test")
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    return base / f"kafka-{kafka_version()}-{digest}"


def resolve_classpath() -> list[Path]:
    """Every jar of Kafka's broker and tools runtime, resolving them on first use."""
    target = cache_dir()
    libs = target / "libs"
    if not (target / _MARKER).exists():
        target.mkdir(parents=True, exist_ok=True)
        with open(target / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (target / _MARKER).exists():
                _resolve(libs)
                (target / _MARKER).write_text(kafka_version() + "\n")
    jars = sorted(libs.glob("*.jar"))
    if not jars:
        raise JarResolutionError(f"no jars in {libs}; delete {target} and retry")
    return jars


def _resolve(libs: Path) -> None:
    if shutil.which("mvn") is None:
        raise JarResolutionError("mvn is not installed: Apache Kafka's jars come from Maven Central through mvn")
    if libs.exists():
        shutil.rmtree(libs)
    command = [
        "mvn", "-q", "-B", "dependency:copy-dependencies",
        "-DincludeScope=runtime", f"-DoutputDirectory={libs}", "-f", str(POM),
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise JarResolutionError(f"mvn could not resolve Apache Kafka {kafka_version()}:\n{tail}")


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
    """The connector's jars in the local Maven repository, fetched by mvn when missing
    (Spark's own Ivy resolution of --packages fails here on a transitive download)."""
    paths = []
    for coordinate in (c.format(v=version) for c in _SPARK_CONNECTOR):
        group, artifact, ver = coordinate.split(":")
        jar = Path.home() / ".m2" / "repository" / group.replace(".", "/") / artifact / ver / f"{artifact}-{ver}.jar"
        if not jar.exists():
            proc = subprocess.run(["mvn", "-q", "-B", "dependency:get", f"-Dartifact={coordinate}", "-Dtransitive=false"], capture_output=True, text=True)
            if proc.returncode != 0 or not jar.exists():
                raise JarResolutionError(f"mvn could not fetch {coordinate}: {(proc.stdout + proc.stderr).strip()[-500:]}")
        paths.append(jar)
    return paths


if __name__ == "__main__":
    try:
        jars = resolve_classpath()
        connector = spark_connector_jars()
    except JarResolutionError as exc:
        sys.exit(f"error: {exc}")
    print(f"Apache Kafka {kafka_version()}: {len(jars)} jars in {cache_dir() / 'libs'}")
    print(f"Spark's Kafka connector {SPARK_CONNECTOR_VERSION}: {len(connector)} jars in ~/.m2")


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
