"""kctl acl against real authorizers: kafka3 (StandardAuthorizer, every client a super
user) and the bundled broker's authorizer, cross-checked with Kafka's own kafka-acls; the
secured clusters (bundled and Kafka), where a principal is denied until `acl create`
allows it; and clusters without an authorizer (SECURITY_DISABLED)."""

from __future__ import annotations

import json
import re

import pytest

from kctl.errors import ExitCode
from tests.security.flags import sasl_flags
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

KEYS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")


def rows(result):
    assert result.exit_code == 0, result.stderr
    return {tuple(row[k] for k in KEYS) for row in json.loads(result.stdout)}


def kafka_acls_list(cluster, *filters):
    """The ACLs `kafka-acls --list` prints, as kctl's rows."""
    proc = cluster.kafka.run_tool("org.apache.kafka.tools.AclCommand", "--bootstrap-server", cluster.bootstrap, "--list", *filters)
    assert proc.returncode == 0, proc.stderr
    found, resource = set(), None
    for line in proc.stdout.splitlines():
        head = re.search(r"ResourcePattern\(resourceType=(\w+), name=(.*), patternType=(\w+)\)", line)
        if head:
            resource = head.groups()
            continue
        entry = re.search(r"\(principal=(.*), host=(.*), operation=(\w+), permissionType=(\w+)\)", line)
        if entry:
            found.add((*resource, *entry.groups()))
    return found


def _ten(found):
    assert len(found) == 10
    return found


def _same(found, expected):
    assert found == expected


@pytest.fixture
def authorizer_cluster(cluster, request):
    """A cluster with an authorizer where every client is a super user: kafka3 (Kafka's
    StandardAuthorizer), or for `bundled` the secured bundled broker's PLAINTEXT listener
    (with Kafka's tools to cross-check)."""
    if cluster.backend == "bundled":
        from tests.backends.plugin import Cluster

        secured = request.getfixturevalue("secured_bundled")
        return Cluster("bundled", secured.plaintext, 1, kafka=secured)
    if cluster.backend != "kafka3":
        pytest.skip("ACLs need an authorizer: the kafka3 backend runs Kafka's StandardAuthorizer")
    return cluster


