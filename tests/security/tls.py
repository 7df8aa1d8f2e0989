"""TLS for tests: a CA and a server certificate made with the cryptography package, and a
TLS front for the bundled broker (which speaks only PLAINTEXT, issue 40).

The broker listens on 127.0.0.1:PORT and advertises 127.0.0.2:PORT; the front listens on
127.0.0.2:PORT with a certificate for that address and passes the bytes on. Every
connection a client makes — bootstrap and the brokers the metadata names — is TLS, with
the client's own certificate checks (CA and host name) doing the work they do in
production.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
from pathlib import Path

from tests.support.kafka_proxy import serve_each


def make_certificates(directory: Path, address: str) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key), PEM files in `directory`, for a
    server at `address` (an IP address or a host name)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kctl test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    server = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, address)]))
              .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
              .add_extension(x509.SubjectAlternativeName([_alternative_name(address)]), critical=False)
              .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
              .sign(ca_key, hashes.SHA256()))
    paths = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


def _alternative_name(address: str):
    """The certificate's subject alternative name for a server at `address` (an IP, or a host name)."""
    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(address))
    except ValueError:
        return x509.DNSName(address)


class TlsFront:
    """Accepts TLS on (host, port) and relays each connection to `target` in plain TCP."""

    def __init__(self, host: str, port: int, target: tuple[str, int], certificate: Path, key: Path):
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(certificate, key)
        self._target = target
        self._listener = socket.create_server((host, port))
        serve_each(self._listener, self._serve)

    def _serve(self, client: socket.socket) -> None:
        try:
            secured = self._context.wrap_socket(client, server_side=True)
        except (OSError, ssl.SSLError):
            client.close()  # a client that refused our certificate: what the test checks
            return
        upstream = socket.create_connection(self._target)
        threading.Thread(target=_pump, args=(upstream, secured), daemon=True).start()
        _pump(secured, upstream)

    def close(self) -> None:
        self._listener.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            try:
                s.close()
            except OSError:
                pass
