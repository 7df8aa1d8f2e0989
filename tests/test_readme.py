"""Every fenced block of README.md runs as written, in order, in a fresh home against the
bundled broker that the README's own quick start starts: a documented example that fails is
a failing test.

Each line of a block is a shell command that must exit 0, unless its trailing comment says
otherwise: `# exit N` expects N; `# Ctrl-C stops it (exit N)` runs the line until it
has settled into its work (tests/support/processes.py), interrupts it and expects N; `# asks first` gives it a terminal that answers y.
A `<!-- doctest: ... -->` comment right above a block says how the block is run:

- `sample output`: a ```console block (`$ command` and its output), run after all the
  others with KCTL_OUTPUT=table (what a terminal gets); the command must succeed and
  print the sample, line for line (trailing spaces aside).
- `in a new virtualenv, from a copy of the repository`: the lines run in a virtualenv that
  sees this one's packages, in a copy of the repository's files.
- `needs spark`: pyspark and Java (left out without them unless KCTL_REQUIRE_SPARK=1), and
  KCTL_TEST_SPARK=processes: its `kctl spark` lines each start a driver JVM
  (tests/spark/selection.py).
- `needs spark; spark://spark:7077 is replaced by the test's standalone cluster`: also a
  Spark standalone master and worker (tests/spark/standalone.py), started for the block
  when KCTL_TEST_SPARK=standalone.
- `A is replaced by the test's broker`: the address A becomes the bundled broker's.

A replaced value (an address, a URL) must be one the prose just above the block tells the
reader to put their own for ("put your ... for `A`"): the block as a reader runs it is the
block as tested, and it leaves a state in which the next block runs as written.
- `needs a schema registry; URL is replaced by the test's`: the test session's schema
  registry (tests/backends/registry.py) serves the block.
- `needs Kafka Connect; URL is replaced by the test's`: a Connect worker of the test's
  own (tests/backends/connect.py), on the README's bundled broker, serves the block.
- `needs MirrorMaker 2; A is replaced by the test's second broker`: a second bundled
  broker, and a MirrorMaker 2 (tests/backends/mirror.py) replicating the README's broker
  (alias `local`) to it (alias `backup`), topics orders-dr; A becomes its address.

Blocks left out are named in the test's skip reason once the others have run.

The block after `<!-- test-command -->` is what .ci/run runs; this test checks that .ci/run
extracts exactly that line. The count of blocks run is printed, and with those left out
must equal the count in the file.
"""

from __future__ import annotations

import os
import pty
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.spark import selection
from tests.support.eventually import within
from tests.support.processes import Settled
from tests.support.terminal import kctl_noun, run_in_terminal
from tests.support.venvs import virtualenv_with_our_dependencies

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


@dataclass
class Block:
    line: int  # where the fence opens, 1-based
    language: str
    directive: str
    text: str
    prose: str = ""  # the paragraph above the block (its directive aside)


def blocks(markdown: str) -> list[Block]:
    found, lines = [], markdown.splitlines()
    index = 0
    while index < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[index])
        if not fence:
            index += 1
            continue
        previous = lines[index - 1].strip() if index else ""
        directive = ""
        match = re.fullmatch(r"<!--\s*(doctest:|test-command)(.*?)\s*-->", previous)
        if match:
            directive = "test-command" if match.group(1) == "test-command" else match.group(2).strip()
        end = index + 1
        while not lines[end].startswith("```"):
            end += 1
        last = index - (2 if directive else 1)
        while last >= 0 and not lines[last].strip():
            last -= 1
        first = last
        while first > 0 and lines[first - 1].strip():
            first -= 1
        prose = " ".join(lines[first:last + 1])
        found.append(Block(index + 1, fence.group(1), directive, "\n".join(lines[index + 1:end]), prose))
        index = end + 1
    return found


