"""kctl's own connections to Kafka brokers, for the reads scripts run in loops (the group
commands: list, describe, lag): Kafka's protocol over a socket, messages encoded by
kctl.messages.codec from Kafka's own definitions.

Why not a client library: a one-shot command's budget above Python's floor is ~25 ms
(issue 37); importing kafka-python costs 130-230 ms and building a librdkafka client plus
its bootstrap 20-40 ms. This module and the stdlib it needs cost a few ms, and it sends
exactly the requests a command needs: ApiVersions and (with SASL) the handshake on each
connection, then the command's own, to several brokers at once (every request is sent
before any answer is read). On a cluster a network away each round trip counts: the
first reads go out beside ApiVersions at the versions the broker answered last time
(ApiVersionsCache), and the connection that reached the bootstrap server serves the
broker it reached.

Security is the same as the other clients' and read from the same settings: TLS (`ssl`,
with librdkafka's ssl.* properties), SASL PLAIN, SCRAM-SHA-256/512 (RFC 5802, written
here: the scramp package costs 115 ms to import), OAUTHBEARER (the session's token
source: unsecured JWTs, OIDC client credentials, AWS MSK IAM) and GSSAPI (Kerberos:
kctl.admin.client.kerberos). A property it cannot honour is a ConfigError naming it,
never ignored.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Sequence

from kctl.admin.client.logs import debug
from kctl.admin.client.properties import OAUTHBEARER_PROPERTIES, SSL_PROPERTIES, TOKEN_AUTH, default_mechanism, ignored, uses_token_auth
from kctl.config.model import ClientSettings
from kctl.errors import ConfigError, InvalidError, KctlError, NotAuthorizedError, TimeoutError_, UnreachableError
from kctl.messages import codec
from kctl.messages.errors import error_name

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    import socket
    from typing import Any, TypeVar

    from kctl.messages import types as t
    from kctl.messages.api import Api

    Q = TypeVar("Q")
    R = TypeVar("R")


_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")
_AUTH_HINT = "check sasl.mechanism and its credentials: sasl.username/sasl.password or sasl.oauthbearer.* (-X, the context, KCTL_X_*)"
_REACH_HINT = "check -b/--bootstrap-server, the context, and that the brokers are up"


class UnsupportedApi(KctlError):
    """The broker has no version of an API that kctl can use."""


class Security:
    """What a connection needs to get through: TLS, and a SASL mechanism with its secret."""

    def __init__(self, settings: ClientSettings, tokens: Callable[[], Any] | None = None):
        properties = settings.properties
        default_protocol = "SASL_SSL" if settings.aws_msk_iam else "PLAINTEXT"
        self.protocol = properties.get("security.protocol", default_protocol).upper()
        if self.protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise ConfigError(action="connect", cause=f"security.protocol {self.protocol} is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")
        mechanism = (properties.get("sasl.mechanism") or properties.get("sasl.mechanisms")
                     or ("OAUTHBEARER" if settings.aws_msk_iam else default_mechanism(properties)))
        self.mechanism = mechanism.upper() if self.protocol.startswith("SASL") else None
        if self.mechanism and self.mechanism not in _MECHANISMS:
            raise ConfigError(
                action="connect", cause=f"sasl.mechanism {self.mechanism} is not supported by kctl's own client",
                hint=f"it supports {', '.join(_MECHANISMS)}",
            )
        if settings.aws_msk_iam and self.mechanism != "OAUTHBEARER":
            raise ConfigError(action=f"use AWS MSK IAM with sasl.mechanism={mechanism}", cause="MSK IAM authenticates with OAUTHBEARER")
        if self.mechanism == "OAUTHBEARER" and tokens is not None:
            tokens()  # the token source's settings are checked now, before any connection
        self.kerberos = None
        if self.mechanism == "GSSAPI":
            from kctl.admin.client.kerberos import Kerberos

            self.kerberos = Kerberos(properties)
        self.username = properties.get("sasl.username", "")
        self.password = properties.get("sasl.password", "")
        # A delegation token's id and HMAC in username and password (KIP-48).
        self.token_auth = uses_token_auth(properties)
        if self.token_auth and not (self.mechanism or "").startswith("SCRAM-"):
            raise ConfigError(action="connect", cause=f"{TOKEN_AUTH}=true needs sasl.mechanism SCRAM-SHA-256 or SCRAM-SHA-512 "
                              "and security.protocol SASL_SSL or SASL_PLAINTEXT (delegation tokens authenticate with SCRAM)")
        self._tokens = tokens
        self._properties = properties
        for key in properties:
            if key in ("client.id", "sasl.username", "sasl.password", "sasl.mechanisms", TOKEN_AUTH) or key in OAUTHBEARER_PROPERTIES:
                continue
            if key.startswith("sasl.kerberos."):
                from kctl.admin.client.kerberos import KERBEROS_PROPERTIES

                if key in KERBEROS_PROPERTIES:
                    continue
            if key in SSL_PROPERTIES or ignored(key):
                continue
            raise ConfigError(
                action="connect", cause=f"property {key!r} is not supported by kctl's own client",
                hint="it supports PLAINTEXT, SSL and SASL PLAIN/SCRAM/OAUTHBEARER/GSSAPI settings",
            )
        self._ssl_context: Any = None

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    def ssl_context(self) -> Any:
        """The TLS context from librdkafka's ssl.* properties (built once)."""
        if self._ssl_context is None:
            from kctl.admin.client.tls import TlsSettings, client_context

            self._ssl_context = client_context(TlsSettings.from_properties(self._properties))
        return self._ssl_context

    def token(self) -> tuple[str, dict[str, str]]:
        if self._tokens is None:
            raise ConfigError(action="authenticate with OAUTHBEARER", cause="no token source")
        source = self._tokens()
        return source.current()[0], dict(source.extensions)


