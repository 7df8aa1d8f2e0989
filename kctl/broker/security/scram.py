"""SCRAM (RFC 5802, RFC 7677) as Kafka's ScramSaslServer runs it, and credentials stored as
Kafka stores them: salt, StoredKey, ServerKey and iterations per user and mechanism, never
the password.

The exchange: client-first `n,,n=user,r=CNONCE`; server-first `r=CNONCE+SNONCE,s=SALT,i=N`;
client-final `c=biws,r=NONCE,p=PROOF`; server-final `v=SIGNATURE`. The proof is checked as
H(proof XOR HMAC(StoredKey, AuthMessage)) == StoredKey.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from dataclasses import dataclass

# Kafka's ScramMechanism: name, hash, the protocol's int8 code, minimum iterations.
MECHANISMS = {"SCRAM-SHA-256": ("sha256", 1), "SCRAM-SHA-512": ("sha512", 2)}
CODES = {code: name for name, (_h, code) in MECHANISMS.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384  # Kafka refuses more (ScramFormatter / AlterUserScramCredentials)


class ScramError(Exception):
    """The exchange failed; the message is what the client is told."""


@dataclass(frozen=True, slots=True)
class Credential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_json(self) -> dict:
        return {"salt": _b64(self.salt), "stored_key": _b64(self.stored_key),
                "server_key": _b64(self.server_key), "iterations": self.iterations}

    @classmethod
    def from_json(cls, data: dict) -> Credential:
        return cls(base64.b64decode(data["salt"]), base64.b64decode(data["stored_key"]),
                   base64.b64decode(data["server_key"]), int(data["iterations"]))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _hmac(hash_name: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hash_name).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism][0], password.encode(), salt, iterations)


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> Credential:
    """What AlterUserScramCredentials stores from the client's SaltedPassword."""
    hash_name = MECHANISMS[mechanism][0]
    client_key = _hmac(hash_name, salted, b"Client Key")
    return Credential(salt, hashlib.new(hash_name, client_key).digest(),
                      _hmac(hash_name, salted, b"Server Key"), iterations)


def new_credential(mechanism: str, password: str, iterations: int = MIN_ITERATIONS) -> Credential:
    salt = os.urandom(32)
    return credential_from_salted(mechanism, salted_password(mechanism, password, salt, iterations),
                                  salt, iterations)


def _unescape_name(name: str) -> str:
    # RFC 5802 saslname: "=2C" is ",", "=3D" is "=", any other "=" is malformed
    out, i = [], 0
    while i < len(name):
        if name[i] == "=":
            code = name[i + 1:i + 3]
            if code not in ("2C", "3D"):
                raise ScramError("Invalid SCRAM client first message: bad username encoding")
            out.append("," if code == "2C" else "=")
            i += 3
        else:
            out.append(name[i])
            i += 1
    return "".join(out)


# ASCII but "," (\x2C) and "=" (\x3D), or their escapes
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?P<bare>(?:m=[^,]*,)?n=(?P<saslname>{_SASLNAME}),"
    r"r=(?P<nonce>[\x21-\x2B\x2D-\x7E]+)(?P<extensions>(?:,[A-Za-z]+=[\x01-\x2B\x2D-\x7F]+)*))", re.DOTALL)


def _attributes(message: str) -> dict[str, str]:
    attrs = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError("Invalid SCRAM message: malformed attribute")
        attrs[part[0]] = part[2:]
    return attrs


class ScramServer:
    """One SCRAM exchange: `step(token)` twice, with credentials looked up by name.
    `username` is set once the client is authenticated."""

    def __init__(self, mechanism: str, lookup, token_lookup=None):
        self.mechanism = mechanism
        self._hash = MECHANISMS[mechanism][0]
        self._lookup = lookup  # (user, mechanism) -> Credential | None
        # (token id, mechanism) -> (store.Token, Credential) | None: delegation tokens
        self._token_lookup = token_lookup
        self._state = "first"
        self.username: str | None = None
        self.token = None  # the delegation token authenticated with (store.Token), if one was
        self._user = ""
        self._credential: Credential | None = None
        self._client_first_bare = self._server_first = self._nonce = ""

    def step(self, token: bytes) -> bytes:
        try:
            message = token.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError(self._invalid()) from None
        if self._state == "first":
            return self._first(message)
        if self._state == "final":
            return self._final(message)
        raise ScramError("Unexpected SCRAM message after the exchange completed")

    def _first(self, message: str) -> bytes:
        # Kafka's grammar (ScramMessages.ClientFirstMessage): the gs2 header "n" only (a
        # client asking for channel binding, or saying it could, is refused), an optional
        # authzid, an optional reserved m=, a saslname, a printable nonce, extensions.
        match = _CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise ScramError(self._invalid())
        self._user = _unescape_name(match["saslname"])
        authzid = _unescape_name(match["authzid"]) if match["authzid"] else ""
        if authzid and authzid != self._user:
            # the one refusal Kafka words itself (a SaslAuthenticationException)
            raise ScramError("Authentication failed: Client requested an authorization id "
                             "that is different from username")
        extensions = dict(part.split("=", 1) for part in match["extensions"].split(",")[1:])
        if extensions.get("tokenauth", "").lower() == "true":
            # The name is a delegation token's id (KIP-48), not a user's; Kafka words an
            # unknown one as bad credentials.
            found = self._token_lookup(self._user, self.mechanism) if self._token_lookup is not None else None
            if found is None:
                raise ScramError(self._invalid())
            self.token, self._credential = found
        else:
            self._credential = self._lookup(self._user, self.mechanism)
        if self._credential is None:
            raise ScramError(self._invalid())
        bare = message[match.start("bare"):]
        self._client_first_bare = bare
        self._nonce = match["nonce"] + base64.b64encode(os.urandom(24)).decode().rstrip("=")
        self._server_first = (f"r={self._nonce},s={_b64(self._credential.salt)},"
                              f"i={self._credential.iterations}")
        self._state = "final"
        return self._server_first.encode()

    def _final(self, message: str) -> bytes:
        without_proof, sep, proof_part = message.rpartition(",p=")
        if not sep:
            raise ScramError("Invalid SCRAM client final message: no proof")
        attrs = _attributes(without_proof)
        if attrs.get("r") != self._nonce:
            raise ScramError("Invalid SCRAM client final message: nonce mismatch")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise ScramError("Invalid SCRAM client final message: bad proof") from None
        credential = self._credential
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self._hash, credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError(self._invalid())
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(), credential.stored_key):
            raise ScramError(self._invalid())
        self._state = "done"
        self.username = self._user
        server_signature = _hmac(self._hash, credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)

    def _invalid(self) -> str:
        # Kafka's words (SaslServerAuthenticator), which clients print
        return ("Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {self.mechanism}")
