"""A cluster's state as resource documents, so `kctl export | kctl apply -f -` changes
nothing on the same cluster and recreates it on another.

Topic configs are the topic's overrides only (as `topic list --overrides` counts them):
a value inherited from the broker stays inherited. Sensitive values, which Kafka never
sends, are left out and reported; so are SCRAM passwords, which only their owner knows.
Connectors' secrets become the environment variables apply reads them from.
"""

from __future__ import annotations

import re
from dataclasses import asdict

from kctl.admin.declarative.resources import API_VERSION, CLUSTER_DEFAULT
from kctl.admin.declarative.state import ClusterState


def documents(state: ClusterState) -> list[dict]:
    """Documents in a stable order: topics, cluster configs, ACLs, quotas, users, connectors."""
    out = []
    for topic in sorted((state.topics or {}).values(), key=lambda t: t.name):
        spec: dict = {"partitions": topic.partitions, "replication_factor": topic.replication_factor}
        if topic.configs:
            spec["configs"] = dict(sorted(topic.configs.items()))
        out.append(_document("Topic", topic.name, spec))
    for name, configs in sorted((state.cluster_configs or {}).items(), key=lambda item: (item[0] != CLUSTER_DEFAULT, item[0].zfill(10))):
        if configs:
            out.append(_document("ClusterConfig", name, {"configs": dict(sorted(configs.items()))}))
    by_principal: dict[str, list] = {}
    for acl in sorted(state.acls or ()):
        by_principal.setdefault(acl.principal, []).append(asdict(acl))
    for principal, rows in sorted(by_principal.items()):
        out.append(_document("Acl", principal, {"acls": rows}))
    for entity, quotas in sorted((state.quotas or {}).items(), key=lambda item: str(item[0])):
        out.append(_document("Quota", str(entity), {"entity": entity.names(), "quotas": {k: _number(v) for k, v in sorted(quotas.items())}}))
    for user, credentials in sorted((state.users or {}).items()):
        out.append(_document("User", user, {"credentials": [{"mechanism": m, "iterations": i} for m, i in credentials]}))
    if state.connectors:
        from kctl.admin.declarative.connectors import document_spec

        out += [_document("Connector", name, document_spec(live)) for name, live in sorted(state.connectors.items())]
    return out


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _document(kind: str, name: str, spec: dict) -> dict:
    return {"api_version": API_VERSION, "kind": kind, "metadata": {"name": name}, "spec": spec}


def to_yaml(docs: list[dict]) -> str:
    import yaml

    return yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False, allow_unicode=True, explicit_start=True, width=120)


def file_name(document: dict) -> str:
    """`topic-orders.yaml`: a name safe on every file system for one document."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", document["metadata"]["name"]).strip("_") or "default"
    return f"{document['kind'].lower()}-{safe}.yaml"
