"""kctl user against the secured Kafka node: SCRAM credentials created, described (as
kafka-configs describes them), used to log in, deleted; passwords never shown."""

from __future__ import annotations

import json
import re

import pytest

from kctl.errors import ExitCode
from tests.security.flags import sasl_flags
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration


def kafka_configs_users(cluster) -> set[tuple[str, str, int]]:
    """(user, mechanism, iterations) as `kafka-configs --describe --entity-type users` prints them."""
    proc = cluster.run_tool(
        cluster.config_command, "--bootstrap-server", cluster.bootstrap, "--command-config", str(cluster.tool_properties()),
        "--describe", "--entity-type", "users",
    )
    assert proc.returncode == 0, proc.stderr
    found = set()
    for line in proc.stdout.splitlines():
        head = re.match(r"SCRAM credential configs for user-principal '(.*)' are (.*)$", line)
        if head:
            for mechanism, iterations in re.findall(r"(SCRAM-SHA-\d+)=iterations=(\d+)", head.group(2)):
                found.add((head.group(1), mechanism, int(iterations)))
    return found


def login(kctl, cluster, user, password, mechanism):
    flags = ["-b", cluster.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", f"sasl.mechanism={mechanism}",
             "-X", f"sasl.username={user}", "-X", f"sasl.password={password}", "--timeout", "5"]
    return kctl(*flags, "broker", "list")


def test_scram_user_lifecycle(kctl, secured, unique_name):
    admin = sasl_flags(secured)
    user, password = unique_name("carol"), "s3cret-Pa55-word"
    created = kctl(*admin, "user", "set-password", user, "-m", "scram-sha-256", "-m", "scram-sha-512", "--iterations", "4096",
                   "--password-stdin", "--debug", input=f"{password}\n")
    assert created.exit_code == 0, created.stderr
    assert created.stdout == f"USER\tMECHANISM\tSTATUS\tERROR\n{user}\tSCRAM-SHA-256\tset\t\n{user}\tSCRAM-SHA-512\tset\t\n"
    assert password not in created.stdout + created.stderr

    def listed():
        # Credentials are altered through the controller and described from the broker's
        # copy of the metadata, a moment behind.
        result = kctl(*admin, "user", "list", "-o", "json")
        rows = {(r["user"], r["mechanism"], r["iterations"]) for r in json.loads(result.stdout)}
        assert {(user, "SCRAM-SHA-256", 4096), (user, "SCRAM-SHA-512", 4096), ("bob", "SCRAM-SHA-512", 4096)} <= rows
        return rows

    rows = eventually(listed)
    assert rows == kafka_configs_users(secured)
    described = kctl(*admin, "user", "describe", user)
    assert described.stdout == f"USER\tMECHANISM\tITERATIONS\n{user}\tSCRAM-SHA-256\t4096\n{user}\tSCRAM-SHA-512\t4096\n"

    def logs_in(secret):
        def check():
            result = login(kctl, secured, user, secret, "SCRAM-SHA-256")
            assert result.exit_code == 0, result.stderr

        eventually(check)

    logs_in(password)
    assert login(kctl, secured, user, "wrong", "SCRAM-SHA-512").exit_code == ExitCode.NOT_AUTHORIZED

    # A new password replaces the old one.
    assert kctl(*admin, "user", "set-password", user, "-m", "scram-sha-256", "--password-stdin", input="n3w-password\n").exit_code == 0
    logs_in("n3w-password")

    refused = kctl(*admin, "user", "delete", user)
    assert refused.exit_code == ExitCode.ABORTED, refused.stderr
    deleted = kctl(*admin, "user", "delete", user, "-m", "scram-sha-256", "--yes")
    assert (deleted.exit_code, deleted.stdout) == (0, f"USER\tMECHANISM\tSTATUS\tERROR\n{user}\tSCRAM-SHA-256\tdeleted\t\n")
    again = kctl(*admin, "user", "delete", user, "-m", "scram-sha-256", "--yes")
    assert (again.exit_code, again.stderr) == (
        ExitCode.NOT_FOUND, f"error: unable to delete SCRAM user {user}: it has no SCRAM-SHA-256 credential (it has SCRAM-SHA-512)\n"
    )
    def removed():
        assert (user, "SCRAM-SHA-256", 4096) not in kafka_configs_users(secured)

    eventually(removed)
    assert kctl(*admin, "user", "delete", user, "--yes").exit_code == 0

    def gone():
        # The broker answers from its metadata, which follows the controller's commit.
        described = kctl(*admin, "user", "describe", user)
        assert (described.exit_code, described.stderr) == (
            ExitCode.NOT_FOUND, f"error: unable to describe SCRAM user {user}: no SCRAM credentials for user {user}\n"
        )

    eventually(gone)


def test_a_password_never_comes_from_argv_nor_shows(kctl, secured):
    admin = sasl_flags(secured)
    on_argv = kctl(*admin, "user", "set-password", "dave", "hunter2")
    assert (on_argv.exit_code, on_argv.stderr) == (
        ExitCode.USAGE,
        "error: set-password takes one USER and no password on the command line (shell history would keep it); "
        "type it at the prompt or pass --password-stdin\n",
    )
    no_terminal = kctl(*admin, "user", "set-password", "dave")
    assert (no_terminal.exit_code, no_terminal.stderr) == (
        ExitCode.USAGE, "error: no terminal to ask the password at: pass --password-stdin and write it to stdin\n"
    )
    empty = kctl(*admin, "user", "set-password", "dave", "--password-stdin", input="\n")
    assert (empty.exit_code, empty.stderr) == (ExitCode.USAGE, "error: the password is empty\n")
    bad = kctl(*admin, "user", "set-password", "dave", "-m", "md5", "--password-stdin", input="x\n")
    assert (bad.exit_code, bad.stderr) == (ExitCode.USAGE, "error: unknown SCRAM mechanism 'md5'; accepted: scram-sha-256, scram-sha-512\n")
    # A principal without the right to alter credentials: refused, and the password is not in the error.
    alice = sasl_flags(secured, user="alice")
    denied = kctl(*alice, "user", "set-password", "dave", "--password-stdin", "--debug", input="hunter2\n")
    assert denied.exit_code == ExitCode.NOT_AUTHORIZED, denied.stderr
    assert "CLUSTER_AUTHORIZATION_FAILED" in denied.stderr and "hunter2" not in denied.stdout + denied.stderr
