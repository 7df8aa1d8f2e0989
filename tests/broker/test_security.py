"""The bundled broker's listeners, SASL, TLS and authorizer, through real clients.

One broker serves SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), SSL and SASL_SSL
with a generated certificate that every client verifies against the generated CA; ACLs are
enforced with admin as the only super user. Clients: confluent-kafka (librdkafka),
kafka-python, aiokafka and Kafka's own Java tools. librdkafka's authorization scenarios
(tests 0109, 0115, 0119) are replayed: denied, then allowed by an ACL. Malformed SASL
exchanges close only their connection."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import subprocess
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from kctl.broker.process import BrokerProcess
from tests.broker.conftest import read_exactly, request_frame
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
SECURED_ARGS = ["--sasl", "plain,scram-sha-256,scram-sha-512", *[f"--user={u}:{p}" for u, p in USERS.items()],
                "--listener", "SSL://127.0.0.1:0", "--listener", "SASL_SSL://127.0.0.1:0",
                "--authorizer", "--super-user", "User:admin"]


class Secured:
    def __init__(self, process: BrokerProcess):
        self.process = process
        self.address = {"SASL_PLAINTEXT": process.bootstrap}
        for listener in process.listeners:
            protocol, address = listener.split("://")
            self.address[protocol] = address
        self.ca = process.data_dir / "tls" / "ca.pem"

    def librdkafka(self, protocol="SASL_PLAINTEXT", mechanism="PLAIN", user="admin", password=None) -> dict:
        config = {"bootstrap.servers": self.address[protocol], "security.protocol": protocol, "log_level": 0}
        if protocol.startswith("SASL"):
            config.update({"sasl.mechanism": mechanism, "sasl.username": user,
                           "sasl.password": USERS[user] if password is None else password})
        if protocol.endswith("SSL"):
            config["ssl.ca.location"] = str(self.ca)  # and librdkafka checks the host name
        return config

    def admin(self) -> AdminClient:
        return AdminClient(self.librdkafka())


def _start(directory, extra=SECURED_ARGS) -> BrokerProcess:
    process = BrokerProcess(directory, extra_args=list(extra))
    process.start()
    return process


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    process = _start(tmp_path_factory.mktemp("secured") / "data")
    broker = Secured(process)
    # The SSL listener's clients are User:ANONYMOUS (no client certificate): allowed
    # everything on topics and groups named tls-* (prefixed ACLs).
    bindings = [AclBinding(kind, "tls-", ResourcePatternType.PREFIXED, "User:ANONYMOUS", "*", AclOperation.ALL,
                           AclPermissionType.ALLOW) for kind in (ResourceType.TOPIC, ResourceType.GROUP)]
    admin = broker.admin()  # kept: a dropped client would cancel its own requests
    for future in admin.create_acls(bindings).values():
        future.result(10)
    yield broker
    process.stop()


def _create_topic(secured, topic, partitions=1):
    admin = secured.admin()
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(10)


# -- clients through every listener and mechanism -----------------------------------------

ROUTES = [("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
          ("SSL", None), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN")]


def _topic_for(protocol, mechanism, client):
    return f"tls-{client}-{protocol}-{mechanism or 'none'}".lower().replace("_", "-")


@pytest.mark.parametrize(("protocol", "mechanism"), ROUTES)
def test_librdkafka_produces_and_consumes(secured, protocol, mechanism):
    topic = _topic_for(protocol, mechanism, "rdkafka")
    _create_topic(secured, topic, 2)
    config = secured.librdkafka(protocol, mechanism)
    producer = Producer(config)
    for i in range(10):
        producer.produce(topic, value=b"v%d" % i)
    assert producer.flush(15) == 0
    consumer = Consumer({**config, "group.id": f"tls-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen, deadline = [], time.monotonic() + 20
    while len(seen) < 10 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            seen.append(message.value())
    consumer.close()
    assert sorted(seen) == sorted(b"v%d" % i for i in range(10))


@pytest.mark.parametrize(("protocol", "mechanism"), ROUTES)
def test_kafka_python_produces_and_consumes(secured, protocol, mechanism):
    from kafka import KafkaConsumer, KafkaProducer

    topic = _topic_for(protocol, mechanism, "kafka-python")
    _create_topic(secured, topic)
    config = {"bootstrap_servers": secured.address[protocol], "security_protocol": protocol}
    if mechanism:
        config.update(sasl_mechanism=mechanism, sasl_plain_username="admin", sasl_plain_password=USERS["admin"])
    if protocol.endswith("SSL"):
        config.update(ssl_cafile=str(secured.ca), ssl_check_hostname=True)
    producer = KafkaProducer(**config)
    for i in range(5):
        producer.send(topic, b"k%d" % i)
    producer.flush(15)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=f"tls-{topic}", auto_offset_reset="earliest", consumer_timeout_ms=10000, **config)
    seen = [m.value for _, m in zip(range(5), consumer)]
    consumer.close()
    assert sorted(seen) == [b"k%d" % i for i in range(5)]


@pytest.mark.parametrize(("protocol", "mechanism"), ROUTES)
def test_aiokafka_produces_and_consumes(secured, protocol, mechanism):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context

    topic = _topic_for(protocol, mechanism, "aiokafka")
    _create_topic(secured, topic)
    config = {"bootstrap_servers": secured.address[protocol], "security_protocol": protocol}
    if mechanism:
        config.update(sasl_mechanism=mechanism, sasl_plain_username="admin", sasl_plain_password=USERS["admin"])
    if protocol.endswith("SSL"):
        config["ssl_context"] = create_ssl_context(cafile=str(secured.ca))

    async def run():
        producer = AIOKafkaProducer(**config)
        await producer.start()
        try:
            for i in range(5):
                await producer.send_and_wait(topic, b"a%d" % i)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, group_id=f"tls-{topic}", auto_offset_reset="earliest", **config)
        await consumer.start()
        try:
            batches = await consumer.getmany(timeout_ms=10000, max_records=5)
            return [m.value for messages in batches.values() for m in messages]
        finally:
            await consumer.stop()

    assert sorted(asyncio.run(run())) == [b"a%d" % i for i in range(5)]


def test_java_console_tools_through_sasl_ssl_with_scram(secured, kafka_tools, tmp_path):
    topic = "tls-java"
    _create_topic(secured, topic)
    properties = tmp_path / "client.properties"
    properties.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="admin" password="{USERS["admin"]}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={secured.ca}\n")
    common = ["--bootstrap-server", secured.address["SASL_SSL"], "--topic", topic]
    produced = subprocess.run(kafka_tools.tool_command("org.apache.kafka.tools.ConsoleProducer", *common,
                                                       "--command-config", str(properties)),
                              input="".join(f"j{i}\n" for i in range(10)), capture_output=True, text=True, timeout=120)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(kafka_tools.tool_command("org.apache.kafka.tools.consumer.ConsoleConsumer", *common,
                                                       "--command-config", str(properties), "--from-beginning",
                                                       "--max-messages", "10", "--group", "tls-java"),
                              capture_output=True, text=True, timeout=120)
    assert sorted(consumed.stdout.split()) == sorted(f"j{i}" for i in range(10)), consumed.stderr


def test_the_certificate_is_verified_against_the_ca(secured, tmp_path):
    """A client that trusts another CA refuses the broker: verification is real."""
    from tests.security.tls import make_certificates

    other_ca = make_certificates(tmp_path, "127.0.0.1")[0]
    errors = []
    producer = Producer({**secured.librdkafka("SSL"), "ssl.ca.location": str(other_ca),
                         "error_cb": errors.append})
    producer.produce("tls-verify", b"x")
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    producer.purge()
    assert errors and errors[0].code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN), errors
    context = ssl.create_default_context(cafile=str(secured.ca))
    host, port = secured.address["SSL"].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw, context.wrap_socket(raw, server_hostname="localhost") as tls:
        assert tls.version() in ("TLSv1.2", "TLSv1.3")


# -- authentication failures ------------------------------------------------------------------

def _client_errors(config) -> list[KafkaError]:
    """The errors librdkafka reports (through poll) for an admin client that cannot list topics."""
    errors = []
    admin = AdminClient({**config, "error_cb": errors.append})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=2)
    deadline = time.monotonic() + 5
    while not errors and time.monotonic() < deadline:
        admin.poll(0.1)
    return errors


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_wrong_password_is_sasl_authentication_failed(secured, mechanism):
    errors = _client_errors(secured.librdkafka(mechanism=mechanism, password="wrong"))
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    text = " ".join(str(e) for e in errors)
    assert "Authentication failed" in text and "wrong" not in text


def test_an_unknown_user_is_refused(secured):
    errors = _client_errors({**secured.librdkafka(mechanism="SCRAM-SHA-512"), "sasl.username": "mallory"})
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors


def test_a_mechanism_the_broker_lacks_lists_the_enabled_ones(secured):
    config = {**secured.librdkafka(), "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
              "sasl.oauthbearer.config": "principal=admin"}
    del config["sasl.username"], config["sasl.password"]
    text = " ".join(str(e) for e in _client_errors(config))
    assert "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" in text, text


def test_kafka_python_reads_the_authentication_error(secured, caplog):
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError as KafkaPythonError

    with pytest.raises(KafkaPythonError):  # it retries until its timeout, logging why
        KafkaAdminClient(bootstrap_servers=secured.address["SASL_PLAINTEXT"], security_protocol="SASL_PLAINTEXT",
                         sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice", sasl_plain_password="nope",
                         request_timeout_ms=3000, bootstrap_timeout_ms=3000)
    failures = [r.getMessage() for r in caplog.records if "SaslAuthenticationFailedError" in r.getMessage()]
    disconnects = [r for r in caplog.records if "socket disconnected" in r.getMessage()]
    assert failures and not disconnects  # each attempt read the error before the close
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in failures[0]


# -- malformed SASL traffic -------------------------------------------------------------------

def _exchange(address: str, frames: list[bytes], timeout: float = 5.0) -> bool:
    """Send frames one by one; True when the broker closed the connection."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        try:
            for frame in frames:
                sock.sendall(frame)
            while True:
                head = sock.recv(4)
                if not head:
                    return True
                size = struct.unpack(">i", head.ljust(4, b"\0"))[0]
                while size > 0:
                    chunk = sock.recv(min(size, 65536))
                    if not chunk:
                        return True
                    size -= len(chunk)
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False


