"""kctl/admin/declarative/kafka_configs.tsv, which resource files are checked against
offline, is what Kafka's own ConfigDefs print from the jars the tests run; and the
checks read Kafka's validators as Kafka applies them."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from kctl.admin.declarative.kafka_configs import check

SOURCE = Path(__file__).resolve().parent.parent / "backends" / "KafkaConfigs.java"


def test_table_matches_the_kafka_jars():
    from tests.backends.jars import run_java_source

    ours = resources.files("kctl.admin.declarative").joinpath("kafka_configs.tsv").read_text(encoding="utf-8")
    assert ours == run_java_source(SOURCE), f"regenerate: java -cp 'KAFKA_LIBS/*' tests/backends/{SOURCE.name} > kctl/admin/declarative/kafka_configs.tsv"


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("retention.ms", "86400000", None),
        ("retention.ms", "-1", None),
        ("retention.ms", "-2", "must be [-1,...], not '-2'"),
        ("retention.ms", "1d", "must be an integer, not '1d'"),
        ("segment.bytes", "3000000000", "must fit in 32 bits (int), not 3000000000"),
        ("cleanup.policy", "compact,delete", None),
        ("cleanup.policy", "compact, delete", None),
        ("cleanup.policy", "archive", "must be [compact, delete], not 'archive'"),
        ("compression.gzip.level", "-1", None),
        ("compression.gzip.level", "9", None),
        ("compression.gzip.level", "0", "must be [1,...,9] or -1, not '0'"),
        ("min.cleanable.dirty.ratio", "0.5", None),
        ("min.cleanable.dirty.ratio", "1.5", "must be [0,...,1], not '1.5'"),
        ("unclean.leader.election.enable", "TRUE", None),
        ("unclean.leader.election.enable", "yes", "must be true or false, not 'yes'"),
        ("message.timestamp.type", "LogAppendTime", None),
        ("retension.ms", "1", "unknown topic config (did you mean retention.ms?)"),
    ],
)
def test_topic_values_checked_as_kafka_does(name, value, reason):
    assert check("topic", name, value) == reason


def test_broker_configs():
    assert check("broker", "log.retention.ms", "1000") is None
    assert check("broker", "num.io.threads", "0") == "must be [1,...], not '0'"
    assert check("broker", "log.retention.mss", "1") == "unknown broker config (did you mean log.retention.ms?)"
