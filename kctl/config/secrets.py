"""Which client properties are secrets, and how they are masked in every output."""

from __future__ import annotations

from collections.abc import Mapping

MASK = "[hidden]"

# Substrings of librdkafka property names whose values are credentials
# (sasl.password, ssl.key.password, ssl.keystore.password, sasl.oauthbearer.client.secret,
# sasl.jaas.config, ssl.key.pem, a schema registry's basic-auth, ...). Matching substrings keeps new properties of the
# same kind masked without a code change.
_SECRET_MARKERS = ("password", "secret", "jaas.config", "ssl.key.pem", "token", "credentials", "basic-auth", "basic.auth")


def is_secret(key: str) -> bool:
    key = key.lower()
    return any(marker in key for marker in _SECRET_MARKERS)


def mask(properties: Mapping[str, str]) -> dict[str, str]:
    return {k: (MASK if is_secret(k) else v) for k, v in properties.items()}
