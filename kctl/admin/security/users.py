"""SCRAM users: the SASL/SCRAM credentials a cluster stores (KIP-554), described and
altered through confluent-kafka's describe/alter_user_scram_credentials.

A password only ever passes through `set_password` on its way to the client library;
it is never part of a KctlError, a result or a log line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kctl.admin.client.session import AdminSession
from kctl.errors import KctlError, NotFoundError, Partial, UsageError

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class ScramCredential:
    """One stored credential: a user has one per mechanism."""

    user: str
    mechanism: str
    iterations: int


@dataclass(frozen=True)
class UserResult:
    user: str
    mechanism: str
    status: str
    error: str | None = None


def parse_mechanism(value: str) -> str:
    name = value.strip().upper().replace("_", "-")
    if name not in MECHANISMS:
        raise UsageError(f"unknown SCRAM mechanism {value!r}; accepted: {', '.join(m.lower() for m in MECHANISMS)}")
    return name


def _credentials(description) -> list[ScramCredential]:
    return [
        ScramCredential(description.user, info.mechanism.name.replace("_", "-"), info.iterations)
        for info in description.scram_credential_infos
    ]


def _by_user(credential: ScramCredential) -> tuple[str, str]:
    return credential.user, credential.mechanism


def list_users(session: AdminSession) -> list[ScramCredential]:
    """Every user with a SCRAM credential, one row per mechanism."""
    future = session.client.describe_user_scram_credentials(request_timeout=session.timeout)
    described = session.wait(future, "list SCRAM users")
    return sorted((c for d in described.values() for c in _credentials(d)), key=_by_user)


def describe_users(session: AdminSession, users: Sequence[str]) -> Partial[list[ScramCredential]]:
    """The named users' credentials, and an error per user that has none."""
    futures = session.client.describe_user_scram_credentials(list(dict.fromkeys(users)), request_timeout=session.timeout)
    results = session.wait_all(futures, "describe SCRAM user")
    found, errors = [], {}
    for user in dict.fromkeys(users):
        result = results[user]
        if isinstance(result, KctlError):
            errors[user] = _user_error(result, user)
        else:
            found += _credentials(result)
    return Partial(sorted(found, key=_by_user), errors)


def _user_error(error: KctlError, user: str) -> KctlError:
    if error.kafka_error == "RESOURCE_NOT_FOUND":
        return NotFoundError(action=f"describe SCRAM user {user}", cause=f"no SCRAM credentials for user {user}")
    return error


def set_password(session: AdminSession, user: str, password: str, mechanisms: Sequence[str], iterations: int) -> Partial[list[UserResult]]:
    """Create or replace the user's credential for each mechanism (the broker salts and hashes)."""
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    secret = password.encode("utf-8")
    alterations = [
        UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism[m.replace("-", "_")], iterations), secret)
        for m in mechanisms
    ]
    return _alter(session, user, alterations, mechanisms, "set", "set the password of SCRAM user")


def delete_credentials(session: AdminSession, user: str, mechanisms: Sequence[str]) -> Partial[list[UserResult]]:
    from confluent_kafka.admin import ScramMechanism, UserScramCredentialDeletion

    deletions = [UserScramCredentialDeletion(user, ScramMechanism[m.replace("-", "_")]) for m in mechanisms]
    return _alter(session, user, deletions, mechanisms, "deleted", "delete SCRAM user")


def _alter(session: AdminSession, user: str, alterations: list, mechanisms: Sequence[str], done: str, action: str):
    """One row per mechanism, and the error (with its exit status) of each that failed."""
    # Kafka answers per user, not per mechanism: one request per mechanism keeps each
    # mechanism's outcome its own.
    results, errors = [], {}
    for mechanism, alteration in zip(mechanisms, alterations, strict=True):
        futures = session.client.alter_user_scram_credentials([alteration], request_timeout=session.timeout)
        outcome = session.wait_all(futures, f"{action} {user}")[user]
        if isinstance(outcome, KctlError):
            cause = f"no {mechanism} credential" if outcome.kafka_error == "RESOURCE_NOT_FOUND" else outcome.cause
            results.append(UserResult(user, mechanism, "failed", cause))
            errors[mechanism] = outcome.but(action=f"{action} {user} ({mechanism})", cause=cause)
        else:
            results.append(UserResult(user, mechanism, done))
    return results, errors
