"""librdkafka settings become the same kafka-python settings (for the APIs only kafka-python has)."""

from __future__ import annotations

import base64
import json
import re
import ssl

import pytest

from kctl.admin.client.kafka_python import translate_config
from kctl.config.model import ClientSettings
from kctl.errors import ConfigError


def settings(**properties) -> ClientSettings:
    return ClientSettings(bootstrap_servers="a:9092,b:9092", properties=properties, timeout=7.5, context=None)


def test_plaintext_defaults():
    assert translate_config(settings()) == {
        "bootstrap_servers": ["a:9092", "b:9092"],
        "request_timeout_ms": 7500,
        "bootstrap_timeout_ms": 7500,
        "client_id": "kctl",
        "security_protocol": "PLAINTEXT",
    }


def test_sasl_scram_over_ssl(tmp_path):
    """TLS through kctl's one context builder (kctl.admin.client.tls): the CA and the
    client certificate of librdkafka's ssl.* properties in an SSLContext kafka-python
    takes as it is."""
    from tests.security.tls import make_certificates

    ca, certificate, key = make_certificates(tmp_path, "127.0.0.1")
    config = translate_config(
        settings(
            **{
                "security.protocol": "sasl_ssl",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "u",
                "sasl.password": "p",
                "ssl.ca.location": str(ca),
                "ssl.certificate.location": str(certificate),
                "ssl.key.location": str(key),
                "client.id": "me",
                "socket.timeout.ms": "1000",
                "debug": "broker",
            }
        )
    )
    context = config.pop("ssl_context")
    assert {k: v for k, v in config.items() if k not in ("bootstrap_servers", "request_timeout_ms", "bootstrap_timeout_ms")} == {
        "client_id": "me",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "u",
        "sasl_plain_password": "p",
        "ssl_check_hostname": True,
    }
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert [c["subject"] for c in context.get_ca_certs()] == [c["subject"] for c in ssl.create_default_context(cafile=str(ca)).get_ca_certs()]


def test_relaxed_tls_verification():
    config = translate_config(settings(**{"security.protocol": "ssl", "ssl.endpoint.identification.algorithm": "none"}))
    assert config["ssl_check_hostname"] is False
    config = translate_config(settings(**{"security.protocol": "ssl", "enable.ssl.certificate.verification": "false"}))
    assert config["ssl_context"].verify_mode == ssl.CERT_NONE


def test_unsupported_property_is_a_config_error():
    with pytest.raises(ConfigError, match="property 'sasl.kerberos.keytab' has no kafka-python equivalent"):
        translate_config(settings(**{"sasl.kerberos.keytab": "/k"}))


def test_a_mechanism_the_bridge_cannot_carry_is_refused_by_name():
    with pytest.raises(ConfigError, match="sasl.mechanism AWS_MSK_IAM is not supported by it"):
        translate_config(settings(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM"}))


def _claims(token: str) -> dict:
    header, payload, signature = token.split(".")
    pad = lambda text: text + "=" * (-len(text) % 4)  # noqa: E731
    assert json.loads(base64.urlsafe_b64decode(pad(header))) == {"alg": "none"}
    assert signature == ""
    return json.loads(base64.urlsafe_b64decode(pad(payload)))


def test_unsecured_jwt_tokens_like_librdkafkas():
    config = translate_config(settings(**{
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
        "sasl.oauthbearer.config": "principal=alice scope=read,write lifeSeconds=60 extension_traceId=123",
    }))
    provider = config.pop("sasl_oauth_token_provider")
    assert config["sasl_mechanism"] == "OAUTHBEARER"
    claims = _claims(provider.token())
    assert (claims["sub"], claims["scope"], claims["exp"] - claims["iat"]) == ("alice", ["read", "write"], 60)
    assert provider.extensions() == {"traceId": "123"}


@pytest.mark.parametrize(("properties", "message"), [
    ({}, "no token source"),
    ({"enable.sasl.oauthbearer.unsecure.jwt": "true"}, "needs principal=NAME"),
    ({"enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": "principal=a lifeSeconds=x"}, "lifeSeconds='x'"),
    ({"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": "c"}, "sasl.oauthbearer.token.endpoint.url, sasl.oauthbearer.client.secret not set"),
    ({"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.grant.type": "urn:ietf:params:oauth:grant-type:jwt-bearer"}, "grant.type=urn:ietf:params:oauth:grant-type:jwt-bearer is not supported"),
])
def test_oauthbearer_settings_the_bridge_cannot_use(properties, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        translate_config(settings(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", **properties}))


def test_a_sasl_bootstrap_closed_then_cut_short_by_the_timeout_is_a_login_failure():
    """Seen in CI: the broker closed each connection after refusing the login (its answer
    lost), and the last attempt timed out when --timeout ran out."""
    from kafka import errors

    from kctl.admin.client.kafka_python import _bootstrap_error
    from kctl.errors import ExitCode

    closed = errors.KafkaConnectionError("socket disconnected")
    cut = errors.RequestTimedOutError("Request timed out after 8 ms")
    error = _bootstrap_error([closed, closed, cut], "k:9092", "PLAIN")
    assert (error.exit_code, error.message) == (ExitCode.NOT_AUTHORIZED, "unable to connect: k:9092 closed the connection before SASL PLAIN authentication completed")
    assert _bootstrap_error([cut], "k:9092", "PLAIN").exit_code == ExitCode.UNREACHABLE
    assert _bootstrap_error([closed, cut], "k:9092", None).exit_code == ExitCode.UNREACHABLE
