"""The plan from resource files and a cluster state, without a cluster: what each kind
owns, what is refused and why, and the order apply goes in."""

from __future__ import annotations

import pytest

from kctl.admin.declarative.plan import plan, summary
from kctl.admin.declarative.resources import ResourceFileError, parse
from kctl.admin.declarative.state import ClusterState, LiveTopic
from kctl.admin.security.acls import Acl
from kctl.admin.security.quotas import Entity


def resources(text: str):
    problems: list[str] = []
    found = parse(text, "f.yaml", problems)
    if problems:
        raise ResourceFileError(problems)
    return found


def topic_state(*topics: LiveTopic, brokers=(1,)) -> ClusterState:
    return ClusterState(topics={t.name: t for t in topics}, brokers={b: None for b in brokers})


def test_a_matching_topic_plans_nothing_and_values_compare_as_kafka_reads_them():
    files = resources("""
kind: Topic
metadata: {name: orders}
spec:
  partitions: 2
  replication_factor: 1
  configs: {retention.ms: 1000, unclean.leader.election.enable: TRUE, cleanup.policy: "compact, delete"}
""")
    live = LiveTopic("orders", ((1,), (1,)), {"retention.ms": "1000", "unclean.leader.election.enable": "true", "cleanup.policy": "compact,delete"})
    assert plan(files, topic_state(live)) == []
    assert summary([]) == "no changes: the cluster matches the files"


def test_topic_changes_in_apply_order():
    files = resources("""
kind: Topic
metadata: {name: orders}
spec: {partitions: 4, configs: {retention.ms: 2000}}
---
kind: Topic
metadata: {name: new}
spec: {partitions: 1, replication_factor: 1}
""")
    live = LiveTopic("orders", ((1,), (1,)), {"retention.ms": "1000", "max.message.bytes": "5"})
    changes = plan(files, topic_state(live, LiveTopic("old", ((1,),), {}), LiveTopic("_schemas", ((1,),), {})), prune=True)
    assert [(c.action, c.name, c.detail) for c in changes] == [
        ("create", "new", "partitions 1; replication factor 1"),
        ("alter-config", "orders", "retention.ms 1000 -> 2000; max.message.bytes 5 -> (default)"),
        ("add-partitions", "orders", "partitions 2 -> 4"),
        ("delete", "old", "not in the files (--prune)"),
    ]
    assert changes[1].data == {"set": {"retention.ms": ["1000", "2000"]}, "delete": {"max.message.bytes": "5"}}
    assert changes[0].source == "f.yaml:6"
    assert summary(changes) == "plan: 1 to create, 2 to change, 1 to remove"


def test_what_kafka_cannot_do_or_the_policy_forbids_is_refused_with_the_reason():
    files = resources("""
kind: Topic
metadata: {name: shrink}
spec: {partitions: 1}
---
kind: Topic
metadata: {name: wide}
spec: {partitions: 1, replication_factor: 3}
---
kind: Topic
metadata: {name: guarded}
spec:
  partitions: 1
  replication_factor: 2
  configs: {}
  policy: {allow_replication_change: false, allow_config_delete: false}
""")
    live = [LiveTopic("shrink", ((1,), (1,)), {}), LiveTopic("guarded", ((1,),), {"retention.ms": "5"})]
    changes = plan(files, topic_state(*live, brokers=(1, 2)))
    assert [(c.action, c.name, c.reason) for c in changes] == [
        ("refused", "guarded", "replication factor 1 -> 2: the topic's policy does not allow reassignments"),
        ("refused", "shrink", "partitions 2 -> 1: Kafka cannot remove partitions"),
        ("refused", "wide", "replication factor 3 is larger than the 2 broker(s) available"),
    ]


