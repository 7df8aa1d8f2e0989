"""Kafka Connect's REST API: where the cluster is, and the one client every operation goes
through (authentication, TLS, keep-alive, retries while the workers rebalance, and each
answer's status mapped to kctl's errors and exit statuses).

http.client from the standard library: one keep-alive connection per command, and no
import cost beyond it (urllib.request alone took 39 ms).
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from kctl.config.secrets import read_secret
from kctl.errors import (
    AlreadyExistsError,
    ConfigError,
    InvalidError,
    KctlError,
    NotAuthorizedError,
    NotFoundError,
    TimeoutError_,
    UnreachableError,
)

# While the workers rebalance, Connect answers 409 (or 503 while a worker starts, or 500
# naming the rebalance for a forwarded request): asked again after these pauses, within
# the command's --timeout.
RETRY_PAUSES = (0.25, 0.5, 1.0, 2.0)


class NoConnectCluster(ConfigError):
    """No Connect cluster is configured (none in the context, none in the environment):
    commands for which Connect is optional (export, top) go on without it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectSettings:
    # The context's name for this cluster (None: from a URL given on its own).
    name: str | None
    url: str
    # user:password for HTTP basic authentication; never printed.
    basic_auth: str | None = None
    # A bearer token (static); never printed.
    bearer_token: str | None = None
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    timeout: float = 10.0


def connect_settings(clusters: Mapping[str, Mapping[str, str]], env: Mapping[str, str], choice: str | None,
                     timeout: float, *, env_name: str | None = None) -> ConnectSettings:
    """The Connect cluster a command uses: `choice` (--connect: a name of the context's, or
    a URL), else KCTL_CONNECT (`env_name`), else KCTL_CONNECT_URL, else the context's only
    one. KCTL_CONNECT_* settings (`env`) apply over the chosen cluster's."""
    choice = choice or env_name
    given_url = bool(choice and choice.startswith(("http://", "https://")))
    name: str | None
    configured: Mapping[str, str]
    if given_url and choice:
        name, configured = None, {"url": choice}
    elif choice:
        if choice not in clusters:
            known = ", ".join(sorted(clusters)) or "none"
            raise ConfigError(action=f"use Connect cluster {choice!r}", cause=f"the context has no such Connect cluster (it has: {known})",
                              hint="kctl context set NAME --connect-name NAME --connect-url URL adds one")
        name, configured = choice, clusters[choice]
    elif env.get("url"):
        name, configured = None, {}
    elif len(clusters) == 1:
        name, configured = next(iter(clusters.items()))
    elif clusters:
        raise ConfigError(action="choose a Connect cluster", cause=f"the context has {len(clusters)} ({', '.join(sorted(clusters))})",
                          hint="pick one with {connect} NAME or KCTL_CONNECT=NAME")
    else:
        raise NoConnectCluster(action="reach Kafka Connect", cause="no Connect cluster is configured",
                          hint="give {connect} URL, set KCTL_CONNECT_URL, or kctl context set NAME --connect-url URL")
    values = {**env, **configured} if given_url else {**configured, **env}
    url = values["url"]
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(action=f"use Connect cluster {url!r}", cause="expected an http:// or https:// URL")
    owner = f"Connect cluster {name!r}" if name else "the Connect cluster"
    basic_auth = read_secret(values, "basic-auth", owner)
    if basic_auth is not None and ":" not in basic_auth:
        raise ConfigError(action=f"use {owner}'s basic-auth", cause="expected user:password")
    bearer_token = read_secret(values, "bearer-token", owner)
    if basic_auth and bearer_token:
        raise ConfigError(action=f"use {owner}", cause="both basic-auth and bearer-token are set; keep one")
    return ConnectSettings(
        name=name, url=url.rstrip("/"), basic_auth=basic_auth, bearer_token=bearer_token, timeout=timeout,
        ssl_ca_location=values.get("ssl-ca-location"), ssl_certificate_location=values.get("ssl-certificate-location"),
        ssl_key_location=values.get("ssl-key-location"),
    )


def path(*segments: str | int, **query: Any) -> str:
    """A request path of quoted segments (connector names may hold any character) and a
    query string; a list value repeats its key (expand=status&expand=info)."""
    text = "/" + "/".join(quote(str(s), safe="") for s in segments)
    pairs = [(k, v) for k, value in query.items() if value is not None
             for v in (value if isinstance(value, list | tuple) else [value])]
    if pairs:
        text += "?" + urlencode([(k, str(v).lower() if isinstance(v, bool) else v) for k, v in pairs])
    return text


