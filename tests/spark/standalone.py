"""A real Spark standalone cluster for the tests: a master and one worker started from
the installed pyspark's own scripts (spark-class with the Master and Worker classes) on
loopback, 2 cores and small memory.

The worker's environment is a clean machine's: PATH without kctl's virtual environment
(or pyenv's shims), no PYSPARK_PYTHON, no PYTHONPATH. Its executors therefore run the
system's python3, which has neither kctl nor pyarrow: what a YARN or Kubernetes node
has, and why `kctl spark ... --ship-env` exists.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.spark.jvm import JAVA_OPTIONS
from tests.support.eventually import within

WORKER_PATH = "/usr/local/bin:/usr/bin:/bin"
WORKER_CORES = 2
WORKER_MEMORY = "2g"


class StandaloneCluster:
    def __init__(self, logs: Path):
        self.logs = logs
        self.url: str | None = None
        self.processes: list[subprocess.Popen] = []

    def start(self) -> str:
        import pyspark

        from tests.backends.kafka import free_port

        home = Path(pyspark.__file__).parent
        java_home = os.environ.get("JAVA_HOME")
        env = {
            "PATH": WORKER_PATH, "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8",
            "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
            # Where the worker unpacks each application's files and archives.
            "SPARK_WORKER_DIR": str(self.logs / "work"),
            # The master's and worker's own JVMs (tests/spark/jvm.py).
            "SPARK_DAEMON_JAVA_OPTS": JAVA_OPTIONS,
            **({"JAVA_HOME": java_home} if java_home else {}),
            # The tests' scratch directory (tests/conftest.py), for the executors' files.
            **{name: os.environ[name] for name in ("TMPDIR", "SPARK_LOCAL_DIRS") if name in os.environ},
        }
        port, ui = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{port}"
        daemons = (
            ("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)]),
            ("worker", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--webui-port", str(free_port()),
                        "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY, self.url]),
        )
        for name, args in daemons:
            log = self.logs / f"{name}.log"
            process = subprocess.Popen([str(home / "bin" / "spark-class"), *args], env=env, stdout=log.open("w"),
                                       stderr=subprocess.STDOUT, start_new_session=True)
            process.log = log
            self.processes.append(process)
        self._wait_for("Successfully registered with master", self.processes[1].log)
        return self.url

    def _wait_for(self, line: str, log: Path, timeout: float = 90) -> None:
        def logged() -> bool:  # or a process ended: no use waiting
            return line in log.read_text(errors="replace") or any(p.poll() is not None for p in self.processes)

        if not within(logged, timeout, interval=0.3) or any(p.poll() is not None for p in self.processes):
            tail = "\n".join(p.log.read_text(errors="replace")[-2000:] for p in self.processes)
            raise RuntimeError(f"the Spark standalone cluster did not start: {tail}")

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


# Spark options for a run whose tasks a test inspects: an uncompressed event log there.
def event_log_options(directory: Path) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    return [option for pair in (("spark.eventLog.enabled", "true"), ("spark.eventLog.dir", directory.as_uri()),
                                ("spark.eventLog.compress", "false"))
            for option in ("--spark-conf", "=".join(pair))]


def task_executors(event_log_dir: Path) -> list[str]:
    """The executor id of every task the applications logged there ran, from Spark's
    event logs (`driver` for tasks run in the driver, as local masters do)."""
    executors = []
    for log in event_log_dir.rglob("events_*"):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event.get("Event") == "SparkListenerTaskEnd":
                executors.append(event["Task Info"]["Executor ID"])
    return executors
