"""SASL/OAUTHBEARER (RFC 7628) as a Kafka broker serves it with its default validator,
the unsecured-JWT one (Kafka's OAuthBearerUnsecuredValidatorCallbackHandler): a token is
an unsigned JWS (`alg` "none", an empty signature) whose claims name the principal and
say when it expires. Nothing is verified cryptographically, exactly as on Kafka: for
testing clients, never for production.

The client's first message is `n,[a=AUTHZID],` \\x01 `auth=Bearer TOKEN` \\x01 (then
extensions `key=value` \\x01) \\x01. A token that does not validate is answered, as Kafka
answers it, with an error document as the server's challenge (`{"status":"invalid_token"}`);
the client then sends a lone \\x01 and the exchange fails with that document as the error.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from dataclasses import dataclass

_TOKEN = re.compile(r"[-_.a-zA-Z0-9]+")
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7E \t\r\n]+")


class InvalidMessage(ValueError):
    """The client's message is not an OAUTHBEARER client first message."""


class InvalidToken(ValueError):
    """The token does not validate; the message says why (logged, not sent)."""


@dataclass(frozen=True)
class ValidatorConfig:
    """The unsecured validator's options (Kafka's unsecuredValidator* JAAS options), under
    the broker settings kctl takes them as (kctl.broker.settings)."""

    principal_claim: str = "sub"  # sasl.oauthbearer.sub.claim.name
    scope_claim: str = "scope"  # sasl.oauthbearer.scope.claim.name
    clock_skew_ms: int = 0  # sasl.oauthbearer.clock.skew.seconds, in ms


@dataclass(frozen=True)
class Token:
    principal: str
    expires_ms: int  # the exp claim, in ms since the epoch
    scopes: tuple[str, ...]


def client_first_message(message: bytes) -> tuple[str, str]:
    """(authorization id, or "", token) of a client first message; InvalidMessage else."""
    try:
        text = message.decode("ascii")
    except UnicodeDecodeError:
        raise InvalidMessage("Invalid OAUTHBEARER client first message") from None
    gs2, sep, rest = text.partition(",\x01") if text.startswith("n,") else ("", "", "")
    if not sep or not rest.endswith("\x01\x01"):
        raise InvalidMessage("Invalid OAUTHBEARER client first message")
    flag, _, authzid = gs2.partition(",")
    if flag != "n" or (authzid and not (authzid.startswith("a=") and _saslname(authzid[2:]))):
        raise InvalidMessage("Invalid OAUTHBEARER client first message")
    pairs = rest[:-2].split("\x01")
    auth = pairs[0]
    if not auth.startswith("auth="):
        raise InvalidMessage("Invalid OAUTHBEARER client first message")
    scheme, _, token = auth[5:].partition(" ")
    token = token.lstrip(" ")
    if scheme.lower() != "bearer":
        raise InvalidMessage(f"Invalid scheme in OAUTHBEARER client first message: {scheme}")
    if not _TOKEN.fullmatch(token):
        raise InvalidMessage("Invalid OAUTHBEARER client first message")
    for pair in pairs[1:]:
        key, eq, value = pair.partition("=")
        if not eq or not _EXTENSION_KEY.fullmatch(key) or not _EXTENSION_VALUE.fullmatch(value):
            raise InvalidMessage("Invalid OAUTHBEARER client first message")
    name = authzid[2:].replace("=2C", ",").replace("=3D", "=") if authzid else ""
    return name, token


def _saslname(text: str) -> bool:
    """RFC 7628's saslname: ASCII but NUL, "=" and "," (those two written =3D and =2C)."""
    bare = text.replace("=2C", "").replace("=3D", "")
    return bool(text) and text.isascii() and not any(c in ",=\x00" for c in bare)


def validate(token: str, config: ValidatorConfig, now_ms: int | None = None) -> Token:
    """The token's principal and expiry, checked as Kafka's unsecured validator checks
    them; InvalidToken otherwise."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    parts = token.split(".")
    if len(parts) != 3:
        raise InvalidToken("an unsecured JWS has three parts")
    if parts[2]:
        raise InvalidToken("an unsecured JWS has an empty signature")
    header, claims = (_json_part(part) for part in parts[:2])
    if header.get("alg") != "none":
        raise InvalidToken(f"alg is {header.get('alg')!r}, not \"none\"")
    principal = claims.get(config.principal_claim)
    if not isinstance(principal, str) or not principal.strip():
        raise InvalidToken(f"no {config.principal_claim!r} claim with a principal")
    expires = claims.get("exp")
    if isinstance(expires, bool) or not isinstance(expires, int | float):
        raise InvalidToken("no numeric 'exp' claim")
    expires_ms = int(expires * 1000)
    if expires_ms + config.clock_skew_ms <= now_ms:
        raise InvalidToken(f"expired at {expires_ms} (now {now_ms})")
    issued = claims.get("iat")
    if issued is not None:
        if isinstance(issued, bool) or not isinstance(issued, int | float):
            raise InvalidToken("'iat' is not a number")
        if int(issued * 1000) > now_ms + config.clock_skew_ms:
            raise InvalidToken("issued in the future")
        if int(issued * 1000) > expires_ms:
            raise InvalidToken("issued after it expires")
    scope = claims.get(config.scope_claim)
    scopes = tuple(scope.split()) if isinstance(scope, str) else tuple(s for s in scope if isinstance(s, str)) if isinstance(scope, list) else ()
    return Token(principal, expires_ms, scopes)


def _json_part(part: str) -> dict:
    try:
        value = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, ValueError):
        raise InvalidToken("a part is not base64url-encoded JSON") from None
    if not isinstance(value, dict):
        raise InvalidToken("a part is not a JSON object")
    return value


def error_document(status: str = "invalid_token") -> bytes:
    """The server's challenge for a token that does not validate (RFC 7628 §3.2.2)."""
    return json.dumps({"status": status}, separators=(",", ":")).encode()
