"""The functions of AWS's MSKAuthTokenProvider module that kctl calls, recording each call
in CALLS as (function name, arguments). LIFETIME is the tokens' lifetime in seconds."""

from __future__ import annotations

import time

from tests.security.token_endpoint import unsecured_jwt

CALLS: list[tuple[str, tuple]] = []
LIFETIME = 3600


def _token(name: str, *args) -> tuple[str, int]:
    CALLS.append((name, args))
    return unsecured_jwt("admin", LIFETIME), int((time.time() + LIFETIME) * 1000)


def generate_auth_token(region, aws_debug_creds=False):
    return _token("generate_auth_token", region)


def generate_auth_token_from_profile(region, aws_profile):
    return _token("generate_auth_token_from_profile", region, aws_profile)


def generate_auth_token_from_role_arn(region, role_arn, sts_session_name="MSKSASLDefaultSession"):
    return _token("generate_auth_token_from_role_arn", region, role_arn, sts_session_name)
