"""The security options of `python -m kctl.broker` and `kctl local start`, parsed and
checked in one place: SASL mechanisms, users, listeners and super users. Every problem is
a ValueError whose message is the one line the user sees."""

from __future__ import annotations

from pathlib import Path

from kctl.broker.security.listeners import Listener, parse_listener
from kctl.broker.security.sasl import SERVED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable


def parse_mechanisms(text: str) -> tuple[str, ...]:
    """`plain,scram-sha-256` -> ("PLAIN", "SCRAM-SHA-256")."""
    names = [part.strip().upper() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError("--sasl needs at least one mechanism: " + ", ".join(m.lower() for m in SERVED))
    for name in names:
        if name not in SERVED:
            raise ValueError(f"unknown SASL mechanism {name.lower()!r}; the bundled broker serves "
                             + ", ".join(m.lower() for m in SERVED))
    return tuple(dict.fromkeys(names))


def parse_user(text: str) -> tuple[str, str]:
    name, sep, password = text.partition(":")
    if not sep or not name or not password:
        raise ValueError(f"user {text.split(':', 1)[0]!r} is not NAME:PASSWORD")
    return name, password


def read_users_file(path: Path) -> dict[str, str]:
    """NAME:PASSWORD per line; blank lines and lines starting with # are skipped."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"cannot read users file {path}: {exc.strerror or exc}") from None
    return parse_users_text(text, str(path))


def parse_users_text(text: str, where: str) -> dict[str, str]:
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            name, password = parse_user(line)
        except ValueError as exc:
            raise ValueError(f"{where}, line {number}: {exc}") from None
        users[name] = password
    return users


def parse_principal(text: str) -> str:
    kind, sep, name = text.partition(":")
    if not sep or not kind or not name:
        raise ValueError(f"super user {text!r} is not a principal TYPE:NAME such as User:admin")
    return text


def check(listeners: list[Listener], mechanisms: tuple[str, ...], users: dict[str, str], tls_cert: Path | None,
          tls_key: Path | None) -> None:
    """The combinations Kafka would refuse to start with, said before anything starts. A
    SASL listener with a password mechanism needs users; OAUTHBEARER alone takes tokens."""
    if any(listener.sasl for listener in listeners) and not users and set(mechanisms) - {"OAUTHBEARER"}:
        raise ValueError("a SASL listener needs at least one --user NAME:PASSWORD (or --users-file)")
    if (tls_cert is None) != (tls_key is None):
        raise ValueError("--tls-cert and --tls-key go together")
    ports = [listener.port for listener in listeners if listener.port]
    if len(ports) != len(set(ports)):
        raise ValueError("two listeners on one port")


def extra_listeners(texts: Iterable[str], host: str) -> list[Listener]:
    return [parse_listener(text, host) for text in texts]
