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


def test_what_was_parsed_is_read_from_the_cache_while_the_file_is_unchanged(tmp_path):
    """load() keeps the parsed file beside it (.config.toml.json, 0600) and reads that
    while the file's size, inode and mtime are the same: TOML's parser costs every
    command 6.5 ms to import. A changed file, or a cache that is not its own, is parsed."""
    import json
    import os

    path = tmp_path / "config.toml"
    path.write_text('current-context = "a"\n[contexts.a]\nbootstrap-servers = "b1:9092"\n')
    cache = tmp_path / ".config.toml.json"
    assert load(path).contexts["a"].bootstrap_servers == "b1:9092"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    # The cache is what is read: rewritten with the file's stamp, its data is what loads.
    kept = json.loads(cache.read_text())
    kept["data"]["contexts"]["a"]["bootstrap-servers"] = "from-the-cache:9092"
    cache.write_text(json.dumps(kept))
    assert load(path).contexts["a"].bootstrap_servers == "from-the-cache:9092"
    # The file edited in place (same size, same inode): its new mtime makes it parsed again.
    path.write_text(path.read_text().replace("b1:9092", "b2:9092"))
    os.utime(path, ns=(kept["stamp"][2] + 1_000_000, kept["stamp"][2] + 1_000_000))
    assert load(path).contexts["a"].bootstrap_servers == "b2:9092"
    # A corrupt cache is ignored and made again.
    cache.write_text("{not json")
    assert load(path).contexts["a"].bootstrap_servers == "b2:9092"
    assert json.loads(cache.read_text())["data"]["contexts"]["a"]["bootstrap-servers"] == "b2:9092"
    # save() leaves the cache of what it wrote; a file that is invalid is never cached.
    save(path, ConfigFile(current_context="c", contexts={"c": Context(name="c", bootstrap_servers="c1:9092")}))
    assert json.loads(cache.read_text())["data"]["current-context"] == "c"
    assert load(path).contexts["c"].bootstrap_servers == "c1:9092"
    path.write_text("current-context = [\n")
    with pytest.raises(ConfigError):
        load(path)
    with pytest.raises(ConfigError):
        load(path)


def test_a_cache_that_cannot_be_written_leaves_the_file_read_each_time(tmp_path):
    # A directory where the cache would go: it can be neither read nor replaced (a
    # read-only directory does not stop root, which the tests may run as).
    path = tmp_path / "config.toml"
    path.write_text('[contexts.a]\nbootstrap-servers = "b1:9092"\n')
    (tmp_path / ".config.toml.json").mkdir()
    assert load(path).contexts["a"].bootstrap_servers == "b1:9092"
    assert load(path).contexts["a"].bootstrap_servers == "b1:9092"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".config-cache-")] == []
