"""Authentication and authorization against a SASL + ACL cluster — the bundled broker and a
real Kafka node, secured alike: settings reach both clients (librdkafka and kctl's own),
secrets stay hidden, and failures get the not-authorized status."""

from __future__ import annotations

import json

import pytest

from kctl.errors import ExitCode
from tests.security.flags import sasl_flags
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration


def test_authenticated_admin_uses_both_clients(kctl, secured, unique_name):
    topic = unique_name("sec")
    flags = sasl_flags(secured)
    assert kctl(*flags, "topic", "create", topic, "-p", "2").exit_code == 0
    # cluster info asks DescribeCluster and the metadata quorum through kctl's wire client: the same SASL settings.
    info = kctl(*flags, "cluster", "info", "-o", "json")
    assert info.exit_code == 0, info.stderr
    assert json.loads(info.stdout)["controller_id"] == 1

    # A broker creates a new topic's logs as it applies the metadata, after CreateTopics
    # has answered: DescribeLogDirs lists a partition once its log exists.
    def listed_both():
        listed = kctl(*flags, "broker", "log-dirs", "-t", topic, "--replicas", "-o", "json")
        assert listed.exit_code == 0, listed.stderr
        assert {r["partition"] for r in json.loads(listed.stdout)} == {0, 1}

    eventually(listed_both)


def test_context_with_credentials_from_the_environment(kctl, secured):
    config = secured.client_config()
    kctl("context", "set", "secured", "-b", config["bootstrap.servers"], "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=PLAIN", "-X", "sasl.username=admin")
    result = kctl("--context", "secured", "broker", "list", "-o", "json", env={"KCTL_X_SASL_PASSWORD": config["sasl.password"]})
    assert result.exit_code == 0, result.stderr
    shown = kctl("--context", "secured", "context", "show", env={"KCTL_X_SASL_PASSWORD": config["sasl.password"]})
    assert "sasl.password\t[hidden]" in shown.stdout
    assert config["sasl.password"] not in shown.stdout + shown.stderr


def test_wrong_password_is_not_authorized(kctl, secured):
    result = kctl(*sasl_flags(secured, password="wrong"), "--timeout", "5", "topic", "list")
    assert result.exit_code == ExitCode.NOT_AUTHORIZED, result.stderr
    assert result.stderr.startswith("error: unable to list topics: ")
    assert "Authentication failed" in result.stderr or "SASL_AUTHENTICATION_FAILED" in result.stderr
    assert "wrong" not in result.stderr


def test_user_without_acls_is_refused(kctl, secured, unique_name):
    flags = sasl_flags(secured, user="alice")
    result = kctl(*flags, "topic", "create", unique_name("denied"))
    assert result.exit_code == ExitCode.NOT_AUTHORIZED, result.stderr
    assert "AUTHORIZATION_FAILED" in result.stderr
    described = kctl(*flags, "config", "describe", "broker", "1")
    assert described.exit_code == ExitCode.NOT_AUTHORIZED, described.stderr


def test_records_of_a_topic_the_user_may_not_read(kctl, secured, unique_name):
    topic = unique_name("private")
    assert kctl(*sasl_flags(secured), "topic", "create", topic).exit_code == 0
    flags = sasl_flags(secured, user="alice")
    produced = kctl(*flags, "record", "produce", topic, input="x\n")
    assert (produced.exit_code, produced.stderr) == (
        ExitCode.NOT_AUTHORIZED, f"error: unable to produce to {topic}: TOPIC_AUTHORIZATION_FAILED: not authorized to access topic {topic}\n"
    )
    consumed = kctl(*flags, "record", "consume", topic)
    assert (consumed.exit_code, consumed.stderr) == (
        ExitCode.NOT_AUTHORIZED, f"error: unable to consume topic {topic}: TOPIC_AUTHORIZATION_FAILED: not authorized to access topic {topic}\n"
    )


@pytest.mark.parametrize(("user", "mechanism"), [("admin", "PLAIN"), ("admin", "OAUTHBEARER"), ("bob", "SCRAM-SHA-256"), ("bob", "SCRAM-SHA-512")])
def test_group_commands_authenticate_on_kctls_wire_client(kctl, secured, unique_name, user, mechanism):
    """The group commands talk to Kafka through kctl's own client: every SASL mechanism it
    speaks gets through, and what the principal may see is what Kafka lets it see."""
    from confluent_kafka import Consumer, TopicPartition

    if mechanism == "OAUTHBEARER" and secured.backend == "bundled":
        pytest.skip("the bundled broker serves PLAIN and SCRAM, not OAUTHBEARER")
    topic, group = unique_name("wire"), unique_name("wire-group")
    admin = sasl_flags(secured)
    assert kctl(*admin, "topic", "create", topic).exit_code == 0
    consumer = Consumer({**secured.client_config(), "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    consumer.close()

    flags = ["-b", secured.bootstrap] + [f for k, v in secured.client_config(user, mechanism).items()
                                               if k != "bootstrap.servers" for f in ("-X", f"{k}={v}")]
    listed = kctl(*flags, "group", "list", "-o", "json")
    assert listed.exit_code == 0, listed.stderr
    lag = kctl(*flags, "group", "lag", group, "-o", "json")
    if user == "admin":
        assert group in {g["group"] for g in json.loads(listed.stdout)}
        assert lag.exit_code == 0, lag.stderr
        assert json.loads(lag.stdout)[0]["partitions"][0]["committed"] == 0
    else:  # bob has no ACLs: Kafka hides the group from the listing and refuses to describe it
        assert group not in {g["group"] for g in json.loads(listed.stdout)}
        assert lag.exit_code == ExitCode.NOT_AUTHORIZED, lag.stderr
        assert "GROUP_AUTHORIZATION_FAILED" in lag.stderr


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_wrong_password_on_kctls_wire_client(kctl, secured, mechanism):
    user = "admin" if mechanism == "PLAIN" else "bob"
    config = secured.client_config(user, mechanism)
    config["sasl.password"] = "wrong-pw"
    flags = ["-b", config.pop("bootstrap.servers")] + [f for k, v in config.items() for f in ("-X", f"{k}={v}")]
    for args, action in ((("group", "list"), "list groups"), (("quota", "list"), "describe client quotas")):
        result = kctl(*flags, "--timeout", "10", *args)
        assert result.exit_code == ExitCode.NOT_AUTHORIZED, result.stderr
        assert result.stderr.startswith(f"error: unable to {action}: authentication failed at {secured.bootstrap}: SASL_AUTHENTICATION_FAILED: "), result.stderr
        assert "wrong-pw" not in result.stderr
