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


@pytest.mark.parametrize("command", [("topic", "describe", "{typo}"), ("record", "consume", "{typo}"), ("record", "copy", "{typo}", "{topic}"),
                                     ("record", "redrive", "{typo}"), ("offset", "get", "{typo}"), ("config", "describe", "topic", "{typo}")])
def test_an_unknown_topic_is_said_after_one_metadata_answer(cluster, unique_name, command, tmp_path):
    """No asking again for a name the cluster does not know (kctl's `topic create` returns
    once every broker knows a new topic): one request looks it up, one Metadata request
    lists the topics for the hint, and the command ends (kctl's own requests, which
    --debug logs one by one; no librdkafka client is built on this path)."""
    import os
    import subprocess
    import sys

    topic = unique_name("ffast")
    typo = topic.replace("ffast", "fafst")
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    created = subprocess.run([sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "topic", "create", topic], env=env,
                             capture_output=True, text=True)
    assert created.returncode == 0, created.stderr
    argv = [part.format(typo=typo, topic=topic) for part in command]
    run = subprocess.run([sys.executable, "-m", "kctl", "--debug", "-b", cluster.bootstrap, *argv], env=env, capture_output=True,
                         text=True, timeout=60)
    lines = run.stderr.splitlines()
    assert run.returncode == ExitCode.NOT_FOUND, run.stderr
    assert lines[-1] == f"hint: did you mean {topic}?" or lines[-1].startswith(f"hint: did you mean {topic}? ("), lines[-2:]
    sent = [line.split("send ")[1].split()[0] for line in lines if "kctl.wire: send " in line]
    asked = [api for api in sent if api != "ApiVersions"]
    # The lookup (Metadata, and of several brokers each broker once: the one asked first
    # may not know a topic created a moment ago; DescribeConfigs for configs), then the
    # listing for the hint.
    lookup = ["DescribeConfigs"] if command[0] == "config" else ["Metadata"] * (1 if cluster.nodes == 1 else 1 + cluster.nodes)
    assert asked == [*lookup, "Metadata"], sent
    assert not any("rdkafka" in line for line in lines), run.stderr


def test_a_misspelt_command_gets_the_closest_names_and_a_missing_value_its_commands_help(kctl):
    assert (kctl("topc", "list").exit_code, kctl("topc", "list").stderr) == (
        ExitCode.USAGE, "error: no such command 'topc'. (Did you mean one of: 'top', 'topic'?)\nhint: see 'kctl --help'\n")
    assert kctl("tpoic", "list").stderr == "error: no such command 'tpoic'. Did you mean 'topic'?\nhint: see 'kctl --help'\n"
    assert kctl("record", "cnsume", "t").stderr == (
        "error: no such command 'cnsume'. Did you mean 'consume'?\nhint: see 'kctl record --help'\n")
    missing = kctl("record", "consume", "t", "--key")
    assert (missing.exit_code, missing.stderr) == (
        ExitCode.USAGE, "error: option '--key' requires an argument.\nhint: see 'kctl record consume --help'\n")
