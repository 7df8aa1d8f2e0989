"""CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and
DescribeDelegationToken (KIP-48), with Kafka's checks in Kafka's order (KafkaApis and
the controller's DelegationTokenControlManager): token requests only on an authenticated
channel that did not authenticate with a token (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED),
only with delegation.token.secret.key set (DELEGATION_TOKEN_AUTH_DISABLED); renewers are
Users (INVALID_PRINCIPAL_TYPE); a token for another owner needs CreateTokens on that
user; renewing and expiring need the token's owner, requester or a renewer
(DELEGATION_TOKEN_OWNER_MISMATCH) and a token not yet expired; describing shows a
principal its own tokens, those it renews, and those it has Describe on (or
DescribeTokens on their owner).

Every change is durable before it is answered (security.json); an expired token is
refused at authentication at once (Kafka's brokers drop one at their next expiry check).
"""

from __future__ import annotations

import base64
import uuid

from kctl.broker.handlers.common import log, storage_error_message
from kctl.broker.protocol import errors
from kctl.broker.security import authorizer as az
from kctl.broker.security.sasl import ANONYMOUS
from kctl.broker.security.store import Token
from kctl.broker.security.tokens import now_ms, token_hmac


def _refused(broker, context) -> int:
    """Kafka's allowTokenRequests and tokenAuthEnabled, in its order."""
    session = context.session
    protocol = session.listener.protocol
    if session.token_authenticated or protocol == "PLAINTEXT" or (protocol == "SSL" and session.principal == ANONYMOUS):
        return errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    if broker.config.delegation_token_secret_key is None:
        return errors.DELEGATION_TOKEN_AUTH_DISABLED
    return errors.NONE


def _split(principal: str) -> tuple[str, str]:
    kind, _, name = principal.partition(":")
    return kind, name


def _may_renew(token: Token, principal: str) -> bool:
    """Kafka's TokenInformation.ownerOrRenewer."""
    return principal in (token.owner, token.requester) or principal in token.renewers


async def create_delegation_token(broker, context, request):
    requester = context.principal
    owner_name = getattr(request, "owner_principal_name", None)
    owner = f"{request.owner_principal_type}:{owner_name}" if owner_name else requester
    answer = {"error_code": errors.NONE, "principal_type": _split(owner)[0], "principal_name": _split(owner)[1],
              "token_requester_principal_type": _split(requester)[0], "token_requester_principal_name": _split(requester)[1],
              "issue_timestamp_ms": -1, "expiry_timestamp_ms": -1, "max_timestamp_ms": -1, "token_id": "", "hmac": b"",
              "throttle_time_ms": 0}
    refused = _refused(broker, context)
    if refused == errors.NONE and owner != requester and not context.allowed(broker, az.CREATE_TOKENS, az.USER, owner):
        refused = errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    if refused == errors.NONE and any(r.principal_type != "User" for r in request.renewers):
        refused = errors.INVALID_PRINCIPAL_TYPE
    if refused:
        return {**answer, "error_code": refused}
    config = broker.config
    now = now_ms()
    lifetime = config.delegation_token_max_lifetime_ms
    if request.max_lifetime_ms > 0:
        lifetime = min(request.max_lifetime_ms, lifetime)
    token = Token(_token_id(), owner, requester, tuple(f"{r.principal_type}:{r.principal_name}" for r in request.renewers),
                  now, min(now + lifetime, now + config.delegation_token_expiry_time_ms), now + lifetime)
    if not _stored(broker, {**broker.security.tokens, token.token_id: token}, "create a delegation token"):
        return {**answer, "error_code": errors.KAFKA_STORAGE_ERROR}
    return {**answer, "issue_timestamp_ms": token.issued_ms, "expiry_timestamp_ms": token.expiry_ms, "max_timestamp_ms": token.max_ms,
            "token_id": token.token_id, "hmac": token_hmac(config.delegation_token_secret_key, token.token_id)}


