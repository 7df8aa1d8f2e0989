"""OAUTHBEARER token sources without a broker: AWS MSK IAM's callback is handed to
librdkafka and called again before each token expires, a token source (the wire client's)
reuses a token until 80% of its lifetime, and the OIDC fetch sends the client credentials grant.
(Against a real broker: tests/cli/test_oauth.py.)"""

from __future__ import annotations

import json
import time

import pytest

from kctl.admin.client.oauth import TokenSource, oidc_client_credentials
from kctl.admin.client.session import AdminSession
from kctl.config.model import ClientSettings
from kctl.errors import NotAuthorizedError
from tests.security.token_endpoint import TokenEndpoint


def msk_session(**msk) -> AdminSession:
    settings = ClientSettings(bootstrap_servers="127.0.0.1:1", properties={}, timeout=2, context=None, aws_msk_iam={"region": "eu-west-1", **msk})
    return AdminSession(settings)


def test_msk_iam_settings_become_librdkafka_oauthbearer(fake_signer):
    config = msk_session().client_config()
    assert (config["security.protocol"], config["sasl.mechanism"]) == ("SASL_SSL", "OAUTHBEARER")
    token, expiry = config["oauth_cb"]("")
    assert fake_signer.CALLS == [("generate_auth_token", ("eu-west-1",))]
    assert abs(expiry - (time.time() + fake_signer.LIFETIME)) < 5
    # Each call from librdkafka (its refresh, before expiry) signs a new token.
    config["oauth_cb"]("")
    assert len(fake_signer.CALLS) == 2


def test_librdkafka_renews_the_msk_iam_token_before_it_expires(fake_signer, monkeypatch):
    """librdkafka asks again at 80% of a token's lifetime, connected or not."""
    from confluent_kafka.admin import AdminClient

    monkeypatch.setattr(fake_signer, "LIFETIME", 2)
    config = msk_session().client_config()
    config["security.protocol"] = "SASL_PLAINTEXT"
    client = AdminClient({**config, "log_level": 0})
    deadline = time.monotonic() + 4.5
    while time.monotonic() < deadline and len(fake_signer.CALLS) < 3:
        client.poll(0.1)
    assert len(fake_signer.CALLS) >= 3, fake_signer.CALLS


def test_a_token_source_reuses_a_token_until_80_percent_of_its_life():
    calls = []
    now = [1000.0]

    def fetch():
        calls.append(now[0])
        return f"token-{len(calls)}", now[0] + 1.0

    source = TokenSource(fetch, {"traceId": "7"}, clock=lambda: now[0])
    assert (source.current()[0], source.current()[0], source.extensions) == ("token-1", "token-1", {"traceId": "7"})
    now[0] += 0.79
    assert source.current()[0] == "token-1"
    now[0] += 0.02
    assert source.current()[0] == "token-2"


def test_oidc_client_credentials_request():
    with TokenEndpoint({"kctl": "s3cret"}, principal="svc", lifetime=120) as endpoint:
        properties = {"sasl.oauthbearer.token.endpoint.url": endpoint.url, "sasl.oauthbearer.client.id": "kctl",
                      "sasl.oauthbearer.client.secret": "s3cret", "sasl.oauthbearer.scope": "kafka admin"}
        token, expiry = oidc_client_credentials(properties)()
        assert endpoint.requests == [("kctl", "client_credentials", "kafka admin")]
        payload = token.split(".")[1]
        assert json.loads(__import__("base64").urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sub"] == "svc"
        assert abs(expiry - (time.time() + 120)) < 5
        with pytest.raises(NotAuthorizedError, match=r"unable to get an OAUTHBEARER token from .*: HTTP 401 Unauthorized"):
            oidc_client_credentials({**properties, "sasl.oauthbearer.client.secret": "wrong"})()
