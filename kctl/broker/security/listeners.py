"""Listeners in Kafka's notation: `PROTOCOL://HOST:PORT`, the protocol one of PLAINTEXT,
SSL, SASL_PLAINTEXT and SASL_SSL (the listener's name is its protocol, as with Kafka's
default listener.security.protocol.map)."""

from __future__ import annotations

from dataclasses import dataclass

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(slots=True)
class Listener:
    protocol: str
    host: str
    port: int

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol.endswith("SSL")

    def __str__(self) -> str:
        return f"{self.protocol}://{self.host}:{self.port}"


def protocol_for(sasl: bool, tls: bool) -> str:
    """PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""
    return ("SASL_" if sasl else "") + ("SSL" if tls else "PLAINTEXT")


def parse_listener(text: str, default_host: str = "127.0.0.1") -> Listener:
    """`SASL_SSL://127.0.0.1:9094` (an empty host is `default_host`); ValueError names
    what is wrong."""
    protocol, sep, address = text.partition("://")
    if not sep:
        raise ValueError(f"listener {text!r} is not PROTOCOL://HOST:PORT")
    protocol = protocol.upper()
    if protocol not in PROTOCOLS:
        raise ValueError(f"listener {text!r}: protocol must be one of {', '.join(PROTOCOLS)}")
    host, colon, port = address.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"listener {text!r} has no valid port")
    host = host.strip("[]") or default_host
    return Listener(protocol, host, int(port))
