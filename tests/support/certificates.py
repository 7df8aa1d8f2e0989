"""Certificates for mutual-TLS tests: a CA, and client certificates it signs (the
cryptography package, EC P-256, valid for a day)."""

from __future__ import annotations

import datetime
from types import SimpleNamespace

# Kafka's ssl.principal.mapping.rules as the mutual-TLS tests set them on both brokers:
# CN=<name>,OU=kafka-users,O=acme is User:<name, lower case>; any other subject is itself.
MTLS_RULES = "RULE:^CN=([^,]*),OU=kafka-users,O=acme$/$1/L,DEFAULT"


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


def mutual_tls_listener(directory, port: int, keystore_dir) -> tuple[SimpleNamespace, dict[str, str]]:
    """A clients' CA and the settings of a Kafka SSL listener named SSL on `port` that
    requires a certificate it signed (ssl.client.auth=required, PEM files, MTLS_RULES),
    its server certificate kctl's generated one for 127.0.0.1. Returns (what clients need:
    bootstrap, server_ca, clients_ca as make_ca returns it; the listener's properties)."""
    from kctl.broker.security.tls import ensure_generated, generated_paths

    clients_ca = make_ca(directory, "mtls-clients-ca")
    cert, key = ensure_generated(keystore_dir, [])
    keystore = directory / "mtls-keystore.pem"
    keystore.write_text(key.read_text() + cert.read_text())
    properties = {
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.ssl.ssl.keystore.type": "PEM",
        "listener.name.ssl.ssl.keystore.location": str(keystore),
        "listener.name.ssl.ssl.truststore.type": "PEM",
        "listener.name.ssl.ssl.truststore.location": str(clients_ca[2]),
        "listener.name.ssl.ssl.principal.mapping.rules": MTLS_RULES,
    }
    target = SimpleNamespace(bootstrap=f"127.0.0.1:{port}", server_ca=generated_paths(keystore_dir)[0], clients_ca=clients_ca)
    return target, properties