def test_replication_factor_and_explicit_placement_plan_reassignments():
    files = resources("""
kind: Topic
metadata: {name: rf}
spec: {partitions: 2, replication_factor: 3}
---
kind: Topic
metadata: {name: placed}
spec: {partitions: 2, replicas: [[2, 1], [1, 2]]}
""")
    live = [LiveTopic("rf", ((1,), (2,)), {}), LiveTopic("placed", ((1, 2), (1, 2)), {})]
    changes = plan(files, topic_state(*live, brokers=(1, 2, 3)))
    assert [(c.name, c.detail) for c in changes] == [
        ("placed", "replica placement (1 partition(s) move)"),
        ("rf", "replication factor 1 -> 3 (2 partition(s) move)"),
    ]
    assert changes[0].data["moves"] == [{"partition": 0, "current": [1, 2], "target": [2, 1]}]
    assert [sorted(m["target"]) for m in changes[1].data["moves"]] == [[1, 2, 3], [1, 2, 3]]
    assert [m["target"][0] for m in changes[1].data["moves"]] == [1, 2]  # leaders stay


ACL = dict(resource_type="TOPIC", pattern_type="LITERAL", host="*", operation="READ", permission_type="ALLOW")


def test_acl_documents_own_their_principals_acls_and_prune_takes_the_rest():
    files = resources("""
kind: Acl
metadata: {name: User:alice}
spec:
  acls:
  - {resource_type: TOPIC, resource_name: a, pattern_type: LITERAL, principal: "User:alice", host: "*", operation: READ, permission_type: ALLOW}
""")
    kept = Acl(resource_name="a", principal="User:alice", **ACL)
    stale = Acl(resource_name="old", principal="User:alice", **ACL)
    other = Acl(resource_name="x", principal="User:bob", **ACL)
    state = ClusterState(acls={kept, stale, other})
    assert [(c.action, c.name, c.data["resource_name"]) for c in plan(files, state)] == [("remove-acl", "User:alice", "old")]
    assert [(c.action, c.name) for c in plan(files, state, prune=True)] == [("remove-acl", "User:alice"), ("remove-acl", "User:bob")]
    assert plan(files, ClusterState(acls=set()))[0].action == "add-acl"


