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
                                      f'[contexts.local]\nbootstrap-servers = "{bootstrap}"\nlocal-data-dir = "{first}"\n')

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
        # The context's broker is stopped: the hint says how to start it, not which flags to check.
        down = kctl("topic", "list")
        assert (down.exit_code, down.stderr.splitlines()[1]) == (
            ExitCode.UNREACHABLE, f"hint: the bundled broker of context local is not running: kctl local start --data-dir {first} starts it")

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

    # A port another process holds: its own status, and the flag that avoids it.
    first = kctl("local", "start", "--port", "0", "--data-dir", str(tmp_path / "first"), "--no-context")
    try:
        port = first.stdout.strip().rsplit(":", 1)[1]
        busy = kctl("local", "start", "--port", port, "--data-dir", str(tmp_path / "second"), "--no-context")
        assert (busy.exit_code, busy.stderr) == (
            ExitCode.IN_USE, f"error: unable to start the local broker: port {port} of 127.0.0.1 is in use by another process\n"
                             "hint: --port 0 lets the system pick a free port (or stop what listens there)\n")
    finally:
        kctl("local", "stop", "--data-dir", str(tmp_path / "first"))


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


def test_an_oauthbearer_local_broker_and_the_context_it_saves(kctl, tmp_path):
    """--sasl oauthbearer: the saved context makes unsecured JWTs naming the first user (a
    super user), on both of kctl's clients; another principal's token is authorized as
    that principal."""
    data = tmp_path / "oauth"
    started = kctl("local", "start", "--port", "0", "--data-dir", str(data), "--save-context", "oauth",
                   "--sasl", "oauthbearer", "--user", "admin:unused", "--authorizer", "--config", "connections.max.reauth.ms=60000")
    assert started.exit_code == 0, started.stderr
    try:
        shown = kctl("context", "show", "oauth").stdout
        assert "sasl.mechanism\tOAUTHBEARER" in shown and "sasl.oauthbearer.config\tprincipal=admin" in shown
        assert "sasl.password" not in shown
        assert kctl("--context", "oauth", "topic", "create", "tokens").exit_code == 0  # librdkafka
        assert kctl("--context", "oauth", "cluster", "info").exit_code == 0  # kctl's wire client
        alice = kctl("--context", "oauth", "-X", "sasl.oauthbearer.config=principal=alice", "topic", "create", "hers")
        assert alice.exit_code == ExitCode.NOT_AUTHORIZED, alice.stderr
    finally:
        kctl("local", "stop", "--data-dir", str(data))


def test_an_oauthbearer_only_broker_needs_no_passwords(kctl, tmp_path):
    """OAUTHBEARER takes tokens, not passwords: no --user is needed, and the saved context
    makes tokens naming the first super user (admin when none is named)."""
    for super_user, principal in ((("--super-user", "User:ops"), "ops"), ((), "admin")):
        data = tmp_path / principal
        started = kctl("local", "start", "--port", "0", "--data-dir", str(data), "--save-context", principal,
                       "--sasl", "oauthbearer", "--authorizer", *super_user)
        assert started.exit_code == 0, started.stderr
        try:
            assert f"sasl.oauthbearer.config\tprincipal={principal}" in kctl("context", "show", principal).stdout
            assert kctl("--context", principal, "topic", "create", "tokens").exit_code == 0
            other = kctl("--context", principal, "-X", "sasl.oauthbearer.config=principal=mallory", "topic", "create", "theirs")
            assert other.exit_code == ExitCode.NOT_AUTHORIZED, other.stderr
        finally:
            kctl("local", "stop", "--data-dir", str(data))


