"""kctl config describe|alter and topic alter-config against real brokers, checked with an
independent client and with Kafka's own kafka-configs tool."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from kctl.errors import ExitCode
from tests.support.eventually import eventually

pytestmark = [pytest.mark.integration, pytest.mark.kafka39]


def kafka_topic_configs(cluster, topic) -> dict[str, tuple[str, str]]:
    client = AdminClient({"bootstrap.servers": cluster.bootstrap})
    (future,) = client.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    return {name: (entry.value, ConfigSource(entry.source).name) for name, entry in future.result().items()}


def assert_configs(cluster, topic, **expected: tuple[str | None, str]) -> None:
    """The topic's configs, as soon as every broker agrees (see tests/support/eventually.py).
    A None value matches any value with that source."""

    def check():
        actual = kafka_topic_configs(cluster, topic)
        for key, (value, source) in expected.items():
            name = key.replace("__", ".")
            assert actual[name][1] == source, (name, actual[name])
            if value is not None:
                assert actual[name][0] == value, (name, actual[name])

    eventually(check)


@pytest.fixture
def topic(kctl, cluster, unique_name):
    name = unique_name("cfg")
    assert kctl("-b", cluster.bootstrap, "topic", "create", name, "-p", "1").exit_code == 0
    return name


def test_set_append_subtract_delete(kctl, cluster, topic):
    result = kctl("-b", cluster.bootstrap, "topic", "alter-config", topic, "--set", "retention.ms=86400000", "--append", "cleanup.policy=compact")
    assert (result.exit_code, result.stdout) == (
        0,
        f"ENTITY-TYPE\tENTITY-NAME\tSTATUS\tCHANGES\ntopic\t{topic}\taltered\tretention.ms=86400000 cleanup.policy+=compact\n",
    )
    assert_configs(cluster, topic, retention__ms=("86400000", "DYNAMIC_TOPIC_CONFIG"), cleanup__policy=("delete,compact", "DYNAMIC_TOPIC_CONFIG"))

    kctl("-b", cluster.bootstrap, "config", "alter", "topic", topic, "--subtract", "cleanup.policy=delete", "--delete", "retention.ms")
    assert_configs(cluster, topic, cleanup__policy=("compact", "DYNAMIC_TOPIC_CONFIG"), retention__ms=(None, "DEFAULT_CONFIG"))


def test_describe_shows_overrides_then_everything(kctl, cluster, topic):
    kctl("-b", cluster.bootstrap, "topic", "alter-config", topic, "--set", "retention.ms=1234567")
    assert_configs(cluster, topic, retention__ms=("1234567", "DYNAMIC_TOPIC_CONFIG"))
    result = kctl("-b", cluster.bootstrap, "config", "describe", "topic", topic, "-o", "json")
    assert result.exit_code == 0, result.stderr
    (resource,) = json.loads(result.stdout)
    assert (resource["entity_type"], resource["entity_name"]) == ("topic", topic)
    by_name = {c["name"]: c for c in resource["configs"]}
    assert by_name["retention.ms"] == {
        "name": "retention.ms",
        "value": "1234567",
        "source": "DYNAMIC_TOPIC_CONFIG",
        "is_default": False,
        "read_only": False,
        "sensitive": False,
    }
    assert all(c["source"] not in ("DEFAULT_CONFIG", "STATIC_BROKER_CONFIG") for c in resource["configs"])

    everything = json.loads(kctl("-b", cluster.bootstrap, "config", "describe", "topic", topic, "--all", "-o", "json").stdout)[0]
    expected = kafka_topic_configs(cluster, topic)
    assert {c["name"]: (c["value"], c["source"]) for c in everything["configs"]} == expected

    keyed = kctl("-b", cluster.bootstrap, "config", "describe", "topic", topic, "-k", "retention.ms", "-k", "cleanup.policy")
    assert keyed.stdout.splitlines()[4:] == [
        "NAME\tVALUE\tSOURCE",
        "cleanup.policy\tdelete\tDEFAULT_CONFIG",
        "retention.ms\t1234567\tDYNAMIC_TOPIC_CONFIG",
    ]


def test_dry_run_changes_nothing(kctl, cluster, topic):
    result = kctl("-b", cluster.bootstrap, "topic", "alter-config", topic, "--set", "retention.ms=5", "--dry-run")
    assert result.stdout.splitlines()[1].split("\t")[2] == "validated"
    assert_configs(cluster, topic, retention__ms=(None, "DEFAULT_CONFIG"))


def test_invalid_values_and_names_keep_kafka_error_names(kctl, cluster, topic):
    result = kctl("-b", cluster.bootstrap, "topic", "alter-config", topic, "--set", "no.such.config=1")
    assert (result.exit_code, result.stderr) == (
        ExitCode.INVALID,
        f"error: unable to alter configs of topic {topic}: INVALID_CONFIG: Unknown topic config name: no.such.config\n",
    )
    result = kctl("-b", cluster.bootstrap, "topic", "alter-config", topic, "--set", "retention.ms=soon")
    assert result.exit_code == ExitCode.INVALID
    assert result.stderr.startswith(f"error: unable to alter configs of topic {topic}: INVALID_CONFIG: ")


def test_unknown_topic_and_bad_usage(kctl, cluster, unique_name):
    missing = unique_name("missing")
    for args in (("config", "describe", "topic", missing), ("topic", "alter-config", missing, "--set", "retention.ms=1")):
        result = kctl("-b", cluster.bootstrap, *args)
        assert result.exit_code == ExitCode.NOT_FOUND, result.stderr
        assert "UNKNOWN_TOPIC_OR_PARTITION: no such topic" in result.stderr
    assert kctl("-b", cluster.bootstrap, "topic", "alter-config", missing).stderr.startswith("error: nothing to change")
    assert kctl("-b", cluster.bootstrap, "config", "describe", "broker", "one").exit_code == ExitCode.USAGE
    assert kctl("-b", cluster.bootstrap, "config", "describe", "broker-default", "1").exit_code == ExitCode.USAGE
    duplicated = kctl("-b", cluster.bootstrap, "topic", "alter-config", missing, "--set", "a=1", "--delete", "a")
    assert (duplicated.exit_code, duplicated.stderr) == (ExitCode.USAGE, "error: unable to alter configs: a given more than once\n")


def test_partial_failure_over_several_topics(kctl, cluster, topic, unique_name):
    missing = unique_name("missing")
    result = kctl("-b", cluster.bootstrap, "topic", "alter-config", topic, missing, "--set", "retention.ms=7200000")
    assert result.exit_code == ExitCode.PARTIAL_FAILURE
    assert [line.split("\t")[1:3] for line in result.stdout.splitlines()[1:]] == [[topic, "altered"], [missing, "failed"]]
    assert_configs(cluster, topic, retention__ms=("7200000", "DYNAMIC_TOPIC_CONFIG"))


def test_broker_configs_per_broker_and_cluster_default(kctl, cluster):
    broker = str(json.loads(kctl("-b", cluster.bootstrap, "broker", "list", "-o", "json").stdout)[0]["id"])
    everything = json.loads(kctl("-b", cluster.bootstrap, "config", "describe", "broker", broker, "--all", "-o", "json").stdout)[0]
    by_name = {c["name"]: c for c in everything["configs"]}
    assert by_name["node.id"]["source"] == "STATIC_BROKER_CONFIG"
    assert by_name["log.retention.hours"]["source"] == "DEFAULT_CONFIG"

    try:
        result = kctl("-b", cluster.bootstrap, "config", "alter", "broker-default", "--set", "log.cleaner.backoff.ms=16000")
        assert result.exit_code == 0, result.stderr
        def applied():
            default = json.loads(kctl("-b", cluster.bootstrap, "config", "describe", "broker-default", "-o", "json").stdout)[0]
            assert {"name": "log.cleaner.backoff.ms", "value": "16000", "source": "DYNAMIC_DEFAULT_BROKER_CONFIG"}.items() <= next(
                (c for c in default["configs"] if c["name"] == "log.cleaner.backoff.ms"), {}
            ).items()

        eventually(applied)
        if cluster.kafka is not None:
            proc = cluster.kafka.run_tool(
                cluster.kafka.config_command, "--bootstrap-server", cluster.bootstrap, "--describe", "--entity-type", "brokers", "--entity-default"
            )
            assert "log.cleaner.backoff.ms=16000" in proc.stdout, proc.stdout + proc.stderr

        def inherited():
            per_broker = kctl("-b", cluster.bootstrap, "config", "describe", "broker", broker, "-k", "log.cleaner.backoff.ms", "-o", "json")
            assert json.loads(per_broker.stdout)[0]["configs"][0]["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"

        eventually(inherited)

        bad = kctl("-b", cluster.bootstrap, "config", "alter", "broker-default", "--set", "log.cleaner.backoff.ms=x")
        assert bad.exit_code == ExitCode.INVALID
        assert bad.stderr.startswith("error: unable to alter configs of cluster default: INVALID_REQUEST: ")
    finally:
        kctl("-b", cluster.bootstrap, "config", "alter", "broker-default", "--delete", "log.cleaner.backoff.ms")


def test_broker_logger_levels(kctl, cluster):
    if cluster.backend == "kafka39":
        pytest.skip("the test's Kafka 3.9 node logs through log4j2: 3.9's logger API (log4j 1) knows no loggers there")
    broker = str(json.loads(kctl("-b", cluster.bootstrap, "broker", "list", "-o", "json").stdout)[0]["id"])
    logger = "kafka.server.ReplicaFetcherManager"
    try:
        assert kctl("-b", cluster.bootstrap, "config", "alter", "broker-logger", broker, "--set", f"{logger}=DEBUG").exit_code == 0
        def applied():
            shown = json.loads(kctl("-b", cluster.bootstrap, "config", "describe", "broker-logger", broker, "-k", logger, "-o", "json").stdout)
            assert shown[0]["configs"] == [
                {"name": logger, "value": "DEBUG", "source": "DYNAMIC_BROKER_LOGGER_CONFIG", "is_default": False, "read_only": False, "sensitive": False}
            ]

        eventually(applied)
        refused = kctl("-b", cluster.bootstrap, "config", "alter", "broker-logger", broker, "--append", f"{logger}=INFO")
        assert refused.exit_code == ExitCode.INVALID
    finally:
        kctl("-b", cluster.bootstrap, "config", "alter", "broker-logger", broker, "--delete", logger)
