"""A real Kafka Connect cluster for tests: distributed workers (`ConnectDistributed`) run
from Maven Central jars (connect-pom.xml: 4.3.1, the newest Connect there), their config,
offset and status topics on the test cluster.

    workers = ConnectCluster(workdir, bootstrap, workers=1, basic_auth={"admin": "secret"})
    workers.start()          # ~6 s a worker; raises ConnectStartError with the log's tail
    workers.url              # the first worker's REST URL, "http://127.0.0.1:P"
    workers.stop()

    python -m tests.backends.connect      # resolve the jars now (CI's install step)

Each worker writes its log to workdir/worker-N.log. Timings are shortened for tests: source
offsets are flushed every 500 ms and a departed worker's tasks are reassigned after 2 s
(Connect's default waits five minutes).
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from tests.backends.jars import JarResolutionError, _base, resolve_pom
from tests.backends.kafka import LOG4J2 as KAFKA_LOG4J2
from tests.backends.kafka import TEST_JVM_OPTIONS, free_port, stop_group
from tests.support.eventually import within

POM = Path(__file__).with_name("connect-pom.xml")
BASIC_AUTH_EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
# Kafka's test logging (warnings), and the herder's progress: joins, assignments, rebalances.
LOG4J2 = KAFKA_LOG4J2.split("logger.started.name")[0] + """\
logger.connect.name = org.apache.kafka.connect.runtime.distributed.DistributedHerder
logger.connect.level = INFO
"""


class ConnectStartError(RuntimeError):
    pass


def resolve_classpath() -> list[Path]:
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    return resolve_pom(POM, _base() / f"connect-{digest}", "Kafka Connect")


class ConnectCluster:
    def __init__(self, workdir: Path, bootstrap: str, *, workers: int = 1, replication: int = 1,
                 basic_auth: dict[str, str] | None = None):
        self.workdir = Path(workdir)
        self.bootstrap = bootstrap
        self.replication = replication
        self.basic_auth = dict(basic_auth or {})
        self.group = f"kctl-connect-{uuid.uuid4().hex[:8]}"
        self.ports = [0] * workers
        self.processes: list[subprocess.Popen | None] = [None] * workers
        atexit.register(self.stop)

    @property
    def url(self) -> str:
        return self.urls[0]

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    def authorization(self) -> dict[str, str]:
        """The Authorization header of the first user, when the workers have basic auth."""
        if not self.basic_auth:
            return {}
        user, password = next(iter(self.basic_auth.items()))
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}

    def start(self, timeout: float = 120.0) -> None:
        classpath = os.pathsep.join(str(p) for p in resolve_classpath())
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "log4j2.properties").write_text(LOG4J2)
        jvm = [*TEST_JVM_OPTIONS, f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}"]
        if self.basic_auth:
            users = self.workdir / "users.properties"
            users.write_text("".join(f"{u}={p}\n" for u, p in self.basic_auth.items()))
            jaas = self.workdir / "jaas.conf"
            jaas.write_text("KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required\n"
                            f'  file="{users}";\n}};\n')
            jvm.append(f"-Djava.security.auth.login.config={jaas}")
        for index in range(len(self.ports)):
            self._launch(index, classpath, jvm)
        deadline = time.monotonic() + timeout
        for index in range(len(self.ports)):
            self._wait_healthy(index, deadline)

    def _launch(self, index: int, classpath: str, jvm: list[str]) -> None:
        self.ports[index] = free_port()
        properties = self.workdir / f"worker-{index}.properties"
        settings = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "config.storage.topic": f"{self.group}-configs",
            "offset.storage.topic": f"{self.group}-offsets",
            "status.storage.topic": f"{self.group}-status",
            "config.storage.replication.factor": self.replication,
            "offset.storage.replication.factor": self.replication,
            "status.storage.replication.factor": self.replication,
            "offset.storage.partitions": 3,
            "status.storage.partitions": 1,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "listeners": f"http://127.0.0.1:{self.ports[index]}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": self.ports[index],
            "offset.flush.interval.ms": 500,
            "scheduled.rebalance.max.delay.ms": 2000,
            "task.shutdown.graceful.timeout.ms": 2000,
            # The connectors are on the classpath with their ServiceLoader manifests: no
            # reflective scan of every jar at start.
            "plugin.discovery": "service_load",
        }
        if self.basic_auth:
            settings["rest.extension.classes"] = BASIC_AUTH_EXTENSION
        properties.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        command = ["java", *jvm, "-cp", classpath, "org.apache.kafka.connect.cli.ConnectDistributed", str(properties)]
        with open(self.workdir / f"worker-{index}.log", "ab") as out:
            self.processes[index] = subprocess.Popen(command, cwd=self.workdir, stdout=out, stderr=subprocess.STDOUT,
                                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def _wait_healthy(self, index: int, deadline: float) -> None:
        url = f"{self.urls[index]}/health"
        def healthy() -> bool:
            process = self.processes[index]
            if process is None or process.poll() is not None:
                raise ConnectStartError(f"Connect worker {index} exited with {process and process.returncode}:\n{self.tail(index)}")
            try:
                request = urllib.request.Request(url, headers=self.authorization())
                with urllib.request.urlopen(request, timeout=2) as response:
                    return response.status == 200
            except (OSError, urllib.error.HTTPError):
                return False

        if within(healthy, deadline - time.monotonic()):
            return
        self.stop()
        raise ConnectStartError(f"Connect worker {index} was not healthy in time:\n{self.tail(index)}")

    def tail(self, index: int = 0, lines: int = 30) -> str:
        try:
            return "\n".join((self.workdir / f"worker-{index}.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop_worker(self, index: int) -> None:
        process, self.processes[index] = self.processes[index], None
        stop_group(process, timeout=30)

    def stop(self) -> None:
        for index in range(len(self.processes)):
            self.stop_worker(index)


if __name__ == "__main__":
    try:
        print(f"Kafka Connect: {len(resolve_classpath())} jars")
    except JarResolutionError as exc:
        sys.exit(f"error: {exc}")
