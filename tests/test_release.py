"""A release a user can install: `python -m build` makes an sdist and, from it, a wheel;
the wheel installs in a fresh virtualenv, its `kctl` runs a real job against the bundled
broker, and it carries the man pages (under <prefix>/share/man, where man finds them
beside the script) and prints the committed completion scripts."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from kctl import __version__
from tests.support.venvs import virtualenv_with_our_dependencies

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # build makes the sdist, then the wheel from the unpacked sdist: a file the sdist lacks
    # is missing from the wheel too.
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def installed(dist, tmp_path_factory) -> Path:
    """A fresh virtualenv with the wheel installed; its dependencies come from this
    environment's site-packages (a .pth line), so nothing is downloaded twice."""
    venv = virtualenv_with_our_dependencies(tmp_path_factory.mktemp("release") / "venv")
    (wheel,) = dist.glob("kctl-*.whl")
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)],
                         capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    return venv


def test_the_sdist_and_the_wheel_carry_what_users_need(dist):
    (sdist,) = dist.glob("kctl-*.tar.gz")
    (wheel,) = dist.glob("kctl-*.whl")
    assert (sdist.name, wheel.name) == (f"kctl-{__version__}.tar.gz", f"kctl-{__version__}-py3-none-any.whl")
    committed_man = sorted(p.name for p in (ROOT / "man").glob("*.1"))
    with tarfile.open(sdist) as archive:
        in_sdist = archive.getnames()
    assert sorted(Path(n).name for n in in_sdist if n.startswith(f"kctl-{__version__}/man/") and n.endswith(".1")) == committed_man
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = archive.namelist()
    man_in_wheel = sorted(Path(n).name for n in in_wheel if "/data/share/man/man1/" in n)
    assert man_in_wheel == committed_man
    assert "kctl/admin/declarative/resources.schema.json" in in_wheel and "kctl/spark/log4j2.properties" in in_wheel
    assert {"kctl/cli/pages/help-78.txt", "kctl/cli/pages/help-98.txt"} <= set(in_wheel)


def test_the_installed_wheel_runs_a_job_on_the_bundled_broker(installed, tmp_path):
    kctl = str(installed / "bin" / "kctl")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state")}

    # Run elsewhere than the checkout: `python -m` (the broker's process) puts the working
    # directory first on sys.path, and there the checkout's kctl would be found.
    def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([kctl, *args], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path, input=input)

    where = subprocess.run([str(installed / "bin" / "python"), "-c", "import kctl; print(kctl.__file__)"], capture_output=True, text=True,
                           env=env, cwd=tmp_path)
    assert where.stdout.startswith(str(installed)), where.stdout + where.stderr
    assert run("--version").stdout == f"kctl {__version__}\n"
    # Piped, --help comes from the installed pages (kctl/cli/entry.py), click's rendering.
    from kctl.cli.entry import help_page

    assert run("topic", "list", "--help").stdout.encode() == help_page(["topic", "list", "--help"], {"COLUMNS": "80"})
    data = tmp_path / "broker"
    started = run("local", "start", "--port", "0", "--data-dir", str(data), "--no-context")
    assert started.returncode == 0, started.stderr
    bootstrap = started.stdout.strip()
    try:
        assert run("-b", bootstrap, "topic", "create", "smoke", "-p", "3").returncode == 0
        produced = run("-b", bootstrap, "record", "produce", "smoke", input="one\ntwo\n")
        assert produced.returncode == 0, produced.stderr
        listed = run("-b", bootstrap, "topic", "list", "-o", "plain", "--no-headers")
        assert listed.stdout.split("\t")[0] == "smoke", listed.stdout + listed.stderr
        consumed = run("-b", bootstrap, "record", "consume", "smoke", "--from", "earliest", "--max-records", "2", "-o", "plain")
        assert sorted(consumed.stdout.split()) == ["one", "two"], consumed.stderr
    finally:
        assert run("local", "stop", "--data-dir", str(data)).returncode == 0


def test_man_pages_are_installed_where_man_finds_them(installed):
    pages = installed / "share" / "man" / "man1"
    assert sorted(p.name for p in pages.glob("*.1")) == sorted(p.name for p in (ROOT / "man").glob("*.1"))
    assert (pages / "kctl.1").read_text() == (ROOT / "man" / "kctl.1").read_text()


@pytest.mark.parametrize("shell, script", [("bash", "kctl.bash"), ("zsh", "kctl.zsh"), ("fish", "kctl.fish")])
def test_the_installed_kctl_prints_the_committed_completion_scripts(installed, shell, script):
    printed = subprocess.run([str(installed / "bin" / "kctl"), "completion", shell], capture_output=True, text=True, timeout=60)
    assert printed.stdout == (ROOT / "completions" / script).read_text()
