"""Generated docs: fresh, complete, valid, and completions that really complete."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kctl.devtools.__main__ import REPO_ROOT, expected_files, stale_files
from kctl.devtools.completions import FILENAMES
from kctl.devtools.tree import walk
from kctl.output.formats import FORMATS
from tests.support.eventually import commit_offsets

COMPLETIONS = REPO_ROOT / "completions"


def topic_verbs() -> list[str]:
    from kctl.cli.topic import topic

    return sorted(topic.commands)


def test_generated_files_are_fresh():
    assert stale_files(REPO_ROOT) == [], "run: python -m kctl.devtools gen-docs"


def test_stale_check_notices_changes(tmp_path):
    for rel, text in expected_files().items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert stale_files(tmp_path) == []
    (tmp_path / "man" / "kctl.1").write_text("old")
    (tmp_path / "man" / "kctl-gone.1").write_text("old")
    (tmp_path / "completions" / "kctl.fish").unlink()
    assert stale_files(tmp_path) == ["missing: completions/kctl.fish", "stale: man/kctl.1", "extra: man/kctl-gone.1"]


def test_every_command_has_a_man_page_and_completion():
    commands = walk()
    man = {p.name for p in (REPO_ROOT / "man").glob("*.1")}
    scripts = {shell: (COMPLETIONS / name).read_text() for shell, name in FILENAMES.items()}
    for info in commands:
        assert "-".join(("kctl", *info.path)) + ".1" in man
        for shell, text in scripts.items():
            assert " ".join(("kctl", *info.path)) in text, (shell, info.path)
        if not info.is_group:
            assert "Examples:" in info.help, info.path


@pytest.mark.parametrize("shell", sorted(FILENAMES))
def test_completion_command_prints_the_committed_script(kctl, shell):
    result = kctl("completion", shell)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (COMPLETIONS / FILENAMES[shell]).read_text()


def _bash_complete(*words: str) -> list[str]:
    script = f"""
source {COMPLETIONS / 'kctl.bash'}
COMP_WORDS=({' '.join(repr(w) for w in words)})
COMP_CWORD={len(words) - 1}
_kctl
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True, env={"HOME": "/nonexistent", "PATH": "/usr/bin:/bin"})
    return proc.stdout.split()


def test_bash_syntax():
    subprocess.run(["bash", "-n", str(COMPLETIONS / "kctl.bash")], check=True)


def test_bash_completes_nouns_verbs_options_and_values(tmp_path):
    assert sorted(_bash_complete("kctl", "to")) == ["token", "top", "topic"]
    assert _bash_complete("kctl", "topi") == ["topic"]
    assert _bash_complete("kctl", "topic", "") == topic_verbs()
    assert {"create", "delete", "describe", "list"} <= set(topic_verbs())
    assert _bash_complete("kctl", "topics", "ls", "-o", "") == list(FORMATS)
    assert _bash_complete("kctl", "-b", "h:1", "topic", "li") == ["list"]
    assert "--if-not-exists" in _bash_complete("kctl", "topic", "create", "x", "--")
    assert _bash_complete("kctl", "completion", "") == ["bash", "zsh", "fish"]


