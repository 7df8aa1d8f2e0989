"""SASL/GSSAPI (Kerberos V5, RFC 4752) for kctl's own client, through the `gssapi` binding
of the system's Kerberos libraries (`pip install 'kctl[kerberos]'`).

confluent-kafka's wheels are built without GSSAPI, so this is kctl's one way to Kerberos:
the wire client authenticates with it, and librdkafka's clients reach a Kerberos cluster
through kctl.admin.client.bridge, whose upstream connections authenticate here.

The settings are librdkafka's names: `sasl.kerberos.service.name` (default "kafka"),
`sasl.kerberos.principal` and `sasl.kerberos.keytab`. Without a keytab the credentials
are the ticket cache's (`kinit`, KRB5CCNAME); with one, tickets are got from the keytab
into a cache of this process's memory, never into the user's. KRB5_CONFIG is honoured by
the Kerberos library itself. `gssapi` is imported only when GSSAPI is configured.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

from kctl.errors import ConfigError, KctlError, NotAuthorizedError, UnreachableError

KERBEROS_PROPERTIES = frozenset({
    "sasl.kerberos.service.name", "sasl.kerberos.principal", "sasl.kerberos.keytab",
    # librdkafka's ticket refresh by a kinit command: the Kerberos library renews from
    # the keytab itself, and a ticket cache is the user's to refresh.
    "sasl.kerberos.kinit.cmd", "sasl.kerberos.min.time.before.relogin",
})
_INSTALL_HINT = "install the Kerberos binding: pip install 'kctl[kerberos]' (it builds against the system's Kerberos: Debian libkrb5-dev, Fedora krb5-devel)"
_NO_TICKET_HINT = "run kinit (KRB5CCNAME names the ticket cache), or set sasl.kerberos.keytab and sasl.kerberos.principal"
# "Minor (2529639053): No Kerberos credentials available (default cache: ...)"
_MINOR = re.compile(r"Minor \(\d+\): (.*)$", re.DOTALL)
_MAJOR = re.compile(r"Major \(\d+\): (.*?)(?:, Minor \(|$)", re.DOTALL)


class Kerberos:
    """One process's Kerberos credentials for a cluster's settings, acquired on first use
    (and again after they expire), and the SASL exchange that proves them to a broker."""

    def __init__(self, properties: Mapping[str, str]):
        self.service = properties.get("sasl.kerberos.service.name", "kafka")
        # librdkafka's default principal ("kafkaclient") only means something with its
        # kinit command; here no principal means the ticket cache's own.
        self.principal = properties.get("sasl.kerberos.principal") or None
        self.keytab = properties.get("sasl.kerberos.keytab") or None
        if self.keytab and not self.principal:
            raise ConfigError(action="use sasl.kerberos.keytab", cause="sasl.kerberos.principal is not set",
                              hint="set sasl.kerberos.principal to the keytab's principal (klist lists a keytab's principals)")
        if self.keytab and not os.path.isfile(self.keytab):
            raise ConfigError(action=f"use sasl.kerberos.keytab {self.keytab}", cause="no such file")
        self._credentials: Any = None
        self._lock = threading.Lock()

    @cached_property
    def _gssapi(self) -> Any:
        """The binding, imported at the first exchange: a broker that does not enable GSSAPI
        says so first (its SaslHandshake answer), whether or not the binding is installed."""
        return _import_gssapi()

    def credentials(self) -> Any:
        with self._lock:
            if self._credentials is None or _expired(self._credentials):
                self._credentials = self._acquire()
            return self._credentials

    def _acquire(self) -> Any:
        gssapi = self._gssapi
        name = gssapi.Name(self.principal, gssapi.NameType.kerberos_principal) if self.principal else None
        try:
            if self.keytab:
                # A memory cache of this session's own, named afresh: the user's cache is left
                # alone, and no later session of the process (an id() can be reused once this
                # object is gone) finds tickets for another principal in it.
                store = {b"client_keytab": self.keytab.encode(), b"ccache": f"MEMORY:kctl-{os.getpid()}-{os.urandom(8).hex()}".encode()}
                credentials = gssapi.Credentials(name=name, usage="initiate", store=store)
            else:
                credentials = gssapi.Credentials(name=name, usage="initiate")
            credentials.lifetime  # noqa: B018 - an expired ticket fails here, not at the broker
        except gssapi.exceptions.GSSError as exc:
            raise self.error(exc, None) from exc
        return credentials

    def authenticate(self, host: str, sasl_round: Callable[[bytes], bytes]) -> None:
        """The GSSAPI exchange with the broker at `host` (its service principal is
        SERVICE/host): context tokens until the context is established, then the security
        layer negotiation, where Kafka takes none (RFC 4752 section 3.1)."""
        gssapi = self._gssapi
        target = gssapi.Name(f"{self.service}@{host}", gssapi.NameType.hostbased_service)
        try:
            context = gssapi.SecurityContext(name=target, creds=self.credentials(), usage="initiate")
            received: bytes | None = None
            while True:
                token = context.step(received)
                received = sasl_round(token or b"")
                if context.complete:
                    break
            offer = context.unwrap(received).message
            if len(offer) < 4 or not offer[0] & 1:
                raise NotAuthorizedError(cause=f"authentication failed at {host}: the broker offers no GSSAPI security layer Kafka allows",
                                         hint=_NO_TICKET_HINT)
            # No security layer (1), no maximum message size, no authorization identity:
            # the broker authorizes the authenticated principal.
            sasl_round(context.wrap(b"\x01\x00\x00\x00", False).message)
        except gssapi.exceptions.GSSError as exc:
            raise self.error(exc, host) from exc

    def error(self, exc: Exception, host: str | None) -> KctlError:
        """One line for what Kerberos refused: no ticket, an expired one, a principal the
        keytab lacks, a service principal the KDC does not know, an unreachable KDC."""
        text = str(exc)
        major, minor = _MAJOR.search(text), _MINOR.search(text)
        detail = minor.group(1) if minor and minor.group(1).strip() not in ("", "Success") else (major.group(1) if major else text)
        detail = " ".join(detail.split()).rstrip(",")
        lowered = detail.lower()
        if isinstance(exc, self._gssapi.exceptions.ExpiredCredentialsError):
            lowered += " expired"
        where = f" for {self.service}/{host}" if host else ""
        if "cannot contact any kdc" in lowered or "cannot find kdc" in lowered or "unable to reach any kdc" in lowered:
            return UnreachableError(cause=f"Kerberos KDC unreachable{where}: {detail}",
                                    hint="check the KDC's address in krb5.conf (KRB5_CONFIG) and that it is up")
        if "expired" in lowered:
            return NotAuthorizedError(cause=f"Kerberos ticket expired ({detail})",
                                      hint="run kinit again, or use sasl.kerberos.keytab")
        if "server" in lowered and "not found in kerberos database" in lowered:
            return NotAuthorizedError(
                cause=f"the Kerberos KDC knows no service principal {self.service}/{host} ({detail})",
                hint="connect to the broker by the host name in its principal ({bootstrap}), and check sasl.kerberos.service.name")
        if "no key table entry" in lowered or "client" in lowered and "not found in kerberos database" in lowered or "keytab" in lowered:
            return NotAuthorizedError(cause=f"Kerberos authentication as {self.principal} failed: {detail}",
                                      hint="check sasl.kerberos.principal against the keytab's principals (klist lists them)")
        if self.keytab and host is None:  # the keytab gave no ticket for the principal
            return NotAuthorizedError(cause=f"Kerberos authentication as {self.principal} failed: no key for it in {self.keytab} ({detail})",
                                      hint="check sasl.kerberos.principal against the keytab's principals (klist lists them)")
        if "credentials" in lowered or "credential cache" in lowered or "ccache" in lowered:
            return NotAuthorizedError(cause=f"no Kerberos ticket ({detail})", hint=_NO_TICKET_HINT)
        return NotAuthorizedError(cause=f"Kerberos authentication{where} failed: {detail}", hint=_NO_TICKET_HINT)


def _expired(credentials: Any) -> bool:
    try:
        return credentials.lifetime <= 0
    except Exception:  # noqa: BLE001 - any failure to read it: acquire again
        return True


def _import_gssapi() -> Any:
    try:
        import gssapi
        import gssapi.exceptions
    except ImportError as exc:
        raise ConfigError(action="use SASL GSSAPI (Kerberos)", cause="the gssapi package is not installed", hint=_INSTALL_HINT) from exc
    except OSError as exc:  # the binding is there, the system's libgssapi_krb5 is not
        raise ConfigError(action="use SASL GSSAPI (Kerberos)", cause=f"the system's Kerberos library cannot be loaded: {exc}",
                          hint=_INSTALL_HINT) from exc
    return gssapi