def _string(text: bytes) -> bytes:
    return struct.pack(">h", len(text)) + text


def _handshake(mechanism: bytes, version: int = 1) -> bytes:
    return request_frame(17, version, _string(mechanism))


def _authenticate(token: bytes, correlation_id: int = 2) -> bytes:
    return request_frame(36, 1, struct.pack(">i", len(token)) + token, correlation_id=correlation_id)


MALFORMED = {
    "metadata before authenticating": [request_frame(3, 1, struct.pack(">i", -1))],
    "authenticate before a handshake": [_authenticate(b"\0admin\0admin-secret")],
    "plain with two fields": [_handshake(b"PLAIN"), _authenticate(b"admin\0admin-secret")],
    "plain not utf-8": [_handshake(b"PLAIN"), _authenticate(b"\0\xff\xfe\0\xff")],
    "scram garbage": [_handshake(b"SCRAM-SHA-256"), _authenticate(b"\x00\x01garbage,,,==")],
    "scram bad username encoding": [_handshake(b"SCRAM-SHA-256"), _authenticate(b"n,,n=ad=ZZmin,r=abc")],
    "scram final first": [_handshake(b"SCRAM-SHA-512"), _authenticate(b"c=biws,r=abc,p=AAAA")],
    "scram wrong nonce": [_handshake(b"SCRAM-SHA-512"), _authenticate(b"n,,n=admin,r=abc"),
                          _authenticate(b"c=biws,r=other,p=AAAA", 3)],
    "oversized token": [_handshake(b"PLAIN"), _authenticate(b"\0admin\0" + b"x" * 200_000)],
    "token length past the frame": [_handshake(b"PLAIN"), request_frame(36, 1, struct.pack(">i", 10_000_000) + b"abc")],
    "v0 raw token oversized": [_handshake(b"PLAIN", 0), struct.pack(">i", 50_000_000)],
    "v0 raw token negative": [_handshake(b"PLAIN", 0), struct.pack(">i", -5)],
    "second handshake": [_handshake(b"PLAIN"), _handshake(b"PLAIN")],
    "unknown mechanism": [_handshake(b"GSSAPI")],
}


