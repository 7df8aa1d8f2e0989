"""A MirrorMaker 2 between two clusters for tests/mirror, per backend: two bundled
brokers ("bundled"), or a single Apache Kafka node as the source and a bundled broker as
the target ("kafka"). MM2 runs both ways (primary -> backup, backup -> primary) on the
topics mm-.*, so failbacks have a reverse flow; groups nocp-.* are excluded from its
checkpoints (groups.exclude), the case of a group MM2 never checkpointed."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.backends.plugin import _required, selected_backends, start_mirror

PAIRS = [b for b in ("bundled", "kafka") if b in selected_backends()]


@dataclass
class Mirrored:
    backend: str
    source: str  # bootstrap of the cluster MM2 calls "primary"
    target: str  # ... and "backup"
    mm2: object
    kafka: object = None  # the KafkaCluster of the "kafka" source


def _fail_or_skip(message: str):
    (pytest.fail if _required() else pytest.skip)(message)


@pytest.fixture(scope="package", params=PAIRS or ["none"])
def mirrored(request, tmp_path_factory):
    from kctl.broker.process import BrokerProcess

    backend = request.param
    if backend == "none":
        pytest.skip("KCTL_TEST_BROKERS selects neither bundled nor kafka")
    stoppers = []
    try:
        if backend == "kafka":
            from tests.backends.kafka import KafkaCluster, KafkaStartError

            kafka = KafkaCluster(nodes=1, workdir=tmp_path_factory.mktemp("mirror-kafka"))
            stoppers.append(kafka.stop)
            try:
                kafka.start()
            except (KafkaStartError, OSError) as exc:
                _fail_or_skip(f"the Kafka source did not start: {exc}")
            source = kafka.bootstrap
        else:
            primary = BrokerProcess(tmp_path_factory.mktemp("mirror-primary"))
            stoppers.append(primary.stop)
            source = primary.start()
        backup = BrokerProcess(tmp_path_factory.mktemp("mirror-backup"))
        stoppers.append(backup.stop)
        target = backup.start()
        mm2 = start_mirror(tmp_path_factory.mktemp("mm2"), {"primary": source, "backup": target},
                           flows=[("primary", "backup"), ("backup", "primary")], topics="mm-.*",
                           settings={"groups.exclude": "nocp-.*, console-consumer-.*, connect-.*, __.*"})
        stoppers.append(mm2.stop)
        yield Mirrored(backend, source, target, mm2, kafka if backend == "kafka" else None)
    finally:
        for stop in reversed(stoppers):
            stop()