def test_create_list_delete_as_kafka_acls_sees_them(kctl, authorizer_cluster, unique_name, tmp_path):
    c = authorizer_cluster
    b = ("-b", c.bootstrap)
    topic, group, user = unique_name("acl"), unique_name("g"), f"User:{unique_name('u')}"
    created = kctl(*b, "acl", "create", "--producer", "--principal", user, "--topic", topic, "--transactional-id", topic, "-o", "json")
    assert created.exit_code == 0, created.stderr
    assert {r["status"] for r in json.loads(created.stdout)} == {"created"}
    assert kctl(*b, "acl", "create", "--consumer", "--principal", user, "--topic", f"{topic}.", "--pattern", "prefixed", "--group", group).exit_code == 0
    assert kctl(*b, "acl", "create", "--deny", "--principal", user, "--host", "10.0.0.1", "--operation", "Read,describe-configs", "--topic", topic).exit_code == 0

    # CreateAcls goes through the controller; each broker's authorizer catches up a moment later.
    mine = eventually(lambda: _ten(rows(kctl(*b, "acl", "list", "--principal", user, "-o", "json"))))
    assert mine == {
        ("TOPIC", topic, "LITERAL", user, "*", "WRITE", "ALLOW"),
        ("TOPIC", topic, "LITERAL", user, "*", "DESCRIBE", "ALLOW"),
        ("TOPIC", topic, "LITERAL", user, "*", "CREATE", "ALLOW"),
        ("TRANSACTIONAL_ID", topic, "LITERAL", user, "*", "WRITE", "ALLOW"),
        ("TRANSACTIONAL_ID", topic, "LITERAL", user, "*", "DESCRIBE", "ALLOW"),
        ("TOPIC", f"{topic}.", "PREFIXED", user, "*", "READ", "ALLOW"),
        ("TOPIC", f"{topic}.", "PREFIXED", user, "*", "DESCRIBE", "ALLOW"),
        ("GROUP", group, "PREFIXED", user, "*", "READ", "ALLOW"),
        ("TOPIC", topic, "LITERAL", user, "10.0.0.1", "READ", "DENY"),
        ("TOPIC", topic, "LITERAL", user, "10.0.0.1", "DESCRIBE_CONFIGS", "DENY"),
    }
    eventually(lambda: _same(kafka_acls_list(c, "--principal", user), mine))
    # --pattern match: what applies to one topic name, literal and prefixed, as kafka-acls shows
    # it (this user's: the broker is shared, and another test's ACL on every topic, `*`, applies too).
    applying = rows(kctl(*b, "acl", "list", "--topic", f"{topic}.x", "--pattern", "match", "--principal", user, "-o", "json"))
    assert applying == kafka_acls_list(c, "--topic", f"{topic}.x", "--resource-pattern-type", "match", "--principal", user)
    assert {r[5] for r in applying} == {"READ", "DESCRIBE"}

    # The JSON list is what create --file reads: copy the ACLs to another principal.
    other = f"User:{unique_name('v')}"
    copied = [dict(zip(KEYS, r)) | {"principal": other} for r in sorted(mine)]
    (tmp_path / "acls.json").write_text(json.dumps(copied))
    assert kctl(*b, "acl", "create", "--file", str(tmp_path / "acls.json")).exit_code == 0
    eventually(lambda: _same({r[:3] + r[4:] for r in kafka_acls_list(c, "--principal", other)}, {r[:3] + r[4:] for r in mine}))

    # delete: a dry run changes nothing; without --yes and a terminal it refuses, saying how many.
    dry = kctl(*b, "acl", "delete", "--principal", user, "--topic", topic, "--dry-run", "-o", "json")
    assert len(rows(dry)) == 5 and dry.stderr == "dry run: 5 ACLs would be deleted\n"
    refused = kctl(*b, "acl", "delete", "--principal", user, "--topic", topic)
    assert (refused.exit_code, refused.stderr) == (
        ExitCode.ABORTED, "error: unable to delete 5 ACLs: confirmation required and stdin is not a terminal\nhint: pass --yes to confirm\n"
    )
    deleted = kctl(*b, "acl", "delete", "--principal", user, "--topic", topic, "--yes", "-o", "json")
    assert deleted.exit_code == 0, deleted.stderr
    assert {r["status"] for r in json.loads(deleted.stdout)} == {"deleted"}
    eventually(lambda: _same(kafka_acls_list(c, "--principal", user), mine - {r for r in mine if r[0] == "TOPIC" and r[1] == topic}))


def test_deleting_every_acl_needs_all_and_yes(kctl, authorizer_cluster, unique_name):
    b = ("-b", authorizer_cluster.bootstrap)
    principal = f"User:{unique_name('u')}"
    assert kctl(*b, "acl", "create", "--principal", principal, "--operation", "read", "--group", "*").exit_code == 0
    eventually(lambda: _same(len(rows(kctl(*b, "acl", "list", "--principal", principal, "-o", "json"))), 1))
    count = len(json.loads(kctl(*b, "acl", "list", "-o", "json").stdout))
    unfiltered = kctl(*b, "acl", "delete")
    assert unfiltered.exit_code == ExitCode.USAGE
    assert unfiltered.stderr.startswith("error: give a filter (--topic, --group, --principal, --operation, ...) or --all")
    refused = kctl(*b, "acl", "delete", "--all")
    assert refused.exit_code == ExitCode.ABORTED
    assert refused.stderr.startswith(f"error: unable to delete {count} ACLs (every ACL on the cluster): confirmation required")
    assert len(json.loads(kctl(*b, "acl", "list", "-o", "json").stdout)) == count


def test_a_denied_principal_is_allowed_after_acl_create(kctl, secured, unique_name):
    admin, alice = sasl_flags(secured), sasl_flags(secured, user="alice")
    topic = unique_name("allow")
    assert kctl(*admin, "topic", "create", topic).exit_code == 0
    denied = kctl(*alice, "record", "produce", topic, input="a\n")
    assert denied.exit_code == ExitCode.NOT_AUTHORIZED, denied.stderr
    created = kctl(*admin, "acl", "create", "--producer", "--principal", "User:alice", "--topic", topic)
    assert created.exit_code == 0, created.stderr
    # The authorizer applies new ACLs from the metadata log; give it a moment.
    def allowed():
        produced = kctl(*alice, "record", "produce", topic, input="a\n")
        assert produced.exit_code == 0, produced.stderr

    eventually(allowed, timeout=15)
    assert kctl(*alice, "record", "consume", topic, "-n", "1").exit_code == ExitCode.NOT_AUTHORIZED
    listed = kctl(*alice, "acl", "list")
    assert listed.exit_code == ExitCode.NOT_AUTHORIZED, listed.stderr
    assert listed.stderr.startswith("error: unable to list ACLs: CLUSTER_AUTHORIZATION_FAILED")


