"""OAUTHBEARER tokens for both of kctl's Kafka clients.

A token program is kctl's own: `sasl.oauthbearer.token.command` (a shell command whose
stdout is the token) or `sasl.oauthbearer.token.file` (a file a sidecar keeps fresh),
read again before the token expires (its JWT `exp`, or `sasl.oauthbearer.token.lifetime`
seconds). librdkafka gets it through its `oauth_cb` (with_token_program), the wire client
through the session's token source; Spark's executors run the same command themselves.

librdkafka gets its tokens itself for the two mechanisms it knows (an unsecured JWT from
`sasl.oauthbearer.config`, OIDC client credentials from `sasl.oauthbearer.method=oidc`);
kctl's wire client gets the same tokens from a source built here from the same
properties, so a context means the same thing to both clients. AWS MSK IAM is a token
source of kctl's own (AWS's signer, the `msk` extra), handed to librdkafka as its
`oauth_cb` and to the wire client.

A setting the wire client cannot honour is a ConfigError naming it: it never falls back
to another mechanism.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Mapping

from kctl.admin.client.properties import TOKEN_COMMAND, TOKEN_FILE, TOKEN_LIFETIME, TOKEN_PROGRAM_PROPERTIES, uses_token_program
from kctl.errors import ConfigError, NotAuthorizedError, UnreachableError

# Tokens are renewed once this share of their lifetime has passed, as librdkafka does.
_REFRESH_AT = 0.8


class TokenSource:
    """A cached token from `fetch` (-> token, expiry in epoch seconds), renewed after 80%
    of its lifetime; thread-safe, because librdkafka calls its callback from its own thread."""

    def __init__(self, fetch: Callable[[], tuple[str, float]], extensions: Mapping[str, str] | None = None,
                 clock: Callable[[], float] = time.time):
        self._fetch = fetch
        self._clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._renew_at = 0.0
        self._expiry = 0.0
        self.extensions = dict(extensions or {})

    def current(self) -> tuple[str, float]:
        with self._lock:
            now = self._clock()
            if self._token is None or now >= self._renew_at:
                token, expiry = self._fetch()
                self._token, self._expiry = token, expiry
                self._renew_at = now + max(0.0, expiry - now) * _REFRESH_AT
            return self._token, self._expiry

    def librdkafka_callback(self, _oauthbearer_config: str) -> tuple[str, float]:
        """confluent-kafka's oauth_cb: (token, expiry in epoch seconds). librdkafka calls
        it again before the expiry, so it always gets a fresh token."""
        with self._lock:
            self._token = None  # librdkafka decides when to renew; never hand back a stale one
        return self.current()


# -- the token kinds ------------------------------------------------------------------------


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def unsecured_jwt(principal: str, life_seconds: int, scope: list[str] | None = None, now: float | None = None) -> tuple[str, float]:
    """The unsecured JWS (alg "none") librdkafka builds from sasl.oauthbearer.config and
    Kafka's default OAUTHBEARER validator accepts: for development and tests only."""
    issued = int(now if now is not None else time.time())
    claims: dict = {"sub": principal, "iat": issued, "exp": issued + life_seconds}
    if scope:
        claims["scope"] = scope
    token = f"{_b64url(json.dumps({'alg': 'none'}).encode())}.{_b64url(json.dumps(claims).encode())}."
    return token, float(claims["exp"])


