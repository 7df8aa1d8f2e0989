"""The one place kctl touches confluent-kafka's private API.

confluent-kafka's Schema Registry client keeps, privately, what kctl needs beyond its
public calls: its REST client (`_rest_client`, with the command's URL, credentials and
TLS), for the two requests the client has no call for (compatibility with the registry's
reasons, verbose=true; the level in force with defaultToGlobal), and the HTTP library it
raises from (httpx or httpx2, chosen by `common._httpx_compat`). pyproject pins the
versions this was checked on; tests/admin/test_client_adapters.py fails on an installed
version that lacks one of them.
"""

from __future__ import annotations

from typing import Any

# (object, attribute): "instance" ones are checked on a SchemaRegistryClient.
PRIVATE_API = (
    ("confluent_kafka.schema_registry.common._httpx_compat", "httpx.TimeoutException"),
    ("confluent_kafka.schema_registry.common._httpx_compat", "httpx.HTTPError"),
    ("instance", "_rest_client.get"),
    ("instance", "_rest_client.post"),
)


def missing_private_api() -> list[str]:
    """The entries of PRIVATE_API this confluent-kafka lacks."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from kctl.admin.client.private_api import missing

    return missing(PRIVATE_API, SchemaRegistryClient({"url": "http://127.0.0.1:9"}))  # never contacted


def registry_rest_client(client: Any) -> Any:
    """The REST client inside a SchemaRegistryClient: get(path, query=...) and
    post(path, body=...) against the registry, with the client's settings."""
    return client._rest_client


def registry_http_library() -> Any:
    """The HTTP library the registry client raises from (TimeoutException, HTTPError)."""
    from confluent_kafka.schema_registry.common._httpx_compat import httpx

    return httpx