def replaced_value(directive: str) -> str | None:
    """The value a directive replaces (`A is replaced by ...`, `...; URL is replaced ...`)."""
    match = re.search(r"(?:^|; )(\S+) is replaced by the test's", directive)
    return match.group(1) if match else None


def test_every_replaced_value_is_one_the_reader_puts_their_own_for():
    for block in blocks(README.read_text()):
        value = replaced_value(block.directive)
        if value is not None:
            assert re.search(rf"put (your|its)\b[^.]*? for `{re.escape(value)}`", block.prose, re.IGNORECASE), \
                f"README.md:{block.line}: the test replaces {value}, but the text above does not tell the reader to put their own for it"


def commands(text: str) -> list[tuple[str, str]]:
    """(command, trailing comment) per non-empty line."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        command, _, comment = line.partition("  #")
        out.append((command.strip(), comment.strip()))
    return out


class Shell:
    def __init__(self, cwd: Path, env: dict[str, str]):
        self.cwd = cwd
        self.env = env

    def run(self, command: str, comment: str, where: str, timeout: float = 600) -> subprocess.CompletedProcess:
        if kctl_noun(command) == "top":
            # A full-screen application: run in a pseudo-terminal until its first data, then q.
            code, output = run_in_terminal(["bash", "-c", command], env=self.env, cwd=self.cwd, ready=b"produce rate")
            assert code == expected_exit(comment), f"{where}: `{command}` exited {code}, expected {expected_exit(comment)}\n{output[-2000:]!r}"
            return subprocess.CompletedProcess(command, code, output.decode(errors="replace"), "")
        interrupt = re.search(r"Ctrl-C stops it \(exit (\d+)\)", comment)
        expected = int(interrupt.group(1)) if interrupt else expected_exit(comment)
        stdin, answer = subprocess.DEVNULL, None
        if re.search(r"\basks first\b", comment):
            # The command asks for confirmation: stdin is a terminal, and the user says y.
            answer, stdin = pty.openpty()
        process = subprocess.Popen(["bash", "-c", command], cwd=self.cwd, env=self.env, stdin=stdin,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        if answer is not None:
            os.close(stdin)
            os.write(answer, b"y\n")
        if interrupt:
            # Interrupted once it has settled into its work (started, and waiting for records,
            # requests or lines): it may print nothing to wait for.
            settled = Settled(process.pid)
            if not within(settled, timeout=120, interval=0.05):
                os.killpg(process.pid, signal.SIGKILL)  # nothing left listening for the next test
                pytest.fail(f"{where}: `{command}` did not settle in 120 s: {settled.describe()}")
            assert process.poll() is None, f"{where}: `{command}` ended before Ctrl-C: {process.communicate()}"
            os.killpg(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole job
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            pytest.fail(f"{where}: `{command}` did not finish within {timeout:.0f}s\n{err}")
        finally:
            if answer is not None:
                os.close(answer)
        assert process.returncode == expected, f"{where}: `{command}` exited {process.returncode}, expected {expected}\n{out}\n{err}"
        return subprocess.CompletedProcess(command, process.returncode, out, err)


def expected_exit(comment: str) -> int:
    """The exit status a line's trailing comment promises (`# exit N`), else 0."""
    return int((re.search(r"exit (\d+)", comment) or [0, 0])[1])


def spark_ready() -> bool:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return shutil.which("java") is not None


