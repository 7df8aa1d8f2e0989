"""Context secrets in the OS keyring, against a real Secret Service (gnome-keyring-daemon
on a D-Bus session bus of the test's own, tests.support.secret_service) and the secured
bundled broker (SASL PLAIN: the password must really reach it)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.support.secret_service import SecretService, missing_tools


@pytest.fixture(scope="module")
def secret_service(tmp_path_factory):
    missing = missing_tools()
    if missing:
        why = f"{', '.join(missing)} not installed (Debian: dbus-daemon gnome-keyring libsecret-tools)"
        if os.environ.get("KCTL_REQUIRE_BROKERS") == "1":
            pytest.fail(f"KCTL_REQUIRE_BROKERS=1 and the Secret Service cannot start: {why}", pytrace=False)
        pytest.skip(why)
    service = SecretService(tmp_path_factory.mktemp("secret-service"))
    service.start()
    yield service
    service.stop()


def _config(config_home) -> str:
    return (config_home / "kctl" / "config.toml").read_text()


def test_password_stdin_goes_to_the_keyring_and_every_command_reads_it(kctl, secret_service, secured_bundled, config_home):
    env = secret_service.env
    run = kctl("context", "set", "kr", "-b", secured_bundled.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT",
               "-X", "sasl.mechanism=PLAIN", "-X", "sasl.username=alice", "--password-stdin", input="alice-secret\n", env=env)
    assert run.exit_code == 0, run.stderr
    assert "sasl.password in the OS keyring" in run.stderr
    text = _config(config_home)
    assert "alice-secret" not in text and 'keyring = ["sasl.password"]' in text, text
    assert secret_service.lookup("kr", "sasl.password") == "alice-secret"
    # The password reaches the broker: alice authenticates (and, with no ACLs, sees no topics).
    listed = kctl("--context", "kr", "topic", "list", "-o", "json", env=env)
    assert listed.exit_code == 0, listed.stderr
    shown = kctl("context", "show", "kr", "-o", "json", env=env)
    assert json.loads(shown.stdout)["secrets"] == {"sasl.password": "keyring"}
    assert "alice-secret" not in shown.stdout
    effective = kctl("--context", "kr", "context", "show", "-o", "json", env=env)
    assert json.loads(effective.stdout)["secrets"] == {"sasl.password": "keyring"}, effective.stdout
    # A wrong password in the keyring is the broker's refusal, exit 77: it is what is sent.
    assert kctl("context", "set", "kr", "--password-stdin", input="wrong\n", env=env).exit_code == 0
    refused = kctl("--context", "kr", "topic", "list", env=env)
    assert refused.exit_code == 77, refused.stderr
    # Deleting the context removes its entry.
    assert kctl("context", "delete", "kr", "--yes", env=env).exit_code == 0
    assert secret_service.lookup("kr", "sasl.password") is None


def test_secrets_in_the_file_keep_working_and_moving_them_cleans_up(kctl, secret_service, secured_bundled, config_home):
    env = secret_service.env
    flags = ["-b", secured_bundled.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=PLAIN",
             "-X", "sasl.username=alice"]
    assert kctl("context", "set", "f", *flags, "-X", "sasl.password=alice-secret", "--secrets-in", "file", env=env).exit_code == 0
    assert "alice-secret" in _config(config_home)
    assert kctl("--context", "f", "topic", "list", env=env).exit_code == 0
    shown = kctl("context", "show", "f", "-o", "json", env=env)
    assert json.loads(shown.stdout)["secrets"] == {"sasl.password": "config file"}
    # Into the keyring (-X secrets go there too), then back to the file: the entry goes.
    assert kctl("context", "set", "f", "-X", "sasl.password=alice-secret", env=env).exit_code == 0
    assert "alice-secret" not in _config(config_home) and secret_service.lookup("f", "sasl.password") == "alice-secret"
    assert kctl("context", "set", "f", "-X", "sasl.password=alice-secret", "--secrets-in", "file", env=env).exit_code == 0
    assert secret_service.lookup("f", "sasl.password") is None and "alice-secret" in _config(config_home)
    # The environment overrides a keyring secret without reading the keyring.
    assert kctl("context", "set", "f", "-X", "sasl.password=alice-secret", env=env).exit_code == 0
    overridden = kctl("--context", "f", "context", "show", "-o", "json", env={**env, "KCTL_X_SASL_PASSWORD": "x"})
    assert json.loads(overridden.stdout)["secrets"] == {"sasl.password": "environment or -X"}


def test_without_a_keyring_the_file_with_a_note_and_a_missing_entry_is_one_line(kctl, secret_service, secured_bundled, config_home):
    headless = {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"}
    flags = ["-b", secured_bundled.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=PLAIN",
             "-X", "sasl.username=alice"]
    run = kctl("context", "set", "h", *flags, "--password-stdin", input="alice-secret\n", env=headless)
    assert run.exit_code == 0, run.stderr
    assert "kept in" in run.stderr and "(mode 600)" in run.stderr, run.stderr
    assert "alice-secret" in _config(config_home)
    assert kctl("--context", "h", "topic", "list", env=headless).exit_code == 0
    refused = kctl("context", "set", "h2", *flags, "--password-stdin", "--secrets-in", "keyring", input="p\n", env=headless)
    assert refused.exit_code == 78 and "unable to store sasl.password of context 'h2' in the OS keyring" in refused.stderr
    # An entry removed behind kctl's back, and a keyring that cannot be reached: one line, 78.
    env = secret_service.env
    assert kctl("context", "set", "gone", *flags, "--password-stdin", input="alice-secret\n", env=env).exit_code == 0
    run = kctl("--context", "gone", "topic", "list", env=headless)
    assert run.exit_code == 78, run.stderr
    assert "unable to read sasl.password of context 'gone' from the OS keyring" in run.stderr and len(run.stderr.splitlines()) == 2
    subprocess.run(["secret-tool", "clear", "service", "kctl", "username", "gone/sasl.password"], env={**os.environ, **env}, check=True)
    run = kctl("--context", "gone", "topic", "list", env=env)
    assert run.exit_code == 78 and "holds no entry kctl/gone/sasl.password" in run.stderr, run.stderr