def parse_unsecured_config(text: str) -> tuple[str, int, list[str], dict[str, str]]:
    """librdkafka's sasl.oauthbearer.config for unsecured JWTs: space-separated
    principal=, scope= (comma list), lifeSeconds=, extension_NAME=value."""
    principal, life, scope, extensions = None, 3600, [], {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(action="read sasl.oauthbearer.config", cause=f"{item!r} is not key=value")
        if key == "principal":
            principal = value
        elif key == "lifeSeconds":
            if not value.isdigit() or int(value) <= 0:
                raise ConfigError(action="read sasl.oauthbearer.config", cause=f"lifeSeconds={value!r} is not a positive number")
            life = int(value)
        elif key == "scope":
            scope = [s for s in value.split(",") if s]
        elif key.startswith("extension_"):
            extensions[key[len("extension_"):]] = value
        elif key == "principalClaimName":
            raise ConfigError(action="configure OAUTHBEARER", cause="principalClaimName is not supported by kctl; the principal goes in the sub claim")
        else:
            raise ConfigError(action="read sasl.oauthbearer.config", cause=f"unknown key {key!r}")
    if not principal:
        raise ConfigError(action="configure OAUTHBEARER", cause="sasl.oauthbearer.config needs principal=NAME for unsecured JWTs")
    return principal, life, scope, extensions


def oidc_client_credentials(properties: Mapping[str, str]) -> Callable[[], tuple[str, float]]:
    """A fetch of an access token from the OIDC token endpoint with the client
    credentials grant, as librdkafka's sasl.oauthbearer.method=oidc does."""
    import urllib.error
    import urllib.parse
    import urllib.request

    from kctl.admin.client.tls import TlsSettings, client_context

    url = properties.get("sasl.oauthbearer.token.endpoint.url")
    client_id = properties.get("sasl.oauthbearer.client.id")
    secret = properties.get("sasl.oauthbearer.client.secret")
    missing = [k for k, v in (("sasl.oauthbearer.token.endpoint.url", url), ("sasl.oauthbearer.client.id", client_id),
                              ("sasl.oauthbearer.client.secret", secret)) if not v]
    if missing or url is None:
        raise ConfigError(action="configure OAUTHBEARER (oidc)", cause=f"{', '.join(missing)} not set")
    form = {"grant_type": "client_credentials"}
    if properties.get("sasl.oauthbearer.scope"):
        form["scope"] = properties["sasl.oauthbearer.scope"]
    body = urllib.parse.urlencode(form).encode()
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    context = client_context(TlsSettings(ca_location=properties.get("https.ca.location") or None)) if url.startswith("https:") else None

    def fetch() -> tuple[str, float]:
        request = urllib.request.Request(
            url, data=body, method="POST",
            headers={"Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise NotAuthorizedError(action=f"get an OAUTHBEARER token from {url}", cause=f"HTTP {exc.code} {exc.reason}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise UnreachableError(action=f"get an OAUTHBEARER token from {url}", cause=f"{getattr(exc, 'reason', exc)}") from exc
        except ValueError as exc:
            raise NotAuthorizedError(action=f"get an OAUTHBEARER token from {url}", cause="the answer is not JSON") from exc
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token:
            raise NotAuthorizedError(action=f"get an OAUTHBEARER token from {url}", cause="no access_token in the answer")
        expires_in = answer.get("expires_in")
        return token, time.time() + (float(expires_in) if isinstance(expires_in, int | float) else 3600.0)

    return fetch


def msk_iam(settings: Mapping[str, str]) -> Callable[[], tuple[str, float]]:
    """A fetch of an AWS MSK IAM token from AWS's signer (pip install 'kctl[msk]'): the
    default credential chain, a named profile, or an assumed role."""
    try:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
    except ImportError as exc:
        raise ConfigError(
            action="use AWS MSK IAM", cause="the aws-msk-iam-sasl-signer-python package is not installed",
            hint="pip install 'kctl[msk]'",
        ) from exc
    region = settings.get("region")
    if not region:
        raise ConfigError(action="use AWS MSK IAM", cause="no region set", hint="kctl context set NAME --aws-msk-iam-region REGION, or KCTL_AWS_MSK_IAM_REGION")

    def fetch() -> tuple[str, float]:
        try:
            if settings.get("role-arn"):
                args = [region, settings["role-arn"]] + ([settings["role-session-name"]] if settings.get("role-session-name") else [])
                token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_role_arn(*args)
            elif settings.get("profile"):
                token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_profile(region, settings["profile"])
            else:
                token, expiry_ms = MSKAuthTokenProvider.generate_auth_token(region)
        except Exception as exc:  # noqa: BLE001 - botocore's credential errors are many
            raise NotAuthorizedError(action="sign an AWS MSK IAM token", cause=f"{type(exc).__name__}: {exc}") from exc
        return token, expiry_ms / 1000.0

    return fetch


# -- token programs: a command or a file ----------------------------------------------------------

_PROGRAM_HINT = f"{TOKEN_COMMAND} must print the token (a JWT, or set {TOKEN_LIFETIME}) on stdout and exit 0"


def token_program(properties: Mapping[str, str], timeout: float = 30.0) -> Callable[[], tuple[str, float]]:
    """A fetch of the token from the command or the file the settings name."""
    command, path = properties.get(TOKEN_COMMAND), properties.get(TOKEN_FILE)
    if command and path:
        raise ConfigError(action="configure OAUTHBEARER", cause=f"set one of {TOKEN_COMMAND} and {TOKEN_FILE}, not both")
    lifetime_text = properties.get(TOKEN_LIFETIME)
    lifetime = None
    if lifetime_text is not None:
        try:
            lifetime = float(lifetime_text)
        except ValueError:
            lifetime = -1.0
        if not lifetime > 0:
            raise ConfigError(action="configure OAUTHBEARER", cause=f"{TOKEN_LIFETIME}={lifetime_text!r} is not a positive number of seconds")

    def fetch() -> tuple[str, float]:
        if command:
            text, where = _run_token_command(command, timeout), f"{TOKEN_COMMAND}"
        else:
            try:
                with open(path or "", encoding="utf-8") as handle:
                    text = handle.read()
            except OSError as exc:
                raise NotAuthorizedError(action=f"read the OAUTHBEARER token file {path}", cause=f"{exc.strerror or exc}") from exc
            where = f"the token file {path}"
        token = text.strip()
        if not token or len(token.split()) != 1:
            raise NotAuthorizedError(action="get an OAUTHBEARER token", cause=f"{where} gave {'nothing' if not token else 'more than one word'}",
                                     hint=_PROGRAM_HINT)
        expiry = _jwt_expiry(token)
        if lifetime is not None:
            expiry = time.time() + lifetime if expiry is None else min(expiry, time.time() + lifetime)
        if expiry is None:
            raise NotAuthorizedError(action="get an OAUTHBEARER token", cause=f"the token from {where} is not a JWT with an exp claim, "
                                     f"so kctl cannot tell when to renew it", hint=f"set {TOKEN_LIFETIME}=SECONDS")
        return token, expiry

    return fetch


def _run_token_command(command: str, timeout: float) -> str:
    """The command's stdout; a failure in one line: its status and the first line of its
    stderr (the token, on stdout, is never shown)."""
    import subprocess

    try:
        proc = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)  # noqa: S602 - the user's own command line, as a shell runs it
    except subprocess.TimeoutExpired as exc:
        raise NotAuthorizedError(action="get an OAUTHBEARER token", cause=f"{TOKEN_COMMAND} did not finish within {timeout:g}s") from exc
    except OSError as exc:
        raise NotAuthorizedError(action="get an OAUTHBEARER token", cause=f"{TOKEN_COMMAND} could not start: {exc.strerror or exc}") from exc
    if proc.returncode != 0:
        first = next((line.strip() for line in proc.stderr.splitlines() if line.strip()), "no output on stderr")
        raise NotAuthorizedError(action="get an OAUTHBEARER token", cause=f"{TOKEN_COMMAND} exited with status {proc.returncode}: {first}",
                                 hint=_PROGRAM_HINT)
    return proc.stdout


def _jwt_expiry(token: str) -> float | None:
    """A JWT's exp claim (epoch seconds), or None when the token is not a JWT with one."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, TypeError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


# One source per process and settings: every librdkafka client of a process (Spark's
# executors build several) shares one token and runs the command once per renewal.
_PROGRAM_SOURCES: dict[tuple, TokenSource] = {}
_PROGRAM_LOCK = threading.Lock()


def with_token_program(config: Mapping[str, object], source: TokenSource | None = None) -> dict:
    """librdkafka `config` with a token program's properties (which librdkafka does not
    know) replaced by its `oauth_cb`, served by `source` (else one shared per process)."""
    if not uses_token_program(config):
        return dict(config)
    if source is None:
        key = tuple(str(config.get(k)) for k in TOKEN_PROGRAM_PROPERTIES)
        with _PROGRAM_LOCK:
            source = _PROGRAM_SOURCES.get(key)
            if source is None:
                properties = {k: str(v) for k, v in config.items() if k in TOKEN_PROGRAM_PROPERTIES}
                source = _PROGRAM_SOURCES[key] = TokenSource(token_program(properties))
    bridged = {k: v for k, v in config.items() if k not in TOKEN_PROGRAM_PROPERTIES and k != "sasl.mechanisms"}
    bridged["sasl.mechanism"] = "OAUTHBEARER"
    bridged["oauth_cb"] = source.librdkafka_callback
    return bridged


# -- choosing ---------------------------------------------------------------------------------


def token_source(properties: Mapping[str, str], aws_msk_iam: Mapping[str, str] | None) -> TokenSource:
    """The token source kctl's wire client needs for OAUTHBEARER with these settings."""
    if aws_msk_iam:
        return TokenSource(msk_iam(aws_msk_iam))
    if uses_token_program(properties):
        return TokenSource(token_program(properties))
    if properties.get("sasl.oauthbearer.grant.type", "client_credentials") != "client_credentials":
        raise ConfigError(
            action="connect", cause=f"sasl.oauthbearer.grant.type={properties['sasl.oauthbearer.grant.type']} is not supported by kctl's own client",
            hint="it supports OIDC client credentials and unsecured JWTs",
        )
    for key in ("sasl.oauthbearer.metadata.authentication.type", "sasl.oauthbearer.assertion.private.key.file"):
        if properties.get(key) and properties[key].lower() != "none":
            raise ConfigError(action="connect", cause=f"{key} is not supported by kctl's own client", hint="it supports OIDC client credentials and unsecured JWTs")
    method = properties.get("sasl.oauthbearer.method", "default").lower()
    if method == "oidc":
        extensions = dict(item.split("=", 1) for item in properties.get("sasl.oauthbearer.extensions", "").split(",") if "=" in item)
        return TokenSource(oidc_client_credentials(properties), extensions)
    if properties.get("enable.sasl.oauthbearer.unsecure.jwt", "false").lower() == "true":
        principal, life, scope, extensions = parse_unsecured_config(properties.get("sasl.oauthbearer.config", ""))
        return TokenSource(lambda: unsecured_jwt(principal, life, scope), extensions)
    raise ConfigError(
        action="configure OAUTHBEARER", cause="no token source",
        hint=f"set {TOKEN_COMMAND} or {TOKEN_FILE}, sasl.oauthbearer.method=oidc with its client id, secret and token endpoint, "
        "enable.sasl.oauthbearer.unsecure.jwt=true with sasl.oauthbearer.config=principal=NAME, or a context's aws-msk-iam",
    )
