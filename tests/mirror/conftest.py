"""A MirrorMaker 2 between two clusters for tests/mirror, per backend: two bundled
brokers ("bundled"), or a single Apache Kafka node as the source and a bundled broker as
the target ("kafka"). MM2 runs both ways (primary -> backup, backup -> primary) on the
topics mm-.*, so failbacks have a reverse flow; groups nocp-.* are excluded from its
checkpoints (groups.exclude), the case of a group MM2 never checkpointed."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.brokers.plugin import _required, selected_backends

PAIRS = [b for b in ("bundled", "kafka") if b in selected_backends()]


@dataclass
class Mirrored:
    backend: str
    source: str  # bootstrap of the cluster MM2 calls "primary"
    target: str  # ... and "backup"
    mm2: object


def _fail_or_skip(message: str):
    (pytest.fail if _required() else pytest.skip)(message)


def start_mirror(workdir, clusters: dict[str, str], **kwargs):
    from tests.brokers.jars import JarResolutionError
    from tests.brokers.mirror import MirrorMaker, MirrorStartError

    mm2 = MirrorMaker(workdir, clusters, **kwargs)
    try:
        mm2.start()
    except (MirrorStartError, JarResolutionError, OSError) as exc:
        mm2.stop()
        _fail_or_skip(f"MirrorMaker 2 did not start: {exc}")
    return mm2


@pytest.fixture(scope="package", params=PAIRS or ["none"])
def mirrored(request, tmp_path_factory):
    from kctl.broker.process import BrokerProcess

    backend = request.param
    if backend == "none":
        pytest.skip("KCTL_TEST_BROKERS selects neither bundled nor kafka")
    stoppers = []
    try:
        if backend == "kafka":
            from tests.brokers.kafka import KafkaCluster, KafkaStartError

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
        yield Mirrored(backend, source, target, mm2)
    finally:
        for stop in reversed(stoppers):
            stop()
