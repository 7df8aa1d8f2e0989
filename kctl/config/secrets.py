"""Which client properties are secrets, and how they are masked in every output."""

from __future__ import annotations

import os
from collections.abc import Mapping

from kctl.errors import ConfigError

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


def read_secret(configured: Mapping[str, str], key: str, owner: str) -> str | None:
    """`key`'s value in `owner`'s settings (a registry's, a Connect cluster's), or the
    content of the file `key`-file names, read when used."""
    value = configured.get(key)
    if not value and configured.get(f"{key}-file"):
        path = os.path.expanduser(configured[f"{key}-file"])
        try:
            with open(path, encoding="utf-8") as file:
                value = file.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(action=f"read {owner}'s {key}-file {path}", cause=f"{getattr(exc, 'strerror', None) or exc}") from None
    return value or None
