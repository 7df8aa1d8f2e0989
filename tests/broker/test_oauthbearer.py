"""SASL/OAUTHBEARER on the bundled broker (issue 60): unsecured JWTs validated as Kafka's
default validator validates them, the exchange's failures as Kafka answers them, and
sessions that end (KIP-368): SaslAuthenticate says when, a client that authenticates again
keeps its connection, one that does not is cut off, and nobody changes principal on the way."""

from __future__ import annotations

import base64
import json
import socket
import struct
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer

from kctl.broker.process import BrokerProcess
from kctl.broker.security import oauthbearer
from kctl.messages import codec
from tests.broker.conftest import read_exactly, request_frame
from tests.support.eventually import within

pytestmark = pytest.mark.integration


def jwt(claims: dict, header: dict | None = None, signature: str = "") -> str:
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part(header or {'alg': 'none'})}.{part(claims)}.{signature}"


def token_for(principal: str, lifetime_s: float, **claims) -> str:
    now = time.time()
    return jwt({"sub": principal, "iat": int(now), "exp": now + lifetime_s, **claims})


def first_message(token: str, authzid: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token}\x01\x01".encode()


# -- the validator and the client's first message, without a broker ---------------------------

def test_the_client_first_message_is_read_as_rfc_7628_writes_it():
    token = token_for("alice", 60)
    assert oauthbearer.client_first_message(first_message(token)) == ("", token)
    assert oauthbearer.client_first_message(first_message(token, "alice")) == ("alice", token)
    with_extensions = f"n,,\x01auth=Bearer {token}\x01traceId=abc 123\x01\x01".encode()
    assert oauthbearer.client_first_message(with_extensions) == ("", token)
    for bad in (b"", b"n,,", f"y,,\x01auth=Bearer {token}\x01\x01".encode(), f"n,,\x01auth=Bearer {token}\x01".encode(),
                f"n,,\x01auth=Basic {token}\x01\x01".encode(), b"n,,\x01auth=Bearer a b\x01\x01", "n,,\x01auth=Bearer é\x01\x01".encode(),
                f"n,a=x,y,\x01auth=Bearer {token}\x01\x01".encode(), f"n,,\x01auth=Bearer {token}\x01bad key=v\x01\x01".encode()):
        with pytest.raises(oauthbearer.InvalidMessage):
            oauthbearer.client_first_message(bad)


def test_tokens_are_validated_as_kafkas_unsecured_validator_does():
    config = oauthbearer.ValidatorConfig()
    now = int(time.time() * 1000)
    found = oauthbearer.validate(token_for("alice", 60, scope="read write"), config, now)
    assert (found.principal, found.scopes) == ("alice", ("read", "write"))
    assert abs(found.expires_ms - (now + 60_000)) < 2_000
    custom = oauthbearer.ValidatorConfig(principal_claim="client_id", clock_skew_ms=120_000)
    assert oauthbearer.validate(jwt({"client_id": "svc", "exp": now / 1000 - 60}), custom, now).principal == "svc"
    for token in (token_for("alice", -1), jwt({"sub": "alice", "exp": now / 1000 + 60}, {"alg": "HS256"}),
                  jwt({"sub": "alice", "exp": now / 1000 + 60}, signature="c2ln"), jwt({"sub": "alice"}),
                  jwt({"sub": "", "exp": now / 1000 + 60}), jwt({"exp": now / 1000 + 60}),
                  jwt({"sub": "alice", "exp": "soon"}), jwt({"sub": "alice", "exp": now / 1000 + 60, "iat": now / 1000 + 600}),
                  "not-a-jws", "a.b.", token_for("alice", 60)[:-1] + "x"):
        with pytest.raises(oauthbearer.InvalidToken):
            oauthbearer.validate(token, config, now)


# -- the exchange, on a broker ------------------------------------------------------------------

@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("oauth") / "data", extra_args=[
        "--sasl", "oauthbearer,plain", "--user", "admin:admin-secret", "--config=connections.max.reauth.ms=1500"])
    process.start()
    yield process
    process.stop()


class Raw:
    """A connection speaking SaslHandshake v1, SaslAuthenticate v1 and Metadata by hand."""

    def __init__(self, bootstrap: str):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.correlation = 0

    def ask(self, api: str, version: int, **fields):
        self.correlation += 1
        request = codec.message(api + "Request", version)
        self.sock.sendall(request_frame(request.api_key, version, request.encode(**fields), self.correlation))
        head = read_exactly(self.sock, 4)
        if head is None:
            return None
        frame = read_exactly(self.sock, struct.unpack(">i", head)[0])
        return None if frame is None else codec.message(api + "Response", version).decode(frame, 4)

    def authenticate(self, message: bytes):
        handshake = self.ask("SaslHandshake", 1, mechanism="OAUTHBEARER")
        assert handshake.error_code == 0, handshake
        return self.ask("SaslAuthenticate", 1, auth_bytes=message)

    def metadata(self):
        return self.ask("Metadata", 4, topics=[], allow_auto_topic_creation=False)


