"""A local OAuth 2 token endpoint for tests: answers the client credentials grant with
unsecured JWTs (alg "none"), which a Kafka node with the default OAUTHBEARER validator
accepts. It stands in for an identity provider, which these machines do not have; the
clients' side of OIDC (the request, the Basic credentials, the token's use) is real.

    with TokenEndpoint({"kctl": "s3cret"}, principal="admin") as endpoint:
        endpoint.url        # http://127.0.0.1:PORT/token
        endpoint.requests   # what each client sent: (client id, grant type, scope)
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def unsecured_jwt(subject: str, lifetime: int) -> str:
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    now = int(time.time())
    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'iat': now, 'exp': now + lifetime})}."


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up before reading its answer (librdkafka's background token
    refresh, when the command that started it ends) is not an error of the endpoint's:
    socketserver would print its traceback to stderr, which an in-process command under
    test captures as its own."""

    def handle_error(self, request, client_address):
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class TokenEndpoint:
    def __init__(self, clients: dict[str, str], *, principal: str, lifetime: int = 3600):
        self.clients = clients
        self.principal = principal
        self.lifetime = lifetime
        self.requests: list[tuple[str | None, str | None, str | None]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                client = secret = None
                auth = self.headers.get("Authorization", "")
                if auth.startswith("Basic "):
                    client, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
                endpoint.requests.append((client, form.get("grant_type", [None])[0], form.get("scope", [None])[0]))
                if endpoint.clients.get(client) != secret:
                    self._answer(401, {"error": "invalid_client"})
                    return
                self._answer(200, {"access_token": unsecured_jwt(endpoint.principal, endpoint.lifetime),
                                   "token_type": "bearer", "expires_in": endpoint.lifetime})

            def _answer(self, status: int, body: dict):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token"

    def __enter__(self) -> TokenEndpoint:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
