"""Apache Kafka's runtime classpath (broker, Java tools, log4j2), resolved from Maven Central
by `mvn` from tests/harness/pom.xml and cached between runs.

Owns the cache layout:

    $KCTL_TEST_CACHE (default ~/.cache/kctl-test)/
        kafka-<version>-<pom hash>/libs/*.jar     the classpath
        kafka-<version>-<pom hash>/RESOLVED       written last: the jar names, one a line
        kafka-<version>-<pom hash>.lock           flock'd while resolving

The directory name carries a hash of pom.xml, so editing the POM (a new Kafka version)
resolves afresh instead of reusing stale jars. The marker is written only after mvn
succeeded, so an interrupted resolve is redone, never half-used; the lock makes
concurrent pytest and benchmark processes wait for one resolve instead of racing.

    python -m tests.harness.kafka_jars     # resolve now (CI's install step); prints the directory
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

POM = Path(__file__).with_name("pom.xml")
MARKER = "RESOLVED"
# A cold resolve downloads ~55 MB of jars plus Maven's own plugins.
MVN_TIMEOUT = 900


class JarResolutionError(RuntimeError):
    """mvn is missing or could not resolve the POM; the message carries mvn's output tail."""


def kafka_version() -> str:
    """The Kafka version pom.xml pins (its `kafka.version` property)."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    version = ET.parse(POM).getroot().findtext("m:properties/m:kafka.version", namespaces=ns)
    if not version:
        raise JarResolutionError(f"{POM} sets no kafka.version property")
    return version.strip()


def cache_root() -> Path:
    return Path(os.environ.get("KCTL_TEST_CACHE") or Path.home() / ".cache" / "kctl-test")


def jars_dir(root: Path | None = None) -> Path:
    """Where this POM's jars live: <root>/kafka-<version>-<first 12 hex of sha256(pom.xml)>."""
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    return (root or cache_root()) / f"kafka-{kafka_version()}-{digest}"


def resolve_classpath(cache_dir: Path | None = None) -> list[Path]:
    """Every runtime jar of Kafka's broker and tools, in a stable order; resolves on first use.

    `cache_dir` replaces the cache root ($KCTL_TEST_CACHE or ~/.cache/kctl-test); the
    per-POM directory is created under it.
    """
    target = jars_dir(cache_dir)
    jars = _cached(target)
    if jars is not None:
        return jars
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # Another process may have finished resolving while we waited for the lock.
        jars = _cached(target)
        if jars is None:
            jars = _resolve(target)
    return jars


def _cached(target: Path) -> list[Path] | None:
    """The jars named by the marker, or None when the marker is missing or a jar is gone."""
    try:
        names = (target / MARKER).read_text().split()
    except OSError:
        return None
    jars = [target / "libs" / name for name in names]
    if not jars or not all(jar.is_file() for jar in jars):
        return None
    return jars


def _resolve(target: Path) -> list[Path]:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarResolutionError("mvn is not on PATH: Apache Kafka's jars are resolved from Maven Central with mvn")
    (target / MARKER).unlink(missing_ok=True)
    libs = target / "libs"
    # Copy into a scratch directory and rename it into place, so `libs` only ever holds
    # one complete resolution (never jars of an older POM mixed with a partial new copy).
    partial = target / "libs.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    command = [
        mvn, "-q", "-B", "-Dstyle.color=never",
        "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={partial}",
        "-f", str(POM),
    ]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=MVN_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise JarResolutionError(f"mvn did not finish resolving Apache Kafka {kafka_version()} within {MVN_TIMEOUT}s") from exc
    jars = sorted(p.name for p in partial.glob("*.jar"))
    if proc.returncode != 0 or not jars:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        raise JarResolutionError(
            f"mvn could not resolve Apache Kafka {kafka_version()} (exit status {proc.returncode}):\n"
            f"$ {' '.join(command)}\n{tail}"
        )
    shutil.rmtree(libs, ignore_errors=True)
    partial.rename(libs)
    (target / MARKER).write_text("".join(f"{name}\n" for name in jars))
    return [libs / name for name in jars]


def main() -> int:
    started = time.monotonic()
    fresh = _cached(jars_dir()) is None
    try:
        jars = resolve_classpath()
    except JarResolutionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    size = sum(jar.stat().st_size for jar in jars)
    how = f"resolved in {time.monotonic() - started:.1f}s" if fresh else "cached"
    print(f"Apache Kafka {kafka_version()}: {len(jars)} jars, {size / 2**20:.0f} MiB ({how})", file=sys.stderr)
    print(jars_dir())
    return 0


if __name__ == "__main__":
    sys.exit(main())
