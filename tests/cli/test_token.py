"""`kctl token`: delegation tokens (KIP-48) created, used to authenticate (kctl's wire
client, librdkafka through kctl's bridge, and Kafka's own Java client), listed, renewed
and expired, then refused — on Apache Kafka 4.x with delegation.token.secret.key and on
the bundled broker secured the same way (`secured`)."""

from __future__ import annotations

import json
import time

import pytest

from kctl.errors import ExitCode
from tests.security.flags import sasl_flags

pytestmark = pytest.mark.integration


def _with_token(cluster, token: dict) -> list[str]:
    return ["-b", cluster.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-256",
            "-X", f"sasl.username={token['token_id']}", "-X", f"sasl.password={token['hmac']}", "-X", "sasl.scram.tokenauth=true",
            "--timeout", "5"]


def _kafka_client_lists_topics(cluster, token: dict) -> str:
    """Kafka's own Java client (kafka-topics --list) logged in with the token."""
    properties = cluster.workdir / f"token-{token['token_id']}.properties"
    properties.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                          "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                          f'username="{token["token_id"]}" password="{token["hmac"]}" tokenauth="true";\n')
    proc = cluster.run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", cluster.bootstrap,
                            "--command-config", str(properties), "--list")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_a_token_created_used_renewed_and_expired(kctl, secured, unique_name):
    admin, alice, bob = sasl_flags(secured), sasl_flags(secured, "alice"), sasl_flags(secured, "bob")
    made = kctl(*admin, "token", "create", "--renewer", "User:alice", "--max-lifetime", "2h", "-o", "json")
    assert made.exit_code == 0, made.stderr
    (token,) = json.loads(made.stdout)
    assert (token["owner"], token["renewers"]) == ("User:admin", ["User:alice"])
    assert token["issued_ms"] <= token["expires_ms"] <= token["max_ms"]
    assert abs(token["max_ms"] - token["issued_ms"] - 2 * 3600 * 1000) < 5000, token
    assert f"sasl.username={token['token_id']}" in made.stderr and token["hmac"] not in made.stderr

    # Authenticated with it, as its owner: kctl's own client, librdkafka's through kctl's
    # bridge (topic create, record produce and consume), and Kafka's Java client.
    with_token = _with_token(secured, token)
    topic = unique_name("tok")

    # At once: create returned once every broker knew the token.
    assert kctl(*with_token, "topic", "list").exit_code == 0
    created = kctl(*with_token, "topic", "create", topic)
    assert created.exit_code == 0, created.stderr
    assert kctl(*with_token, "record", "produce", topic, input="made with a token\n").exit_code == 0
    consumed = kctl(*with_token, "record", "consume", topic, "-n", "1", "-o", "jsonl")
    assert json.loads(consumed.stdout)["value"] == "made with a token", consumed.stderr
    assert topic in _kafka_client_lists_topics(secured, token).split()
    # A token cannot make tokens (Kafka: not on a token-authenticated channel).
    refused = kctl(*with_token, "token", "create")
    assert (refused.exit_code, len(refused.stderr.splitlines())) == (ExitCode.NOT_AUTHORIZED, 2), refused.stderr
    assert "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED" in refused.stderr

    # Seen by its owner and its renewer; not by bob.
    listed = json.loads(kctl(*admin, "token", "list", "-o", "json").stdout)
    mine = [t for t in listed if t["token_id"] == token["token_id"]]
    assert len(mine) == 1 and mine[0]["hmac"] is None and mine[0]["renewers"] == ["User:alice"]
    assert token["token_id"] in kctl(*alice, "token", "list").stdout
    assert token["token_id"] not in kctl(*bob, "token", "list").stdout
    shown = json.loads(kctl(*admin, "token", "describe", token["token_id"], "--show-hmac", "-o", "json").stdout)
    assert shown[0]["hmac"] == token["hmac"]

    # Renewed by its renewer, for 10 minutes; bob may not.
    before = int(time.time() * 1000)
    renewed = kctl(*alice, "token", "renew", token["token_id"], "--period", "10m", "-o", "json")
    assert renewed.exit_code == 0, renewed.stderr
    expires = json.loads(renewed.stdout)[0]["expires_ms"]
    assert before + 595_000 <= expires <= int(time.time() * 1000) + 605_000
    not_his = kctl(*bob, "token", "renew", "--hmac", token["hmac"])
    assert not_his.exit_code == ExitCode.NOT_AUTHORIZED and "DELEGATION_TOKEN_OWNER_MISMATCH" in not_his.stderr, not_his.stderr
    unseen = kctl(*bob, "token", "renew", token["token_id"])
    assert unseen.exit_code == ExitCode.NOT_FOUND, unseen.stderr

    # Expired now: the cluster forgets it, and it no longer logs in.
    assert kctl(*admin, "token", "expire", token["token_id"]).exit_code == ExitCode.ABORTED  # no terminal, no --yes
    expired = kctl(*admin, "token", "expire", token["token_id"], "--yes")
    assert expired.exit_code == 0, expired.stderr

    def refused_now() -> None:
        result = kctl(*with_token, "topic", "list")
        assert result.exit_code == ExitCode.NOT_AUTHORIZED and "SASL_AUTHENTICATION_FAILED" in result.stderr, result.stderr
    _eventually(refused_now)
    gone = kctl(*admin, "token", "describe", token["token_id"])
    assert (gone.exit_code, gone.stdout) == (ExitCode.NOT_FOUND, ""), gone.stderr

    # One made for alice by admin (a super user: CreateTokens on any user): hers, admin its requester.
    (for_alice,) = json.loads(kctl(*admin, "token", "create", "--owner", "User:alice", "-o", "json").stdout)
    assert (for_alice["owner"], for_alice["requester"]) == ("User:alice", "User:admin"), for_alice
    assert for_alice["token_id"] in kctl(*alice, "token", "list", "--owner", "User:alice").stdout
    not_bobs = kctl(*bob, "token", "create", "--owner", "User:alice")
    assert not_bobs.exit_code == ExitCode.NOT_AUTHORIZED and "DELEGATION_TOKEN_AUTHORIZATION_FAILED" in not_bobs.stderr, not_bobs.stderr


