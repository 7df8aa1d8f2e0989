"""kctl local: start, status, logs, stop and purge of bundled broker instances."""

from __future__ import annotations

import json

from kctl.errors import ExitCode


def test_start_status_stop_purge(kctl, tmp_path, monkeypatch, config_home):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    first, second = tmp_path / "one", tmp_path / "two"
    config = config_home / "kctl" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('# mine\n[contexts.prod]  # production\nbootstrap-servers = "p:9092"\n')
    try:
        started = kctl("local", "start", "--port", "0", "--data-dir", str(first))
        assert started.exit_code == 0, started.stderr
        bootstrap = started.stdout.strip()
        assert bootstrap.startswith("127.0.0.1:") and "local broker running" in started.stderr
        # The user's file is edited, not rewritten: the comments stay.
        assert config.read_text() == (f'# mine\ncurrent-context = "local"\n\n[contexts.prod]  # production\nbootstrap-servers = "p:9092"\n\n'
                                      f'[contexts.local]\nbootstrap-servers = "{bootstrap}"\n')

        # The `local` context was saved and became current: no -b needed.
        assert kctl("topic", "create", "demo", "-p", "2").exit_code == 0
        assert json.loads(kctl("topic", "list", "-o", "json").stdout)[0]["name"] == "demo"

        # Starting again reports the running instance; a second instance coexists.
        assert kctl("local", "start", "--port", "0", "--data-dir", str(first)).stdout.strip() == bootstrap
        other = kctl("local", "start", "--port", "0", "--data-dir", str(second), "--no-context", "-o", "json")
        other_state = json.loads(other.stdout)
        assert other_state["state"] == "running" and other_state["bootstrap"] != bootstrap
        assert json.loads(kctl("-b", other_state["bootstrap"], "topic", "list", "-o", "json").stdout) == []

        status = json.loads(kctl("local", "status", "--data-dir", str(first), "-o", "json").stdout)
        assert status["state"] == "running" and status["bootstrap"] == bootstrap and status["topics"] == 1
        assert "listening on" in kctl("local", "logs", "--data-dir", str(first)).stdout

        assert kctl("local", "stop", "--data-dir", str(first)).exit_code == 0
        stopped = kctl("local", "status", "--data-dir", str(first), "-o", "json")
        assert stopped.exit_code == ExitCode.UNKNOWN and json.loads(stopped.stdout)["state"] == "stopped"
        assert "no local broker runs" in kctl("local", "stop", "--data-dir", str(first)).stderr
        assert (first / ".kafka_cleanshutdown").exists()

        # Restarted on the same directory, the topic is still there.
        kctl("local", "start", "--port", "0", "--data-dir", str(first))
        assert json.loads(kctl("topic", "list", "-o", "json").stdout)[0]["name"] == "demo"

        refused = kctl("local", "purge", "--data-dir", str(first))
        assert refused.exit_code == ExitCode.ABORTED and first.exists()
        assert kctl("local", "purge", "--data-dir", str(first), "--yes").exit_code == 0
        assert not first.exists()
    finally:
        kctl("local", "stop", "--data-dir", str(first))
        kctl("local", "stop", "--data-dir", str(second))


def test_start_failures_are_one_line(kctl, tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    result = kctl("local", "start", "--port", "0", "--data-dir", str(foreign), "--no-context")
    assert result.exit_code == ExitCode.ERROR
    first_line, hint = result.stderr.splitlines()[:2]
    assert first_line.startswith("error: unable to start the local broker: the broker exited with status 1: ")
    assert "not empty and has no meta.properties" in first_line
    assert hint.startswith("hint: see ")
    assert (foreign / "notes.txt").read_text() == "mine"

    assert kctl("local", "logs", "--data-dir", str(tmp_path / "none")).exit_code == ExitCode.NOT_FOUND
    assert kctl("local", "start", "--port", "70000").exit_code == ExitCode.USAGE


def test_a_secured_local_broker_and_the_context_it_saves(kctl, tmp_path):
    """SASL_SSL with SCRAM and the authorizer: the saved context connects as the first
    user (a super user by default) and verifies the generated certificate; the password
    never reaches the broker's argv, which `ps` shows to everyone."""
    data = tmp_path / "secured"
    started = kctl("local", "start", "--port", "0", "--data-dir", str(data), "--save-context", "sec",
                   "--sasl", "scram-sha-512", "--tls", "--user", "admin:n0t-in-argv", "--user", "bob:bob-pw", "--authorizer")
    assert started.exit_code == 0, started.stderr
    try:
        shown = kctl("context", "show", "sec").stdout
        assert "security.protocol\tSASL_SSL" in shown and "sasl.username\tadmin" in shown
        assert f"ssl.ca.location\t{data / 'tls' / 'ca.pem'}" in shown
        assert kctl("--context", "sec", "topic", "create", "secured").exit_code == 0
        assert kctl("--context", "sec", "acl", "list").exit_code == 0  # admin: a super user
        bob = kctl("--context", "sec", "-X", "sasl.username=bob", "-X", "sasl.password=bob-pw", "acl", "list")
        assert bob.exit_code == ExitCode.NOT_AUTHORIZED, bob.stderr
        pid = json.loads(kctl("local", "status", "--data-dir", str(data), "-o", "json").stdout)["pid"]
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            assert b"n0t-in-argv" not in cmdline.read()
    finally:
        kctl("local", "stop", "--data-dir", str(data))


def test_bad_security_flags_are_usage_errors(kctl, tmp_path):
    data = str(tmp_path / "never")
    for args, message in (
        (("--sasl", "md5", "--user", "a:b"), "error: unknown SASL mechanism 'md5'; the bundled broker serves plain, scram-sha-256, scram-sha-512"),
        (("--sasl", "plain"), "error: a SASL listener needs at least one --user NAME:PASSWORD (or --users-file)"),
        (("--sasl", "plain", "--user", "nopassword"), "error: user 'nopassword' is not NAME:PASSWORD"),
        (("--listener", "FOO://x:1",), "error: listener 'FOO://x:1': protocol must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
        (("--tls", "--tls-cert", "c.pem"), "error: --tls-cert and --tls-key go together"),
    ):
        result = kctl("local", "start", "--port", "0", "--data-dir", data, "--no-context", *args)
        assert (result.exit_code, result.stderr.splitlines()[0]) == (ExitCode.USAGE, message), args
