"""Delegation tokens (KIP-48): created, described, renewed and expired with Kafka's four
APIs (CreateDelegationToken, DescribeDelegationToken, RenewDelegationToken,
ExpireDelegationToken) through kctl's wire client; any broker answers (Kafka forwards the
writes to its controller).

A token is a shared secret: its id and HMAC authenticate a client as the token's owner
over SASL/SCRAM with the `tokenauth=true` extension (kctl's sasl.scram.tokenauth setting).
Kafka takes token requests only on authenticated channels that did not authenticate with
a token (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED otherwise), and only when the cluster has
`delegation.token.secret.key` (DELEGATION_TOKEN_AUTH_DISABLED).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from kctl.admin.client.errors import for_kafka_code
from kctl.admin.client.session import AdminSession
from kctl.errors import KctlError, NotFoundError, UsageError
from kctl.messages import apis
from kctl.messages.errors import error_name

TYPE_CHECKING = False  # the annotations' types, for the type checker only
if TYPE_CHECKING:
    from collections.abc import Sequence

    from kctl.messages import types as t

NEEDS = "delegation tokens (Apache Kafka 1.1 or newer; in KRaft mode 3.6 or newer)"
# Kafka's words for what a token error means to the person who asked.
_HINTS = {
    "DELEGATION_TOKEN_AUTH_DISABLED": "the brokers and controllers need delegation.token.secret.key set",
    "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED": "token requests need a SASL login that is not a token's (security.protocol "
                                            "SASL_SSL or SASL_PLAINTEXT) or a client certificate",
}


@dataclass(frozen=True)
class DelegationToken:
    token_id: str
    owner: str  # principal, Type:Name
    requester: str | None  # who asked for it (DescribeDelegationToken v3+; None before)
    renewers: list[str]
    issued_ms: int
    expires_ms: int
    max_ms: int
    hmac: str | None  # base64, as clients take it for sasl.password (None: left out)


def parse_principal(text: str) -> tuple[str, str]:
    """(type, name) of a principal given as Type:Name, or a bare name (a User)."""
    kind, sep, name = text.partition(":")
    if not sep:
        kind, name = "User", text
    if not kind or not name:
        raise UsageError(action=f"parse principal {text!r}", cause="expected User:NAME (or NAME)")
    return kind, name


def parse_hmac(text: str) -> bytes:
    """A token's HMAC given as base64 (as create prints it and clients take it)."""
    try:
        return base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise UsageError(action="parse the HMAC", cause="not base64 (the HMAC as `kctl token create` printed it)") from None


def _check(code: int, action: str) -> None:
    if code:
        error = for_kafka_code(code, None, action)
        hint = _HINTS.get(error_name(code))
        raise error.but(hint=hint) if hint else error


def create_token(session: AdminSession, *, owner: str | None = None, renewers: Sequence[str] = (),
                 max_lifetime_ms: int = -1) -> DelegationToken:
    """A new token for `owner` (default: the principal asking; another owner needs
    Kafka 3.3+ and CREATE_TOKENS on that user), renewable by `renewers`."""
    action = "create a delegation token"
    owner_type, owner_name = parse_principal(owner) if owner else (None, None)

    def fields(version: int) -> t.CreateDelegationTokenRequest:
        if owner is not None and version < 3:
            raise UsageError(action=action, cause="the cluster cannot create tokens for another owner (CreateDelegationToken v3, Kafka 3.3+)")
        return {"owner_principal_type": owner_type, "owner_principal_name": owner_name, "max_lifetime_ms": max_lifetime_ms,
                "renewers": [{"principal_type": kind, "principal_name": name} for kind, name in map(parse_principal, renewers)]}

    answer = session.ask(action, apis.CREATE_DELEGATION_TOKEN, fields, 1, 3, needs=NEEDS)
    _check(answer.error_code, action)
    _await_every_broker(session, answer.token_id, action)
    requester = (f"{answer.token_requester_principal_type}:{answer.token_requester_principal_name}"
                 if getattr(answer, "token_requester_principal_type", None) else None)
    return DelegationToken(answer.token_id, f"{answer.principal_type}:{answer.principal_name}", requester,
                           [f"{kind}:{name}" for kind, name in map(parse_principal, renewers)], answer.issue_timestamp_ms,
                           answer.expiry_timestamp_ms, answer.max_timestamp_ms, base64.b64encode(answer.hmac).decode())


