"""DescribeAcls, CreateAcls and DeleteAcls: the bundled broker has no authorizer, so it
answers them as an Apache Kafka broker without `authorizer.class.name` does, with
SECURITY_DISABLED, and tools say "ACLs are not enabled" instead of waiting or guessing."""

from __future__ import annotations

from ..protocol import errors

# Kafka's own words (AclApis.scala) for the same answer.
_MESSAGE = "No Authorizer is configured."


async def describe_acls(broker, context, request):
    return {"throttle_time_ms": 0, "error_code": errors.SECURITY_DISABLED, "error_message": _MESSAGE, "resources": []}


async def create_acls(broker, context, request):
    results = [{"error_code": errors.SECURITY_DISABLED, "error_message": _MESSAGE} for _ in request.creations or []]
    return {"throttle_time_ms": 0, "results": results}


async def delete_acls(broker, context, request):
    results = [{"error_code": errors.SECURITY_DISABLED, "error_message": _MESSAGE, "matching_acls": []}
               for _ in request.filters or []]
    return {"throttle_time_ms": 0, "filter_results": results}


HANDLERS = {29: describe_acls, 30: create_acls, 31: delete_acls}
