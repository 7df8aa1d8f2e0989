"""librdkafka settings become the same kafka-python settings (for the APIs only kafka-python has)."""

from __future__ import annotations

import ssl

import pytest

from kctl.admin.kafka_python import translate_config
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


def test_sasl_scram_over_ssl():
    config = translate_config(
        settings(
            **{
                "security.protocol": "sasl_ssl",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "u",
                "sasl.password": "p",
                "ssl.ca.location": "/ca.pem",
                "ssl.certificate.location": "/c.pem",
                "ssl.key.location": "/k.pem",
                "ssl.key.password": "kp",
                "client.id": "me",
                "socket.timeout.ms": "1000",
                "debug": "broker",
            }
        )
    )
    assert {k: v for k, v in config.items() if k not in ("bootstrap_servers", "request_timeout_ms", "bootstrap_timeout_ms")} == {
        "client_id": "me",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "u",
        "sasl_plain_password": "p",
        "ssl_cafile": "/ca.pem",
        "ssl_certfile": "/c.pem",
        "ssl_keyfile": "/k.pem",
        "ssl_password": "kp",
    }


def test_relaxed_tls_verification():
    config = translate_config(settings(**{"security.protocol": "ssl", "ssl.endpoint.identification.algorithm": "none"}))
    assert config["ssl_check_hostname"] is False
    config = translate_config(settings(**{"security.protocol": "ssl", "enable.ssl.certificate.verification": "false"}))
    assert config["ssl_context"].verify_mode == ssl.CERT_NONE


def test_unsupported_property_is_a_config_error():
    with pytest.raises(ConfigError, match="property 'sasl.oauthbearer.client.id' has no kafka-python equivalent"):
        translate_config(settings(**{"sasl.oauthbearer.client.id": "x"}))
