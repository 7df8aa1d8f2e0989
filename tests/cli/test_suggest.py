""""Did you mean ...?": a misspelt topic, group or context is answered with the closest
existing name, in the hint line under the error (exit status unchanged)."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition

from kctl.cli._suggest import closest
from kctl.errors import ExitCode

pytestmark = pytest.mark.integration


def test_the_closest_name_ignores_case_and_needs_to_be_close():
    names = ["orders", "orders-v2", "payments", "Billing"]
    assert closest("ordres", names) == "orders"
    assert closest("billing", names) == "Billing"
    assert closest("orders-v3", names) == "orders-v2"
    assert closest("invoices", names) is None
    assert closest("orders", ["orders"]) is None  # the name itself is no suggestion


def test_misspelt_topic_and_group_get_the_closest_name(kctl, cluster, unique_name):
    topic, group = unique_name("sgorders"), unique_name("sgbilling")
    assert kctl("-b", cluster.bootstrap, "topic", "create", topic).exit_code == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    consumer.close()
    typo_topic, typo_group = topic.replace("sgorders", "sgordres"), group.replace("sgbilling", "sgbiling")
    for args, what in ((("topic", "describe", typo_topic), f"describe topic {typo_topic}"),
                       (("config", "describe", "topic", typo_topic), f"describe configs of topic {typo_topic}"),
                       (("record", "consume", typo_topic), f"consume topic {typo_topic}"),
                       (("topic", "delete", typo_topic, "--yes"), f"delete topic {typo_topic}")):
        result = kctl("-b", cluster.bootstrap, *args)
        error, hint = result.stderr.splitlines()
        assert (result.exit_code, error) == (ExitCode.NOT_FOUND, f"error: unable to {what}: UNKNOWN_TOPIC_OR_PARTITION: no such topic")
        assert hint.startswith(f"hint: did you mean {topic}?"), hint
    for args, what in ((("group", "describe", typo_group), f"describe group {typo_group}"),
                       (("group", "lag", typo_group), f"compute lag of group {typo_group}")):
        result = kctl("-b", cluster.bootstrap, *args)
        assert (result.exit_code, result.stderr) == (
            ExitCode.NOT_FOUND, f"error: unable to {what}: GROUP_ID_NOT_FOUND: no such group\nhint: did you mean {group}?\n")
    nothing = kctl("-b", cluster.bootstrap, "topic", "describe", "zz-nothing-like-it")
    assert (nothing.exit_code, nothing.stderr) == (
        ExitCode.NOT_FOUND, "error: unable to describe topic zz-nothing-like-it: UNKNOWN_TOPIC_OR_PARTITION: no such topic\n")


def test_misspelt_context_gets_the_closest_name(kctl):
    assert kctl("context", "set", "production", "-b", "127.0.0.1:1").exit_code == 0
    result = kctl("--context", "prodution", "topic", "list")
    assert (result.exit_code, result.stderr) == (
        ExitCode.NOT_FOUND, "error: unable to use context 'prodution' (from --context): no such context\n"
        "hint: did you mean production? (kctl context list shows the contexts; kctl context set creates one)\n")
    used = kctl("context", "use", "Production")
    assert (used.exit_code, used.stderr) == (
        ExitCode.NOT_FOUND, "error: unable to find context 'Production': no such context\n"
        "hint: did you mean production? (kctl context list shows the contexts)\n")