class ConnectClient:
    """One Connect cluster for a command: `get`/`post`/`put`/`patch`/`delete` return the
    answer's JSON (None when empty) or raise a KctlError naming `action`."""

    def __init__(self, settings: ConnectSettings):
        self.settings = settings
        parts = urlsplit(settings.url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._https else 80)
        self._base = parts.path.rstrip("/")
        self._headers = {"Accept": "application/json", "User-Agent": "kctl"}
        if settings.basic_auth:
            self._headers["Authorization"] = "Basic " + base64.b64encode(settings.basic_auth.encode()).decode()
        elif settings.bearer_token:
            self._headers["Authorization"] = f"Bearer {settings.bearer_token}"
        self._connection: http.client.HTTPConnection | None = None

    @property
    def url(self) -> str:
        return self.settings.url

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _connect(self) -> http.client.HTTPConnection:
        if self._connection is None:
            timeout = self.settings.timeout
            if self._https:
                from kctl.admin.client.tls import TlsSettings, client_context

                context = client_context(TlsSettings(ca_location=self.settings.ssl_ca_location,
                                                     certificate_location=self.settings.ssl_certificate_location,
                                                     key_location=self.settings.ssl_key_location))
                self._connection = http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=context)
            else:
                self._connection = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        return self._connection

    def get(self, request_path: str, *, action: str) -> Any:
        return self.request("GET", request_path, action=action)

    def post(self, request_path: str, body: Any = None, *, action: str) -> Any:
        return self.request("POST", request_path, body, action=action)

    def put(self, request_path: str, body: Any = None, *, action: str) -> Any:
        return self.request("PUT", request_path, body, action=action)

    def patch(self, request_path: str, body: Any = None, *, action: str) -> Any:
        return self.request("PATCH", request_path, body, action=action)

    def delete(self, request_path: str, *, action: str) -> Any:
        return self.request("DELETE", request_path, action=action)

    def request(self, method: str, request_path: str, body: Any = None, *, action: str) -> Any:
        deadline = time.monotonic() + self.settings.timeout
        attempt = 0
        while True:
            status, answer = self.exchange(method, request_path, body, action=action)
            if status < 300:
                return answer
            error = self._error(status, answer, action, request_path)
            retriable = (status == 503 or (status == 409 and not isinstance(error, AlreadyExistsError))
                         # A request a worker forwards to the leader mid-rebalance comes back
                         # 500 "... because a rebalance is expected" (a CI run): the text is
                         # all that tells it from a real failure.
                         or (status == 500 and "rebalance" in _message(answer).lower()))
            pause = RETRY_PAUSES[min(attempt, len(RETRY_PAUSES) - 1)]
            if not retriable:
                raise error
            if time.monotonic() + pause > deadline:
                raise TimeoutError_(action=action, cause=f"Connect at {self.url} was still rebalancing after {self.settings.timeout:g} s "
                                    f"({_message(answer) or status})", hint="try again, or give a longer {timeout}")
            time.sleep(pause)
            attempt += 1

    def exchange(self, method: str, request_path: str, body: Any = None, *, action: str) -> tuple[int, Any]:
        """One request and its answer's status and JSON, whatever the status (transport
        failures still raise)."""
        payload = None if body is None else json.dumps(body).encode()
        headers = dict(self._headers)
        if payload is not None:
            headers["Content-Type"] = "application/json"
        for retry in (True, False):
            connection = self._connect()
            try:
                connection.request(method, self._base + request_path, body=payload, headers=headers)
                response = connection.getresponse()
                data = response.read()
                if response.will_close:
                    self.close()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                # A kept-alive connection the worker closed meanwhile: once more on a new one.
                self.close()
                if not retry:
                    raise UnreachableError(action=action, cause=f"Connect at {self.url} closed the connection ({exc})") from None
            except TimeoutError:
                self.close()
                raise TimeoutError_(action=action, cause=f"Connect at {self.url} did not answer within {self.settings.timeout:g} s",
                                    hint="give a longer {timeout}") from None
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
                if isinstance(exc, socket.gaierror):
                    reason = f"cannot resolve {self._host}"
                raise UnreachableError(action=action, cause=f"Connect at {self.url} is unreachable: {reason}",
                                       hint="check the URL ({connect}, KCTL_CONNECT_URL or the context's connect settings)") from None
        if not data:
            return response.status, None
        try:
            return response.status, json.loads(data)
        except ValueError:
            return response.status, data.decode("utf-8", "replace").strip()

    def raise_for(self, status: int, answer: Any, action: str) -> None:
        raise self._error(status, answer, action, "")

    def _error(self, status: int, answer: Any, action: str, request_path: str) -> KctlError:
        message = _message(answer) or http.client.responses.get(status, "")
        if status in (401, 403):
            return NotAuthorizedError(action=action, cause=f"Connect at {self.url} answered {status} ({message or 'not authorised'})",
                                      hint="check the Connect cluster's basic-auth or bearer-token settings")
        if status == 404:
            hint = "kctl connect list shows the connectors" if request_path.startswith("/connectors/") else None
            return NotFoundError(action=action, cause=message, hint=hint)
        # Connect answers 409 both for a name already taken and for a rebalance in
        # progress; only its message tells them apart.
        if status == 409 and "already exists" in message:
            return AlreadyExistsError(action=action, cause=message)
        if status == 400 or status == 422:
            return InvalidError(action=action, cause=message)
        return KctlError(action=action, cause=f"Connect at {self.url} answered {status}: {message}")


def _message(answer: Any) -> str:
    if isinstance(answer, dict):
        return str(answer.get("message") or "").strip()
    return answer if isinstance(answer, str) else ""


def _expand(location: str | None) -> str | None:
    return str(Path(location).expanduser()) if location else None