def test_bash_completes_context_names(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[contexts."prod"]\nbootstrap-servers = "p:9092"\n[contexts."prod".properties]\n[contexts.dev]\n')
    script = f"""
source {COMPLETIONS / 'kctl.bash'}
export KCTL_CONFIG={config}
COMP_WORDS=(kctl context use ''); COMP_CWORD=3; _kctl; echo "${{COMPREPLY[*]}}"
COMP_WORDS=(kctl --context ''); COMP_CWORD=2; _kctl; echo "${{COMPREPLY[*]}}"
"""
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines() == ["prod dev", "prod dev"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_script():
    path = COMPLETIONS / "kctl.zsh"
    subprocess.run(["zsh", "-n", str(path)], check=True)
    # Outside a completion widget `words` and CURRENT are plain variables, and a
    # stand-in compadd prints the candidates.
    script = f"""
source {path} 2>/dev/null
compadd() {{ shift; print -r -- "$*"; }}
words=(kctl topic ''); CURRENT=3; _kctl
words=(kctl topic list -o ''); CURRENT=5; _kctl
"""
    proc = subprocess.run(["zsh", "-f", "-c", script], capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines() == [" ".join(topic_verbs()), " ".join(FORMATS)]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_script():
    path = COMPLETIONS / "kctl.fish"
    subprocess.run(["fish", "-n", str(path)], check=True)
    proc = subprocess.run(
        ["fish", "--no-config", "-c", f"source {path}; complete -C 'kctl topic '; complete -C 'kctl topics list -o '"],
        capture_output=True,
        text=True,
        check=True,
    )
    names = [line.split("\t")[0] for line in proc.stdout.splitlines()]
    assert names == [*topic_verbs(), *sorted(FORMATS)]


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_pages_render_without_warnings():
    for page in sorted((REPO_ROOT / "man").glob("*.1")):
        proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)], capture_output=True, text=True)
        assert (proc.returncode, proc.stderr) == (0, ""), page.name


def test_root_man_page_documents_exit_statuses_and_environment():
    from kctl.errors import EXIT_CODE_MEANINGS

    text = Path(REPO_ROOT / "man" / "kctl.1").read_text()
    assert ".SH EXIT STATUS" in text
    for code in EXIT_CODE_MEANINGS:
        assert f".TP\n\\fB{int(code)}\\fR\n" in text
    assert "KCTL_BOOTSTRAP_SERVERS" in text


def _shell_env(tmp_path) -> dict[str, str]:
    """A fresh home whose PATH finds this kctl (the scripts call `kctl __names`)."""
    return {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin"}


def _completions_in_every_shell(words: list[str], env: dict[str, str]) -> dict[str, tuple[list[str], float]]:
    """What bash (compgen through _kctl), zsh and fish complete for the last word, and how
    long each took."""
    quoted = " ".join(shlex.quote(w) for w in words)
    scripts = {
        "bash": ["bash", "-c", f"source {COMPLETIONS / 'kctl.bash'}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
                 "_kctl; printf '%s\\n' \"${COMPREPLY[@]}\""],
        "zsh": ["zsh", "-f", "-c", f"source {COMPLETIONS / 'kctl.zsh'} 2>/dev/null; compadd() {{ shift; print -rl -- \"$@\"; }}; "
                f"words=({quoted}); CURRENT={len(words)}; _kctl"],
        "fish": ["fish", "--no-config", "-c", f"source {COMPLETIONS / 'kctl.fish'}; complete -C {shlex.quote(' '.join(words))}"],
    }
    out = {}
    for shell, argv in scripts.items():
        if shutil.which(shell) is None:
            if os.environ.get("CI"):
                pytest.fail(f"{shell} is not installed")
            continue
        started = time.monotonic()
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30)
        elapsed = time.monotonic() - started
        # zsh's _kctl returns 1 when it adds nothing: "no matches" to the completion system.
        assert proc.returncode in ((0, 1) if shell == "zsh" else (0,)) and proc.stderr == "", f"{shell}: {proc.stderr}"
        out[shell] = (sorted(line.split("\t")[0] for line in proc.stdout.splitlines() if line), elapsed)
    return out


def _best_of_three(words: list[str], env: dict[str, str], bound: float) -> dict[str, tuple[list[str], float]]:
    """Completions, asked again (up to three times) while a shell took `bound` seconds or
    more: a loaded CI machine (two test workers, JVMs) once took 1.36 s for one TAB in fish,
    where a heavy import or a hang would make every try slow."""
    for _attempt in range(3):
        completions = _completions_in_every_shell(words, env)
        if all(elapsed < bound for _names, elapsed in completions.values()):
            break
    return completions


