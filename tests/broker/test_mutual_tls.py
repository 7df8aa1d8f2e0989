"""Mutual TLS (issue 60): with ssl.client.auth=required a client needs a certificate its
truststore's CAs signed, and its principal is the certificate's subject as Kafka names it
(RFC 2253, ssl.principal.mapping.rules applied), on both of kctl's clients (librdkafka and
the wire client), with ACLs granted to that principal. On the bundled broker and, with the
kafka backend, on the secured Kafka node's SSL listener set the same way."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from kctl.broker.process import BrokerProcess
from kctl.broker.security.principal import distinguished_name, parse_rules, principal_name
from kctl.errors import ExitCode
from tests.backends.plugin import selected_backends
from tests.support.certificates import MTLS_RULES as RULES
from tests.support.certificates import make_ca, make_client

pytestmark = pytest.mark.integration


def test_the_subject_is_named_as_java_names_it_and_mapped_as_kafka_maps_it(tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.x509.oid import NameOID

    ca = make_ca(tmp_path, "ca")
    certificate, _c, _k = make_client(tmp_path, ca, [(NameOID.COUNTRY_NAME, "US"), (NameOID.ORGANIZATION_NAME, "acme, inc"),
                                                     (NameOID.ORGANIZATIONAL_UNIT_NAME, "kafka-users"), (NameOID.COMMON_NAME, "Bob+Co"),
                                                     (NameOID.EMAIL_ADDRESS, "bob@acme.test")], "bob")
    name = distinguished_name(certificate.public_bytes(serialization.Encoding.DER))
    # Java: X500Principal.getName() — the last RDN first, specials escaped, email as its OID
    # with the IA5String's DER in hex (checked against JDK 17's X500Principal).
    assert name == "1.2.840.113549.1.9.1=#160d626f624061636d652e74657374,CN=Bob\\+Co,OU=kafka-users,O=acme\\, inc,C=US"
    # Kafka's own SslPrincipalMapperTest cases.
    rules = parse_rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
                        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U,DEFAULT")
    assert principal_name("CN=kafka1,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", rules) == "kafka1"
    assert principal_name("CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", rules) == "adminuser@admin"
    assert principal_name("cn=test,ou=test,dc=example,dc=com", rules) == "TEST@TEST"
    assert principal_name("OU=other", rules) == "OU=other"
    with pytest.raises(ValueError, match="No rules apply to OU=other"):
        principal_name("OU=other", parse_rules("RULE:^CN=(.*)$/$1/"))
    for bad in ("RULE:^CN=(.*)$", "RULE:^CN=(/$1/X", "NOPE"):
        with pytest.raises(ValueError, match="ssl.principal.mapping.rules"):
            parse_rules(bad)


@pytest.fixture(scope="module")
def _bundled_mutual(tmp_path_factory):
    directory = tmp_path_factory.mktemp("mtls")
    ca = make_ca(directory, "clients-ca")
    process = BrokerProcess(directory / "data", extra_args=[
        "--tls", "--authorizer", "--super-user", "User:admin", "--config=ssl.client.auth=required",
        f"--config=ssl.truststore.location={ca[2]}", f"--config=ssl.principal.mapping.rules={RULES}"])
    process.start()
    yield SimpleNamespace(bootstrap=process.bootstrap, server_ca=process.data_dir / "tls" / "ca.pem", clients_ca=ca)
    process.stop()


@pytest.fixture(params=["bundled", "kafka"])
def mutual(request, tmp_path):
    """(the broker: bootstrap, server_ca, clients_ca; the people's certificates; a directory)
    on the bundled broker, or on the secured Kafka node's SSL listener."""
    from cryptography.x509.oid import NameOID

    if request.param not in selected_backends():
        pytest.skip(f"the {request.param} backend is not selected")
    target = request.getfixturevalue("_bundled_mutual" if request.param == "bundled" else "secured_kafka")
    target = getattr(target, "mutual_tls", target)
    ca = target.clients_ca
    other_ca = make_ca(tmp_path, "other-ca")
    people = {name: make_client(tmp_path, ca, [(NameOID.ORGANIZATION_NAME, "acme"), (NameOID.ORGANIZATIONAL_UNIT_NAME, "kafka-users"),
                                               (NameOID.COMMON_NAME, cn)], name)
              for name, cn in (("admin", "Admin"), ("alice", "Alice"))}
    people["stranger"] = make_client(tmp_path, other_ca, [(NameOID.COMMON_NAME, "Alice")], "stranger")
    people["service"] = make_client(tmp_path, ca, [(NameOID.ORGANIZATION_NAME, "acme"), (NameOID.COMMON_NAME, "svc")], "service")
    return target, people, tmp_path


def run(target, people, who: str, *args: str) -> subprocess.CompletedProcess:
    _certificate, cert_path, key_path = people[who]
    flags = ["-b", target.bootstrap, "-X", "security.protocol=SSL", "-X", f"ssl.ca.location={target.server_ca}",
             "-X", f"ssl.certificate.location={cert_path}", "-X", f"ssl.key.location={key_path}", "--timeout", "8"]
    return subprocess.run([sys.executable, "-m", "kctl", *flags, *args], capture_output=True, text=True)


def test_the_certificate_is_the_principal_on_both_clients(mutual, config_home):
    target, people, _directory = mutual
    created = run(target, people, "admin", "topic", "create", "mtls-orders")  # librdkafka, as User:admin
    assert created.returncode == 0, created.stderr
    info = run(target, people, "admin", "cluster", "info", "-o", "json")  # the wire client
    assert info.returncode == 0, info.stderr
    # alice's subject maps to User:alice: refused until an ACL names her, on both clients.
    refused = run(target, people, "alice", "topic", "create", "hers")
    assert refused.returncode == ExitCode.NOT_AUTHORIZED, refused.stderr
    assert run(target, people, "alice", "offset", "get", "mtls-orders").returncode == ExitCode.NOT_AUTHORIZED
    granted = run(target, people, "admin", "acl", "create", "--principal", "User:alice", "--operation", "describe", "--topic", "mtls-orders")
    assert granted.returncode == 0, granted.stderr
    offsets = run(target, people, "alice", "offset", "get", "mtls-orders", "-o", "json")
    assert offsets.returncode == 0, offsets.stderr
    assert json.loads(offsets.stdout)[0]["topic"] == "mtls-orders"
    # No rule but DEFAULT matches svc's subject: its principal is the whole name.
    acls = run(target, people, "admin", "acl", "create", "--principal", "User:CN=svc,O=acme", "--operation", "describe", "--topic", "mtls-orders")
    assert acls.returncode == 0, acls.stderr
    assert run(target, people, "service", "offset", "get", "mtls-orders").returncode == 0


def test_without_a_trusted_certificate_no_connection(mutual, config_home):
    target, people, _directory = mutual
    stranger = run(target, people, "stranger", "cluster", "info")  # signed by another CA
    assert stranger.returncode != 0 and len(stranger.stderr.strip().splitlines()) <= 2, stranger.stderr
    bare = subprocess.run([sys.executable, "-m", "kctl", "-b", target.bootstrap, "-X", "security.protocol=SSL",
                           "-X", f"ssl.ca.location={target.server_ca}", "--timeout", "5", "topic", "list"],
                          capture_output=True, text=True)
    assert bare.returncode != 0 and len(bare.stderr.strip().splitlines()) <= 2, bare.stderr
    # The broker is unharmed.
    assert run(target, people, "admin", "topic", "list").returncode == 0


def test_mutual_tls_settings_are_checked_before_start(tmp_path):
    for configs, message in [
        (["ssl.client.auth=always"], "must be one of none, requested, required"),
        (["ssl.client.auth=required"], "needs a TLS listener"),
        (["ssl.principal.mapping.rules=RULE:^CN=(.*)$"], "ssl.principal.mapping.rules"),
        (["ssl.truststore.type=JKS"], "PEM files only"),
    ]:
        args = [f"--config={c}" for c in configs]
        result = subprocess.run([sys.executable, "-m", "kctl", "local", "start", "--port", "0", "--data-dir", str(tmp_path / "x"),
                                 "--no-context", *args], capture_output=True, text=True)
        assert result.returncode == ExitCode.USAGE and message in result.stderr, (configs, result.stderr)
    no_truststore = subprocess.run([sys.executable, "-m", "kctl", "local", "start", "--port", "0", "--data-dir", str(tmp_path / "y"),
                                    "--no-context", "--tls", "--config=ssl.client.auth=required"], capture_output=True, text=True)
    assert no_truststore.returncode == ExitCode.USAGE and "ssl.truststore.location=PEM" in no_truststore.stderr


def test_requested_client_auth_takes_a_certificate_when_there_is_one(tmp_path, config_home):
    """ssl.client.auth=requested: a client with a trusted certificate is its subject, one
    without is User:ANONYMOUS (here allowed nothing: the authorizer refuses it)."""
    from cryptography.x509.oid import NameOID

    ca = make_ca(tmp_path, "requested-ca")
    people = {"admin": make_client(tmp_path, ca, [(NameOID.COMMON_NAME, "admin")], "admin")}
    process = BrokerProcess(tmp_path / "data", extra_args=[
        "--tls", "--authorizer", "--super-user", "User:admin", "--config=ssl.client.auth=requested",
        f"--config=ssl.truststore.location={ca[2]}", "--config=ssl.principal.mapping.rules=RULE:^CN=(.*)$/$1/,DEFAULT"])
    process.start()
    target = SimpleNamespace(bootstrap=process.bootstrap, server_ca=process.data_dir / "tls" / "ca.pem")
    try:
        assert run(target, people, "admin", "topic", "create", "requested").returncode == 0
        ca_file = process.data_dir / "tls" / "ca.pem"
        anonymous = subprocess.run([sys.executable, "-m", "kctl", "-b", process.bootstrap, "-X", "security.protocol=SSL",
                                    "-X", f"ssl.ca.location={ca_file}", "--timeout", "8", "topic", "create", "theirs"],
                                   capture_output=True, text=True)
        assert anonymous.returncode == ExitCode.NOT_AUTHORIZED, anonymous.stderr  # connected, as ANONYMOUS
    finally:
        process.stop()