def test_quotas_and_users():
    files = resources("""
kind: Quota
metadata: {name: alice}
spec: {entity: {user: alice}, quotas: {producer_byte_rate: 1MiB}}
---
kind: User
metadata: {name: alice}
spec: {credentials: [{mechanism: SCRAM-SHA-512, iterations: 8192}]}
---
kind: User
metadata: {name: bob}
spec: {credentials: [{mechanism: SCRAM-SHA-256}], password_env: BOB_PASSWORD}
""")
    state = ClusterState(
        quotas={Entity(user="alice"): {"producer_byte_rate": 1024.0, "request_percentage": 50.0}, Entity(client_id="c"): {"consumer_byte_rate": 1.0}},
        users={"alice": (("SCRAM-SHA-256", 4096),), "carol": (("SCRAM-SHA-256", 4096),), "admin": (("SCRAM-SHA-512", 8192),)},
    )
    changes = plan(files, state, prune=True, login_user="admin")
    assert [(c.action, c.kind, c.name, c.detail) for c in changes] == [
        ("set-quota", "Quota", "user alice", "producer_byte_rate 1024 -> 1048576; request_percentage 50 -> (none)"),
        ("set-password", "User", "bob", "SCRAM-SHA-256 (8192 iterations), password from $BOB_PASSWORD"),
        ("refused", "User", "alice", "SCRAM-SHA-512 (8192 iterations): setting a credential needs a password; name the environment variable that holds it in password_env"),
        ("remove-quota", "Quota", "client-id c", "consumer_byte_rate (--prune)"),
        ("delete-credential", "User", "alice", "SCRAM-SHA-256"),
        ("delete-credential", "User", "carol", "SCRAM-SHA-256 (--prune)"),
    ]
    assert changes[0].data == {"entity": {"user": "alice"}, "set": {"producer_byte_rate": 1048576.0}, "remove": ["request_percentage"]}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("kind: Topic\nmetadata: {name: a}\nspec:\n  partitions: 1\n  configs:\n    retention.ms: soon\n", "f.yaml:6: Topic a: config retention.ms: must be an integer, not 'soon'"),
        ("kind: Topic\nmetadata: {name: a}\nspec:\n  partitions: 0\n", "f.yaml:4: Topic a: spec.partitions: 0 is less than the minimum of 1"),
        ("kind: Topic\nmetadata: {name: 'a b'}\nspec: {partitions: 1}\n", "f.yaml:2: Topic a b: unable to use topic name 'a b': only ASCII letters, digits, '.', '_' and '-' are allowed"),
        ("kind: Topic\nmetadata: {name: a}\nspec:\n  partitions: 2\n  replicas: [[1]]\n", "f.yaml:5: Topic a: replicas lists 1 partition(s) but partitions is 2"),
        ("kind: Topic\nmetadata: {name: a}\nspec:\n  partitions: 1\n  configs:\n    leader.replication.throttled.replicas: '*'\n", "f.yaml:6: Topic a: config leader.replication.throttled.replicas is set and cleared by reassignments; leave it out"),
        ("kind: ClusterConfig\nmetadata: {name: all}\nspec:\n  configs: {log.retention.ms: 1}\n", "f.yaml:2: ClusterConfig all: name must be 'default' (every broker) or a broker id, not 'all'"),
        ("kind: ClusterConfig\nmetadata: {name: default}\nspec:\n  configs:\n    ssl.key.password: x\n", "f.yaml:5: ClusterConfig default: config ssl.key.password is a password: resource files are kept in Git, secrets are not; set it with `kctl config alter`"),
        ("kind: Quota\nmetadata: {name: q}\nspec:\n  entity: {ip: 10.0.0.1, user: a}\n  quotas: {connection_creation_rate: 1}\n", "f.yaml:4: Quota q: an IP quota stands alone: give ip (or default ip) without user or client id"),
        ("kind: User\nmetadata: {name: u}\nspec:\n  credentials:\n  - {mechanism: SCRAM-SHA-1}\n", "f.yaml:5: User u: spec.credentials.0.mechanism: 'SCRAM-SHA-1' is not one of ['SCRAM-SHA-256', 'SCRAM-SHA-512']"),
        ("kind: Topic\nmetadata: {name: a\nspec: {}\n", "f.yaml:3: not valid YAML: did not find expected ',' or '}'"),
        ("- just\n- a list\n", "f.yaml:1: document: document: ['just', 'a list'] is not of type 'object'"),
    ],
)
def test_problems_name_file_line_and_key(text, problem):
    problems: list[str] = []
    parse(text, "f.yaml", problems)
    assert problems == [problem]


def test_rack_aware_placement_moves_only_partitions_that_could_span_more_racks():
    files = resources("kind: Topic\nmetadata: {name: r}\nspec: {partitions: 3, placement: rack-aware}\n")
    brokers = {1: "a", 2: "a", 3: "b", 4: "b"}
    live = LiveTopic("r", ((1, 2), (1, 3), (3, 4)), {})
    (change,) = plan(files, ClusterState(topics={"r": live}, brokers=brokers))
    assert change.detail == "rack-aware placement over 2 racks (2 partition(s) move)"
    moves = {m["partition"]: m["target"] for m in change.data["moves"]}
    assert sorted(moves) == [0, 2]
    assert moves[0][0] == 1 and brokers[moves[0][1]] == "b"
    assert moves[2][0] == 3 and brokers[moves[2][1]] == "a"
    assert plan(files, ClusterState(topics={"r": live}, brokers={b: None for b in brokers})) == []
    problems: list[str] = []
    parse("kind: Topic\nmetadata: {name: r}\nspec: {partitions: 1, placement: rack-aware, replicas: [[1]]}\n", "f.yaml", problems)
    assert problems == ["f.yaml:3: Topic r: placement and replicas exclude each other: replicas is an explicit placement"]