def test_a_cluster_without_an_authorizer_says_so(kctl, cluster):
    if cluster.backend == "kafka3":
        pytest.skip("kafka3 runs an authorizer")
    expected = (
        "ACLs are not enabled on the cluster (SECURITY_DISABLED: no authorizer is configured)\n"
        "hint: brokers enforce ACLs only with authorizer.class.name set (KRaft: org.apache.kafka.metadata.authorizer.StandardAuthorizer)\n"
    )
    for args, action in (
        (("acl", "list"), "list ACLs"),
        (("acl", "create", "--principal", "User:a", "--operation", "read", "--topic", "t"), "create ACLs"),
        (("acl", "delete", "--topic", "t", "--yes"), "list ACLs"),
    ):
        result = kctl("-b", cluster.bootstrap, *args)
        assert (result.exit_code, result.stdout, result.stderr) == (ExitCode.INVALID, "", f"error: unable to {action}: {expected}"), args


@pytest.mark.parametrize(
    "args, message",
    [
        (("create", "--principal", "alice", "--operation", "read", "--topic", "t"),
         "error: principal 'alice' is not of the form TYPE:NAME (e.g. User:alice, User:*)"),
        (("create", "--principal", "User:a", "--operation", "reed", "--topic", "t"),
         "error: unknown operation 'reed'; accepted: all, read, write, create, delete, alter, describe, cluster-action, describe-configs, alter-configs, idempotent-write"),
        (("list", "--pattern", "glob"), "error: unknown pattern type 'glob'; accepted: literal, prefixed, match, any"),
        (("create", "--principal", "User:a", "--operation", "read", "--topic", "t", "--pattern", "match"),
         "error: unknown pattern type 'match'; accepted: literal, prefixed"),
        (("list", "--permission", "maybe"), "error: unknown permission type 'maybe'; accepted: allow, deny"),
        (("create", "--principal", "User:a", "--topic", "t"), "error: --operation is required; accepted: all, read, write, create, delete, alter, describe, cluster-action, describe-configs, alter-configs, idempotent-write"),
        (("create", "--principal", "User:a", "--operation", "read"), "error: name a resource: --topic, --group, --transactional-id or --cluster"),
        (("create", "--consumer", "--principal", "User:a", "--topic", "t"), "error: --consumer needs --group (the consumer group that reads the topics)"),
        (("create", "--operation", "read", "--topic", "t"), "error: --principal is required (e.g. --principal User:alice)"),
    ],
)
def test_bad_acl_input_is_a_usage_error(kctl, args, message):
    # Refused before any connection: the address is never dialled.
    result = kctl("-b", "127.0.0.1:1", "acl", *args)
    assert (result.exit_code, result.stderr.splitlines()[0]) == (ExitCode.USAGE, message)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "acls.json: it holds no ACLs"),
        ("[{bad", "acls.json: not valid JSON: Expecting property name enclosed in double quotes: line 1 column 3 (char 2)"),
        ('{"resource_type": "TOPIC"}\n', "acls.json: line 1: missing key(s) resource_name, pattern_type, principal, host, operation, permission_type"),
        ('[{"resource_type": "QUEUE", "resource_name": "q", "pattern_type": "LITERAL", "principal": "User:a", "host": "*", "operation": "READ", "permission_type": "ALLOW"}]',
         "acls.json: item 1: unknown resource type 'QUEUE'; accepted: topic, group, cluster, transactional-id"),
        ('[{"resource_type": "TOPIC", "resource_name": "q", "pattern_type": "LITERAL", "principal": "User:a", "host": "*", "operation": "READ", "permission_type": "ALLOW", "status": "created"}]',
         "acls.json: item 1: unknown key(s) status; expected resource_type, resource_name, pattern_type, principal, host, operation, permission_type"),
    ],
)
def test_a_bad_acl_file_is_invalid(kctl, tmp_path, monkeypatch, text, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "acls.json").write_text(text)
    result = kctl("-b", "127.0.0.1:1", "acl", "create", "--file", "acls.json")
    assert (result.exit_code, result.stderr) == (ExitCode.INVALID, f"error: unable to read ACL file {message}\n")
