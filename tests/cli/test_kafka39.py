"""What a Kafka 3.9 cluster lacks is one clear line naming the release that has it: the
consumer group protocol (KIP-848) is refused before librdkafka would wait for an
assignment that never comes, and listing share or streams groups says why none are
listed rather than showing a silent empty table. The rest of kctl's everyday commands run
on 3.9 in the modules marked `kafka39`."""

from __future__ import annotations

import json

import pytest

from kctl.errors import ExitCode

pytestmark = [pytest.mark.integration, pytest.mark.kafka39]


@pytest.fixture
def kafka39(cluster):
    if cluster.backend != "kafka39":
        pytest.skip("what Apache Kafka 3.9 lacks: the kafka39 backend")
    return cluster


def test_the_consumer_group_protocol_is_one_line(kctl, kafka39, unique_name):
    topic = unique_name("k39")
    assert kctl("-b", kafka39.bootstrap, "topic", "create", topic).exit_code == 0
    result = kctl("-b", kafka39.bootstrap, "record", "consume", topic, "-g", unique_name("g"), "-n", "1",
                  "-X", "group.protocol=consumer")
    assert (result.exit_code, result.stderr) == (ExitCode.CONFIG, (
        f"error: unable to consume {topic}: the cluster does not support the consumer group protocol (KIP-848, Apache Kafka 4.0 or newer)\n"
        "hint: use -X group.protocol=classic (Apache Kafka 4.x brokers and kctl's bundled broker support both)\n"))


def test_share_and_streams_groups_are_said_missing(kctl, kafka39):
    result = kctl("-b", kafka39.bootstrap, "group", "list", "--type", "share", "--type", "streams")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "GROUP\tSTATE\tTYPE\tMEMBERS\tPROTOCOL\n", (
        "warning: the cluster does not support share groups (Apache Kafka 4.2 or newer has them): none are listed\n"
        "warning: the cluster does not support streams groups (Apache Kafka 4.2 or newer has them): none are listed\n"))
    assert kctl("-b", kafka39.bootstrap, "group", "list", "--type", "classic").stderr == ""


def test_consuming_as_a_share_group_member_is_one_line(kctl, kafka39, unique_name):
    topic = unique_name("k39")
    assert kctl("-b", kafka39.bootstrap, "topic", "create", topic).exit_code == 0
    group = unique_name("q")
    result = kctl("-b", kafka39.bootstrap, "record", "consume", topic, "--share-group", group)
    assert (result.exit_code, result.stdout, result.stderr) == (ExitCode.INVALID, "", (
        f"error: unable to join share group {group}: the cluster does not support share groups (Apache Kafka 4.2 or newer has them)\n"))


def test_the_other_nouns_read_a_3_9_cluster(kctl, kafka39, unique_name):
    """The read commands of the nouns the modules marked `kafka39` leave out: quotas,
    SCRAM users, transactions and producers, features, the quorum; ACLs on a cluster
    without an authorizer (as this one runs) are the one line that says so."""
    b = kafka39.bootstrap
    topic = unique_name("k39")
    assert kctl("-b", b, "topic", "create", topic).exit_code == 0
    assert kctl("-b", b, "record", "produce", topic, input="x\n").exit_code == 0
    for args in (("quota", "list"), ("user", "list"), ("transaction", "list"), ("producer", "list", topic), ("cluster", "quorum")):
        result = kctl("-b", b, *args, "-o", "json")
        assert (result.exit_code, result.stderr) == (0, ""), (args, result.stderr)
        json.loads(result.stdout)
    features = {f["name"]: f for f in json.loads(kctl("-b", b, "feature", "list", "-o", "json").stdout)}
    # 3.9's own levels: no group.version, share.version or streams.version to show.
    assert set(features) == {"kraft.version", "metadata.version"}
    assert (features["metadata.version"]["finalized_level"], features["metadata.version"]["finalized_version"]) == (21, "3.9-IV0")
    result = kctl("-b", b, "acl", "list")
    assert (result.exit_code, result.stderr) == (ExitCode.INVALID, (
        "error: unable to list ACLs: ACLs are not enabled on the cluster (SECURITY_DISABLED: no authorizer is configured)\n"
        "hint: brokers enforce ACLs only with authorizer.class.name set (KRaft: org.apache.kafka.metadata.authorizer.StandardAuthorizer)\n"))
