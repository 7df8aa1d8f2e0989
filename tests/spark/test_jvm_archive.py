"""The Spark driver JVM's class archive (kctl.spark.jvm_archive): written once by a real
JVM, moved into place only when complete, used by the next JVM, and never trusted when
damaged or half-written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from kctl.spark import jvm_archive  # noqa: E402
from tests.support.eventually import within  # noqa: E402

MAGIC = (0xF00BABA8).to_bytes(4, "little")


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def written_by_a_jvm(cache, *, finished: bool = True, pid: int | None = None):
    """What a JVM asked to write the archive leaves: its log, its pid, and (finished) the
    archive under its temporary name."""
    options = jvm_archive.driver_options("", cache)
    temporary = cache / "jvm" / options.split("-XX:ArchiveClassesAtExit=")[1].split()[0].rsplit("/", 1)[1]
    (temporary.parent / (temporary.name + ".pid")).write_text(str(pid or dead_pid()))
    log = temporary.parent / (temporary.name + ".log")
    if finished:
        temporary.write_bytes(MAGIC + b"\0" * 4092)
        log.write_text("[0.1s][info][cds,dynamic] Written dynamic archive 0x800 - 0x900 [984 bytes header, 4096 bytes total]\n")
    else:
        log.write_text("[0.1s][info][cds,dynamic] Copying 8 klasses and 12 symbols\n")
    jvm_archive.started(None)
    return temporary


def test_without_an_archive_the_jvm_writes_one_under_a_temporary_name(tmp_path):
    options = jvm_archive.driver_options("-Dx=1", tmp_path)
    assert options.startswith("-Dx=1 -XX:ArchiveClassesAtExit=")
    assert "jvm/.driver-" in options and f".{os.getpid()}.tmp " in options
    # Its warnings and its own messages go to stderr (kctl's Spark log), never stdout.
    assert "-Xlog:disable -Xlog:all=warning:stderr" in options and "-XX:+DisplayVMOutputToStderr" in options


def test_a_finished_archive_is_moved_into_place_and_used(tmp_path):
    written_by_a_jvm(tmp_path)
    options = jvm_archive.driver_options("", tmp_path)
    archive = jvm_archive.archive_path(tmp_path)
    assert options.startswith(f"-XX:SharedArchiveFile={archive} -XX:+VerifySharedSpaces ")
    assert sorted(p.name for p in archive.parent.iterdir()) == [archive.name, archive.name + ".size"]


def test_while_a_jvm_writes_the_archive_no_other_is_asked_to(tmp_path):
    temporary = written_by_a_jvm(tmp_path, finished=False, pid=os.getpid())
    assert jvm_archive.driver_options("-Dx=1", tmp_path) == "-Dx=1"
    assert [p.name for p in temporary.parent.glob("*.log")] == [temporary.name + ".log"]


def test_a_jvm_that_ends_without_writing_is_asked_three_times_in_all(tmp_path):
    for _ in range(3):
        written_by_a_jvm(tmp_path, finished=False)
    assert jvm_archive.driver_options("-Dx=1", tmp_path) == "-Dx=1"
    assert not list((tmp_path / "jvm").glob(".*"))  # no temporaries left


def test_a_truncated_or_foreign_archive_is_made_again(tmp_path):
    written_by_a_jvm(tmp_path)
    jvm_archive.driver_options("", tmp_path)
    archive = jvm_archive.archive_path(tmp_path)
    with archive.open("r+b") as handle:  # a JVM maps a truncated archive and crashes
        handle.truncate(1000)
    assert "-XX:ArchiveClassesAtExit=" in jvm_archive.driver_options("", tmp_path)
    assert not archive.exists()
    jvm_archive.started(None)
    archive.write_bytes(b"not an archive")
    assert "-XX:ArchiveClassesAtExit=" in jvm_archive.driver_options("", tmp_path)
    jvm_archive.started(None)


def test_the_users_own_class_sharing_options_are_kept(tmp_path):
    for options in ("-Xshare:off", "-XX:SharedArchiveFile=/mine.jsa"):
        assert jvm_archive.driver_options(options, tmp_path) == options
    assert not (tmp_path / "jvm").exists()


def test_a_spark_conf_dir_with_files_runs_without_an_archive(tmp_path, monkeypatch):
    """Spark puts the directory on the driver's class path, where a JVM cannot archive."""
    conf = tmp_path / "conf"
    conf.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    assert "-XX:ArchiveClassesAtExit=" in jvm_archive.driver_options("", tmp_path)
    jvm_archive.started(None)
    (conf / "spark-defaults.conf").write_text("spark.ui.enabled false\n")
    for _ in range(2):
        assert jvm_archive.driver_options("-Dx=1", tmp_path) == "-Dx=1"


def test_an_unwritable_cache_runs_without_an_archive(tmp_path):
    (tmp_path / "jvm").write_text("a file where the directory goes")
    assert jvm_archive.driver_options("-Dx=1", tmp_path) == "-Dx=1"


@pytest.mark.integration
@pytest.mark.single_node
@pytest.mark.spark_processes
def test_a_real_jvm_writes_the_archive_and_the_next_one_uses_it(cluster, source, tmp_path):
    """`kctl spark dump` processes on the session's cache (tests/conftest.py): the first
    one there to start without an archive has its JVM write it as it exits (this test's
    first run, or an earlier test's); the next JVM maps it (the JVM says in kctl's Spark
    log when it cannot); none prints anything of the JVM's on stdout."""
    if cluster.backend != "bundled":
        pytest.skip("one backend is enough for the driver's start-up")
    state = tmp_path / "state"
    env = {**os.environ, "XDG_STATE_HOME": str(state)}

    def dump(out: str) -> dict:
        proc = subprocess.run([sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "spark", "dump", "-t", source, "--out", str(tmp_path / out),
                               "--master", "local[1]", "--spark-conf", "spark.driver.memory=512m", "-o", "json"],
                              capture_output=True, text=True, timeout=240, env=env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)  # stdout is the manifest and nothing else

    assert dump("first")["records"] == 85
    directory = Path(os.environ["XDG_CACHE_HOME"]) / "kctl" / "spark" / "jvm"
    for pid_file in directory.glob(".driver-*.tmp.pid"):  # the JVM writes as it exits
        assert within(lambda p=pid_file: not jvm_archive._alive(int(p.read_text())), timeout=120, interval=0.5), \
            "the JVM writing the archive did not exit"
    assert dump("second")["records"] == 85
    [archive] = directory.glob("driver-*.jsa")
    assert archive.read_bytes()[:4] == MAGIC and int(archive.with_name(archive.name + ".size").read_text()) == archive.stat().st_size
    log = (state / "kctl" / "spark.log").read_text()
    assert "Unable to use shared archive" not in log and "cds" not in log, log[-2000:]
    assert not list(directory.glob(".driver-*"))