def test_bad_security_flags_are_usage_errors(kctl, tmp_path):
    data = str(tmp_path / "never")
    for args, message in (
        (("--sasl", "md5", "--user", "a:b"), "error: unknown SASL mechanism 'md5'; the bundled broker serves plain, scram-sha-256, scram-sha-512, oauthbearer"),
        (("--sasl", "plain"), "error: a SASL listener needs at least one --user NAME:PASSWORD (or --users-file)"),
        (("--sasl", "plain", "--user", "nopassword"), "error: user 'nopassword' is not NAME:PASSWORD"),
        (("--listener", "FOO://x:1",), "error: listener 'FOO://x:1': protocol must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
        (("--tls", "--tls-cert", "c.pem"), "error: --tls-cert and --tls-key go together"),
    ):
        result = kctl("local", "start", "--port", "0", "--data-dir", data, "--no-context", *args)
        assert (result.exit_code, result.stderr.splitlines()[0]) == (ExitCode.USAGE, message), args


def test_static_settings_with_config_and_num_partitions(kctl, tmp_path):
    """`--num-partitions` and `--config KEY=VALUE` in server.properties' names: the
    partitions of a topic created without a count, the log.* defaults of topics without
    their own value (log.retention.hours resolved as Kafka does), DescribeConfigs' sources,
    and a restart without them back to Kafka's defaults."""
    data = tmp_path / "static"
    started = kctl("local", "start", "--port", "0", "--data-dir", str(data), "--no-context", "--num-partitions", "6",
                   "--config", "log.retention.hours=2", "--config", "log.segment.bytes=2097152", "--config", "max.connections.per.ip=40")
    assert started.exit_code == 0, started.stderr
    b = started.stdout.strip()
    try:
        assert kctl("-b", b, "topic", "create", "sized").exit_code == 0
        created = kctl("-b", b, "topic", "create", "own", "-p", "2", "-c", "retention.ms=1000")
        assert created.exit_code == 0, created.stderr
        produced = kctl("-b", b, "record", "produce", "auto", "--allow-auto-topic-creation", input="x\n")
        assert produced.exit_code == 0, produced.stderr
        partitions = {t["name"]: t["partitions"] for t in json.loads(kctl("-b", b, "topic", "list", "-o", "json").stdout)}
        assert partitions == {"sized": 6, "own": 2, "auto": 6}

        def configs(*args):
            found = json.loads(kctl("-b", b, "config", "describe", *args, "-a", "-o", "json").stdout)[0]["configs"]
            return {c["name"]: (c["value"], c["source"]) for c in found}

        topic = configs("topic", "sized")
        assert topic["retention.ms"] == ("7200000", "STATIC_BROKER_CONFIG")
        assert topic["segment.bytes"] == ("2097152", "STATIC_BROKER_CONFIG")
        assert configs("topic", "own")["retention.ms"] == ("1000", "DYNAMIC_TOPIC_CONFIG")
        broker = configs("broker", "1")
        assert broker["num.partitions"] == ("6", "STATIC_BROKER_CONFIG")
        assert broker["log.retention.hours"] == ("2", "STATIC_BROKER_CONFIG")
        assert broker["log.retention.ms"] == ("7200000", "STATIC_BROKER_CONFIG")
        assert broker["max.connections.per.ip"] == ("40", "STATIC_BROKER_CONFIG")
        assert broker["connections.max.idle.ms"] == ("600000", "DEFAULT_CONFIG")
        # A dynamic cluster default wins over the static one, as on Kafka.
        assert kctl("-b", b, "config", "alter", "broker-default", "--set", "log.retention.ms=60000").exit_code == 0
        assert configs("topic", "sized")["retention.ms"] == ("60000", "DYNAMIC_DEFAULT_BROKER_CONFIG")

        # Restarted without them: Kafka's defaults again (the topics keep their partitions).
        assert kctl("local", "stop", "--data-dir", str(data)).exit_code == 0
        b = kctl("local", "start", "--port", "0", "--data-dir", str(data), "--no-context").stdout.strip()
        assert kctl("-b", b, "topic", "create", "plain").exit_code == 0
        assert {t["name"]: t["partitions"] for t in json.loads(kctl("-b", b, "topic", "list", "-o", "json").stdout)}["plain"] == 1
        assert configs("broker", "1")["log.retention.hours"] == ("168", "DEFAULT_CONFIG")
    finally:
        kctl("local", "stop", "--data-dir", str(data))


def test_bad_static_settings_are_usage_errors(kctl, tmp_path):
    data = tmp_path / "never"
    for args, message in [
        (("--config", "bogus.setting=1"), "error: --config bogus.setting: not a setting the bundled broker has (it takes: "),
        (("--config", "log.dirs=/var/kafka"), "error: --config log.dirs: the bundled broker takes it as --data-dir"),
        (("--config", "default.replication.factor=3"),
         "error: --config default.replication.factor=3: the bundled broker is a single node, so default.replication.factor can only be 1"),
        (("--config", "num.partitions"), "error: --config 'num.partitions' is not of the form KEY=VALUE"),
        (("--config", "num.partitions=0"), "error: --config num.partitions=0: must be at least 1"),
        (("--config", "auto.create.topics.enable=maybe"), "error: --config auto.create.topics.enable=maybe: must be true or false"),
        (("--config", "log.cleanup.policy=shred"), "error: --config log.cleanup.policy=shred: Invalid value shred for configuration cleanup.policy"),
        (("--config", "max.connections.per.ip.overrides=localhost"), "error: --config max.connections.per.ip.overrides: 'localhost' is not HOST:COUNT"),
        (("--config", "listener.name.plaintext.plain.connections.max.reauth.ms=1000"),
         "error: --config listener.name.plaintext.plain.connections.max.reauth.ms: plaintext is not a SASL listener"),
        (("--config", "listener.name.sasl_ssl.plain.connections.max.reauth.ms=-5"),
         "error: --config listener.name.sasl_ssl.plain.connections.max.reauth.ms=-5: must be at least 0"),
    ]:
        result = kctl("local", "start", "--port", "0", "--data-dir", str(data), "--no-context", *args)
        assert result.exit_code == ExitCode.USAGE, (args, result.stderr)
        assert result.stderr.startswith(message), (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (data / "broker.log").exists()  # nothing started
