"""One connection's SASL state on a SASL listener, as Kafka's SaslServerAuthenticator keeps
it: ApiVersions and SaslHandshake are the only requests before authentication; after a
handshake the tokens come in SaslAuthenticate requests (v1) or as bare size-prefixed frames
(v0, before Kafka 1.0). A failed authentication is answered and the connection closed.

Sessions end (KIP-368) when connections.max.reauth.ms is set: SaslAuthenticate tells the
client the session's lifetime (at most that, and for OAUTHBEARER no later than its
token's expiry); the client authenticates again on the same connection, with the same
mechanism and as the same principal, before it ends, and a connection that sends anything
else once it has ended is closed.
"""

from __future__ import annotations

import hmac
import time
from dataclasses import dataclass, field

from kctl.broker.security import oauthbearer
from kctl.broker.security.scram import MECHANISMS as SCRAM_MECHANISMS
from kctl.broker.security.scram import ScramError, ScramServer

ANONYMOUS = "User:ANONYMOUS"
# Enabled when --sasl names none. OAUTHBEARER's unsecured tokens let a client claim any
# principal, so it is served only when asked for by name (Kafka enables only GSSAPI).
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SERVED = (*MECHANISMS, "OAUTHBEARER")
MAX_TOKEN_BYTES = 65536  # Kafka's sasl.server.max.receive.size default (524288 is its cap)


class SaslFailed(Exception):
    """Authentication failed; the message is Kafka's, for the client."""


@dataclass
class SaslConfig:
    mechanisms: tuple[str, ...]
    plain_users: dict[str, str]  # PLAIN: the users the broker's configuration names
    scram_lookup: object  # (user, mechanism) -> scram.Credential | None
    oauthbearer: oauthbearer.ValidatorConfig = field(default_factory=oauthbearer.ValidatorConfig)
    max_reauth_ms: int = 0  # connections.max.reauth.ms; 0: sessions do not end
    # listener.name.<listener>.<mechanism>.connections.max.reauth.ms: {(listener, mechanism): ms}
    max_reauth_ms_scoped: dict = field(default_factory=dict)
    token_lookup: object = None  # (token id, mechanism) -> (store.Token, scram.Credential) | None

    def reauth_ms(self, listener: str, mechanism: str | None) -> int:
        return self.max_reauth_ms_scoped.get((listener, mechanism), self.max_reauth_ms)


@dataclass
class Session:
    """A connection's identity: the listener it came in on and, once known, its principal."""
    listener: object
    sasl: SaslConfig | None
    principal: str = ANONYMOUS
    mechanism: str | None = None
    handshake_version: int = -1
    authenticated: bool = False
    token_authenticated: bool = False  # with a delegation token: it may not ask for tokens
    close_after_response: bool = False
    throttle_ms: int = 0  # over a client quota: the connection rests this long
    reauthenticating: bool = False
    expires_at: float | None = None  # time.monotonic() when the session ends (KIP-368)
    lifetime_ms: int = 0  # what SaslAuthenticate tells the client (0: the session does not end)
    invalid_token_reason: str | None = None  # why a token was refused: logged, never sent
    _scram: ScramServer | None = field(default=None, repr=False)
    _oauth_error: bytes | None = field(default=None, repr=False)
    _token_expires_ms: int | None = field(default=None, repr=False)

    @property
    def needs_authentication(self) -> bool:
        return self.sasl is not None and not self.authenticated

    @property
    def raw_tokens(self) -> bool:
        """After a v0 handshake the next frame is a bare SASL token."""
        return self.needs_authentication and self.mechanism is not None and self.handshake_version == 0

    @property
    def expired(self) -> bool:
        return self.expires_at is not None and time.monotonic() >= self.expires_at and not self.reauthenticating

    def handshake(self, mechanism: str, version: int) -> bool:
        if self.sasl is None or mechanism not in self.sasl.mechanisms:
            return False
        self.mechanism, self.handshake_version = mechanism, version
        self._begin()
        return True

    def reauthenticate(self, mechanism: str) -> bool:
        """A handshake on an authenticated connection (KIP-368): the same mechanism only."""
        if mechanism != self.mechanism:
            return False
        self.reauthenticating = True
        self._begin()
        return True

    def _begin(self) -> None:
        self._scram = (ScramServer(self.mechanism, self.sasl.scram_lookup, self.sasl.token_lookup)
                       if self.mechanism in SCRAM_MECHANISMS else None)
        self._oauth_error = self._token_expires_ms = None

    @property
    def exchanging(self) -> bool:
        """A SaslAuthenticate is expected: after a v1 handshake, before (re)authentication ends."""
        return self.mechanism is not None and self.handshake_version != 0 and (not self.authenticated or self.reauthenticating)

    def authenticate(self, token: bytes) -> bytes:
        """The server's answer to one client token; SaslFailed ends the connection."""
        if len(token) > MAX_TOKEN_BYTES:
            raise SaslFailed(f"SASL token of {len(token)} bytes exceeds {MAX_TOKEN_BYTES}")
        if self.mechanism == "PLAIN":
            self._authenticated_as(self._plain(token))
            return b""
        if self.mechanism == "OAUTHBEARER":
            return self._oauthbearer(token)
        try:
            answer = self._scram.step(token)
        except ScramError as exc:
            raise SaslFailed(str(exc)) from None
        if self._scram.username is not None:
            token = self._scram.token
            if token is not None:
                # A token's client is its owner; its session ends with the token (KIP-368).
                self._token_expires_ms = token.expiry_ms
            self._authenticated_as(token.owner if token is not None else "User:" + self._scram.username)
            self.token_authenticated = token is not None
        return answer

    def _authenticated_as(self, principal: str) -> None:
        if self.reauthenticating and principal != self.principal:
            raise SaslFailed(f"Cannot change principals during re-authentication from {self.principal}: {principal}")
        self.principal, self.authenticated, self.reauthenticating = principal, True, False
        max_reauth_ms = self.sasl.reauth_ms(self.listener.protocol, self.mechanism)
        lifetimes = [max_reauth_ms] if max_reauth_ms > 0 else []
        if lifetimes and self._token_expires_ms is not None:
            lifetimes.append(max(0, self._token_expires_ms - int(time.time() * 1000)))
        self.lifetime_ms = min(lifetimes) if lifetimes else 0
        self.expires_at = time.monotonic() + self.lifetime_ms / 1000 if lifetimes else None

    def _oauthbearer(self, message: bytes) -> bytes:
        if message == b"\x01" and self._oauth_error is not None:
            raise SaslFailed(self._oauth_error.decode())  # the client's answer to our error
        try:
            authzid, token = oauthbearer.client_first_message(message)
            found = oauthbearer.validate(token, self.sasl.oauthbearer)
        except oauthbearer.InvalidMessage as exc:
            raise SaslFailed(str(exc)) from None
        except oauthbearer.InvalidToken as exc:
            self.invalid_token_reason = str(exc)
            self._oauth_error = oauthbearer.error_document()
            return self._oauth_error
        if authzid and authzid != found.principal:
            raise SaslFailed(f"Authentication failed: Client requested an authorization id ({authzid}) that is "
                             f"different from the token's principal name ({found.principal})")
        self._token_expires_ms = found.expires_ms
        self._authenticated_as("User:" + found.principal)
        return b""

    def _plain(self, token: bytes) -> str:
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
        return "User:" + user
