"""kctl's one TLS context builder (kctl.admin.client.tls), as every client connection uses
it: librdkafka's ssl.* properties read as librdkafka reads them."""

from __future__ import annotations

import ssl

from kctl.admin.client.tls import TlsSettings, client_context
from tests.security.tls import make_certificates


def test_librdkafka_properties_make_the_context(tmp_path):
    ca, certificate, key = make_certificates(tmp_path, "127.0.0.1")
    settings = TlsSettings.from_properties({"ssl.ca.location": str(ca), "ssl.certificate.location": str(certificate),
                                            "ssl.key.location": str(key)})
    context = client_context(settings)
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert len(context.get_ca_certs()) == 1
    # A directory of CA files is a capath, as librdkafka takes one.
    assert client_context(TlsSettings(ca_location=str(tmp_path))).verify_mode == ssl.CERT_REQUIRED


def test_the_two_switches_relax_the_checks():
    no_hostname = client_context(TlsSettings.from_properties({"ssl.endpoint.identification.algorithm": "none"}))
    assert (no_hostname.check_hostname, no_hostname.verify_mode) == (False, ssl.CERT_REQUIRED)
    unverified = client_context(TlsSettings.from_properties({"enable.ssl.certificate.verification": "false"}))
    assert (unverified.check_hostname, unverified.verify_mode) == (False, ssl.CERT_NONE)


def test_a_revocation_list_is_checked(tmp_path):
    ca, _certificate, _key = make_certificates(tmp_path, "127.0.0.1")
    context = client_context(TlsSettings(ca_location=str(ca), crl_location=str(ca)))  # any PEM loads; the flag is what matters
    assert context.verify_flags & ssl.VERIFY_CRL_CHECK_LEAF