@pytest.mark.parametrize("name", MALFORMED)
def test_a_malformed_sasl_exchange_closes_only_its_connection(secured, name):
    assert _exchange(secured.address["SASL_PLAINTEXT"], MALFORMED[name])
    assert secured.process.process.poll() is None
    assert secured.admin().list_topics(timeout=10).topics is not None  # others are served


def _authenticate_answer(address: str, first: bytes) -> int:
    """The error code of the SaslAuthenticate answer to a SCRAM client-first message."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(_handshake(b"SCRAM-SHA-256") + _authenticate(first))
        answers = []
        for _ in range(2):
            head = read_exactly(sock, 4)
            assert head is not None, "the broker closed the connection before answering"
            answer = read_exactly(sock, struct.unpack(">i", head)[0])
            assert answer is not None
            answers.append(answer)
        return struct.unpack(">h", answers[1][4:6])[0]


def test_a_scram_token_authentication_names_a_token_not_a_user(secured):
    """`tokenauth=true` makes the name a delegation token's id, as Kafka reads it: a user's
    name and password do not authenticate as a token (SASL_AUTHENTICATION_FAILED), and
    without the extension the same name is a user's."""
    address = secured.address["SASL_PLAINTEXT"]
    assert _authenticate_answer(address, b"n,,n=admin,r=abcdefgh,tokenauth=true") == 58
    assert _authenticate_answer(address, b"n,,n=admin,r=abcdefgh,tokenauth=TRUE") == 58
    assert _authenticate_answer(address, b"n,,n=admin,r=abcdefgh") == 0
    assert _authenticate_answer(address, b"n,,n=admin,r=abcdefgh,tokenauth=false") == 0


