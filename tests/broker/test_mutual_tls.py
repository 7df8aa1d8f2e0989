"""Mutual TLS on the bundled broker (issue 60): with ssl.client.auth=required a client
needs a certificate its truststore's CAs signed, and its principal is the certificate's
subject as Kafka names it (RFC 2253, ssl.principal.mapping.rules applied), on both of
kctl's clients (librdkafka and the wire client), with ACLs granted to that principal."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys

import pytest

from kctl.broker.process import BrokerProcess
from kctl.broker.security.principal import distinguished_name, parse_rules, principal_name
from kctl.errors import ExitCode

pytestmark = pytest.mark.integration

RULES = "RULE:^CN=([^,]*),OU=kafka-users,O=acme$/$1/L,DEFAULT"


def make_ca(directory, name: str):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    path = directory / f"{name}.pem"
    path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return key, certificate, path


def make_client(directory, ca, attributes: list[tuple], file_name: str):
    """A client certificate and key signed by `ca`, subject from (oid, value) pairs in
    the certificate's order (the most general first)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    ca_key, ca_certificate, _path = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    certificate = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(o, v) for o, v in attributes]))
                   .issuer_name(ca_certificate.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                   .sign(ca_key, hashes.SHA256()))
    cert_path, key_path = directory / f"{file_name}.pem", directory / f"{file_name}.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return certificate, cert_path, key_path


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
def mutual(tmp_path_factory):
    from cryptography.x509.oid import NameOID

    directory = tmp_path_factory.mktemp("mtls")
    ca = make_ca(directory, "clients-ca")
    other_ca = make_ca(directory, "other-ca")
    people = {name: make_client(directory, ca, [(NameOID.ORGANIZATION_NAME, "acme"), (NameOID.ORGANIZATIONAL_UNIT_NAME, "kafka-users"),
                                                (NameOID.COMMON_NAME, cn)], name)
              for name, cn in (("admin", "Admin"), ("alice", "Alice"))}
    people["stranger"] = make_client(directory, other_ca, [(NameOID.COMMON_NAME, "Alice")], "stranger")
    people["service"] = make_client(directory, ca, [(NameOID.ORGANIZATION_NAME, "acme"), (NameOID.COMMON_NAME, "svc")], "service")
    process = BrokerProcess(directory / "data", extra_args=[
        "--tls", "--authorizer", "--super-user", "User:admin", "--config=ssl.client.auth=required",
        f"--config=ssl.truststore.location={ca[2]}", f"--config=ssl.principal.mapping.rules={RULES}"])
    process.start()
    yield process, people, directory
    process.stop()


def run(process, people, who: str, *args: str) -> subprocess.CompletedProcess:
    _certificate, cert_path, key_path = people[who]
    ca = process.data_dir / "tls" / "ca.pem"
    flags = ["-b", process.bootstrap, "-X", "security.protocol=SSL", "-X", f"ssl.ca.location={ca}",
             "-X", f"ssl.certificate.location={cert_path}", "-X", f"ssl.key.location={key_path}", "--timeout", "8"]
    return subprocess.run([sys.executable, "-m", "kctl", *flags, *args], capture_output=True, text=True)


def test_the_certificate_is_the_principal_on_both_clients(mutual, config_home):
    process, people, _directory = mutual
    created = run(process, people, "admin", "topic", "create", "mtls-orders")  # librdkafka, as User:admin
    assert created.returncode == 0, created.stderr
    info = run(process, people, "admin", "cluster", "info", "-o", "json")  # the wire client
    assert info.returncode == 0, info.stderr
    # alice's subject maps to User:alice: refused until an ACL names her, on both clients.
    refused = run(process, people, "alice", "topic", "create", "hers")
    assert refused.returncode == ExitCode.NOT_AUTHORIZED, refused.stderr
    assert run(process, people, "alice", "offset", "get", "mtls-orders").returncode == ExitCode.NOT_AUTHORIZED
    granted = run(process, people, "admin", "acl", "create", "--principal", "User:alice", "--operation", "describe", "--topic", "mtls-orders")
    assert granted.returncode == 0, granted.stderr
    offsets = run(process, people, "alice", "offset", "get", "mtls-orders", "-o", "json")
    assert offsets.returncode == 0, offsets.stderr
    assert json.loads(offsets.stdout)[0]["topic"] == "mtls-orders"
    # No rule but DEFAULT matches svc's subject: its principal is the whole name.
    acls = run(process, people, "admin", "acl", "create", "--principal", "User:CN=svc,O=acme", "--operation", "describe", "--topic", "mtls-orders")
    assert acls.returncode == 0, acls.stderr
    assert run(process, people, "service", "offset", "get", "mtls-orders").returncode == 0


def test_without_a_trusted_certificate_no_connection(mutual, config_home):
    process, people, directory = mutual
    stranger = run(process, people, "stranger", "cluster", "info")  # signed by another CA
    assert stranger.returncode != 0 and len(stranger.stderr.strip().splitlines()) <= 2, stranger.stderr
    ca = process.data_dir / "tls" / "ca.pem"
    bare = subprocess.run([sys.executable, "-m", "kctl", "-b", process.bootstrap, "-X", "security.protocol=SSL", "-X", f"ssl.ca.location={ca}",
                           "--timeout", "5", "topic", "list"], capture_output=True, text=True)
    assert bare.returncode != 0 and len(bare.stderr.strip().splitlines()) <= 2, bare.stderr
    # The broker is unharmed.
    assert run(process, people, "admin", "topic", "list").returncode == 0


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
    try:
        assert run(process, people, "admin", "topic", "create", "requested").returncode == 0
        ca_file = process.data_dir / "tls" / "ca.pem"
        anonymous = subprocess.run([sys.executable, "-m", "kctl", "-b", process.bootstrap, "-X", "security.protocol=SSL",
                                    "-X", f"ssl.ca.location={ca_file}", "--timeout", "8", "topic", "create", "theirs"],
                                   capture_output=True, text=True)
        assert anonymous.returncode == ExitCode.NOT_AUTHORIZED, anonymous.stderr  # connected, as ANONYMOUS
    finally:
        process.stop()
