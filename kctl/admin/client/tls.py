"""The one TLS context builder for every connection kctl's library opens as a client: to
brokers (the wire client), to an OAuth token endpoint, to Kafka Connect's
REST API. Settings come in librdkafka's `ssl.*` names (TlsSettings.from_properties) or
as a service's own (a context's connect ssl-* keys)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # ssl costs ~6 ms to import: only a TLS connection pays it
    import ssl


@dataclass(frozen=True, kw_only=True)
class TlsSettings:
    # CA certificates to verify the server with: a file or a directory, or PEM text; the
    # system's when neither is given.
    ca_location: str | None = None
    ca_pem: str | None = None
    # A client certificate and its key (mutual TLS).
    certificate_location: str | None = None
    key_location: str | None = None
    key_password: str | None = None
    # A certificate revocation list: the server's certificate is checked against it.
    crl_location: str | None = None
    check_hostname: bool = True
    verify: bool = True

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> TlsSettings:
        """librdkafka's ssl.* properties (and its two switches) as TlsSettings."""
        return cls(
            ca_location=properties.get("ssl.ca.location"),
            ca_pem=properties.get("ssl.ca.pem"),
            certificate_location=properties.get("ssl.certificate.location"),
            key_location=properties.get("ssl.key.location"),
            key_password=properties.get("ssl.key.password"),
            crl_location=properties.get("ssl.crl.location"),
            check_hostname=properties.get("ssl.endpoint.identification.algorithm", "https").lower() != "none",
            verify=properties.get("enable.ssl.certificate.verification", "true").lower() != "false",
        )


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """An SSLContext for a client connection: the CA to trust, the client certificate, the
    revocation list, and hostname and certificate checks on unless switched off."""
    import ssl

    location = os.path.expanduser(settings.ca_location) if settings.ca_location else None
    context = ssl.create_default_context(
        cafile=location if location and not os.path.isdir(location) else None,
        capath=location if location and os.path.isdir(location) else None,
        cadata=settings.ca_pem)
    if settings.certificate_location:
        context.load_cert_chain(os.path.expanduser(settings.certificate_location),
                                os.path.expanduser(settings.key_location) if settings.key_location else None,
                                settings.key_password)
    if settings.crl_location:
        context.load_verify_locations(os.path.expanduser(settings.crl_location))
        context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    if not settings.check_hostname or not settings.verify:
        context.check_hostname = False
    if not settings.verify:
        context.verify_mode = ssl.CERT_NONE
    return context
