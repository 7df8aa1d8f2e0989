"""SaslHandshake and SaslAuthenticate on a plaintext listener: refused with
ILLEGAL_SASL_STATE and no mechanisms, as an Apache Kafka PLAINTEXT listener refuses them,
so a client set up for SASL stops at once with an error that names SASL (librdkafka:
"SASL PLAIN mechanism handshake failed ... broker's supported mechanisms: ") instead of
reconnecting to a broker that closes on it."""

from __future__ import annotations

from ..protocol import errors


async def sasl_handshake(broker, context, request):
    return {"error_code": errors.ILLEGAL_SASL_STATE, "mechanisms": []}


async def sasl_authenticate(broker, context, request):
    return {"error_code": errors.ILLEGAL_SASL_STATE, "error_message": "this broker has no SASL listener",
            "auth_bytes": b"", "session_lifetime_ms": 0}


HANDLERS = {17: sasl_handshake, 36: sasl_authenticate}
