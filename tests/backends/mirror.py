"""A real MirrorMaker 2 between two test clusters: Kafka's dedicated mode
(`org.apache.kafka.connect.mirror.MirrorMaker` with an mm2.properties), from the Maven
Central jars of connect-pom.xml (connect-mirror 4.3.1), and a Java oracle of offset
translation (MirrorTranslate.java: `RemoteClusterUtils.translateOffsets`).

    mm2 = MirrorMaker(workdir, {"primary": bootstrap_a, "backup": bootstrap_b},
                      flows=[("primary", "backup")], topics="mm-.*")
    mm2.start()              # returns once the checkpoints topic is on the target
    mm2.stop()
    java_translate(bootstrap_b, "primary", ["g1", "g2"])   # {(group, topic, p): offset}

Timings are shortened so tests run in seconds: checkpoints and heartbeats every second,
groups and topics discovered every second; `sync.group.offsets.enabled` stays false, so
a group's offsets on the target are only ever what kctl commits.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import time
from pathlib import Path

from tests.backends.connect import LOG4J2, resolve_classpath
from tests.backends.jars import _base
from tests.backends.kafka import TEST_JVM_OPTIONS, stop_group
from tests.support.eventually import within

ORACLE = Path(__file__).with_name("MirrorTranslate.java")


class MirrorStartError(RuntimeError):
    pass


class MirrorMaker:
    def __init__(self, workdir: Path, clusters: dict[str, str], *, flows: list[tuple[str, str]], topics: str = ".*",
                 policy: str = "default", settings: dict[str, object] | None = None):
        self.workdir = Path(workdir)
        self.clusters = dict(clusters)
        self.flows = list(flows)
        self.topics = topics
        self.policy = policy
        self.settings = dict(settings or {})
        self.process: subprocess.Popen | None = None
        atexit.register(self.stop)

    @property
    def log(self) -> Path:
        return self.workdir / "mm2.log"

    def properties(self) -> dict[str, object]:
        settings: dict[str, object] = {"clusters": ", ".join(self.clusters)}
        for alias, bootstrap in self.clusters.items():
            settings[f"{alias}.bootstrap.servers"] = bootstrap
        for source in self.clusters:
            for target in self.clusters:
                if source != target:
                    enabled = (source, target) in self.flows
                    settings[f"{source}->{target}.enabled"] = str(enabled).lower()
                    if enabled:
                        settings[f"{source}->{target}.topics"] = self.topics
        settings.update({
            "tasks.max": 1,
            "replication.factor": 1,
            "checkpoints.topic.replication.factor": 1,
            "heartbeats.topic.replication.factor": 1,
            "offset-syncs.topic.replication.factor": 1,
            "offset.storage.replication.factor": 1,
            "status.storage.replication.factor": 1,
            "config.storage.replication.factor": 1,
            "emit.checkpoints.interval.seconds": 1,
            "emit.heartbeats.interval.seconds": 1,
            "refresh.groups.interval.seconds": 1,
            "refresh.topics.interval.seconds": 1,
            "sync.group.offsets.enabled": "false",
            "sync.topic.acls.enabled": "false",
            "offset.flush.interval.ms": 500,
        })
        if self.policy == "identity":
            settings["replication.policy.class"] = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
        settings.update(self.settings)
        return settings

    def start(self, timeout: float = 120.0) -> None:
        classpath = os.pathsep.join(str(p) for p in resolve_classpath())
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "log4j2.properties").write_text(LOG4J2)
        config = self.workdir / "mm2.properties"
        config.write_text("".join(f"{k} = {v}\n" for k, v in self.properties().items()))
        jvm = [*TEST_JVM_OPTIONS, f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}"]
        command = ["java", *jvm, "-cp", classpath, "org.apache.kafka.connect.mirror.MirrorMaker", str(config)]
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(command, cwd=self.workdir, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        for source, target in self.flows:
            self._wait_for_topic(self.clusters[target], f"{source}.checkpoints.internal", deadline)

    def _wait_for_topic(self, bootstrap: str, topic: str, deadline: float) -> None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": bootstrap})

        def created() -> bool:
            if self.process is None or self.process.poll() is not None:
                raise MirrorStartError(f"MirrorMaker exited with {self.process and self.process.returncode}:\n{self.tail()}")
            try:
                return topic in admin.list_topics(timeout=2).topics
            except Exception:  # noqa: BLE001 - not up yet
                return False

        if within(created, deadline - time.monotonic(), interval=0.3):
            return
        self.stop()
        raise MirrorStartError(f"MirrorMaker did not create {topic} in time:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        process, self.process = self.process, None
        stop_group(process, timeout=30)


def _oracle_classes() -> tuple[str, Path]:
    """The classpath with MirrorTranslate compiled into the cache (once per source)."""
    import hashlib

    libs = [str(p) for p in resolve_classpath()]
    digest = hashlib.sha256(ORACLE.read_bytes()).hexdigest()[:12]
    out = _base() / f"mirror-oracle-{digest}"
    if not (out / "MirrorTranslate.class").exists():
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-cp", os.pathsep.join(libs), "-d", str(out), str(ORACLE)], check=True,
                       capture_output=True, timeout=120)
    return os.pathsep.join([str(out), *libs]), out


def java_translate(bootstrap: str, alias: str, groups: list[str] | None = None, *, pattern: str | None = None,
                   policy: str = "default", timeout: float = 60) -> dict[tuple[str, str, int], int]:
    """Kafka's own answer: RemoteClusterUtils.translateOffsets for each group (or, with
    `pattern`, the Pattern overload of KIP-1239), as {(group, topic, partition): offset}."""
    classpath, _ = _oracle_classes()
    args = ["--pattern", pattern] if pattern is not None else list(groups or [])
    command = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", classpath, "MirrorTranslate", bootstrap, alias, policy, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"MirrorTranslate failed ({done.returncode}): {done.stderr[-2000:]}")
    result = {}
    for line in done.stdout.splitlines():
        row = json.loads(line)
        result[(row["group"], row["topic"], row["partition"])] = row["offset"]
    return result
