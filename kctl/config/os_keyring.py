"""Context secrets in the OS keyring (the `keyring` library: the Secret Service on Linux,
Keychain on macOS, Credential Manager on Windows), so config.toml holds no password.

A context lists the properties whose values are in the keyring (`keyring = [...]` in its
table); each is stored under service "kctl", user "CONTEXT/PROPERTY". The library is
imported only when a secret is stored, read or removed: ~50 ms, paid only by contexts
that use it.
"""

from __future__ import annotations

from typing import Any

from kctl.errors import ConfigError

SERVICE = "kctl"
_HEADLESS_HINT = "unlock the keyring (or start one), or keep the secret in config.toml (mode 600): kctl context set CONTEXT --secrets-in file"


class KeyringUnavailable(Exception):
    """No usable OS keyring: why, in a few words."""


def _user(context: str, key: str) -> str:
    return f"{context}/{key}"


def _keyring() -> Any:
    """The keyring library's chosen backend, or KeyringUnavailable saying why none."""
    try:
        import keyring
        import keyring.errors
    except ImportError as exc:
        raise KeyringUnavailable("the keyring package is not installed") from exc
    # Chosen afresh: the library caches its first choice, and a long-lived process (the
    # tests) may meet a keyring that was not there the first time.
    import keyring.core

    try:
        keyring.core.init_backend()
        backend = keyring.get_keyring()
    except Exception as exc:  # noqa: BLE001 - a stale D-Bus address (an ssh session's) fails in choosing
        raise KeyringUnavailable(f"no OS keyring could be reached: {_reason(exc)}") from exc
    if type(backend).__module__.startswith("keyring.backends.fail") or getattr(backend, "priority", 1) <= 0:
        raise KeyringUnavailable("no OS keyring is available (on Linux: no Secret Service on the session's D-Bus)")
    return keyring


def store(context: str, key: str, secret: str) -> None:
    """Store `secret` as `key` of `context`; KeyringUnavailable when it cannot be."""
    keyring = _keyring()
    try:
        keyring.set_password(SERVICE, _user(context, key), secret)
    except Exception as exc:  # noqa: BLE001 - the backends' errors are many (locked, D-Bus, dismissed prompt)
        raise KeyringUnavailable(f"the OS keyring refused to store it: {_reason(exc)}") from exc


def load(context: str, key: str) -> str:
    """`key` of `context` from the keyring, or the ConfigError saying why not."""
    action = f"read {key} of context {context!r} from the OS keyring"
    try:
        keyring = _keyring()
        secret = keyring.get_password(SERVICE, _user(context, key))
    except KeyringUnavailable as exc:
        raise ConfigError(action=action, cause=str(exc), hint=_HEADLESS_HINT) from exc
    except Exception as exc:  # noqa: BLE001 - as in store()
        raise ConfigError(action=action, cause=_reason(exc), hint=_HEADLESS_HINT) from exc
    if secret is None:
        raise ConfigError(action=action, cause=f"it holds no entry {SERVICE}/{_user(context, key)}",
                          hint=f"store it again: kctl context set {context} --password-stdin")
    return secret


def forget(context: str, key: str) -> str | None:
    """Remove `key` of `context` from the keyring; why it could not be (None: removed or
    absent)."""
    try:
        keyring = _keyring()
        keyring.delete_password(SERVICE, _user(context, key))
    except KeyringUnavailable as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - PasswordDeleteError when absent, and the backends' own
        if type(exc).__name__ == "PasswordDeleteError":
            return None
        return _reason(exc)
    return None


def _reason(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
