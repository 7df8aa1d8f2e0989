"""kctl quota against real Kafka, cross-checked with kafka-configs: quotas of users, client
ids, both and IPs (and their defaults) set, listed, resolved and removed."""

from __future__ import annotations

import json
import re

import pytest

from kctl.errors import ExitCode
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration


@pytest.fixture
def quota_cluster(cluster, request):
    """The cluster, with Kafka's tools to cross-check (on the bundled broker: the jars'
    tools pointed at it)."""
    if cluster.kafka is None:
        from tests.backends.plugin import Cluster

        return Cluster(cluster.backend, cluster.bootstrap, cluster.nodes, kafka=request.getfixturevalue("kafka_tools"))
    return cluster


def kafka_configs(cluster, *entity_args) -> set[tuple]:
    """(user, client-id, ip, quota, value) rows from `kafka-configs --describe`."""
    proc = cluster.kafka.run_tool(cluster.kafka.config_command, "--bootstrap-server", cluster.bootstrap, "--describe", *entity_args)
    assert proc.returncode == 0, proc.stderr
    rows = set()
    for line in proc.stdout.splitlines():
        match = re.match(r"Quota configs for (.*) are (.*)$", line)
        if not match:
            continue
        names = {"user": None, "client_id": None, "ip": None}
        for part in match.group(1).split(", "):
            if part.startswith("the default "):
                names[part.removeprefix("the default ").replace("user-principal", "user").replace("-", "_")] = "<default>"
            else:
                kind, name = re.match(r"(\S+) '(.*)'", part).groups()
                names[{"user-principal": "user", "client-id": "client_id", "ip": "ip"}[kind]] = name
        for key, value in re.findall(r"(\w+)=([0-9.E]+)", match.group(2)):
            rows.add((names["user"], names["client_id"], names["ip"], key, float(value)))
    return rows


def quota_rows(kctl, cluster, *args):
    result = kctl("-b", cluster.bootstrap, "quota", "list", *args, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return {(q["user"], q["client_id"], q["ip"], q["quota"], q["value"]) for q in json.loads(result.stdout)}


def test_quotas_set_list_describe_delete_as_kafka_configs_sees_them(kctl, quota_cluster, unique_name):
    c = quota_cluster
    b = ("-b", c.bootstrap)
    user, client = unique_name("qu"), unique_name("qc")
    for args in (
        ("--user", user, "--set", "producer_byte_rate=1MiB", "--set", "consumer-byte-rate=2MB"),
        ("--user", user, "--client-id", client, "--set", "request_percentage=50"),
        ("--default-user", "--client-id", client, "--set", "controller_mutation_rate=10"),
        ("--ip", "10.1.2.3", "--set", "connection_creation_rate=20"),
    ):
        result = kctl(*b, "quota", "set", *args)
        assert result.exit_code == 0, (args, result.stderr)
    # Quotas are altered through the controller and described from a broker's copy of the
    # metadata, which may lag a moment behind.
    eventually(lambda: _assert_equal(quota_rows(kctl, c, "--user", user), {
        (user, None, None, "producer_byte_rate", 1048576.0),
        (user, None, None, "consumer_byte_rate", 2000000.0),
        (user, client, None, "request_percentage", 50.0),
    }))
    everything = eventually(lambda: _with(quota_rows(kctl, c), ("<default>", client, None, "controller_mutation_rate", 10.0)))
    theirs = set()
    for entity in (("--entity-type", "users"), ("--entity-type", "clients"), ("--entity-type", "ips"),
                   ("--entity-type", "users", "--entity-type", "clients")):
        theirs |= kafka_configs(c, *entity)
    assert everything == theirs

    described = kctl(*b, "quota", "describe", "--user", user, "--client-id", client)
    assert described.stdout == (
        "QUOTA\tVALUE\tSOURCE\n"
        f"producer_byte_rate\t1048576\tuser {user}\n"
        f"consumer_byte_rate\t2000000\tuser {user}\n"
        f"request_percentage\t50\tuser {user}, client-id {client}\n"
        f"controller_mutation_rate\t10\tuser <default>, client-id {client}\n"
    )

    dry = kctl(*b, "quota", "set", "--user", user, "--set", "producer_byte_rate=5", "--dry-run")
    assert (dry.exit_code, dry.stderr) == (0, f"dry run: the broker accepted the change to user {user}; nothing was applied\n")
    refused = kctl(*b, "quota", "delete", "--user", user)
    assert refused.exit_code == ExitCode.ABORTED
    deleted = kctl(*b, "quota", "delete", "--user", user, "--quota", "producer_byte_rate", "--yes")
    assert deleted.stdout == f"USER\tCLIENT-ID\tIP\tQUOTA\tVALUE\n{user}\t\t\tconsumer_byte_rate\t2000000\n"
    assert kctl(*b, "quota", "delete", "--user", user, "--yes").exit_code == 0
    eventually(lambda: _assert_equal(kafka_configs(c, "--entity-type", "users", "--entity-name", user), set()))
    gone = kctl(*b, "quota", "delete", "--user", user, "--yes")
    assert (gone.exit_code, gone.stderr) == (ExitCode.NOT_FOUND, f"error: unable to delete quotas of user {user}: no quotas set on it\n")
    for args in (("--user", user, "--client-id", client), ("--default-user", "--client-id", client), ("--ip", "10.1.2.3")):
        assert kctl(*b, "quota", "delete", *args, "--yes").exit_code == 0


def _assert_equal(found, expected):
    assert found == expected


def _with(rows, row):
    assert row in rows
    return rows


@pytest.mark.parametrize(
    "args, message",
    [
        (("set", "--user", "a", "--set", "producer_byte_rate=lots"),
         "error: unable to parse quota producer_byte_rate 'lots': expected bytes such as 1048576, 50MB or 10MiB"),
        (("set", "--user", "a", "--set", "bandwidth=1"),
         "error: unknown quota 'bandwidth' for users and client ids; accepted: producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate"),
        (("set", "--ip", "10.0.0.1", "--set", "producer_byte_rate=1"), "error: unknown quota 'producer_byte_rate' for an IP; accepted: connection_creation_rate"),
        (("set", "--ip", "not-an-ip", "--set", "connection_creation_rate=1"), "error: --ip 'not-an-ip' is not an IPv4 or IPv6 address"),
        (("set", "--user", "a", "--ip", "10.0.0.1", "--set", "connection_creation_rate=1"),
         "error: an IP quota stands alone: give --ip (or --default-ip) without --user or --client-id"),
        (("set", "--set", "producer_byte_rate=1"), "error: name the entity: --user, --client-id (or both), --ip, or their defaults (--default-user, "
                                                  "--default-client-id, --default-ip)"),
        (("set", "--user", "a", "--default-user", "--set", "producer_byte_rate=1"), "error: --user and --default-user name different entities; give one"),
        (("set", "--user", "a", "--set", "request_percentage=-5"), "error: quota request_percentage must be positive, not -5"),
    ],
)
def test_bad_quota_input_is_a_usage_error(kctl, args, message):
    result = kctl("-b", "127.0.0.1:1", "quota", *args)
    assert (result.exit_code, result.stderr.splitlines()[0]) == (ExitCode.USAGE, message)