def test_a_session_lasts_until_the_token_expires_or_reauth_ms(broker):
    raw = Raw(broker.bootstrap)
    answer = raw.authenticate(first_message(token_for("alice", 60)))
    assert (answer.error_code, answer.auth_bytes) == (0, b"")
    assert 1000 < answer.session_lifetime_ms <= 1500  # connections.max.reauth.ms
    assert raw.metadata() is not None
    short = Raw(broker.bootstrap)
    assert short.authenticate(first_message(token_for("alice", 1.0))).session_lifetime_ms <= 1000  # the token's exp
    time.sleep(1.6)  # the point: both sessions' lives pass
    # Not authenticated again: the next request closes the connection.
    assert raw.metadata() is None
    assert short.metadata() is None
    assert "ended without re-authentication (connections.max.reauth.ms)" in broker.log_path.read_text()


def test_a_listener_and_mechanism_scoped_reauth_ms_applies_to_that_mechanism_only(tmp_path):
    """Kafka's listener.name.<listener>.<mechanism>.connections.max.reauth.ms: OAUTHBEARER
    sessions end after it, PLAIN sessions on the same listener never (nothing global set)."""
    process = BrokerProcess(tmp_path / "data", extra_args=[
        "--sasl", "oauthbearer,plain", "--user", "admin:admin-secret",
        "--config=listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms=1500"])
    process.start()
    try:
        oauth = Raw(process.bootstrap).authenticate(first_message(token_for("alice", 60)))
        assert oauth.error_code == 0 and 1000 < oauth.session_lifetime_ms <= 1500
        plain = Raw(process.bootstrap)
        assert plain.ask("SaslHandshake", 1, mechanism="PLAIN").error_code == 0
        answer = plain.ask("SaslAuthenticate", 1, auth_bytes=b"\x00admin\x00admin-secret")
        assert (answer.error_code, answer.session_lifetime_ms) == (0, 0)
    finally:
        process.stop()


def test_reauthentication_keeps_the_connection_and_the_principal(broker):
    raw = Raw(broker.bootstrap)
    assert raw.authenticate(first_message(token_for("alice", 60))).error_code == 0
    time.sleep(1.0)  # the point: into the first session's life, before its end
    again = raw.authenticate(first_message(token_for("alice", 60)))
    assert again.error_code == 0 and again.session_lifetime_ms > 1000
    time.sleep(1.0)  # the point: past the first session's end, within the second's
    assert raw.metadata() is not None
    # Another mechanism, or another principal, ends it.
    other = raw.ask("SaslHandshake", 1, mechanism="PLAIN")
    assert other.error_code == 33 and list(other.mechanisms) == ["OAUTHBEARER"]  # UNSUPPORTED_SASL_MECHANISM
    assert raw.metadata() is None
    swapped = Raw(broker.bootstrap)
    assert swapped.authenticate(first_message(token_for("alice", 60))).error_code == 0
    refused = swapped.authenticate(first_message(token_for("mallory", 60)))
    assert refused.error_code == 58  # SASL_AUTHENTICATION_FAILED
    assert refused.error_message == "Cannot change principals during re-authentication from User:alice: User:mallory"
    assert swapped.metadata() is None


def test_failures_are_answered_as_kafka_answers_them(broker):
    expired = Raw(broker.bootstrap)
    challenge = expired.authenticate(first_message(token_for("alice", -5)))
    assert (challenge.error_code, challenge.auth_bytes) == (0, b'{"status":"invalid_token"}')
    final = expired.ask("SaslAuthenticate", 1, auth_bytes=b"\x01")
    assert (final.error_code, final.error_message) == (58, '{"status":"invalid_token"}')
    assert expired.metadata() is None

    garbled = Raw(broker.bootstrap)
    answer = garbled.authenticate(b"n,,auth=Bearer x")
    assert (answer.error_code, answer.error_message) == (58, "Invalid OAUTHBEARER client first message")
    assert garbled.metadata() is None

    impostor = Raw(broker.bootstrap)
    answer = impostor.authenticate(first_message(token_for("alice", 60), authzid="admin"))
    assert answer.error_code == 58
    assert answer.error_message == ("Authentication failed: Client requested an authorization id (admin) that is different "
                                    "from the token's principal name (alice)")


def test_librdkafka_clients_keep_working_across_reauthentication(broker):
    """Sessions of 1.5 s: a consumer and a producer running 5 s outlive their sessions
    several times, and every record gets through. (Whether librdkafka re-authenticates in
    time is its scheduling: on a loaded machine it can be late, and the broker then closes
    the connection, which it opens again, losing nothing. Re-authentication on time is
    the Raw test's above, where the client's timing is the test's.)"""
    oauth = {"bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
             "enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": "principal=admin lifeSeconds=60"}
    log_before = len(broker.log_path.read_text())
    producer = Producer({**oauth, "linger.ms": 0})
    consumer = Consumer({**oauth, "group.id": "reauth", "auto.offset.reset": "earliest"})
    consumer.subscribe(["reauth"])
    sent, got, failures = 0, [], []
    stop = threading.Event()

    def consume():
        while not stop.is_set():
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append(message.value())

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    producer.produce("reauth", b"first")  # creates the topic
    producer.flush(10)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        producer.produce("reauth", b"%d" % sent, on_delivery=lambda error, _m: error and failures.append(error))
        sent += 1
        producer.poll(0.1)
    assert producer.flush(10) == 0
    within(lambda: len(got) >= sent + 1, timeout=10, interval=0.1)
    stop.set()
    reader.join(5)
    consumer.close()
    assert failures == []
    assert sorted(got) == sorted([b"first", *(b"%d" % i for i in range(sent))])
    assert "after an internal error" not in broker.log_path.read_text()[log_before:]