class Connection:
    """One broker connection: framing, API versions, SASL. Requests may be pipelined: send
    several, then receive their answers in order."""

    def __init__(self, host: str, port: int, security: Security, client_id: str, deadline: float, *,
                 expected: dict[int, tuple[int, int]] | None = None,
                 learnt: Callable[[dict[int, tuple[int, int]]], None] | None = None):
        """`expected`: the API versions this broker answered before (kctl's cache). Then
        ApiVersions is sent without waiting for its answer, and the first requests go out
        beside it at the versions chosen from `expected` (a round trip less on every
        connection); its answer, read before theirs, must choose the same versions, or the
        connection fails as one that dropped (ConnectionResetError, asked again on a new
        one by WireClient.call), so the cache never changes a result. Not with SASL, whose
        handshake comes first (sent beside ApiVersions instead). `learnt` is given every
        ApiVersions answer."""
        self.address = f"{host}:{port}"
        self.host = host
        self._client_id = client_id.encode()
        self._correlation = 0
        # correlation id -> (the answer's message, whether its header is flexible)
        self._pending: dict[int, tuple[codec.Message, bool]] = {}
        self._deadline = deadline
        sock = _connect(host, port, _remaining(deadline), security.tls)
        try:
            if security.tls:
                sock = security.ssl_context().wrap_socket(sock, server_hostname=host)
            self._sock = sock
            # The address the connection reached, to recognise the broker when it
            # advertises itself under another name (kctl.admin.client.wire.WireClient.node).
            self.peer: tuple[str, int] = sock.getpeername()[:2]
            self._learnt = learnt
            self._expected = expected
            # ApiVersions' correlation id while its answer is unread; the versions chosen
            # from `expected` meanwhile: (name, low, high, chosen).
            self._versions_answer: int | None = None
            self._speculated: list[tuple[str, int | None, int | None, int | None]] = []
            self._versions: dict[int, tuple[int, int]] = {}
            if expected is not None and not security.mechanism:
                self._versions_answer = self.send("ApiVersions", 3, _VERSIONS_FIELDS)
            elif security.mechanism and security.tls:
                # Over TLS, Kafka reads a request sent before authentication ends only when
                # its selector's poll times out (~300 ms a request: its TLS layer holds the
                # bytes, and a channel still authenticating is not polled for them; seen on
                # 4.4), so each SASL step waits for the answer before it. With the broker's
                # versions cached, ApiVersions is asked after the exchange instead, beside
                # the first requests, and must agree with the SaslAuthenticate version
                # chosen from the cache (_settle).
                version = usable_version(expected, "SaslAuthenticate", None, None) if expected is not None else None
                if version is None:
                    self._versions = self._api_versions()
                self._authenticate(security, self.request("SaslHandshake", 1, {"mechanism": security.mechanism}), version=version)
                if version is not None:
                    self._versions_answer = self.send("ApiVersions", 3, _VERSIONS_FIELDS)
                    self._speculated.append(("SaslAuthenticate", None, None, version))
            elif security.mechanism:
                # ApiVersions and SaslHandshake in one round trip (the broker answers them in
                # order; SaslHandshake v1 is every Kafka's since 1.0). With the broker's
                # versions cached, PLAIN's message, SCRAM's first and OAUTHBEARER's token go
                # out beside them too (they need nothing the broker says), at the
                # SaslAuthenticate version the cache chooses, which ApiVersions' answer must
                # show the broker speaks (else the connection is opened again without the
                # cache: WireClient._open).
                # The opening is made first (a token read, a nonce drawn), so that nothing
                # comes between the three sends.
                opening = _opening(security) if expected is not None else None
                version = usable_version(expected, "SaslAuthenticate", None, None) if expected is not None else None
                asked = self.send("ApiVersions", 3, _VERSIONS_FIELDS)
                handshake = self.send("SaslHandshake", 1, {"mechanism": security.mechanism})
                sent = None
                if opening is not None and version is not None:
                    sent = (self.send("SaslAuthenticate", version, {"auth_bytes": opening[0]}), version, opening)
                self._versions = self._versions_of(self.receive(asked))
                if sent is not None and usable_version(self._versions, "SaslAuthenticate", version, version) != version:
                    raise _StaleVersions(f"{self.address} no longer speaks SaslAuthenticate v{version}, as kctl's cache said")
                self._authenticate(security, self.receive(handshake), sent)
            else:
                self._versions = self._api_versions()
        except BaseException:
            sock.close()
            raise

    # -- framing ------------------------------------------------------------------------

    def send(self, name: str, version: int, fields: dict[str, Any], deadline: float | None = None) -> int:
        """Send request `name` (e.g. "ListGroups") at `version`; its correlation id."""
        request = codec.message(name + "Request", version)
        response = codec.message(name + "Response", version)
        self._correlation += 1
        header = [_HEADER.pack(request.api_key, version, self._correlation)]
        client_id = [len(self._client_id).to_bytes(2, "big"), self._client_id]
        tagged = [b"\x00"] if request.flexible else []
        body = request.encode(**fields)
        frame = b"".join(header + client_id + tagged + [body])
        self._sock.settimeout(_remaining(deadline or self._deadline))
        self._sock.sendall(_SIZE.pack(len(frame)) + frame)
        debug("kctl.wire", "send %s v%d to %s", name, version, self.address)
        # ApiVersions answers with header v0 at every version (KIP-511).
        self._pending[self._correlation] = (response, response.flexible and name != "ApiVersions")
        return self._correlation

    def receive(self, correlation: int, deadline: float | None = None) -> codec.Struct:
        if self._versions_answer is not None and correlation != self._versions_answer:
            self._settle(deadline)  # ApiVersions was sent first: its answer comes first
        response, flexible_header = self._pending.pop(correlation)
        self._sock.settimeout(_remaining(deadline or self._deadline))
        (size,) = _SIZE.unpack(self._read(4))
        frame = self._read(size)
        (got,) = _SIZE.unpack_from(frame)
        if got != correlation:
            raise codec.CodecError(f"answer {got} from {self.address} where {correlation} was expected")
        position = 4
        if flexible_header:
            reader_end = codec.message("ResponseHeader", 1).decode_with_end(frame, 0)[1]
            position = reader_end
        return response.decode(frame, position)

    def request(self, name: str, version: int, fields: dict[str, Any], deadline: float | None = None) -> codec.Struct:
        return self.receive(self.send(name, version, fields, deadline), deadline)

    def _read(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = self._sock.recv(min(left, 1 << 20))
            if not chunk:
                raise ConnectionResetError(f"{self.address} closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass

    def detach_socket(self) -> socket.socket:
        """The authenticated socket, handed over (kctl.admin.client.bridge relays on it)."""
        import socket

        if self._pending:
            raise RuntimeError(f"{self.address} has answers still to read")
        if isinstance(self._sock, socket.socket):
            return self._sock
        return socket.socket(fileno=self._sock.detach())

    # -- versions -----------------------------------------------------------------------

    def _api_versions(self) -> dict[int, tuple[int, int]]:
        return self._versions_of(self.request("ApiVersions", 3, _VERSIONS_FIELDS))

    def _versions_of(self, answer: codec.Struct) -> dict[int, tuple[int, int]]:
        if answer.error_code:
            raise KctlError(action="connect", cause=f"{self.address} refused ApiVersions: {error_name(answer.error_code)}")
        versions = {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}
        if self._learnt is not None:
            self._learnt(versions)
        return versions

    def _settle(self, deadline: float | None = None) -> None:
        """Read the pipelined ApiVersions answer; the versions chosen from the cache before
        it must be the ones it chooses."""
        correlation, self._versions_answer = self._versions_answer, None
        assert correlation is not None
        try:
            answer = self.receive(correlation, deadline)
        except (OSError, codec.CodecError) as exc:
            # No answer to ApiVersions: what a connection without the cache would have
            # met before its first request (WireClient.call tries again without it).
            raise _NoVersions([exc]) from exc
        self._versions = self._versions_of(answer)
        speculated, self._speculated = self._speculated, []
        for name, low, high, chosen in speculated:
            if usable_version(self._versions, name, low, high) != chosen:
                raise ConnectionResetError(f"{self.address} now answers {name} at other versions than kctl's cache said")

    @property
    def versions(self) -> dict[int, tuple[int, int]]:
        """{API key: (lowest, highest version)} the broker speaks."""
        if self._versions_answer is not None:
            self._settle()
        return self._versions

    def _chosen(self, name: str, low: int | None, high: int | None) -> int | None:
        """The version of API `name` to send (None: none both sides speak). For a read while
        ApiVersions' answer is unread, as the cache expects it; recorded, and checked when
        the answer comes (_settle)."""
        if self._versions_answer is not None and self._expected is not None and name in _READS:
            chosen = usable_version(self._expected, name, low, high)
            self._speculated.append((name, low, high, chosen))
            return chosen
        return usable_version(self.versions, name, low, high)

    def supports(self, name: str, low: int | None = None, high: int | None = None) -> bool:
        """Whether the broker speaks API `name` within [low, high]."""
        return self._chosen(name, low, high) is not None

    def version(self, name: str, low: int | None = None, high: int | None = None) -> int:
        """The highest version of API `name` both sides speak, within [low, high]. What the
        cache says a broker lacks is judged by its answer (the recorded guess is checked)."""
        chosen = self._chosen(name, low, high)
        if chosen is None:
            chosen = usable_version(self.versions, name, low, high)
        if chosen is None:
            low, high = _within_ours(name, low, high)
            raise UnsupportedApi(cause=f"{self.address} does not support {name} v{low}-{high}")
        return chosen

    # -- SASL ---------------------------------------------------------------------------

    def _authenticate(self, security: Security, handshake: codec.Struct,
                      sent: tuple[int, int, tuple[bytes, str, str]] | None = None, *, version: int | None = None) -> None:
        """The SASL exchange after `handshake`, SaslHandshake's answer; `sent`: the first
        SaslAuthenticate already sent (its correlation id, version, and _opening);
        `version`: SaslAuthenticate's, where the broker's versions are not read yet."""
        mechanism = security.mechanism or ""
        if handshake.error_code:
            raise NotAuthorizedError(
                cause=f"authentication failed at {self.address}: {error_name(handshake.error_code)}: the broker does not enable "
                f"SASL {mechanism} (it enables: {', '.join(handshake.mechanisms) or 'none'})", hint=_AUTH_HINT)
        if sent is not None:
            version = sent[1]
        elif version is None:
            version = self.version("SaslAuthenticate")
        if mechanism == "PLAIN" or mechanism.startswith("SCRAM-"):
            opening = sent[2] if sent is not None else _opening(security)
            assert opening is not None
            answer = self._sasl_answer(sent[0]) if sent is not None else self._sasl_round(version, opening[0])
            if mechanism.startswith("SCRAM-"):
                self._scram(version, mechanism, security.password, opening, answer)
        elif mechanism == "GSSAPI" and security.kerberos is not None:
            security.kerberos.authenticate(self.host, lambda data: self._sasl_round(version, data))
        else:  # OAUTHBEARER
            opening = sent[2] if sent is not None else _opening(security)
            assert opening is not None
            challenge = self._sasl_answer(sent[0]) if sent is not None else self._sasl_round(version, opening[0])
            if challenge:  # an error in JSON: Kafka fails the exchange once the client acknowledges it
                self._sasl_round(version, b"\x01")

    def _sasl_round(self, version: int, data: bytes) -> bytes:
        return self._sasl_answer(self.send("SaslAuthenticate", version, {"auth_bytes": data}))

    def _sasl_answer(self, correlation: int) -> bytes:
        answer = self.receive(correlation)
        if answer.error_code:
            detail = f": {answer.error_message}" if answer.error_message else ""
            raise NotAuthorizedError(cause=f"authentication failed at {self.address}: {error_name(answer.error_code)}{detail}", hint=_AUTH_HINT)
        return answer.auth_bytes

    def _scram(self, version: int, mechanism: str, password: str, opening: tuple[bytes, str, str], first_answer: bytes) -> None:
        """SCRAM (RFC 5802 with RFC 7677's SHA-256; SHA-512 as Kafka adds it), client side,
        from the broker's answer to the client-first message (`opening`)."""
        import base64
        import hashlib
        import hmac

        digest = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
        _message, first_bare, nonce = opening
        server_first = first_answer.decode()
        parts = dict(item.split("=", 1) for item in server_first.split(",") if "=" in item)
        if not parts.get("r", "").startswith(nonce) or "s" not in parts or "i" not in parts:
            raise NotAuthorizedError(cause=f"authentication failed at {self.address}: malformed SCRAM challenge", hint=_AUTH_HINT)
        salted = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(parts["s"]), int(parts["i"]))
        client_key = hmac.digest(salted, b"Client Key", digest)
        without_proof = f"c=biws,r={parts['r']}"
        auth_message = f"{first_bare},{server_first},{without_proof}".encode()
        signature = hmac.digest(hashlib.new(digest, client_key).digest(), auth_message, digest)
        proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
        server_final = self._sasl_round(version, f"{without_proof},p={proof}".encode()).decode()
        expected = base64.b64encode(hmac.digest(hmac.digest(salted, b"Server Key", digest), auth_message, digest)).decode()
        if server_final != f"v={expected}":
            raise NotAuthorizedError(cause=f"authentication failed at {self.address}: the broker's SCRAM signature does not verify", hint=_AUTH_HINT)


class _StaleVersions(ConnectionResetError):
    """A SASL exchange begun at a version the cache chose, which the broker's ApiVersions
    answer shows it no longer speaks."""


def _opening(security: Security) -> tuple[bytes, str, str] | None:
    """The first SaslAuthenticate message where it needs nothing from the broker: PLAIN's
    one, SCRAM's client-first, OAUTHBEARER's token (fetched before the connection, as
    without the cache); with SCRAM's bare message and nonce, which the rest of the
    exchange signs. None for GSSAPI, whose first token names the broker's host."""
    mechanism = security.mechanism or ""
    if mechanism == "OAUTHBEARER":
        token, extensions = security.token()
        pairs = "".join(f"{k}={v}\x01" for k, v in sorted(extensions.items()))
        return f"n,,\x01auth=Bearer {token}\x01{pairs}\x01".encode(), "", ""
    if mechanism == "PLAIN":
        return b"\x00" + security.username.encode() + b"\x00" + security.password.encode(), "", ""
    if mechanism.startswith("SCRAM-"):
        import base64

        name = security.username.replace("=", "=3D").replace(",", "=2C")
        nonce = base64.b64encode(os.urandom(24)).decode()
        # A delegation token says so in an extension after the nonce (KIP-48, RFC 5802's
        # client-first-message-bare), signed with the rest of the bare message.
        first_bare = f"n={name},r={nonce}" + (",tokenauth=true" if security.token_auth else "")
        return f"n,,{first_bare}".encode(), first_bare, nonce
    return None


_VERSIONS_FIELDS = {"client_software_name": "kctl", "client_software_version": "1"}  # ApiVersions v3 (Kafka 2.4+)
# The APIs sent beside a pipelined ApiVersions: reads, which may be asked again on a new
# connection when the broker's versions turn out other than the cache said (a write would
# be done twice). InitProducerId only hands out a producer id.
_READS = frozenset((
    "Metadata", "ListOffsets", "DescribeConfigs", "DescribeCluster", "FindCoordinator", "ListGroups", "OffsetFetch",
    "DescribeGroups", "ConsumerGroupDescribe", "ShareGroupDescribe", "StreamsGroupDescribe", "DescribeTopicPartitions",
    "DescribeLogDirs", "DescribeAcls", "DescribeClientQuotas", "ListPartitionReassignments", "DescribeProducers",
    "ListTransactions", "DescribeTransactions", "DescribeQuorum",
    "DescribeShareGroupOffsets", "InitProducerId",
))


def usable_version(versions: dict[int, tuple[int, int]], name: str, low: int | None = None, high: int | None = None) -> int | None:
    """The highest version of API `name` kctl and a broker answering `versions` both speak
    within [low, high]; None when there is none (FileNotFoundError: an API kctl's codec
    holds no definition of)."""
    low_, high_ = _within_ours(name, low, high)
    theirs = versions.get(codec.definition(name + "Request")["apiKey"])
    if theirs is not None and max(low_, theirs[0]) <= min(high_, theirs[1]):
        return min(high_, theirs[1])
    return None


def _within_ours(name: str, low: int | None, high: int | None) -> tuple[int, int]:
    """[low, high] (None: no bound) within the versions of `name` kctl's codec speaks."""
    ours_low, ours_high = codec.valid_versions(name + "Request")
    return (ours_low if low is None else max(low, ours_low)), (ours_high if high is None else min(high, ours_high))


def _connect(host: str, port: int, timeout: float, tls: bool) -> Any:
    """A TCP connection to host:port with Nagle off, trying each address the name
    resolves to, as socket.create_connection does.

    Written here over _socket, the C module under socket: importing socket (its enums,
    selectors and array) costs every read ~2 ms of the ~25 it takes, and a plain
    connection needs only connect, send and recv. TLS wraps a socket.socket (ssl imports
    socket anyway). An ASCII name is resolved as bytes: Python's idna codec, whose import
    (with stringprep and unicodedata) costs ~1 ms, is then skipped; IDNA leaves ASCII as it is.
    """
    import _socket

    name = host.encode() if host.isascii() else host
    if tls:
        import socket

        sock: Any = socket.create_connection((name, port), timeout=timeout)  # type: ignore[arg-type]
    else:
        sock, failure = None, None
        for family, kind, proto, _, address in _socket.getaddrinfo(name, port, 0, _socket.SOCK_STREAM):
            candidate = _socket.socket(family, kind, proto)
            try:
                candidate.settimeout(timeout)
                candidate.connect(address)
            except OSError as exc:
                candidate.close()
                failure = exc
                continue
            sock = candidate
            break
        if sock is None:
            raise failure or OSError(f"{host} resolved to no address")
    sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
    return sock


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("deadline passed")
    return left


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.strip().rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(action="connect", cause=f"bootstrap server {address!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


class WireClient:
    """Connections to one cluster's brokers, opened as requests need them. Every method
    takes the `action` its errors are named by ("list groups")."""

    def __init__(self, settings: ClientSettings, tokens: Callable[[], Any] | None = None):
        self.settings = settings
        self.timeout = settings.timeout
        self.security = Security(settings, tokens)
        self._client_id = settings.properties.get("client.id", "kctl")
        self._connections: dict[Any, Connection] = {}
        self._addresses: dict[int, tuple[str, int]] = {}
        # (key type, key) -> the coordinator's node id, as FindCoordinator said during
        # this command; forgotten when a request to it says it is not (or no longer) so.
        self.coordinators: dict[tuple[int, str], int] = {}
        # Whether new connections send their first requests beside ApiVersions (Connection);
        # not after a connection failed, so that the next is tried as without a cache.
        self._pipelined = True

    # -- connections ----------------------------------------------------------------------

    def _open(self, host: str, port: int, deadline: float, *, pipelined: bool = True) -> Connection:
        """A connection to host:port; `pipelined`: its ApiVersions beside its first requests
        where kctl's cache knows what this broker answers (Connection)."""
        cache = ApiVersionsCache(f"{host}:{port}", self.security.tls)
        expected = cache.read() if pipelined and self._pipelined else None
        try:
            return Connection(host, port, self.security, self._client_id, deadline, expected=expected,
                              learnt=lambda versions: cache.write(versions, expected))
        except _StaleVersions:  # its ApiVersions answer has mended the cache
            return Connection(host, port, self.security, self._client_id, deadline,
                              learnt=lambda versions: cache.write(versions, None))

    def connect(self, host: str, port: int, action: str) -> Connection:
        """A connection of the caller's own to host:port, authenticated (not pooled: the
        GSSAPI bridge relays on it); what fails is said as call() says it."""
        try:
            return self._open(host, port, self.deadline(), pipelined=False)
        except KctlError as exc:
            raise exc if exc.action is not None else exc.but(action=action) from exc
        except codec.CodecError as exc:
            raise KctlError(action=action, cause=f"malformed answer from {host}:{port}: {exc}") from exc
        except OSError as exc:  # refused, unresolvable, or silent until the deadline
            raise self._unreachable(action, [exc]) from exc

    def bootstrap(self, deadline: float) -> Connection:
        """A connection to the first bootstrap server that answers."""
        if "bootstrap" in self._connections:
            return self._connections["bootstrap"]
        causes: list[BaseException] = []
        for address in (self.settings.bootstrap_servers or "").split(","):
            host, port = split_address(address)
            try:
                connection = self._open(host, port, deadline)
            except (OSError, codec.CodecError) as exc:
                causes.append(exc)
                continue
            self._connections["bootstrap"] = connection
            return connection
        raise ConnectFailed(causes)

    def node(self, node_id: int, deadline: float) -> Connection:
        if node_id not in self._connections:
            self._open_nodes([node_id], deadline)
        return self._connections[node_id]

    def _open_nodes(self, node_ids: Sequence[int], deadline: float) -> None:
        """Connections to the brokers `node_ids` that have none yet: the bootstrap
        connection where it reached the broker, else new ones, opened side by side, so a
        read that asks several brokers waits for the slowest one's handshakes, not the sum
        of them (at 20 ms each, three brokers' TCP, ApiVersions and SASL rounds cost
        60-100 ms one after another): a thread each, threading imported only then. One
        at a time with GSSAPI, whose Kerberos library is not known to be safe across
        threads (a token source for OAUTHBEARER locks itself)."""
        missing = [n for n in dict.fromkeys(node_ids) if n not in self._connections]
        if any(n not in self._addresses for n in missing):
            self.brokers(deadline)
        boot = self._connections.get("bootstrap")
        opened: list[int] = []
        for node_id in missing:
            host, port = self._addresses[node_id]
            if boot is not None and self._is_bootstrap(boot, node_id, host, port):
                self._connections[node_id] = boot  # the bootstrap server is this broker: no second connection
            else:
                opened.append(node_id)
        if len(opened) < 2 or self.security.mechanism == "GSSAPI":
            for node_id in opened:
                self._connections[node_id] = self._open(*self._addresses[node_id], deadline)
            return
        import threading

        if self.security.tls:
            self.security.ssl_context()  # built once, before the threads share it
        results: dict[int, Connection | BaseException] = {}

        def open_one(node_id: int) -> None:
            try:
                results[node_id] = self._open(*self._addresses[node_id], deadline)
            except BaseException as exc:  # raised below, in the caller's thread
                results[node_id] = exc

        threads = [threading.Thread(target=open_one, args=(n,), name=f"kctl-connect-{n}", daemon=True) for n in opened]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        failures = []
        for node_id in opened:
            result = results[node_id]
            if isinstance(result, BaseException):
                failures.append(result)
            else:
                self._connections[node_id] = result
        if failures:
            raise failures[0]  # what the first of them would have raised opened alone

    def _is_bootstrap(self, boot: Connection, node_id: int, host: str, port: int) -> bool:
        """Whether the bootstrap connection reached broker `node_id` (advertised at
        host:port), so that a second connection, its handshakes and ApiVersions are saved:
        the same address or, without TLS, a name that resolves to the address the bootstrap
        connection reached (`localhost` for 127.0.0.1, a DNS alias). With TLS one address
        may front every broker, told apart by SNI. (A Metadata answer listing one broker
        does not prove that broker answered: a fenced broker still answers, listing others.)"""
        if boot.address == f"{host}:{port}":
            return True
        if self.security.tls or port != boot.peer[1]:
            return False
        import _socket

        try:
            resolved = _socket.getaddrinfo(host.encode() if host.isascii() else host, port, 0, _socket.SOCK_STREAM)
        except OSError:
            return False
        return any(address[:2] == boot.peer for *_, address in resolved)

    def learn(self, node_id: int, host: str, port: int) -> None:
        """A broker's address from an answer (FindCoordinator names the coordinator's)."""
        self._addresses[node_id] = (host, port)

    def brokers(self, deadline: float) -> list[int]:
        """The cluster's brokers (a Metadata request for no topics)."""
        return sorted(b.node_id for b in self.metadata([], deadline).brokers)

    def metadata(self, topics: Sequence[str] | None, deadline: float, *, topic_ids: bool = True, create: bool = False) -> t.MetadataResponse:
        """A Metadata answer for `topics` (None: every topic; never creating one unless
        `create`), its brokers learnt. Without `topic_ids`, version 9 at most: the answer has
        no topic ids, whose decoding imports uuid (2 ms of a read that does not show them)."""
        connection = self.bootstrap(deadline)
        version = connection.version("Metadata", 4, 12 if topic_ids else 9)
        fields = {"topics": None if topics is None else [{"name": t} for t in topics], "allow_auto_topic_creation": create}
        answer = connection.request("Metadata", version, fields, deadline)
        for broker in answer.brokers:
            self.learn(broker.node_id, broker.host, broker.port)
        return answer

    # -- requests ---------------------------------------------------------------------------

    def call(self, action: str, body: Callable[[], Any]) -> Any:
        """Run body() under the session's timeout, turning what fails into one KctlError.
        A connection that drops (a broker restarted, or closed it after
        connections.max.idle.ms in a long `--watch`) is opened again and body() run once
        more: every caller's requests are reads."""
        try:
            try:
                return body()
            except OSError as exc:
                if isinstance(exc, _NoVersions):
                    # As if the connection had failed when it opened: the bootstrap servers
                    # are tried again, one after another, each asked ApiVersions first;
                    # silent until the deadline, it is unreachable, as without the cache.
                    if not self._pipelined or any(isinstance(cause, TimeoutError) for cause in exc.causes):
                        raise
                elif isinstance(exc, (ConnectFailed, TimeoutError)) or not self._connections:
                    raise
                debug("kctl.wire", "connection lost (%s): reconnecting", exc)
                self.close()
                self._pipelined = False
                return body()
        except KctlError as exc:
            if exc.action is not None:
                raise
            # Raised below the action's level ("authentication failed at ..."): name the action.
            raise exc.but(action=action) from exc
        except ConnectFailed as exc:
            raise self._unreachable(action, exc.causes) from exc
        except TimeoutError as exc:
            raise TimeoutError_(action=action, cause=f"no answer from {self.settings.bootstrap_servers} within {self.timeout:g}s",
                                hint="raise {timeout} if the cluster is slow") from exc
        except codec.CodecError as exc:
            raise KctlError(action=action, cause=f"malformed answer from the cluster: {exc}") from exc
        except OSError as exc:
            self.close()
            raise UnreachableError(action=action, cause=f"cluster unreachable at {self.settings.bootstrap_servers}: {_describe(exc)}",
                                   hint=_REACH_HINT) from exc

    def _unreachable(self, action: str, causes: Sequence[BaseException]) -> KctlError:
        for cause in causes:
            if isinstance(cause, KctlError):
                return cause if cause.action is not None else cause.but(action=action)
        why = _describe(causes[-1]) if causes else "no bootstrap server given"
        return UnreachableError(action=action, cause=f"cluster unreachable at {self.settings.bootstrap_servers}: {why}", hint=_REACH_HINT)

    def fan_out(self, requests: Sequence[tuple[Any, Api[Any, R], Any, int | None, int | None]], deadline: float) -> list[R]:
        """Send every request — (node id or None for any broker, API, fields or a function
        of the version giving them, lowest and highest version) — before reading any
        answer; the answers (codec.Structs, typed by the API) in order."""
        self._open_nodes([node for node, *_ in requests if node is not None], deadline)
        sent = []
        for node_id, api, fields, low, high in requests:
            name = api.name
            connection = self.bootstrap(deadline) if node_id is None else self.node(node_id, deadline)
            try:
                version = connection.version(name, low, high)
            except UnsupportedApi as exc:
                # UNSUPPORTED_VERSION: what a broker without the API would answer.
                raise InvalidError(cause=f"the cluster does not support {name}: {exc}", kafka_error="UNSUPPORTED_VERSION") from exc
            sent.append((connection, connection.send(name, version, fields(version) if callable(fields) else fields, deadline)))
        return [connection.receive(correlation, deadline) for connection, correlation in sent]  # type: ignore[misc]

    def deadline(self) -> float:
        return time.monotonic() + self.timeout

    def close(self) -> None:
        for connection in set(self._connections.values()):
            connection.close()
        self._connections.clear()
        self.coordinators.clear()  # found again on the new connections


class ApiVersionsCache:
    """What a broker answered to ApiVersions, kept between runs in
    $XDG_CACHE_HOME/kctl/api-versions/ (a line per API: key, lowest, highest version), one
    file per address and TLS, so that the next run's first requests can go out beside its
    ApiVersions. Only a guess: the answer is still read on every connection and must agree
    (Connection). Plain text, not JSON: importing json would cost every read ~1 ms."""

    def __init__(self, address: str, tls: bool):
        from kctl.config.file import cache_path  # imported by every command already (contexts)

        name = "".join(c if c.isalnum() or c in ".-" else "_" for c in address) + ("-tls" if tls else "")
        self.path = os.path.join(cache_path(os.environ), "api-versions", name)

    def read(self) -> dict[int, tuple[int, int]] | None:
        try:
            with open(self.path, encoding="ascii") as file:
                versions = {}
                for line in file:
                    key, low, high = line.split()
                    versions[int(key)] = (int(low), int(high))
                return versions or None
        except (OSError, ValueError):
            return None  # none yet, or unreadable: ask, as without a cache

    def write(self, versions: dict[int, tuple[int, int]], known: dict[int, tuple[int, int]] | None) -> None:
        if versions == known:
            return
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            import _thread  # connections opened side by side may write at once (WireClient._open_nodes)

            temporary = f"{self.path}.{os.getpid()}.{_thread.get_ident()}"
            with open(temporary, "w", encoding="ascii") as file:
                file.write("".join(f"{key} {low} {high}\n" for key, (low, high) in sorted(versions.items())))
            os.replace(temporary, self.path)
        except OSError:
            pass  # a read-only home: every run asks first, as without a cache


class ConnectFailed(ConnectionError):
    """No bootstrap server could be connected to; `causes` says why for each."""

    def __init__(self, causes: list[BaseException]):
        super().__init__(f"no bootstrap server answered: {_describe(causes[-1]) if causes else 'none given'}")
        self.causes = causes


class _NoVersions(ConnectFailed):
    """A connection whose first requests went out beside ApiVersions got no answer to it."""


def _describe(exc: BaseException) -> str:
    """Why a connection failed, in librdkafka's words (_RESOLVE, _TRANSPORT, _SSL), so a
    cluster that cannot be reached reads the same whichever client found out."""
    import socket
    import ssl

    if isinstance(exc, socket.gaierror):
        return f"_RESOLVE: failed to resolve host: {exc.strerror or exc}"
    if isinstance(exc, ssl.SSLError):
        return f"_SSL: {exc}"
    if isinstance(exc, socket.timeout):
        return "_TRANSPORT: Connection timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return f"_TRANSPORT: {exc.strerror}"  # "Connection refused", as librdkafka says it
    return f"_TRANSPORT: {exc}"


def ask_every_broker(wire: WireClient, action: str, api: Api[Q, R], fields: Q, low: int, high: int,
                     loading: str, *, nodes: Callable[[float], list[int] | None] | None = None) -> list[tuple[int, R]]:
    """(broker id, answer) of every broker to `api` (or of those `nodes(deadline)` names;
    None while it cannot say yet), all asked at once. While one answers that a coordinator
    is loading, not elected yet or has moved (COORDINATOR_RETRIABLE, after a restart or a
    leader change), every broker is asked again until --timeout, as Kafka's admin client
    does; `loading` says what was still loading then. Any other error code is raised."""
    from kctl.admin.client.errors import COORDINATOR_RETRIABLE, RETRY_BACKOFF, for_kafka_code
    from kctl.polling import poll

    def ask() -> list[tuple[int, Any]] | None:
        deadline = wire.deadline()
        asked = wire.brokers(deadline) if nodes is None else nodes(deadline)
        if asked is None:
            return None
        answers: list[Any] = wire.fan_out([(node, api, fields, low, high) for node in asked], deadline)  # each has an error code
        for answer in answers:
            if answer.error_code:
                if error_name(answer.error_code) in COORDINATOR_RETRIABLE:
                    return None
                raise for_kafka_code(answer.error_code, None, action)
        return list(zip(asked, answers))

    found = poll(lambda: wire.call(action, ask), lambda answer: answer is not None, timeout=wire.timeout,
                 interval=RETRY_BACKOFF, stop_before=True)
    if found is None:
        raise TimeoutError_(action=action, cause=f"{loading} at the timeout", hint="raise {timeout} if the cluster is starting or electing")
    return found
