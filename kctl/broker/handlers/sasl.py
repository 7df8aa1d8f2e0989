"""SaslHandshake and SaslAuthenticate.

On a SASL listener they run the connection's exchange (security/sasl.py): an unknown
mechanism is UNSUPPORTED_SASL_MECHANISM with the enabled ones listed, a failed exchange
SASL_AUTHENTICATION_FAILED with Kafka's message, and either closes the connection after
the answer, as Kafka does. On a listener without SASL both are refused with
ILLEGAL_SASL_STATE and no mechanisms, as an Apache Kafka PLAINTEXT listener refuses them,
so a client set up for SASL stops at once with an error that names SASL (librdkafka:
"SASL PLAIN mechanism handshake failed ... broker's supported mechanisms: ") instead of
reconnecting to a broker that closes on it.
"""

from __future__ import annotations

import logging

from kctl.broker.protocol import errors
from kctl.broker.security.sasl import SaslFailed

log = logging.getLogger("kctl.broker.sasl")


async def sasl_handshake(broker, context, request):
    session = context.session
    if session.sasl is None:
        return {"error_code": errors.ILLEGAL_SASL_STATE, "mechanisms": []}
    mechanisms = list(session.sasl.mechanisms)
    if session.authenticated and session.sasl.max_reauth_ms > 0 and context.version >= 1 and not session.reauthenticating:
        # Re-authentication (KIP-368): with the mechanism the session began with.
        if session.reauthenticate(request.mechanism):
            return {"error_code": errors.NONE, "mechanisms": mechanisms}
        session.close_after_response = True
        log.info("client %s asked to re-authenticate with %s, not %s", context.client_host, request.mechanism, session.mechanism)
        return {"error_code": errors.UNSUPPORTED_SASL_MECHANISM, "mechanisms": [session.mechanism]}
    if session.authenticated or session.mechanism is not None:
        session.close_after_response = True
        return {"error_code": errors.ILLEGAL_SASL_STATE, "mechanisms": mechanisms}
    if not session.handshake(request.mechanism, context.version):
        session.close_after_response = True
        log.info("client %s asked for SASL mechanism %r; enabled: %s", context.client_host,
                 request.mechanism, ", ".join(mechanisms))
        return {"error_code": errors.UNSUPPORTED_SASL_MECHANISM, "mechanisms": mechanisms}
    return {"error_code": errors.NONE, "mechanisms": mechanisms}


async def sasl_authenticate(broker, context, request):
    session = context.session
    answer = {"error_code": errors.NONE, "error_message": "", "auth_bytes": b"", "session_lifetime_ms": 0}
    if session.sasl is None:
        return {**answer, "error_code": errors.ILLEGAL_SASL_STATE,
                "error_message": "this listener has no SASL"}
    if not session.exchanging:
        session.close_after_response = True
        return {**answer, "error_code": errors.ILLEGAL_SASL_STATE,
                "error_message": "Unexpected SaslAuthenticate request"}
    try:
        answer["auth_bytes"] = session.authenticate(bytes(request.auth_bytes or b""))
    except SaslFailed as exc:
        session.close_after_response = True
        log.info("authentication of %s with %s failed: %s", context.client_host, session.mechanism, exc)
        return {**answer, "error_code": errors.SASL_AUTHENTICATION_FAILED, "error_message": str(exc)}
    if session.invalid_token_reason:
        log.info("OAUTHBEARER token of %s refused: %s", context.client_host, session.invalid_token_reason)
        session.invalid_token_reason = None
    if session.authenticated and not session.reauthenticating:
        answer["session_lifetime_ms"] = session.lifetime_ms
    return answer


HANDLERS = {17: sasl_handshake, 36: sasl_authenticate}
