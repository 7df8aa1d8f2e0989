"""`-X help`: the librdkafka client properties people most often set.

librdkafka accepts ~200 properties and kctl passes any of them through unchanged; the
Python binding cannot list them, so this is the short list, grouped by purpose.
"""

from __future__ import annotations

from typing import TextIO

COMMON_PROPERTIES: tuple[tuple[str, str], ...] = (
    ("security.protocol", "plaintext, ssl, sasl_plaintext or sasl_ssl"),
    ("sasl.mechanism", "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI or OAUTHBEARER"),
    ("sasl.username", "SASL username (PLAIN, SCRAM)"),
    ("sasl.password", "SASL password (PLAIN, SCRAM); masked in all output"),
    ("sasl.scram.tokenauth", "kctl: true when sasl.username and sasl.password are a delegation token's id and HMAC (SCRAM)"),
    ("sasl.kerberos.service.name", "the brokers' Kerberos service name (GSSAPI; default kafka)"),
    ("sasl.kerberos.keytab", "keytab file to get tickets from (GSSAPI; else the kinit ticket cache)"),
    ("sasl.kerberos.principal", "the keytab's principal, e.g. alice@EXAMPLE.COM (GSSAPI)"),
    ("sasl.oauthbearer.token.command", "kctl: a shell command printing an OAUTHBEARER token (run again before it expires)"),
    ("sasl.oauthbearer.token.file", "kctl: a file holding an OAUTHBEARER token (read again before it expires)"),
    ("sasl.oauthbearer.token.lifetime", "kctl: seconds a token from the command or file lasts, when it is not a JWT"),
    ("sasl.oauthbearer.method", "default or oidc"),
    ("sasl.oauthbearer.client.id", "OIDC client id"),
    ("sasl.oauthbearer.client.secret", "OIDC client secret; masked in all output"),
    ("sasl.oauthbearer.token.endpoint.url", "OIDC token endpoint"),
    ("ssl.ca.location", "CA certificate file or directory for verifying brokers"),
    ("ssl.certificate.location", "client certificate (PEM) for mutual TLS"),
    ("ssl.key.location", "client private key (PEM) for mutual TLS"),
    ("ssl.key.password", "password of the client private key; masked in all output"),
    ("ssl.endpoint.identification.algorithm", "https (verify host names, default) or none"),
    ("enable.ssl.certificate.verification", "true (default) or false"),
    ("client.id", "client identifier shown in broker logs and quotas"),
    ("client.rack", "rack of this client, for follower fetching"),
    ("socket.timeout.ms", "network request timeout"),
    ("socket.connection.setup.timeout.ms", "how long a connection may take to set up"),
    ("broker.address.family", "any, v4 or v6"),
    ("debug", "librdkafka debug contexts, e.g. broker,protocol (shown with --debug)"),
)


def print_property_help(stream: TextIO) -> None:
    width = max(len(name) for name, _ in COMMON_PROPERTIES)
    lines = ["Common librdkafka properties for -X KEY=VALUE (any librdkafka property is accepted):", ""]
    lines += [f"  {name.ljust(width)}  {text}" for name, text in COMMON_PROPERTIES]
    lines += [
        "",
        "Set them per context with `kctl context set NAME -X KEY=VALUE`, or through the",
        "environment as KCTL_X_<KEY> (dots as underscores, e.g. KCTL_X_SASL_PASSWORD).",
    ]
    stream.write("\n".join(lines) + "\n")
    stream.flush()
