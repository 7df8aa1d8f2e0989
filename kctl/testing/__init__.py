"""pytest plugin: `kafka_bootstrap` and `kafka_secured` fixtures backed by kctl's bundled broker.

Enable it in a conftest.py with `pytest_plugins = ["kctl.testing"]`; then

    def test_orders(kafka_bootstrap):
        producer = confluent_kafka.Producer({"bootstrap.servers": kafka_bootstrap})

One broker starts per test session on a free port with its data in pytest's temporary
directory (about 0.2 s, no Java, no Docker) and stops at the end. `kafka_broker` gives the
BrokerProcess itself, to restart it or kill -9 it in resilience tests.

`kafka_secured` is a second broker for testing a secured client: one SASL_SSL listener
(PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with a certificate for localhost/127.0.0.1 made by
a CA whose PEM is `.ca_location`, users `admin` (a super user) and `user` (no ACLs until
a test grants them), and ACLs enforced:

    def test_secured(kafka_secured):
        producer = confluent_kafka.Producer(kafka_secured.client_config("admin"))

`start_secured()` starts one with other users or settings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kctl.broker.process import BrokerProcess
from kctl.broker.security.listeners import protocol_for

SECURED_USERS = {"admin": "admin-secret", "user": "user-secret"}


@dataclass
class SecuredBroker:
    process: BrokerProcess
    users: dict[str, str]
    protocol: str
    ca_location: Path | None
    super_users: tuple[str, ...] = field(default=())

    @property
    def bootstrap(self) -> str:
        return self.process.bootstrap

    def client_config(self, user: str = "admin", mechanism: str = "SCRAM-SHA-512") -> dict[str, str]:
        """librdkafka (confluent-kafka) settings to connect as `user`."""
        config = {"bootstrap.servers": self.bootstrap, "security.protocol": self.protocol}
        if self.protocol.startswith("SASL_"):
            config.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": self.users[user]})
        if self.ca_location is not None:
            config["ssl.ca.location"] = str(self.ca_location)
        return config


def start_secured(data_dir: Path, users: dict[str, str] | None = None, *, tls: bool = True, sasl: str = "plain,scram-sha-256,scram-sha-512",
                  authorizer: bool = True, super_users: tuple[str, ...] = ("User:admin",)) -> SecuredBroker:
    """A bundled broker with a secured listener, started (stop it with `.process.stop()`)."""
    users = dict(SECURED_USERS if users is None else users)
    args = [*(["--sasl", sasl] if sasl else []), *[f"--user={u}:{p}" for u, p in users.items()], *(["--tls"] if tls else [])]
    if authorizer:
        args.append("--authorizer")
        for principal in super_users:
            args += ["--super-user", principal]
    process = BrokerProcess(data_dir, extra_args=args)
    process.start()
    return SecuredBroker(process, users, protocol_for(bool(sasl), tls), data_dir / "tls" / "ca.pem" if tls else None, super_users)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("kctl-broker") / "data")
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker) -> str:
    return kafka_broker.bootstrap


@pytest.fixture(scope="session")
def kafka_secured(tmp_path_factory) -> Iterator[SecuredBroker]:
    secured = start_secured(tmp_path_factory.mktemp("kctl-secured") / "data")
    yield secured
    secured.process.stop()
