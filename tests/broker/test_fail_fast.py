"""What the bundled broker does not implement fails at once, with an error that names it,
in the client that asked: a client set up for SASL or TLS on a PLAINTEXT listener.
(Kafka Streams' streams protocol, which needs the Java clients, is in test_clients.py.)"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer  # noqa: F401 - first_error closes consumers

pytestmark = pytest.mark.integration


def first_error(make_client, poll) -> tuple[float, KafkaError]:
    """(seconds, error) of the first error the client reports, through its error callback
    or a polled message."""
    errors = []
    started = time.monotonic()

    def report(error):
        errors.append((time.monotonic() - started, error))

    client = make_client(report)
    try:
        while not errors and time.monotonic() - started < 10:
            poll(client, report)
    finally:
        if isinstance(client, Consumer):
            client.close()
        else:
            client.purge()  # the record that could not be sent: nothing to wait for
    assert errors, "no error within 10 s"
    return errors[0]


@pytest.mark.parametrize(("settings", "named"), [
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": "p"}, "SASL"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u", "sasl.password": "p"}, "SASL"),
    ({"security.protocol": "SSL"}, "SSL"),
])
def test_security_the_listener_does_not_offer(broker, settings, named):
    def producer(on_error):
        client = Producer({"bootstrap.servers": broker.bootstrap, "error_cb": on_error, "log_level": 0, **settings})
        client.produce("fail-fast", b"v")
        return client

    elapsed, error = first_error(producer, lambda client, report: client.poll(0.05))
    assert elapsed < 2, error
    assert named in error.str(), error
