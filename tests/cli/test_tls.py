"""TLS end to end: both of kctl's ways to reach Kafka (librdkafka, and its own wire client
for the group commands) verify the broker's certificate against the CA they are given."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Consumer, TopicPartition

from kctl.broker.process import BrokerProcess
from kctl.errors import ExitCode
from tests.security.tls import TlsFront, make_certificates

ADDRESS = "127.0.0.2"


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory):
    """(TLS bootstrap address, CA file, plaintext address) of a bundled broker behind a TLS front."""
    directory = tmp_path_factory.mktemp("tls")
    ca, certificate, key = make_certificates(directory, ADDRESS)
    broker = BrokerProcess(directory / "data", extra_args=["--advertised-host", ADDRESS])
    plain = broker.start()
    port = int(plain.rsplit(":", 1)[1])
    front = TlsFront(ADDRESS, port, ("127.0.0.1", port), certificate, key)
    yield f"{ADDRESS}:{port}", ca, plain
    front.close()
    broker.stop()


def test_group_and_topic_commands_over_tls(kctl, tls_broker):
    bootstrap, ca, _plain = tls_broker
    flags = ["-b", bootstrap, "-X", "security.protocol=SSL", "-X", f"ssl.ca.location={ca}"]
    assert kctl(*flags, "topic", "create", "secured", "-p", "2").exit_code == 0  # librdkafka
    consumer = Consumer({"bootstrap.servers": bootstrap, "security.protocol": "SSL", "ssl.ca.location": str(ca),
                         "group.id": "tls-group", "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition("secured", 1, 0)], asynchronous=False)
    consumer.close()
    listed = kctl(*flags, "group", "list", "-o", "json")  # kctl's wire client
    assert listed.exit_code == 0, listed.stderr
    assert "tls-group" in {g["group"] for g in json.loads(listed.stdout)}
    lag = kctl(*flags, "group", "lag", "tls-group", "-o", "json")
    assert lag.exit_code == 0, lag.stderr
    assert [(p["partition"], p["committed"]) for p in json.loads(lag.stdout)[0]["partitions"]] == [(1, 0)]


def test_a_certificate_from_another_ca_is_refused(kctl, tls_broker, tmp_path):
    bootstrap, _ca, _plain = tls_broker
    other_ca, _cert, _key = make_certificates(tmp_path, ADDRESS)
    flags = ["-b", bootstrap, "-X", "security.protocol=SSL", "-X", f"ssl.ca.location={other_ca}", "--timeout", "5"]
    result = kctl(*flags, "group", "list")
    assert result.exit_code == ExitCode.UNREACHABLE, result.stderr
    assert result.stderr.startswith(f"error: unable to list groups: cluster unreachable at {bootstrap}: ")
    assert "CERTIFICATE_VERIFY_FAILED" in result.stderr, result.stderr
    # Verification off (librdkafka's enable.ssl.certificate.verification=false) lets it through.
    unverified = kctl(*flags[:-2], "-X", "enable.ssl.certificate.verification=false", "group", "list")
    assert unverified.exit_code == 0, unverified.stderr
