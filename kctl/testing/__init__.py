"""pytest plugin: a `kafka_bootstrap` fixture backed by kctl's bundled broker.

Enable it in a conftest.py with `pytest_plugins = ["kctl.testing"]`; then

    def test_orders(kafka_bootstrap):
        producer = confluent_kafka.Producer({"bootstrap.servers": kafka_bootstrap})

One broker starts per test session on a free port with its data in pytest's temporary
directory (about 0.2 s, no Java, no Docker) and stops at the end. `kafka_broker` gives the
BrokerProcess itself, to restart it or kill -9 it in resilience tests.
"""

from __future__ import annotations

import pytest

from kctl.broker.process import BrokerProcess


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("kctl-broker") / "data")
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker) -> str:
    return kafka_broker.bootstrap
