"""OAUTHBEARER tokens from a command or a file (kctl's own settings,
sasl.oauthbearer.token.command/.file/.lifetime) against the secured Kafka node, whose
unsecured-JWT validator checks each token's exp and whose OAUTHBEARER sessions last at most
10 s (connections.max.reauth.ms): a client that keeps one token is cut off. The short tests
run on the secured bundled broker too (the `secured` fixture); the half-minute one and
Spark's stay on Kafka alone, for the suite's time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kctl.errors import ExitCode
from tests.support.eventually import until

pytestmark = pytest.mark.integration

TOKEN_SCRIPT = """
import base64, json, pathlib, sys, time
counter = pathlib.Path(sys.argv[1])
counter.write_text(str(int(counter.read_text()) + 1 if counter.exists() else 1))
part = lambda claims: base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
now = int(time.time())
print(part({"alg": "none"}) + "." + part({"sub": sys.argv[2], "iat": now, "exp": now + int(sys.argv[3])}) + ".")
"""


def token_command(tmp_path: Path, name: str, principal: str = "admin", lifetime: int = 15) -> tuple[str, Path]:
    """A shell command printing a fresh unsecured JWT for `principal` (exp in `lifetime`
    seconds) and counting its calls in the file returned."""
    script = tmp_path / "token.py"
    script.write_text(TOKEN_SCRIPT)
    counter = tmp_path / f"{name}.calls"
    return f"{sys.executable} {script} {counter} {principal} {lifetime}", counter


def flags(cluster, **properties: str) -> list[str]:
    argv = ["-b", cluster.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT"]
    for key, value in properties.items():
        argv += ["-X", f"{key}={value}"]
    return argv


def calls(counter: Path) -> int:
    return int(counter.read_text()) if counter.exists() else 0


def test_a_token_command_keeps_long_commands_working_past_each_tokens_life(kctl, secured_kafka, tmp_path, unique_name):
    """15-second tokens, 10-second sessions: a half-minute `group lag --watch` (kctl's wire
    client) and a following `record consume --group` (librdkafka's oauth_cb) keep working,
    the command run again before each token expires."""
    topic, group = unique_name("token"), unique_name("token-group")
    command, counter = token_command(tmp_path, "setup")
    setup = flags(secured_kafka, **{"sasl.oauthbearer.token.command": command})
    assert kctl(*setup, "topic", "create", topic).exit_code == 0
    assert kctl(*setup, "record", "produce", topic, input="first\n").exit_code == 0
    assert calls(counter) >= 1  # no sasl.mechanism set: a token command means OAUTHBEARER
    # The group exists (its first record committed) before `group lag --watch` starts.
    first = kctl(*setup, "record", "consume", topic, "--from", "earliest", "--group", group, "-n", "1", "-o", "jsonl")
    assert first.exit_code == 0 and json.loads(first.stdout)["value"] == "first", first.stderr

    watch_command, watch_calls = token_command(tmp_path, "watch")
    consume_command, consume_calls = token_command(tmp_path, "consume")
    env = {**os.environ, "KCTL_DEBUG": ""}
    kctl_argv = [sys.executable, "-m", "kctl"]
    consumer = subprocess.Popen([*kctl_argv, *flags(secured_kafka, **{"sasl.oauthbearer.token.command": consume_command}),
                                 "record", "consume", topic, "--group", group, "--follow", "-o", "jsonl"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    watcher = subprocess.Popen([*kctl_argv, *flags(secured_kafka, **{"sasl.oauthbearer.token.command": watch_command}),
                                "group", "lag", group, "--watch", "--interval", "2", "-o", "jsonl"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    stop = threading.Event()

    produced = []

    def produce_now_and_then() -> None:
        while not stop.wait(3):
            produced.append(f"later {len(produced) + 1}")
            kctl(*setup, "record", "produce", topic, input=produced[-1] + "\n")

    producer = threading.Thread(target=produce_now_and_then)
    producer.start()
    started = time.monotonic()
    try:
        # Until each client has fetched its third token (renewed at 80% of 15 s: ~12 s and
        # ~24 s in, past the first one's life) and a sixth record is on its way (the fifth
        # had 3 s to arrive).
        until(lambda: min(calls(watch_calls), calls(consume_calls)) >= 3 and len(produced) >= 6, timeout=90, interval=1)
    finally:
        stop.set()
        producer.join()
        for process in (watcher, consumer):
            process.send_signal(signal.SIGINT)
        watched, watch_errors = watcher.communicate(timeout=30)
        consumed, consume_errors = consumer.communicate(timeout=30)
    assert watcher.returncode == 0, watch_errors
    assert consumer.returncode == 0, consume_errors
    assert "error" not in watch_errors.lower(), watch_errors
    samples = [json.loads(line) for line in watched.splitlines() if line.strip()]
    assert len(samples) >= (time.monotonic() - started) / 2 - 3, watched  # one every 2 s, none lost to an expired token
    values = [json.loads(line)["value"] for line in consumed.splitlines()]
    assert values[:5] == [f"later {i}" for i in range(1, 6)], (values, consume_errors)  # records produced until the end arrived
    # Each client renewed its token before the 15-second tokens expired (at 80%: every ~12 s).
    assert calls(watch_calls) >= 3, calls(watch_calls)
    assert calls(consume_calls) >= 3, calls(consume_calls)


def test_a_token_file_is_read_again_when_it_changes(kctl, secured, tmp_path):
    path = tmp_path / "token"
    command, _ = token_command(tmp_path, "file")
    path.write_text(subprocess.run(command, shell=True, capture_output=True, text=True, check=True).stdout)
    run = kctl(*flags(secured, **{"sasl.oauthbearer.token.file": str(path)}), "cluster", "info", "-o", "json")
    assert run.exit_code == 0, run.stderr
    missing = kctl(*flags(secured, **{"sasl.oauthbearer.token.file": str(tmp_path / "nosuch")}), "topic", "list")
    assert missing.exit_code == ExitCode.NOT_AUTHORIZED, missing.stderr
    assert "unable to read the OAUTHBEARER token file" in missing.stderr and len(missing.stderr.splitlines()) == 1


def test_a_failing_command_is_one_line_and_the_token_is_never_shown(kctl, secured, tmp_path):
    failing = "echo 'vault: permission denied' >&2; echo more >&2; exit 3"
    for command in (["topic", "list"], ["record", "consume", "anything", "-n", "1"], ["topic", "create", "anything"]):
        run = kctl(*flags(secured, **{"sasl.oauthbearer.token.command": failing}), *command)
        assert run.exit_code == ExitCode.NOT_AUTHORIZED, run.stderr
        assert "sasl.oauthbearer.token.command exited with status 3: vault: permission denied" in run.stderr, run.stderr
        assert "more" not in run.stderr and "Traceback" not in run.stderr
    # A token Kafka refuses (not a JWT; a lifetime stated): refused by the broker, and the
    # token appears nowhere, not even with --debug.
    secret = "opaque-SECRET-token-1234"
    properties = {"sasl.oauthbearer.token.command": f"echo {secret}", "sasl.oauthbearer.token.lifetime": "60"}
    for command in (["topic", "list"], ["record", "consume", "anything", "-n", "1", "--timeout", "5"]):
        run = kctl("--debug", *flags(secured, **properties), *command)
        assert run.exit_code == ExitCode.NOT_AUTHORIZED, run.stderr
        assert secret not in run.stderr and secret not in run.stdout
    unexpiring = kctl(*flags(secured, **{"sasl.oauthbearer.token.command": f"echo {secret}"}), "topic", "list")
    assert unexpiring.exit_code == ExitCode.NOT_AUTHORIZED and "sasl.oauthbearer.token.lifetime" in unexpiring.stderr
    assert secret not in unexpiring.stderr


def test_spark_executors_run_the_token_command_themselves(kctl, secured_kafka, spark, tmp_path, unique_name):
    """`kctl spark` hands its executors the command, not a token: each executor process
    runs it (and again before its token expires) with its own librdkafka clients."""
    topic = unique_name("token-spark")
    command, counter = token_command(tmp_path, "spark")
    argv = flags(secured_kafka, **{"sasl.oauthbearer.token.command": command})
    assert kctl(*argv, "topic", "create", topic, "--partitions", "2").exit_code == 0
    assert kctl(*argv, "record", "produce", topic, input="".join(f"r{i}\n" for i in range(10))).exit_code == 0
    before = calls(counter)
    run = kctl(*argv, "spark", "dump", "-t", topic, "--out", str(tmp_path / "dump"), "-o", "json")
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.stdout)["records"] == 10
    assert calls(counter) > before + 1  # the CLI's own clients, and the executors'
