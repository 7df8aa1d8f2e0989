"""librdkafka's security settings as kctl's wire client reads them (kctl.admin.client.wire.
Security), without a broker: what it honours, and what it refuses by name rather than
drop. (Against brokers: tests/cli/test_security.py, test_tls.py and test_oauth.py.)"""

from __future__ import annotations

import base64
import json
import re
import ssl

import pytest

from kctl.admin.client.oauth import token_source
from kctl.admin.client.wire import Security
from kctl.config.model import ClientSettings
from kctl.errors import ConfigError


def settings(**properties) -> ClientSettings:
    return ClientSettings(bootstrap_servers="a:9092,b:9092", properties=properties, timeout=7.5, context=None)


def security(**properties) -> Security:
    chosen = settings(**properties)
    return Security(chosen, tokens=lambda: token_source(chosen.properties, chosen.aws_msk_iam))


def test_plaintext_by_default():
    plain = security()
    assert (plain.protocol, plain.mechanism, plain.tls) == ("PLAINTEXT", None, False)


def test_sasl_scram_over_ssl_with_librdkafkas_tls_files(tmp_path):
    from tests.security.tls import make_certificates

    ca, certificate, key = make_certificates(tmp_path, "127.0.0.1")
    secured = security(**{
        "security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u", "sasl.password": "p",
        "ssl.ca.location": str(ca), "ssl.certificate.location": str(certificate), "ssl.key.location": str(key),
        "client.id": "me", "socket.timeout.ms": "1000", "debug": "broker",
    })
    assert (secured.protocol, secured.mechanism, secured.username, secured.password, secured.tls) == ("SASL_SSL", "SCRAM-SHA-512", "u", "p", True)
    context = secured.ssl_context()
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert [c["subject"] for c in context.get_ca_certs()] == [c["subject"] for c in ssl.create_default_context(cafile=str(ca)).get_ca_certs()]


def test_relaxed_tls_verification():
    assert security(**{"security.protocol": "ssl", "ssl.endpoint.identification.algorithm": "none"}).ssl_context().check_hostname is False
    assert security(**{"security.protocol": "ssl", "enable.ssl.certificate.verification": "false"}).ssl_context().verify_mode == ssl.CERT_NONE


@pytest.mark.parametrize(("properties", "message"), [
    ({"sasl.kerberos.ticket": "/k"}, "property 'sasl.kerberos.ticket' is not supported by kctl's own client"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM"}, "sasl.mechanism AWS_MSK_IAM is not supported by kctl's own client"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.kerberos.keytab": "/k"}, "use sasl.kerberos.keytab: sasl.kerberos.principal is not set"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.kerberos.keytab": "/no/such.keytab", "sasl.kerberos.principal": "a@R"},
     "sasl.kerberos.keytab /no/such.keytab: no such file"),
    ({"security.protocol": "TLS"}, "security.protocol TLS is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
])
def test_what_it_cannot_honour_is_refused_by_name(properties, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        security(**properties)


def _claims(token: str) -> dict:
    header, payload, signature = token.split(".")
    pad = lambda text: text + "=" * (-len(text) % 4)  # noqa: E731
    assert json.loads(base64.urlsafe_b64decode(pad(header))) == {"alg": "none"}
    assert signature == ""
    return json.loads(base64.urlsafe_b64decode(pad(payload)))


def test_unsecured_jwt_tokens_like_librdkafkas():
    oauth = security(**{
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
        "sasl.oauthbearer.config": "principal=alice scope=read,write lifeSeconds=60 extension_traceId=123",
    })
    token, extensions = oauth.token()
    claims = _claims(token)
    assert (claims["sub"], claims["scope"], claims["exp"] - claims["iat"]) == ("alice", ["read", "write"], 60)
    assert extensions == {"traceId": "123"}


@pytest.mark.parametrize(("properties", "message"), [
    ({}, "no token source"),
    ({"enable.sasl.oauthbearer.unsecure.jwt": "true"}, "needs principal=NAME"),
    ({"enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": "principal=a lifeSeconds=x"}, "lifeSeconds='x'"),
    ({"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": "c"}, "sasl.oauthbearer.token.endpoint.url, sasl.oauthbearer.client.secret not set"),
    ({"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.grant.type": "urn:ietf:params:oauth:grant-type:jwt-bearer"},
     "grant.type=urn:ietf:params:oauth:grant-type:jwt-bearer is not supported by kctl's own client"),
])
def test_oauthbearer_settings_it_cannot_use_are_said_before_connecting(properties, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        security(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", **properties})
