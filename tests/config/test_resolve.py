"""Layering: defaults < config file < KCTL_* environment < flags."""

from __future__ import annotations

import pytest

from kctl.config.model import DEFAULT_TIMEOUT, ConfigFile, Context
from kctl.config.resolve import resolve
from kctl.errors import ConfigError, NotFoundError, UsageError

FILE = ConfigFile(
    current_context="dev",
    contexts={
        "dev": Context(name="dev", bootstrap_servers="dev:9092", timeout=5.0, properties={"client.id": "from-file", "acks": "all"}),
        "prod": Context(name="prod", bootstrap_servers="prod:9092", properties={"security.protocol": "SSL"}),
    },
)


def test_defaults_without_file_or_env():
    settings = resolve(ConfigFile(), {})
    assert (settings.bootstrap_servers, settings.properties, settings.timeout, settings.context) == (None, {}, DEFAULT_TIMEOUT, None)


def test_current_context_from_file():
    settings = resolve(FILE, {})
    assert settings.context == "dev"
    assert settings.bootstrap_servers == "dev:9092"
    assert settings.timeout == 5.0
    assert settings.properties == {"client.id": "from-file", "acks": "all"}


def test_env_beats_file_and_flags_beat_env():
    env = {"KCTL_BOOTSTRAP_SERVERS": "env:9092", "KCTL_TIMEOUT": "7", "KCTL_X_CLIENT_ID": "from-env"}
    settings = resolve(FILE, env)
    assert (settings.bootstrap_servers, settings.timeout, settings.properties["client.id"]) == ("env:9092", 7.0, "from-env")
    settings = resolve(FILE, env, bootstrap_flag="flag:9092", timeout_flag=2.0, property_flags=["client.id=from-flag"])
    assert (settings.bootstrap_servers, settings.timeout, settings.properties["client.id"]) == ("flag:9092", 2.0, "from-flag")
    assert settings.properties["acks"] == "all"


def test_context_flag_beats_env_context():
    assert resolve(FILE, {"KCTL_CONTEXT": "prod"}).context == "prod"
    assert resolve(FILE, {"KCTL_CONTEXT": "prod"}, context_flag="dev").context == "dev"


def test_bootstrap_servers_as_a_property_flag():
    settings = resolve(FILE, {}, property_flags=["bootstrap.servers=x:1"])
    assert settings.bootstrap_servers == "x:1"
    assert "bootstrap.servers" not in settings.properties


def test_unknown_context_is_not_found():
    with pytest.raises(NotFoundError, match=r"unable to use context 'nope' \(from --context\): no such context"):
        resolve(FILE, {}, context_flag="nope")
    with pytest.raises(NotFoundError, match="from KCTL_CONTEXT"):
        resolve(FILE, {"KCTL_CONTEXT": "nope"})


def test_dangling_current_context_is_a_config_error():
    with pytest.raises(ConfigError, match="current context 'gone'"):
        resolve(ConfigFile(current_context="gone"), {})


@pytest.mark.parametrize("text", ["novalue", "=x", ""])
def test_malformed_property_flag(text):
    with pytest.raises(UsageError, match="expected key=value"):
        resolve(FILE, {}, property_flags=[text])


def test_malformed_timeout_env():
    with pytest.raises(UsageError, match="KCTL_TIMEOUT 'soon'"):
        resolve(FILE, {"KCTL_TIMEOUT": "soon"})


def test_a_second_cluster_is_a_context_or_an_address_never_the_commands_own():
    """--source/--target (resolve_cluster): the command's -b/--context/KCTL_BOOTSTRAP_SERVERS
    name its own cluster, never the other one."""
    from kctl.config.model import ConfigFile, Context
    from kctl.config.resolve import resolve_cluster
    from kctl.errors import NotFoundError

    config = ConfigFile(current_context="dr", contexts={
        "dr": Context(name="dr", bootstrap_servers="dr:9092"),
        "prod": Context(name="prod", bootstrap_servers="prod:9092", properties={"security.protocol": "SSL"}),
    })
    env = {"KCTL_BOOTSTRAP_SERVERS": "elsewhere:9092", "KCTL_CONTEXT": "dr", "KCTL_X_CLIENT_ID": "ops"}
    prod = resolve_cluster(config, env, "prod", source="--source", property_flags=("bootstrap.servers=y:1",))
    assert (prod.bootstrap_servers, prod.context) == ("prod:9092", "prod")
    assert prod.properties == {"security.protocol": "SSL", "client.id": "ops"}
    address = resolve_cluster(config, env, "10.0.0.1:9092,10.0.0.2:9092", source="--target", timeout_flag=3)
    assert (address.bootstrap_servers, address.context, address.timeout) == ("10.0.0.1:9092,10.0.0.2:9092", None, 3)
    with pytest.raises(NotFoundError, match="unable to use --source 'staging': no such context"):
        resolve_cluster(config, env, "staging", source="--source")
