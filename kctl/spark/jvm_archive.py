"""A class-data-sharing archive for the Spark driver's JVM: every `kctl spark` starts faster.

Each command starts a JVM that loads and verifies the classes of Spark's gateway, its
SparkContext and Spark SQL before the first job runs. Java's dynamic CDS archive (JDK
13+) keeps those classes parsed and verified in a file the JVM maps at start-up. Measured
on this project's 2-core machine (pyspark 4.3, OpenJDK 17): session and a first job over
10 records 10.4-11.0 s without, 6.1-6.6 s with; `kctl spark dump` of 1,000 records
13.5-15.0 s without, 8.1-8.3 s with.

The first command without an archive runs its JVM with -XX:ArchiveClassesAtExit, which
writes the archive after kctl is done, as the JVM exits (~13 s in the background; that
command's own run is ~6 s slower), under a temporary name. The next command moves it
into place once its JVM has gone and the JVM's own log says the archive was written, so
a half-written file (a JVM killed while writing) is never used; its size is kept beside
it (a truncated archive crashes the JVM: it is made again instead) and the JVM checks its
checksums (it runs without a damaged one). The archive is named by what it depends on
(Java, Spark, the driver's class path): an upgrade makes a new one; after three JVMs that
ended without writing one kctl stops asking. The JVM's unified logging and its own
messages go to its stderr (kctl's Spark log), never to kctl's stdout.

Nothing here runs under spark-submit (its JVM has started), when the driver's Java
options already choose class data sharing, or when Spark's configuration directory
(SPARK_CONF_DIR, else SPARK_HOME/conf) holds files: Spark puts it on the driver's class
path, and a JVM refuses to write an archive with a non-empty directory there ("Error:
non-empty directory"), so every run would pay for an archive never written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from pathlib import Path

# The first four bytes of a dynamic archive (CDS's DYNAMIC_ARCHIVE_MAGIC, little-endian).
_MAGIC = (0xF00BABA8).to_bytes(4, "little")
# What the JVM logs (cds+dynamic=info) once the archive is complete on disk.
_WRITTEN = "Written dynamic archive"
# JVMs asked to write an archive that end without one before kctl stops asking.
_ATTEMPTS = 3
# JVM options that mean the user chose class data sharing themselves.
_USER_CHOICES = ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")
# Unified logging's warnings (an archive refused, classes left out of one) go to the
# JVM's stderr, which kctl sends to its Spark log, instead of stdout, which is kctl's.
_LOGGING = "-Xlog:disable -Xlog:all=warning:stderr -XX:+DisplayVMOutputToStderr"

_writing: Path | None = None  # the temporary archive this process's JVM is asked to write


def driver_options(existing: str, cache: Path, class_path: str = "") -> str:
    """The driver's Java options with the archive used, or written by this run's JVM."""
    if any(choice in existing for choice in _USER_CHOICES) or _conf_dir_has_files():
        return existing
    archive = archive_path(cache, class_path)
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
        writing = _settle(archive.parent, archive.name)
        if archive.exists():
            if _intact(archive):
                # VerifySharedSpaces: the JVM checks the regions' CRCs and refuses a
                # damaged archive (it maps a truncated one and crashes: hence _intact).
                return f"{existing} -XX:SharedArchiveFile={archive} -XX:+VerifySharedSpaces {_LOGGING}".strip()
            archive.unlink()  # make it again
            _size_file(archive).unlink(missing_ok=True)
        if writing or _failures(archive) >= _ATTEMPTS:
            return existing
        global _writing
        temporary = archive.with_name(f".{archive.name}.{os.getpid()}.tmp")
        log = temporary.with_name(temporary.name + ".log")
        _writing = temporary
        return f"{existing} -XX:ArchiveClassesAtExit={temporary} {_LOGGING} -Xlog:cds+dynamic=info:file={log}".strip()
    except OSError:  # an unwritable cache: run without an archive
        return existing


def started(process_id: int | None) -> None:
    """Note the pid of the JVM that will write this run's archive: it outlives kctl."""
    global _writing
    if _writing is not None and process_id is not None:
        with contextlib.suppress(OSError):
            _writing.with_name(_writing.name + ".pid").write_text(str(process_id))
    _writing = None


def archive_path(cache: Path, class_path: str = "") -> Path:
    """$XDG_CACHE_HOME/kctl/spark/jvm/driver-<hash of Java, Spark and class path>.jsa."""
    import pyspark

    java = _java()
    identity = [pyspark.__version__, str(Path(pyspark.__file__).resolve().parent), class_path, java, os.environ.get("SPARK_HOME", "")]
    with contextlib.suppress(OSError):
        stat = os.stat(java)
        identity.append(f"{stat.st_size}:{stat.st_mtime_ns}")
    key = hashlib.sha256("\0".join(identity).encode()).hexdigest()[:16]
    return cache / "jvm" / f"driver-{key}.jsa"


def _settle(directory: Path, name: str) -> bool:
    """Move archives whose JVMs have exited into place (or remove them, when the JVM
    did not finish writing); whether a live JVM is still writing `name`."""
    writing = False
    # Each writing JVM's log exists from its start; the archive only from its exit.
    for log in directory.glob(".driver-*.tmp.log"):
        temporary = log.with_name(log.name[:-len(".log")])
        archive_name, _, pid = temporary.name[1:-len(".tmp")].rpartition(".")
        # The JVM's pid (started()), else the pid of the kctl that started it.
        with contextlib.suppress(OSError):
            pid = temporary.with_name(temporary.name + ".pid").read_text()
        if not pid.isdigit():
            continue
        if _alive(int(pid)):
            writing = writing or archive_name == name
            continue
        try:
            written = _WRITTEN in log.read_text(errors="replace") and temporary.exists()
        except OSError:
            written = False
        if written:
            _size_file(directory / archive_name).write_text(str(temporary.stat().st_size))
            os.replace(temporary, directory / archive_name)
        else:  # killed while writing, or a JVM that does not write archives
            archive = directory / archive_name
            _failures_file(archive).write_text(str(_failures(archive) + 1))
            temporary.unlink(missing_ok=True)
        log.unlink(missing_ok=True)
        temporary.with_name(temporary.name + ".pid").unlink(missing_ok=True)
    return writing


def _intact(archive: Path) -> bool:
    """An archive's first bytes and size are what its JVM wrote."""
    try:
        with archive.open("rb") as handle:
            magic = handle.read(4)
        return magic == _MAGIC and int(_size_file(archive).read_text()) == archive.stat().st_size
    except (OSError, ValueError):
        return False


def _size_file(archive: Path) -> Path:
    return archive.with_name(archive.name + ".size")


def _failures_file(archive: Path) -> Path:
    return archive.with_name(archive.name + ".failed")


def _failures(archive: Path) -> int:
    """How many JVMs asked to write this archive ended without writing it."""
    try:
        return int(_failures_file(archive).read_text() or 0)
    except (OSError, ValueError):
        return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _conf_dir_has_files() -> bool:
    """Spark's launcher puts this directory on the driver's class path (see above)."""
    directory = os.environ.get("SPARK_CONF_DIR")
    if not directory:
        home = os.environ.get("SPARK_HOME")
        if not home:
            import pyspark

            home = str(Path(pyspark.__file__).resolve().parent)
        directory = os.path.join(home, "conf")
    try:
        return any(os.scandir(directory))
    except OSError:  # none: nothing on the class path
        return False


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java") or "java"
    return os.path.realpath(java)