@pytest.mark.integration
def test_topic_and_group_names_complete_from_the_cluster(cluster, tmp_path, unique_name):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = unique_name("compl"), unique_name("cgroup")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    commit_offsets(admin, group, [TopicPartition(topic, 0, 0)])
    env = _shell_env(tmp_path)
    prefix = topic[:-3]
    for words, expected in ((["kctl", "-b", cluster.bootstrap, "topic", "describe", prefix], [topic]),
                            (["kctl", "-b", cluster.bootstrap, "group", "lag", group[:-3]], [group]),
                            (["kctl", "-b", cluster.bootstrap, "record", "consume", "--group", group[:-3]], [group])):
        for shell, (names, elapsed) in _best_of_three(words, env, 2.0).items():
            # fish filters by prefix itself and may list more; bash/zsh get kctl's full list
            # and compgen/compadd filter it.
            assert topic in names or group in names, (shell, words, names)
            assert set(expected) <= set(names), (shell, words, names)
            # The shell's own start-up is part of the figure; kctl's lookup is budgeted 0.25 s.
            # The bound tells a TAB that waits on something (a heavy import, a lookup past
            # its budget) from one slowed by a loaded machine: a CI run's best of three took
            # 1.09 s in bash on kafka3, where ~0.3 s is usual on a quiet one.
            assert elapsed < 2.0, (shell, elapsed)
    # kctl's own share of a TAB: the lookup alone, on localhost.
    times = []
    for _attempt in range(3):  # best of three, as above
        started = time.monotonic()
        listed = subprocess.run(["kctl", "__names", "topic", "--", "-b", cluster.bootstrap], capture_output=True, text=True, env=env, timeout=10)
        times.append(time.monotonic() - started)
        if times[-1] <= 1.0:  # the budget, and the interpreter's start on a loaded CI machine
            break
    assert min(times) <= 1.0, times
    assert topic in listed.stdout.split()


def test_names_complete_to_nothing_when_the_cluster_is_down(tmp_path):
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{sock.getsockname()[1]}"
    env = _shell_env(tmp_path)
    for words in (["kctl", "-b", dead, "topic", "describe", ""], ["kctl", "-b", dead, "group", "lag", ""]):
        for shell, (names, elapsed) in _best_of_three(words, env, 2.0).items():
            assert names == [] and elapsed < 2.0, (shell, names, elapsed)


def test_config_names_complete_offline(tmp_path):
    """--set and -c complete Kafka config names as KEY=, --delete and -k as KEY; no cluster needed."""
    env = _shell_env(tmp_path)
    for words, expected in ((["kctl", "topic", "alter-config", "orders", "--set", "retention."], ["retention.bytes=", "retention.ms="]),
                            (["kctl", "topic", "create", "orders", "-c", "cleanup"], ["cleanup.policy="]),
                            (["kctl", "config", "alter", "broker", "1", "--delete", "log.cleaner.th"], ["log.cleaner.threads"]),
                            (["kctl", "config", "describe", "topic", "orders", "-k", "min.insync"], ["min.insync.replicas"])):
        for shell, (names, _elapsed) in _completions_in_every_shell(words, env).items():
            assert [n for n in names if n.startswith(words[-1])] == expected, (shell, words, names)


@pytest.mark.integration
def test_subject_names_complete_from_the_schema_registry(schema_registry, tmp_path, unique_name):
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    subject = unique_name("compl") + "-value"
    SchemaRegistryClient({"url": schema_registry.url, "timeout": 30}).register_schema(subject, Schema('{"type": "string"}', "AVRO"))
    env = _shell_env(tmp_path)
    for words in (["kctl", "schema", "describe", "--registry-url", schema_registry.url, subject[:-8]],
                  ["kctl", "record", "produce", "t", "--registry-url", schema_registry.url, "--value-schema", subject[:-8]]):
        for shell, (names, _elapsed) in _completions_in_every_shell(words, env).items():
            assert subject in names, (shell, words, names)
    # From the environment's registry too; none configured: nothing, silently.
    listed = subprocess.run(["kctl", "__names", "subject"], capture_output=True, text=True, env={**env, "KCTL_SCHEMA_REGISTRY_URL": schema_registry.url}, timeout=10)
    assert subject in listed.stdout.split()
    listed = subprocess.run(["kctl", "__names", "subject"], capture_output=True, text=True, env=env, timeout=10)
    assert (listed.returncode, listed.stdout, listed.stderr) == (0, "", "")
