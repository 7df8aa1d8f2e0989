"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), with Kafka's
checks and words: describing needs DESCRIBE on the cluster, altering ALTER; iterations
4096..16384; a user named twice in one request is DUPLICATE_RESOURCE; a credential that
does not exist is RESOURCE_NOT_FOUND. The broker stores what the client sends (salt and
SaltedPassword) as StoredKey/ServerKey, never a password."""

from __future__ import annotations

from kctl.broker.handlers.common import answer_storage_errors
from kctl.broker.protocol import errors
from kctl.broker.security import authorizer as az
from kctl.broker.security import scram

_DENIED = "Cluster authorization failed."


async def describe_user_scram_credentials(broker, context, request):
    answer = {"throttle_time_ms": 0, "error_code": errors.NONE, "error_message": "", "results": []}
    if not context.allowed(broker, az.DESCRIBE, az.CLUSTER, az.CLUSTER_NAME):
        # As Kafka's getErrorResponse: the error at the top and on every user asked for,
        # without the user's name or a message (librdkafka reads the per-user results and
        # crashes on a missing one).
        return {**answer, "error_code": errors.CLUSTER_AUTHORIZATION_FAILED, "error_message": None,
                "results": [{"user": "", "error_code": errors.CLUSTER_AUTHORIZATION_FAILED,
                             "error_message": None, "credential_infos": []} for _ in request.users or []]}
    by_user: dict[str, list] = {}
    for (user, mechanism), credential in sorted(broker.security.credentials.items()):
        by_user.setdefault(user, []).append({"mechanism": scram.MECHANISMS[mechanism][1],
                                             "iterations": credential.iterations})
    names = [u.name for u in request.users] if request.users else sorted(by_user)
    seen: set[str] = set()
    for name in names:
        result = {"user": name, "error_code": errors.NONE, "error_message": "", "credential_infos": []}
        if names.count(name) > 1:
            if name in seen:
                continue
            result.update(error_code=errors.DUPLICATE_RESOURCE,
                          error_message="Cannot describe SCRAM credentials for the same user twice in a single request")
        elif name not in by_user:
            result.update(error_code=errors.RESOURCE_NOT_FOUND,
                          error_message="Attempt to describe a user credential that does not exist")
        else:
            result["credential_infos"] = by_user[name]
        seen.add(name)
        answer["results"].append(result)
    return answer


def _upsert_problem(upsertion) -> tuple[int, str] | None:
    if upsertion.mechanism not in scram.CODES:
        return errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if upsertion.iterations < scram.MIN_ITERATIONS:
        return errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if upsertion.iterations > scram.MAX_ITERATIONS:
        return errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    if not upsertion.salt or not upsertion.salted_password:
        return errors.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty"
    return None


async def alter_user_scram_credentials(broker, context, request):
    deletions, upsertions = request.deletions or [], request.upsertions or []
    users = list(dict.fromkeys([d.name for d in deletions] + [u.name for u in upsertions]))
    if not context.allowed(broker, az.ALTER, az.CLUSTER, az.CLUSTER_NAME):
        return {"throttle_time_ms": 0, "results": [
            {"user": u, "error_code": errors.CLUSTER_AUTHORIZATION_FAILED, "error_message": _DENIED} for u in users]}
    problems: dict[str, tuple[int, str]] = {}
    touched: dict[str, set] = {}
    credentials = dict(broker.security.credentials)
    changes = []
    for change in [*deletions, *upsertions]:
        user, code = change.name, change.mechanism
        if user in problems:
            continue
        if not user:
            problems[user] = errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
        elif code in touched.setdefault(user, set()):
            problems[user] = errors.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"
        elif hasattr(change, "salt"):
            problem = _upsert_problem(change)
            if problem:
                problems[user] = problem
        elif code not in scram.CODES:
            problems[user] = errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
        elif (user, scram.CODES[code]) not in credentials:
            problems[user] = errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        touched[user].add(code)
        changes.append(change)
    for change in changes:
        if change.name in problems:
            continue  # a user's changes apply together or not at all
        key = (change.name, scram.CODES[change.mechanism])
        if hasattr(change, "salt"):
            credentials[key] = scram.credential_from_salted(key[1], bytes(change.salted_password),
                                                            bytes(change.salt), change.iterations)
        else:
            credentials.pop(key, None)
    results = [{"user": u, "error_code": problems.get(u, (errors.NONE, None))[0],
                "error_message": problems.get(u, (errors.NONE, None))[1]} for u in users]
    if credentials != broker.security.credentials:
        try:
            broker.security.update(credentials=credentials)
        except OSError as exc:
            answer_storage_errors(results, "store SCRAM credentials", exc)
    return {"throttle_time_ms": 0, "results": results}


HANDLERS = {50: describe_user_scram_credentials, 51: alter_user_scram_credentials}
