"""TLS for SSL and SASL_SSL listeners: the server's ssl.SSLContext, from a certificate and
key given, or from a CA and a server certificate for localhost and 127.0.0.1 generated
once into <data-dir>/tls/ (the cryptography package; ca.pem is what clients trust:
ssl.ca.location=<data-dir>/tls/ca.pem)."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from pathlib import Path

TLS_DIR = "tls"
CA_FILE, CERT_FILE, KEY_FILE = "ca.pem", "server.pem", "server.key"


def generated_paths(data_dir: Path) -> tuple[Path, Path, Path]:
    directory = data_dir / TLS_DIR
    return directory / CA_FILE, directory / CERT_FILE, directory / KEY_FILE


def ensure_generated(data_dir: Path, hosts: list[str]) -> tuple[Path, Path]:
    """The generated certificate and key, made on first use (kept across restarts, so
    clients keep trusting the same CA), for `hosts` plus localhost and 127.0.0.1."""
    ca_path, cert_path, key_path = generated_paths(data_dir)
    if not (ca_path.exists() and cert_path.exists() and key_path.exists()):
        _generate(ca_path, cert_path, key_path, hosts)
    return cert_path, key_path


def _generate(ca_path: Path, cert_path: Path, key_path: Path, hosts: list[str]) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    valid_from, valid_to = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=3650)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kctl local broker CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(valid_from).not_valid_after(valid_to)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(["localhost", "127.0.0.1", *hosts]):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    key = ec.generate_private_key(ec.SECP256R1())
    server = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
              .issuer_name(ca_name).public_key(key.public_key())
              .serial_number(x509.random_serial_number())
              .not_valid_before(valid_from).not_valid_after(valid_to)
              .add_extension(x509.SubjectAlternativeName(names), critical=False)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                             critical=False)
              .sign(ca_key, hashes.SHA256()))
    ca_path.parent.mkdir(parents=True, exist_ok=True)
    # The key first and private; the CA last, as the mark that the set is complete.
    _write(key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()), 0o600)
    _write(cert_path, server.public_bytes(serialization.Encoding.PEM), 0o644)
    _write(ca_path, ca.public_bytes(serialization.Encoding.PEM), 0o644)


def _write(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def server_context(cert: Path, key: Path, client_auth: str = "none", truststore: str | None = None) -> ssl.SSLContext:
    """TLS 1.2+, the certificate chain and key, and with ssl.client.auth requested or
    required the CAs a client's certificate must chain to; ssl.SSLError / OSError name a
    bad file."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    if client_auth != "none":
        context.verify_mode = ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
        context.load_verify_locations(cafile=truststore)
    return context
