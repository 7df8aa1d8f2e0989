"""How every Spark JVM the tests start runs: the session's local driver, `kctl spark`
processes, the standalone cluster's daemons and the executors of the cluster tests.

C1 only with the serial collector, as the test brokers run (tests/backends/kafka.py):
their jobs are small, and C2's compiler threads doubled the CPU a driver spends on them
(measured: 47 s against 22 s of JVM CPU for eight small dumps, audits and replays), CPU
that the other xdist worker's brokers wait for on a 2-core machine.

Drivers get the options from SPARK_SUBMIT_OPTS, which Spark's launcher adds to the
spark-submit JVM (the driver, in client mode) and which every process the tests start
inherits. Not from a SPARK_CONF_DIR: Spark puts that directory on the driver's class
path, and a JVM cannot write its class-data archive with a non-empty directory there.
"""

from __future__ import annotations

import os

JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# For `--spark-conf`: the executors a standalone cluster's worker starts.
EXECUTOR_CONF = f"spark.executor.extraJavaOptions={JAVA_OPTIONS}"


def use_for_drivers() -> None:
    os.environ["SPARK_SUBMIT_OPTS"] = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} {JAVA_OPTIONS}".strip()
