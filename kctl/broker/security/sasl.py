"""One connection's SASL state on a SASL listener, as Kafka's SaslServerAuthenticator keeps
it: ApiVersions and SaslHandshake are the only requests before authentication; after a
handshake the tokens come in SaslAuthenticate requests (v1) or as bare size-prefixed frames
(v0, before Kafka 1.0). A failed authentication is answered and the connection closed.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field

from kctl.broker.security.scram import MECHANISMS as SCRAM_MECHANISMS
from kctl.broker.security.scram import ScramError, ScramServer

ANONYMOUS = "User:ANONYMOUS"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
MAX_TOKEN_BYTES = 65536  # Kafka's sasl.server.max.receive.size default (524288 is its cap)


class SaslFailed(Exception):
    """Authentication failed; the message is Kafka's, for the client."""


@dataclass
class SaslConfig:
    mechanisms: tuple[str, ...]
    plain_users: dict[str, str]  # PLAIN: the users the broker's configuration names
    scram_lookup: object  # (user, mechanism) -> scram.Credential | None


@dataclass
class Session:
    """A connection's identity: the listener it came in on and, once known, its principal."""
    listener: object
    sasl: SaslConfig | None
    principal: str = ANONYMOUS
    mechanism: str | None = None
    handshake_version: int = -1
    authenticated: bool = False
    close_after_response: bool = False
    throttle_ms: int = 0  # over a client quota: the connection rests this long
    _scram: ScramServer | None = field(default=None, repr=False)

    @property
    def needs_authentication(self) -> bool:
        return self.sasl is not None and not self.authenticated

    @property
    def raw_tokens(self) -> bool:
        """After a v0 handshake the next frame is a bare SASL token."""
        return self.needs_authentication and self.mechanism is not None and self.handshake_version == 0

    def handshake(self, mechanism: str, version: int) -> bool:
        if self.sasl is None or mechanism not in self.sasl.mechanisms:
            return False
        self.mechanism, self.handshake_version = mechanism, version
        if mechanism in SCRAM_MECHANISMS:
            self._scram = ScramServer(mechanism, self.sasl.scram_lookup)
        return True

    def authenticate(self, token: bytes) -> bytes:
        """The server's answer to one client token; SaslFailed ends the connection."""
        if len(token) > MAX_TOKEN_BYTES:
            raise SaslFailed(f"SASL token of {len(token)} bytes exceeds {MAX_TOKEN_BYTES}")
        if self.mechanism == "PLAIN":
            self._plain(token)
            return b""
        try:
            answer = self._scram.step(token)
        except ScramError as exc:
            raise SaslFailed(str(exc)) from None
        if self._scram.username is not None:
            self.principal, self.authenticated = "User:" + self._scram.username, True
        return answer

    def _plain(self, token: bytes) -> None:
        # [authzid] NUL authcid NUL passwd (RFC 4616)
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise SaslFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise SaslFailed("Invalid SASL/PLAIN response: not UTF-8") from None
        if not user:
            raise SaslFailed("Authentication failed: username not specified")
        if not password:
            raise SaslFailed("Authentication failed: password not specified")
        expected = self.sasl.plain_users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise SaslFailed("Authentication failed: Client requested an authorization id "
                             "that is different from username")
        self.principal, self.authenticated = "User:" + user, True
