"""OAUTHBEARER against the secured Kafka node and the secured bundled broker (each with
the unsecured-JWT validator, sessions of at most 10 s), on both of kctl's clients: librdkafka (SCRAM users, topic creation) and kctl's wire client
(cluster describe, quotas, the metadata quorum). Tokens come from librdkafka's unsecured JWT config,
from an OIDC token endpoint (client credentials), and from AWS MSK IAM's signer, which
is replaced by a stand-in that records its calls (no AWS here)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from kctl.errors import ExitCode
from tests.security.token_endpoint import TokenEndpoint, unsecured_jwt

pytestmark = pytest.mark.integration

def oauth_flags(cluster, **properties) -> list[str]:
    flags = ["-b", cluster.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=OAUTHBEARER"]
    for key, value in properties.items():
        flags += ["-X", f"{key.replace('_', '.')}={value}"]
    return flags


def unsecured(cluster, principal: str) -> list[str]:
    return oauth_flags(cluster, **{"enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": f"principal={principal}"})


def test_unsecured_jwt_reaches_both_clients(kctl, secured, unique_name, tmp_path):
    admin = unsecured(secured, "admin")
    info = kctl(*admin, "cluster", "info", "-o", "json")  # the wire client: DescribeCluster, then the quorum
    assert info.exit_code == 0, info.stderr
    assert json.loads(info.stdout)["controller_id"] == 1
    if secured.backend == "kafka":  # the bundled broker has no metadata quorum
        quorum = kctl(*admin, "cluster", "quorum", "-o", "json")
        assert quorum.exit_code == 0, quorum.stderr
        assert [v["node_id"] for v in json.loads(quorum.stdout)["voters"]] == [1]
    users = kctl(*admin, "user", "list", "-o", "json")
    assert users.exit_code == 0, users.stderr
    assert {u["user"] for u in json.loads(users.stdout)} >= {"bob"}

    # The token's principal is the one authorized: alice has no ACLs, on either client.
    alice = unsecured(secured, "alice")
    created = kctl(*alice, "topic", "create", unique_name("oauth"))
    assert (created.exit_code, "TOPIC_AUTHORIZATION_FAILED" in created.stderr) == (ExitCode.NOT_AUTHORIZED, True), created.stderr
    denied = kctl(*alice, "quota", "list")  # the wire client: DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster
    assert denied.exit_code == ExitCode.NOT_AUTHORIZED, denied.stderr
    assert "CLUSTER_AUTHORIZATION_FAILED" in denied.stderr

    # A token past its exp is refused by the broker, for both clients, in one line.
    stale = tmp_path / "stale.jwt"
    stale.write_text(unsecured_jwt("admin", -60))
    expired = oauth_flags(secured, **{"sasl.oauthbearer.token.file": str(stale)})
    for command in (("cluster", "info"), ("topic", "list")):
        refused = kctl(*expired, "--timeout", "10", *command)
        assert refused.exit_code == ExitCode.NOT_AUTHORIZED, (command, refused.stderr)
        assert len(refused.stderr.strip().splitlines()) <= 2, refused.stderr


def test_oidc_client_credentials_on_every_client(kctl, secured):
    with TokenEndpoint({"kctl": "s3cret"}, principal="admin") as endpoint:
        def flags(secret: str) -> list[str]:
            return oauth_flags(secured, **{
                "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": "kctl",
                "sasl.oauthbearer.client.secret": secret, "sasl.oauthbearer.token.endpoint.url": endpoint.url,
                "sasl.oauthbearer.scope": "kafka",
            })

        info = kctl(*flags("s3cret"), "cluster", "info", "-o", "json")  # kctl's wire client
        assert info.exit_code == 0, info.stderr
        users = kctl(*flags("s3cret"), "user", "list", "-o", "json")  # librdkafka (DescribeUserScramCredentials)
        assert users.exit_code == 0, users.stderr
        quotas = kctl(*flags("s3cret"), "quota", "list", "-o", "json")  # the wire client
        assert (quotas.exit_code, quotas.stdout) == (0, "[]\n"), quotas.stderr
        # Each client asked once per command, with the same credentials.
        assert len(endpoint.requests) >= 3
        assert set(endpoint.requests) == {("kctl", "client_credentials", "kafka")}

        for command in (("user", "list"), ("quota", "list")):
            refused = kctl(*flags("wrong"), "--timeout", "10", *command)
            assert refused.exit_code == ExitCode.NOT_AUTHORIZED, (command, refused.stderr)
            assert refused.stderr.startswith("error: unable to "), refused.stderr
            assert "wrong" not in refused.stderr
            assert "invalid_client" in refused.stderr or "HTTP 401" in refused.stderr


def test_debug_hides_the_oidc_client_secret(kctl, secured):
    with TokenEndpoint({"kctl": "s3cret-value"}, principal="admin") as endpoint:
        result = kctl("--debug", *oauth_flags(secured, **{
            "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": "kctl",
            "sasl.oauthbearer.client.secret": "s3cret-value", "sasl.oauthbearer.token.endpoint.url": endpoint.url,
        }), "quota", "list")
    assert result.exit_code == 0, result.stderr
    assert "sasl.oauthbearer.client.secret" in result.stderr
    assert "s3cret-value" not in result.stdout + result.stderr


def test_aws_msk_iam_tokens_reach_both_clients(kctl, secured, fake_signer):
    # MSK listens on SASL_SSL; this node on SASL_PLAINTEXT, which -X overrides.
    saved = kctl("context", "set", "msk", "-b", secured.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT",
                 "--aws-msk-iam-region", "eu-west-1", "--aws-msk-iam-profile", "analytics")
    assert saved.exit_code == 0, saved.stderr
    shown = kctl("--context", "msk", "context", "show", "-o", "json")
    assert json.loads(shown.stdout)["aws_msk_iam"] == {"region": "eu-west-1", "profile": "analytics"}

    # the wire client (quotas) and librdkafka (SCRAM users) both authenticate with the signer's token.
    assert kctl("--context", "msk", "quota", "list").exit_code == 0
    assert kctl("--context", "msk", "user", "list").exit_code == 0
    assert {call for call in fake_signer.CALLS} == {("generate_auth_token_from_profile", ("eu-west-1", "analytics"))}
    assert len(fake_signer.CALLS) == 2
    # Renewal before expiry is tested without a broker (tests/admin/test_oauth_tokens.py):
    # with seconds-long tokens a broker asks clients to re-authenticate, which under load
    # races the expiry itself.

    # The environment turns it on without a context; a role is assumed when given.
    fake_signer.CALLS.clear()
    env = {"KCTL_AWS_MSK_IAM_REGION": "us-east-2", "KCTL_AWS_MSK_IAM_ROLE_ARN": "arn:aws:iam::1:role/kafka"}
    assert kctl("-b", secured.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "quota", "list", env=env).exit_code == 0
    assert fake_signer.CALLS == [("generate_auth_token_from_role_arn", ("us-east-2", "arn:aws:iam::1:role/kafka", "MSKSASLDefaultSession"))]


def test_aws_msk_iam_bad_settings(kctl, fake_signer):
    other = kctl("-b", "127.0.0.1:1", "-X", "sasl.mechanism=PLAIN", "topic", "list", env={"KCTL_AWS_MSK_IAM_REGION": "eu-west-1"})
    assert (other.exit_code, other.stderr) == (
        ExitCode.CONFIG, "error: unable to use AWS MSK IAM with sasl.mechanism=PLAIN: MSK IAM authenticates with OAUTHBEARER\n"
    )
    regionless = kctl("-b", "127.0.0.1:1", "topic", "list", env={"KCTL_AWS_MSK_IAM_PROFILE": "p"})
    assert regionless.exit_code == ExitCode.CONFIG
    assert regionless.stderr.startswith("error: unable to use AWS MSK IAM: no region set\n")
    refused = kctl("context", "set", "x", "-b", "h:1", "--aws-msk-iam-profile", "p")
    assert refused.exit_code == ExitCode.USAGE
    spark = kctl("-b", "127.0.0.1:1", "spark", "dump", "-t", "t", "--out", "/tmp/never", env={"KCTL_AWS_MSK_IAM_REGION": "eu-west-1"})
    assert spark.exit_code == ExitCode.CONFIG, spark.stderr
    assert "kctl spark cannot carry MSK IAM tokens" in spark.stderr


@pytest.mark.skipif(importlib.util.find_spec("aws_msk_iam_sasl_signer") is not None, reason="AWS's signer is installed here")
def test_aws_msk_iam_without_the_signer_says_what_to_install(kctl):
    result = kctl("-b", "127.0.0.1:1", "quota", "list", env={"KCTL_AWS_MSK_IAM_REGION": "eu-west-1"})
    assert result.exit_code == ExitCode.CONFIG
    assert result.stderr == (
        "error: unable to use AWS MSK IAM: the aws-msk-iam-sasl-signer-python package is not installed\n"
        "hint: pip install 'kctl[msk]'\n"
    )
