"""The bundled broker's delegation tokens (KIP-48) beyond what tests/cli/test_token.py
runs on both backends: off without delegation.token.secret.key (and the key never shown
by DescribeConfigs), a token refused once it has expired, tokens kept across kill -9."""

from __future__ import annotations

import json
import time

import pytest

from kctl.broker.process import BrokerProcess
from kctl.errors import ExitCode

pytestmark = pytest.mark.integration

ADMIN = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-512", "-X", "sasl.username=admin",
         "-X", "sasl.password=admin-secret", "--timeout", "5"]


def _broker(tmp_path, *config: str) -> BrokerProcess:
    process = BrokerProcess(tmp_path / "data", extra_args=[
        "--sasl", "scram-sha-256,scram-sha-512", "--user=admin:admin-secret", *[f"--config={c}" for c in config]])
    process.start()
    return process


def _with(process: BrokerProcess, token: dict) -> list[str]:
    return ["-b", process.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-256",
            "-X", f"sasl.username={token['token_id']}", "-X", f"sasl.password={token['hmac']}",
            "-X", "sasl.scram.tokenauth=true", "--timeout", "5"]


def test_without_a_secret_key_tokens_are_off(kctl, tmp_path):
    process = _broker(tmp_path)
    try:
        result = kctl("-b", process.bootstrap, *ADMIN, "token", "create")
        assert (result.exit_code, result.stderr) == (ExitCode.INVALID, (
            "error: unable to create a delegation token: DELEGATION_TOKEN_AUTH_DISABLED: Delegation Token feature is not enabled.\n"
            "hint: the brokers and controllers need delegation.token.secret.key set\n"))
    finally:
        process.stop()


def test_an_expired_token_is_refused_and_tokens_survive_kill_9(kctl, tmp_path):
    process = _broker(tmp_path, "delegation.token.secret.key=s3cret", "delegation.token.expiry.time.ms=3000")
    try:
        b = ("-b", process.bootstrap, *ADMIN)
        short, kept = (json.loads(kctl(*b, "token", "create", "-o", "json").stdout)[0] for _ in range(2))
        assert kctl(*_with(process, short), "topic", "list").exit_code == 0
        # The key is not shown, as Kafka reports a PASSWORD setting.
        (broker,) = json.loads(kctl(*b, "config", "describe", "broker", "1", "--all", "-o", "json").stdout)
        (secret,) = [c for c in broker["configs"] if c["name"] == "delegation.token.secret.key"]
        assert (secret["value"], secret["sensitive"]) == (None, True), secret
        # One renewed for a minute; the other expires after its 3 s.
        assert kctl(*b, "token", "renew", kept["token_id"], "--period", "1m").exit_code == 0
        time.sleep(3.5)  # the point: the short token's 3 s life passes
        refused = kctl(*_with(process, short), "topic", "list")
        assert refused.exit_code == ExitCode.NOT_AUTHORIZED and "SASL_AUTHENTICATION_FAILED" in refused.stderr, refused.stderr
        late = kctl(*b, "token", "renew", "--hmac", short["hmac"])
        assert late.exit_code == ExitCode.INVALID and "DELEGATION_TOKEN_EXPIRED" in late.stderr, late.stderr

        process.kill()
        process.start()
        b = ("-b", process.bootstrap, *ADMIN)
        assert kctl(*_with(process, kept), "topic", "list").exit_code == 0
        listed = {t["token_id"]: t for t in json.loads(kctl(*b, "token", "list", "-o", "json").stdout)}
        assert set(listed) == {short["token_id"], kept["token_id"]}
        assert listed[kept["token_id"]]["expires_ms"] > listed[short["token_id"]]["expires_ms"]
    finally:
        process.stop()
