"""DescribeAcls, CreateAcls and DeleteAcls.

With the authorizer on (`--authorizer`) they read and change the stored ACLs
(security/store.py), each change durable before it is answered: describing needs DESCRIBE
on the cluster, creating and deleting ALTER. Without it they are answered as an Apache
Kafka broker without `authorizer.class.name` answers them, with SECURITY_DISABLED, and
tools say "ACLs are not enabled" instead of waiting or guessing.
"""

from __future__ import annotations

from kctl.broker.handlers.common import answer_storage_errors
from kctl.broker.protocol import errors
from kctl.broker.security import authorizer as az
from kctl.broker.security.store import Acl

# Kafka's own words (AclApis.scala) for the same answer.
_MESSAGE = "No Authorizer is configured."


def _cluster_denied(broker, context, operation) -> bool:
    return not context.allowed(broker, operation, az.CLUSTER, az.CLUSTER_NAME)


async def describe_acls(broker, context, request):
    answer = {"throttle_time_ms": 0, "error_code": errors.NONE, "error_message": "", "resources": []}
    if not broker.authorizer.enabled:
        return {**answer, "error_code": errors.SECURITY_DISABLED, "error_message": _MESSAGE}
    if _cluster_denied(broker, context, az.DESCRIBE):
        return {**answer, "error_code": errors.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Cluster authorization failed."}
    problem = az.filter_problem(request)
    if problem:
        return {**answer, "error_code": errors.INVALID_REQUEST, "error_message": problem}
    grouped: dict[tuple, list] = {}
    for acl in sorted(broker.security.acls, key=Acl.to_json):
        if az.matches_filter(acl, request):
            grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
                {"principal": acl.principal, "host": acl.host, "operation": acl.operation,
                 "permission_type": acl.permission_type})
    answer["resources"] = [{"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
                           for (t, n, p), acls in grouped.items()]
    return answer


async def create_acls(broker, context, request):
    creations = request.creations or []
    if not broker.authorizer.enabled:
        return {"throttle_time_ms": 0, "results": [
            {"error_code": errors.SECURITY_DISABLED, "error_message": _MESSAGE} for _ in creations]}
    if _cluster_denied(broker, context, az.ALTER):
        return {"throttle_time_ms": 0, "results": [
            {"error_code": errors.CLUSTER_AUTHORIZATION_FAILED, "error_message": "Cluster authorization failed."}
            for _ in creations]}
    results, new = [], set(broker.security.acls)
    for c in creations:
        acl = Acl(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                  c.operation, c.permission_type)
        problem = az.validate(acl)
        results.append({"error_code": errors.INVALID_REQUEST if problem else errors.NONE,
                        "error_message": problem or ""})  # Kafka's success: "", not null
        if not problem:
            new.add(acl)
    if new != broker.security.acls:
        try:
            broker.security.update(acls=new)
        except OSError as exc:
            answer_storage_errors(results, "store ACLs", exc)
    return {"throttle_time_ms": 0, "results": results}


async def delete_acls(broker, context, request):
    filters = request.filters or []
    answer = {"throttle_time_ms": 0, "filter_results": []}
    if not broker.authorizer.enabled or _cluster_denied(broker, context, az.ALTER):
        code, message = ((errors.SECURITY_DISABLED, _MESSAGE) if not broker.authorizer.enabled
                         else (errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."))
        answer["filter_results"] = [{"error_code": code, "error_message": message, "matching_acls": []}
                                    for _ in filters]
        return answer
    remaining = set(broker.security.acls)
    for f in filters:
        problem = az.filter_problem(f)
        if problem:
            answer["filter_results"].append({"error_code": errors.INVALID_REQUEST, "error_message": problem,
                                             "matching_acls": []})
            continue
        matched = sorted((a for a in broker.security.acls if az.matches_filter(a, f)), key=Acl.to_json)
        remaining.difference_update(matched)
        answer["filter_results"].append({"error_code": errors.NONE, "error_message": None, "matching_acls": [
            {"error_code": errors.NONE, "error_message": None, "resource_type": a.resource_type,
             "resource_name": a.resource_name, "pattern_type": a.pattern_type, "principal": a.principal,
             "host": a.host, "operation": a.operation, "permission_type": a.permission_type}
            for a in matched]})
    if remaining != broker.security.acls:
        try:
            broker.security.update(acls=remaining)
        except OSError as exc:
            answer_storage_errors(answer["filter_results"], "store ACLs", exc)
            for result in answer["filter_results"]:
                if result["error_code"] == errors.KAFKA_STORAGE_ERROR:
                    result["matching_acls"] = []
    return answer


HANDLERS = {29: describe_acls, 30: create_acls, 31: delete_acls}