def test_v0_handshake_with_bare_tokens_authenticates(secured):
    """Before SaslAuthenticate (Kafka < 1.0) tokens went as bare size-prefixed frames."""
    host, port = secured.address["SASL_PLAINTEXT"].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(_handshake(b"PLAIN", 0))
        head = sock.recv(4)
        sock.recv(struct.unpack(">i", head)[0])
        token = b"\0admin\0" + USERS["admin"].encode()
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert sock.recv(4) == b"\0\0\0\0"  # PLAIN's empty answer
        sock.sendall(request_frame(18, 0, b""))  # then requests as usual
        head = sock.recv(4)
        assert struct.unpack(">i", head)[0] > 0


# -- authorization: librdkafka's 0109, 0115 and 0119 scenarios ---------------------------------

def _allow(secured, kind, name, principal, *operations, pattern=ResourcePatternType.LITERAL):
    bindings = [AclBinding(kind, name, pattern, principal, "*", op, AclPermissionType.ALLOW) for op in operations]
    admin = secured.admin()
    for future in admin.create_acls(bindings).values():
        future.result(10)


def test_0115_producer_is_denied_then_allowed(secured):
    topic = "authz-0115"
    _create_topic(secured, topic)
    reports = []
    producer = Producer({**secured.librdkafka(user="alice"), "enable.idempotence": False,
                         "message.timeout.ms": 5000})
    producer.produce(topic, b"denied", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(10)
    assert reports and reports[0] is not None and reports[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _allow(secured, ResourceType.TOPIC, topic, "User:alice", AclOperation.WRITE)
    reports.clear()
    producer = Producer({**secured.librdkafka(user="alice"), "enable.idempotence": False})
    producer.produce(topic, b"allowed", on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(10) == 0 and reports == [None]


def test_0119_consumer_is_denied_then_allowed(secured):
    topic, group = "authz-0119", "authz-0119-group"
    _create_topic(secured, topic)
    producer = Producer(secured.librdkafka())
    producer.produce(topic, b"r")
    assert producer.flush(10) == 0
    # As in librdkafka's 0119: the principal may see the topic, not read it; the Fetch says so.
    _allow(secured, ResourceType.GROUP, group, "User:alice", AclOperation.READ)
    _allow(secured, ResourceType.TOPIC, topic, "User:alice", AclOperation.DESCRIBE)

    def first(consumer):
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                return message
        raise AssertionError("nothing within 15 s")

    consumer = Consumer({**secured.librdkafka(user="alice"), "group.id": group, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    message = first(consumer)
    consumer.close()
    assert message.error() and message.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _allow(secured, ResourceType.TOPIC, topic, "User:alice", AclOperation.READ)
    consumer = Consumer({**secured.librdkafka(user="alice"), "group.id": group, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    message = first(consumer)
    consumer.close()
    assert message.error() is None and message.value() == b"r"


def test_0109_metadata_hides_what_a_principal_may_not_describe(secured):
    """Auto-creation needs CREATE; a topic the principal may not DESCRIBE is reported as
    TOPIC_AUTHORIZATION_FAILED whether or not it exists, and left out of listings. A
    missing topic it may describe but not create is refused too when the client asks for
    auto-creation (librdkafka's admin client does), as Kafka's KafkaApis refuses it."""
    _create_topic(secured, "authz-0109-exists")
    alice = AdminClient(secured.librdkafka(user="alice"))
    listed = alice.list_topics(timeout=10)
    assert not [t for t in listed.topics if t.startswith("authz-0109")]
    for name in ("authz-0109-exists", "authz-0109-absent"):
        topic = alice.list_topics(name, timeout=10).topics[name]
        assert topic.error is not None and topic.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _allow(secured, ResourceType.TOPIC, "authz-0109-", "User:alice", AclOperation.DESCRIBE,
           pattern=ResourcePatternType.PREFIXED)
    absent = alice.list_topics("authz-0109-absent", timeout=10).topics["authz-0109-absent"]
    assert absent.error is not None and absent.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert alice.list_topics("authz-0109-exists", timeout=10).topics["authz-0109-exists"].error is None
    _allow(secured, ResourceType.TOPIC, "authz-0109-absent", "User:alice", AclOperation.CREATE)
    eventually(lambda: _no_error(alice.list_topics("authz-0109-absent", timeout=10).topics["authz-0109-absent"]))


def _no_error(topic):
    assert topic.error is None, topic.error


def test_a_transactional_producer_needs_its_transactional_id(secured):
    topic, txn = "authz-txn", "authz-txn-id"
    _create_topic(secured, topic)
    _allow(secured, ResourceType.TOPIC, topic, "User:alice", AclOperation.WRITE)
    producer = Producer({**secured.librdkafka(user="alice"), "transactional.id": txn})
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(10)
    assert raised.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    _allow(secured, ResourceType.TRANSACTIONAL_ID, txn, "User:alice", AclOperation.WRITE)
    producer = Producer({**secured.librdkafka(user="alice"), "transactional.id": txn})
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce(topic, b"in a transaction")
    producer.commit_transaction(10)
    consumer = Consumer({**secured.librdkafka(), "group.id": "authz-txn-reader", "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    message, deadline = None, time.monotonic() + 10
    while message is None and time.monotonic() < deadline:
        message = consumer.poll(0.5)
    consumer.close()
    assert message is not None and message.value() == b"in a transaction"


def test_a_share_consumer_needs_read_on_its_group_and_topic(secured, kafka_tools, tmp_path):
    """Kafka's console share consumer as alice: refused on the group until ACLs allow it."""
    topic, group = "authz-share", "authz-share-group"
    _create_topic(secured, topic)
    producer = Producer(secured.librdkafka())
    for i in range(3):
        producer.produce(topic, b"s%d" % i)
    assert producer.flush(10) == 0

    def properties(user):
        path = tmp_path / f"{user}.properties"
        path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                        f'username="{user}" password="{USERS[user]}";\n')
        return str(path)

    bootstrap = secured.address["SASL_PLAINTEXT"]
    configured = kafka_tools.run_tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bootstrap,
                                      "--command-config", properties("admin"), "--alter", "--entity-type", "groups",
                                      "--entity-name", group, "--add-config", "share.auto.offset.reset=earliest")
    assert configured.returncode == 0, configured.stderr

    def consume(timeout_ms):
        return subprocess.run(kafka_tools.tool_command(
            "org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server", bootstrap, "--command-config",
            properties("alice"), "--topic", topic, "--group", group, "--max-messages", "3", "--timeout-ms", str(timeout_ms)),
            capture_output=True, text=True, timeout=120)

    denied = consume(10000)
    assert "Not authorized to access group" in denied.stderr, denied.stderr[-2000:]
    _allow(secured, ResourceType.GROUP, group, "User:alice", AclOperation.READ)
    _allow(secured, ResourceType.TOPIC, topic, "User:alice", AclOperation.READ)
    allowed = consume(20000)
    assert sorted(allowed.stdout.split()) == ["s0", "s1", "s2"], allowed.stderr[-2000:]


def test_deny_wins_and_hosts_match(secured):
    topic = "authz-deny"
    _create_topic(secured, topic)
    _allow(secured, ResourceType.TOPIC, topic, "User:*", AclOperation.ALL)
    deny = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "127.0.0.1",
                      AclOperation.WRITE, AclPermissionType.DENY)
    admin = secured.admin()
    admin.create_acls([deny])[deny].result(10)
    reports = []
    producer = Producer({**secured.librdkafka(user="alice"), "enable.idempotence": False, "message.timeout.ms": 5000})
    producer.produce(topic, b"x", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(10)
    assert reports[0] is not None and reports[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # DESCRIBE still comes with ALL for User:*; the deny is on WRITE from 127.0.0.1 only
    assert AdminClient(secured.librdkafka(user="alice")).list_topics(topic, timeout=10).topics[topic].error is None


def test_scram_credentials_can_be_changed_and_deleted(secured):
    admin = secured.admin()
    upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"pw-1")
    admin.alter_user_scram_credentials([upsert])["carol"].result(10)
    described = admin.describe_user_scram_credentials(["carol"])["carol"].result(10)
    assert [(c.mechanism, c.iterations) for c in described.scram_credential_infos] == [(ScramMechanism.SCRAM_SHA_256, 8192)]
    _allow(secured, ResourceType.BROKER, "kafka-cluster", "User:carol", AclOperation.DESCRIBE)
    carol = AdminClient({**secured.librdkafka(mechanism="SCRAM-SHA-256"), "sasl.username": "carol", "sasl.password": "pw-1"})
    assert carol.list_topics(timeout=10).brokers
    deletion = UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)
    admin.alter_user_scram_credentials([deletion])["carol"].result(10)
    with pytest.raises(KafkaException):
        admin.describe_user_scram_credentials(["carol"])["carol"].result(10)


# -- what survives kill -9 --------------------------------------------------------------------

def test_acls_credentials_and_quotas_survive_kill_9(tmp_path, kctl):
    import json

    process = _start(tmp_path / "data")
    try:
        broker = Secured(process)
        admin = broker.admin()
        _allow(broker, ResourceType.TOPIC, "kept", "User:alice", AclOperation.READ)
        upsert = UserScramCredentialUpsertion("dave", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"dave-pw")
        admin.alter_user_scram_credentials([upsert])["dave"].result(10)
        flags = [f for k, v in broker.librdkafka().items() if k != "log_level"
                 for f in (("-b", v) if k == "bootstrap.servers" else ("-X", f"{k}={v}"))]
        assert kctl(*flags, "quota", "set", "--user", "alice", "--set", "producer_byte_rate=1024").exit_code == 0
        process.kill()
        process.restart()
        broker = Secured(process)
        admin = broker.admin()
        acls = admin.describe_acls(_filter_all()).result(10)
        assert [(a.name, a.principal, a.operation) for a in acls] == [("kept", "User:alice", AclOperation.READ)]
        dave = AdminClient({**broker.librdkafka(mechanism="SCRAM-SHA-512"), "sasl.username": "dave", "sasl.password": "dave-pw"})
        assert dave.list_topics(timeout=10).brokers  # the credential logs in
        listed = kctl(*flags, "quota", "list", "-o", "json")
        assert [(q["user"], q["quota"], q["value"]) for q in json.loads(listed.stdout)] == [("alice", "producer_byte_rate", 1024.0)]
    finally:
        process.stop()


def _filter_all():
    from confluent_kafka.admin import AclBindingFilter

    return AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                            AclPermissionType.ANY)