def _await_every_broker(session: AdminSession, token_id: str, action: str) -> None:
    """Return once every live broker knows the new token (lists it), within --timeout: the
    controller made it, and each broker learns it from the metadata log a moment later;
    a client logging in with it at once may reach any of them (as kctl waits for a new
    topic: issue 68). Past the timeout, or with a broker that does not answer, it returns:
    the token exists all the same."""
    from kctl.polling import poll

    every: t.DescribeDelegationTokenRequest = {"owners": None}

    def everywhere() -> bool:
        answers = session.ask_every_broker(action, apis.DESCRIBE_DELEGATION_TOKEN, every, 1, 3, "a broker was loading")
        return all(answer.error_code == 0 and any(t.token_id == token_id for t in answer.tokens) for _node, answer in answers)

    try:
        poll(everywhere, bool, timeout=session.timeout, interval=0.05)
    except KctlError:
        return  # a broker that cannot answer: the token is made all the same, and the caller shows it


def describe_tokens(session: AdminSession, *, owners: Sequence[str] = (), with_hmac: bool = False) -> list[DelegationToken]:
    """The tokens the principal asking may see (its own, those it renews, and any it has
    DESCRIBE on), of `owners` only if given (tokens they own or renew, as Kafka filters)."""
    action = "describe delegation tokens"
    wanted: list[t.DescribeDelegationTokenOwner] | None = (
        [{"principal_type": kind, "principal_name": name} for kind, name in map(parse_principal, owners)] if owners else None)
    answer = session.ask(action, apis.DESCRIBE_DELEGATION_TOKEN, {"owners": wanted}, 1, 3, needs=NEEDS)
    _check(answer.error_code, action)
    tokens = []
    for found in answer.tokens:
        requester = getattr(found, "token_requester_principal_type", None)
        tokens.append(DelegationToken(
            found.token_id, f"{found.principal_type}:{found.principal_name}",
            f"{requester}:{found.token_requester_principal_name}" if requester else None,
            [f"{r.principal_type}:{r.principal_name}" for r in found.renewers], found.issue_timestamp, found.expiry_timestamp,
            found.max_timestamp, base64.b64encode(found.hmac).decode() if with_hmac else None))
    return sorted(tokens, key=lambda t: (t.owner, t.issued_ms, t.token_id))


def hmac_of(session: AdminSession, token_id: str, action: str) -> bytes:
    """A token's HMAC, looked up by its id among the tokens the principal may see."""
    for token in describe_tokens(session, with_hmac=True):
        if token.token_id == token_id and token.hmac is not None:
            return base64.b64decode(token.hmac)
    raise NotFoundError(action=action, cause=f"no delegation token {token_id} (or not one this principal owns, renews or may describe)",
                        hint="kctl token list shows the tokens you may see")


def renew_token(session: AdminSession, hmac: bytes, period_ms: int = -1) -> int:
    """Renew a token (as its owner or a renewer) for `period_ms` (-1: the cluster's
    delegation.token.expiry.time.ms), never past its max lifetime; its new expiry (ms)."""
    action = "renew the delegation token"
    answer = session.ask(action, apis.RENEW_DELEGATION_TOKEN, {"hmac": hmac, "renew_period_ms": period_ms}, 1, 2, needs=NEEDS)
    _check(answer.error_code, action)
    return answer.expiry_timestamp_ms


def expire_token(session: AdminSession, hmac: bytes, period_ms: int = -1) -> int:
    """Expire a token (as its owner or a renewer) after `period_ms` (negative: now, and the
    cluster forgets it); its new expiry (ms)."""
    action = "expire the delegation token"
    answer = session.ask(action, apis.EXPIRE_DELEGATION_TOKEN, {"hmac": hmac, "expiry_time_period_ms": period_ms}, 1, 2, needs=NEEDS)
    _check(answer.error_code, action)
    return answer.expiry_timestamp_ms
