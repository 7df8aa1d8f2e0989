"""The config file: round trips, permissions, and clear errors for malformed files."""

from __future__ import annotations

import stat

import pytest

from kctl.config.file import default_path, dumps, load, save
from kctl.config.model import ConfigFile, Context
from kctl.errors import ConfigError


def test_round_trip_with_awkward_names(tmp_path):
    config = ConfigFile(
        current_context='we"ird.name',
        contexts={
            'we"ird.name': Context(name='we"ird.name', bootstrap_servers="a:1,b:2", timeout=2.5, properties={"sasl.password": "p\\w\n"}),
            "plain": Context(name="plain"),
        },
    )
    path = tmp_path / "kctl" / "config.toml"
    save(path, config)
    assert load(path) == config
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_missing_file_is_empty(tmp_path):
    assert load(tmp_path / "none.toml") == ConfigFile()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("contexts = [", "Invalid value"),
        ("current-context = 3", "current-context must be a string"),
        ("[contexts.a]\nbootstrap-servers = 1", "bootstrap-servers must be a string"),
        ("[contexts.a]\ntimeout = -1", "timeout must be a positive number"),
        ("[contexts.a]\nbogus = 1", "unknown key 'bogus'"),
        ("contexts = 1", "contexts must be a table"),
    ],
)
def test_malformed_file(tmp_path, text, message):
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        load(path)
    assert info.value.message.startswith(f"unable to read config file {path}: ")


def test_default_path_layers():
    assert str(default_path({"KCTL_CONFIG": "/x/c.toml"})) == "/x/c.toml"
    assert str(default_path({"XDG_CONFIG_HOME": "/xdg", "HOME": "/h"})) == "/xdg/kctl/config.toml"
    assert str(default_path({"HOME": "/h"})) == "/h/.config/kctl/config.toml"


def test_dumps_is_stable():
    config = ConfigFile(current_context="a", contexts={"a": Context(name="a", bootstrap_servers="h:1", properties={"b": "2", "a": "1"})})
    assert dumps(config) == (
        'current-context = "a"\n\n[contexts.a]\nbootstrap-servers = "h:1"\n\n[contexts.a.properties]\na = "1"\nb = "2"\n'
    )