def _token_id() -> str:
    """A new token id as Kafka's controller makes one: a random Kafka Uuid's text (22
    characters of URL-safe base64), never one starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _stored(broker, tokens: dict[str, Token], action: str) -> bool:
    try:
        broker.security.update(tokens=tokens)
    except OSError as exc:
        log.error("%s", storage_error_message(action, exc))
        return False
    return True


def _token_for(broker, context, mac: bytes) -> tuple[int, Token | None]:
    """The token renew and expire name by its HMAC, or why there is none to change."""
    refused = _refused(broker, context)
    if refused:
        return refused, None
    token = broker.token_credentials.by_hmac(bytes(mac))
    if token is None:
        return errors.DELEGATION_TOKEN_NOT_FOUND, None
    if not _may_renew(token, context.principal):
        return errors.DELEGATION_TOKEN_OWNER_MISMATCH, None
    now = now_ms()
    if token.max_ms < now or token.expiry_ms < now:
        return errors.DELEGATION_TOKEN_EXPIRED, None
    return errors.NONE, token


async def renew_delegation_token(broker, context, request):
    code, token = _token_for(broker, context, request.hmac)
    if token is None:
        return {"error_code": code, "expiry_timestamp_ms": -1, "throttle_time_ms": 0}
    period = broker.config.delegation_token_expiry_time_ms if request.renew_period_ms < 0 else request.renew_period_ms
    renewed = Token(token.token_id, token.owner, token.requester, token.renewers, token.issued_ms,
                    min(token.max_ms, now_ms() + period), token.max_ms)
    if not _stored(broker, {**broker.security.tokens, token.token_id: renewed}, "renew a delegation token"):
        return {"error_code": errors.KAFKA_STORAGE_ERROR, "expiry_timestamp_ms": -1, "throttle_time_ms": 0}
    return {"error_code": errors.NONE, "expiry_timestamp_ms": renewed.expiry_ms, "throttle_time_ms": 0}


async def expire_delegation_token(broker, context, request):
    code, token = _token_for(broker, context, request.hmac)
    if token is None:
        return {"error_code": code, "expiry_timestamp_ms": -1, "throttle_time_ms": 0}
    now = now_ms()
    tokens = dict(broker.security.tokens)
    if request.expiry_time_period_ms < 0:
        del tokens[token.token_id]  # expired now: forgotten at once, as Kafka's controller does
        expiry = now
    else:
        expiry = min(token.max_ms, now + request.expiry_time_period_ms)
        tokens[token.token_id] = Token(token.token_id, token.owner, token.requester, token.renewers, token.issued_ms, expiry, token.max_ms)
    if not _stored(broker, tokens, "expire a delegation token"):
        return {"error_code": errors.KAFKA_STORAGE_ERROR, "expiry_timestamp_ms": -1, "throttle_time_ms": 0}
    if token.token_id not in tokens:
        broker.token_credentials.forget(token.token_id)
    return {"error_code": errors.NONE, "expiry_timestamp_ms": expiry, "throttle_time_ms": 0}


async def describe_delegation_token(broker, context, request):
    refused = _refused(broker, context)
    if refused:
        return {"error_code": refused, "tokens": [], "throttle_time_ms": 0}
    owners = None if request.owners is None else [f"{o.principal_type}:{o.principal_name}" for o in request.owners]
    principal, secret = context.principal, broker.config.delegation_token_secret_key
    shown = []
    for token in sorted(broker.security.tokens.values(), key=lambda t: (t.issued_ms, t.token_id)):
        if owners is not None and not any(_may_renew(token, owner) for owner in owners):
            continue
        if not (_may_renew(token, principal) or context.allowed(broker, az.DESCRIBE, az.DELEGATION_TOKEN, token.token_id)
                or context.allowed(broker, az.DESCRIBE_TOKENS, az.USER, token.owner)):
            continue
        shown.append({
            "principal_type": _split(token.owner)[0], "principal_name": _split(token.owner)[1],
            "token_requester_principal_type": _split(token.requester)[0], "token_requester_principal_name": _split(token.requester)[1],
            "issue_timestamp": token.issued_ms, "expiry_timestamp": token.expiry_ms, "max_timestamp": token.max_ms,
            "token_id": token.token_id, "hmac": token_hmac(secret, token.token_id),
            "renewers": [{"principal_type": _split(r)[0], "principal_name": _split(r)[1]} for r in token.renewers]})
    return {"error_code": errors.NONE, "tokens": shown, "throttle_time_ms": 0}


HANDLERS = {38: create_delegation_token, 39: renew_delegation_token, 40: expire_delegation_token, 41: describe_delegation_token}