def repository_copy(target: Path) -> Path:
    """The repository's tracked files (what a clone has), copied to target."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if listed.returncode == 0:
        for name in filter(None, listed.stdout.decode().split("\0")):
            source = ROOT / name
            if source.is_file():
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / name)
    else:
        shutil.copytree(ROOT, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git", "*.egg-info", "build", "__pycache__"))
    return target


def fresh_env(home: Path) -> dict[str, str]:
    """A new user's environment: HOME and the XDG dirs under `home` (the cache aside), this
    kctl on PATH, `kctl local start` on a free port (not 9092), no pager; Java and Spark
    settings kept (SPARK_SUBMIT_OPTS: tests/spark/jvm.py), and the session's scratch
    directory (tests/conftest.py)."""
    env = {
        "HOME": str(home), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        # The test session's cache (tests/conftest.py): what a user's holds after their
        # first `kctl spark`, made once, not per test.
        "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"],
        "KCTL_LOCAL_PORT": "0", "MANPAGER": "cat", "PAGER": "cat", "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    for name in ("JAVA_HOME", "SPARK_HOME", "SPARK_SUBMIT_OPTS", "PYSPARK_PYTHON", "TMPDIR", "SPARK_LOCAL_DIRS"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


STANDALONE = "needs spark; spark://spark:7077 is replaced by the test's standalone cluster"
REGISTRY = "needs a schema registry; "
CONNECT = "needs Kafka Connect; "
MIRROR = "needs MirrorMaker 2; "


def test_every_readme_block_runs(tmp_path, capsys, spark_standalone, request):
    found = blocks(README.read_text())
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = fresh_env(home)
    shell = Shell(repository_copy(work), env)
    ran, deferred, not_run = 0, [], []
    workers = None
    stoppers: list = []
    mirroring = None
    wants_mirror = any(b.directive.startswith(MIRROR) for b in found)
    try:
        for block in found:
            where = f"README.md:{block.line}"
            if block.directive == "test-command":
                check_ci_runs(block, where)
            elif block.directive.startswith("sample output"):
                deferred.append(block)
                continue
            elif block.directive.startswith("in a new virtualenv"):
                run_in_virtualenv(block, shell, tmp_path, where)
            elif block.directive in ("needs spark", STANDALONE) and not spark_ready():
                if os.environ.get("KCTL_REQUIRE_SPARK"):
                    pytest.fail(f"{where}: needs pyspark and Java")
                not_run.append(f"{where} needs pyspark and Java")
                continue
            elif block.directive in ("needs spark", STANDALONE) and not selection.runs(needs := spark_kind(block)):
                not_run.append(f"{where} {selection.reason(needs)}")
                continue
            else:
                text = block.text
                replaced = re.fullmatch(r"(\S+) is replaced by the test's broker", block.directive)
                if replaced:
                    text = text.replace(replaced.group(1), broker_address(shell))
                elif block.directive == STANDALONE:
                    text = text.replace("spark://spark:7077", spark_standalone().url)
                elif block.directive.startswith(REGISTRY):
                    url = re.fullmatch(REGISTRY + r"(\S+) is replaced by the test's", block.directive).group(1)
                    text = text.replace(url, request.getfixturevalue("schema_registry").url)
                elif block.directive.startswith(CONNECT):
                    url = re.fullmatch(CONNECT + r"(\S+) is replaced by the test's", block.directive).group(1)
                    from tests.backends.plugin import start_connect

                    workers = workers or start_connect(tmp_path / "connect", broker_address(shell), where="the README's broker")
                    text = text.replace(url, workers.url)
                elif block.directive.startswith(MIRROR):
                    address = re.fullmatch(MIRROR + r"(\S+) is replaced by the test's second broker", block.directive).group(1)
                    text = text.replace(address, (mirroring or mirror_soon(tmp_path, broker_address(shell), stoppers)).result())
                elif block.directive not in ("", "needs spark"):
                    pytest.fail(f"{where}: unknown doctest directive {block.directive!r}")
                for command, comment in commands(text):
                    shell.run(command, comment, where)
                if mirroring is None and wants_mirror and "kctl local start" in text:
                    # MirrorMaker 2 takes seconds to start: from the quick start's broker
                    # on, it starts beside the blocks in between.
                    mirroring = mirror_soon(tmp_path, broker_address(shell), stoppers)
            ran += 1
        for block in deferred:
            check_sample(block, shell, f"README.md:{block.line}")
            ran += 1
    finally:
        if workers is not None:
            workers.stop()
        if mirroring is not None:  # still starting when a block failed: let it finish, then stop it
            mirroring.exception(timeout=300)
        for stop in reversed(stoppers):
            stop()
        subprocess.run(["bash", "-c", "kctl local stop"], cwd=work, env=env, capture_output=True, timeout=60)
    # Counted apart from blocks(): every other ``` line opens a block.
    fences = sum(1 for line in README.read_text().splitlines() if line.startswith("```"))
    with capsys.disabled():
        print(f"\nREADME.md: {ran} of {fences // 2} fenced blocks run")
    assert ran + len(not_run) == len(found) == fences // 2 and fences % 2 == 0
    if not_run:
        # The blocks that ran passed; the test says what it left out (and the run's
        # closing summary counts it) rather than pass as if it had run them.
        pytest.skip(f"{len(not_run)} block(s) not run: " + "; ".join(not_run))


def spark_kind(block: Block) -> str:
    """What a Spark block needs of KCTL_TEST_SPARK: its lines run `kctl spark` in
    processes of their own (tests/spark/selection.py), on a standalone cluster or not."""
    return "standalone" if block.directive == STANDALONE else "processes"


def mirror_soon(tmp_path: Path, source: str, stoppers: list):
    """mirror_target in a thread of its own: a future of the address."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1)
    future = pool.submit(mirror_target, tmp_path, source, stoppers)
    pool.shutdown(wait=False)
    return future