def test_token_bad_input_is_one_line(kctl, secured, unique_name):
    admin = sasl_flags(secured)
    for args, code, says in (
        (("token", "describe", "no-such-token"), ExitCode.NOT_FOUND, "no delegation token no-such-token"),
        (("token", "renew", "no-such-token"), ExitCode.NOT_FOUND, "no delegation token no-such-token"),
        (("token", "renew", "--hmac", "not base64!"), ExitCode.USAGE, "not base64"),
        (("token", "renew", "--hmac", "AAAA"), ExitCode.NOT_FOUND, "DELEGATION_TOKEN_NOT_FOUND"),
        (("token", "expire", "--hmac", "AAAA", "--yes"), ExitCode.NOT_FOUND, "DELEGATION_TOKEN_NOT_FOUND"),
        (("token", "renew"), ExitCode.USAGE, "name the token"),
        (("token", "renew", "x", "--hmac", "AAAA"), ExitCode.USAGE, "name the token"),
        (("token", "renew", "--hmac", "AAAA", "--period", "0s"), ExitCode.USAGE, "not a positive duration"),
        (("token", "create", "--max-lifetime", "soon"), ExitCode.USAGE, "parse duration"),
        (("token", "create", "--renewer", "Group:ops"), ExitCode.INVALID, "INVALID_PRINCIPAL_TYPE"),
    ):
        result = kctl(*admin, *args)
        assert (result.exit_code, result.stdout) == (code, ""), (args, result.stderr)
        assert says in result.stderr and len(result.stderr.splitlines()) <= 2, (args, result.stderr)
    # false is no token: librdkafka's clients (topic create) are not handed kctl's own setting.
    assert kctl(*admin, "-X", "sasl.scram.tokenauth=false", "topic", "create", unique_name("no-token")).exit_code == 0
    for tokenauth, says in (("yes", "sasl.scram.tokenauth must be true or false"), ("true", "needs sasl.mechanism SCRAM")):
        result = kctl("-b", secured.bootstrap, "-X", f"sasl.scram.tokenauth={tokenauth}", "topic", "list")
        assert result.exit_code == ExitCode.CONFIG and says in result.stderr, result.stderr
    wrong = _with_token(secured, {"token_id": "no-such-token", "hmac": "AAAA"})
    refused = kctl(*wrong, "topic", "list")
    assert refused.exit_code == ExitCode.NOT_AUTHORIZED and len(refused.stderr.splitlines()) == 2, refused.stderr


def test_token_requests_on_an_unauthenticated_channel_are_refused(kctl, cluster):
    """Kafka refuses token requests on PLAINTEXT (and one-way TLS) channels: the suite's
    plaintext clusters, the bundled broker's and Kafka's, say so in one line."""
    result = kctl("-b", cluster.bootstrap, "token", "create")
    assert result.exit_code == ExitCode.NOT_AUTHORIZED, result.stderr
    assert "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED" in result.stderr and len(result.stderr.splitlines()) == 2, result.stderr


def _eventually(check, timeout: float = 15) -> None:
    from tests.support.eventually import eventually

    eventually(check, timeout=timeout)
