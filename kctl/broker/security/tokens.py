"""Delegation tokens (KIP-48) as Kafka makes and checks them: a token's HMAC is
HMAC-SHA512 of its id under delegation.token.secret.key, and a client authenticates with
it over SCRAM, the token's id as the user name and the HMAC (base64) as the password,
with the `tokenauth=true` extension; it is then its owner. The SCRAM credentials are
made from the HMAC, as Kafka's token cache makes them (4096 iterations, a random salt),
once per token and mechanism, in memory only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

from kctl.broker.security.scram import MIN_ITERATIONS, Credential, new_credential
from kctl.broker.security.store import SecurityStore, Token


def token_hmac(secret: str, token_id: str) -> bytes:
    return hmac.new(secret.encode(), token_id.encode(), hashlib.sha512).digest()


def now_ms() -> int:
    return int(time.time() * 1000)


class TokenCredentials:
    """The SCRAM credentials of the live tokens, for the SCRAM server's token lookup."""

    def __init__(self, store: SecurityStore, secret: str | None):
        self.store = store
        self.secret = secret
        self._made: dict[tuple[str, str], Credential] = {}

    def lookup(self, token_id: str, mechanism: str) -> tuple[Token, Credential] | None:
        """The token and its credential for `mechanism`; None for an unknown or expired
        token, or with tokens off."""
        token = self.store.tokens.get(token_id)
        if token is None or self.secret is None or token.expiry_ms < now_ms():
            return None
        credential = self._made.get((token_id, mechanism))
        if credential is None:
            password = base64.b64encode(token_hmac(self.secret, token_id)).decode()
            credential = self._made[(token_id, mechanism)] = new_credential(mechanism, password, MIN_ITERATIONS)
        return token, credential

    def forget(self, token_id: str) -> None:
        for key in [k for k in self._made if k[0] == token_id]:
            del self._made[key]

    def by_hmac(self, mac: bytes) -> Token | None:
        """The token whose HMAC is `mac` (Kafka's renew and expire name a token so)."""
        if self.secret is None:
            return None
        for token in self.store.tokens.values():
            if hmac.compare_digest(token_hmac(self.secret, token.token_id), mac):
                return token
        return None
