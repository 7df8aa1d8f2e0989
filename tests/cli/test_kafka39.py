"""What a Kafka 3.9 cluster lacks is one clear line naming the release that has it: the
consumer group protocol (KIP-848) is refused before librdkafka would wait for an
assignment that never comes, and listing share or streams groups says why none are
listed rather than showing a silent empty table. The rest of kctl's everyday commands run
on 3.9 in the modules marked `kafka39`."""

from __future__ import annotations

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