def mirror_target(tmp_path: Path, source: str, stoppers: list) -> str:
    """A second bundled broker with a MirrorMaker 2 replicating `source` to it; its address."""
    from kctl.broker.process import BrokerProcess
    from tests.backends.plugin import start_mirror

    backup = BrokerProcess(tmp_path / "backup-broker")
    stoppers.append(backup.stop)
    target = backup.start()
    mm2 = start_mirror(tmp_path / "mm2", {"local": source, "backup": target}, flows=[("local", "backup")], topics="orders-dr",
                       where="the README's brokers")
    stoppers.append(mm2.stop)
    return target


def broker_address(shell: Shell) -> str:
    status = shell.run("kctl local status -o json", "", "local status")
    import json

    return json.loads(status.stdout)["bootstrap"]


def check_sample(block: Block, shell: Shell, where: str) -> None:
    lines = block.text.splitlines()
    assert lines[0].startswith("$ "), f"{where}: a sample starts with `$ command`"
    result = shell.run(f"KCTL_OUTPUT=table {lines[0][2:]}", "", where)
    assert [line.rstrip() for line in result.stdout.splitlines()] == [line.rstrip() for line in lines[1:]], \
        f"{where}: the output differs from the sample:\n{result.stdout}"


def check_ci_runs(block: Block, where: str) -> None:
    """.ci/run takes the line after the marker's fence: the same line as this block."""
    extracted = subprocess.run(["awk", "/<!-- test-command -->/{getline; getline; print; exit}", str(README)],
                               capture_output=True, text=True, check=True).stdout.strip()
    assert extracted == block.text.strip(), f"{where}: .ci/run would run {extracted!r}"
    assert "test-command" in (ROOT / ".ci" / "run").read_text()


def run_in_virtualenv(block: Block, shell: Shell, tmp_path: Path, where: str) -> None:
    # pip finds the dependencies in this environment rather than downloading and unpacking
    # pyspark again (4 minutes of the run); the block still builds and installs kctl.
    venv = virtualenv_with_our_dependencies(tmp_path / "venv")
    env = dict(shell.env, PATH=f"{venv / 'bin'}{os.pathsep}{shell.env['PATH']}", VIRTUAL_ENV=str(venv),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    inner = Shell(shell.cwd, env)
    for command, comment in commands(block.text):
        inner.run(command, comment, where)
    version = inner.run("kctl --version", "", where)
    assert version.stdout.strip(), f"{where}: the installed kctl does not run"
