"""--ship-env: pack the Python environment kctl runs in for Spark's executors.

On a cluster, executors run Python workers with whatever `python3` their machine has,
which usually lacks kctl, confluent-kafka and pyarrow. PySpark's documented answer is
an archive of a virtual environment in spark.archives, unpacked by Spark next to each
executor, with the workers pointed at its interpreter. venv-pack makes the archive.

Only what the executors import goes in: kctl and the distributions it needs for
Spark jobs, never pyspark and py4j (executors must use the cluster's own, which Spark
puts first on their PYTHONPATH anyway) or test and benchmark tools. A venv's
interpreter is a link to the Python it was made from, so the workers need that
Python at the same path (the limitation venv-pack documents).

The archive is cached under $XDG_CACHE_HOME/kctl/spark, named by a hash of what goes
in (each file's path, size and modification time, and the interpreter): packing takes
seconds, a second run with the same environment reuses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import sysconfig
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path

from kctl.errors import ConfigError

# The directory executors unpack the archive into (spark.archives' #fragment).
UNPACKED_AS = "kctlenv"
EXECUTOR_PYTHON = f"./{UNPACKED_AS}/bin/python"
# Executors get these from the cluster's Spark: shipping our copies (~500 MB) would
# only risk a version that does not match the cluster's JVM.
FROM_THE_CLUSTER = {"pyspark", "py4j"}
ARCHIVE_PREFIX = "kctlenv-"


def archive_setting(archive: Path) -> str:
    """spark.archives' entry: executors unpack `archive` as ./kctlenv."""
    return f"{archive}#{UNPACKED_AS}"


def driver_directory(cache: Path) -> Path:
    """A working directory for the driver's JVM in which ./kctlenv is this environment.

    PySpark gives the JVM one Python executable for all of a job's Python, and a Python
    data source's planning runs in the driver (PythonPlannerRunner) with that same
    ./kctlenv/bin/python, resolved against the JVM's working directory. Started here,
    the driver runs this environment's Python and the executors their unpacked copy.
    """
    directory = cache / f"driver-{hashlib.sha256(sys.prefix.encode()).hexdigest()[:12]}"
    link = directory / UNPACKED_AS
    if os.path.realpath(link) != os.path.realpath(sys.prefix):
        directory.mkdir(parents=True, exist_ok=True)
        partial = directory / f".{UNPACKED_AS}.{os.getpid()}"
        partial.unlink(missing_ok=True)
        partial.symlink_to(sys.prefix, target_is_directory=True)
        os.replace(partial, link)  # atomic: another kctl may be starting its driver here
    return directory


def packed_environment(cache: Path, note: Callable[[str], None] = lambda _: None) -> Path:
    """The archive of this environment, packed now unless the cache already has it."""
    try:
        from venv_pack import Env, File, VenvPackException
    except ImportError:
        raise ConfigError(action="ship the environment", cause="venv-pack is not installed",
                          hint="pip install 'kctl[spark]' installs it") from None
    if sys.prefix == sys.base_prefix:
        raise ConfigError(
            action="ship the environment", cause=f"kctl is not running in a virtual environment ({sys.executable})",
            hint="install kctl in one (python -m venv ENV && ENV/bin/pip install 'kctl[spark]'), or install kctl[spark] on every worker and leave out {ship_env}",
        )
    try:
        env = Env(sys.prefix)
    except VenvPackException as exc:
        raise ConfigError(action=f"ship the environment {sys.prefix}", cause=f"{str(exc).splitlines()[0]}") from None
    site = _site_packages_target()
    from packaging.utils import canonicalize_name

    installed = {str(canonicalize_name(d.metadata["Name"])): d for d in metadata.distributions(path=[os.path.join(sys.prefix, site)])}
    if "kctl" not in installed:
        raise ConfigError(action="ship the environment", cause=f"kctl is not installed in {sys.prefix}",
                          hint="pip install 'kctl[spark]' (or pip install -e '.[spark]' in a checkout) into it")
    keep = {f"{site}/{entry}" for entry in _top_level_entries(needed_distributions(installed))}
    # Outside site-packages only the interpreter's links and pyvenv.cfg: no scripts,
    # headers or man pages. (Env.files filtered in place: a glob per kept entry through
    # Env.include scans every file of the environment each time.)
    depth = site.count("/") + 2  # parts of lib/python3.X/site-packages/ENTRY
    env.files[:] = [f for f in env.files if _kept(f.target, keep, depth)]
    for source, target in _editable_kctl(installed["kctl"], site):
        env.files.append(File(str(source), target))
    files = sorted(env.files, key=lambda f: f.target)
    archive = cache / f"{ARCHIVE_PREFIX}{_fingerprint(files)}.tar.gz"
    if archive.exists():
        return archive
    cache.mkdir(parents=True, exist_ok=True)
    note(f"packing {sys.prefix} ({len(files):,} files) for the executors into {archive}")
    partial = archive.with_name(f".{archive.name}.{os.getpid()}")
    try:
        # Level 1: the archive is mostly compiled libraries, which compress little more
        # at higher levels but take several times as long.
        env.pack(output=str(partial), format="tar.gz", compress_level=1, force=True)
        os.replace(partial, archive)
    except (OSError, VenvPackException) as exc:
        partial.unlink(missing_ok=True)
        raise ConfigError(action=f"pack {sys.prefix} into {cache}", cause=str(exc)) from None
    for older in cache.glob(f"{ARCHIVE_PREFIX}*.tar.gz"):
        if older != archive:
            older.unlink(missing_ok=True)  # each is tens of MB; only the newest is used
    return archive


def _kept(target: str, keep: set[str], depth: int) -> bool:
    if target in ("pyvenv.cfg", "lib64") or target.startswith("bin/python"):
        return True
    return "/".join(target.split("/", depth)[:depth]) in keep


def _site_packages_target() -> str:
    """site-packages relative to the environment's prefix: lib/python3.X/site-packages."""
    return os.path.relpath(sysconfig.get_path("purelib"), sys.prefix)


def needed_distributions(installed: dict[str, metadata.Distribution]) -> list[metadata.Distribution]:
    """kctl and, transitively, what it requires with the spark extra, minus what the
    cluster provides. `installed`: the environment's distributions by canonical name
    (looked up there, not on sys.path, which from a checkout finds its egg-info first)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, metadata.Distribution] = {}
    pending = [("kctl", {"spark"})]
    while pending:
        name, extras = pending.pop()
        key = canonicalize_name(name)
        if key in found or key in FROM_THE_CLUSTER:
            continue
        dist = installed.get(key)
        if dist is None:
            continue  # an optional requirement for another platform or Python
        found[key] = dist
        for line in dist.requires or ():
            requirement = Requirement(line)
            # A marker holds for this platform and Python, with one of the extras asked for.
            if requirement.marker is None or any(requirement.marker.evaluate({"extra": e}) for e in extras or {""}):
                pending.append((requirement.name, set(requirement.extras)))
    return list(found.values())


def _top_level_entries(dists) -> Iterator[str]:
    """The names in site-packages these distributions installed (packages, modules,
    .libs directories, .dist-info)."""
    for dist in dists:
        for file in dist.files or ():
            parts = Path(file).parts
            if parts and parts[0] not in ("..", "__pycache__") and not parts[0].startswith("__editable__"):
                yield parts[0]


def _editable_kctl(dist: metadata.Distribution, site: str) -> Iterator[tuple[Path, str]]:
    """kctl's own files when it is installed editable (pip install -e): the environment
    holds only a pointer to the checkout, which executors elsewhere do not have."""
    direct = dist.read_text("direct_url.json")
    if not direct or not json.loads(direct).get("dir_info", {}).get("editable"):
        return
    import kctl

    package = Path(kctl.__file__).parent
    for path in package.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            yield path, f"{site}/kctl/{path.relative_to(package).as_posix()}"


def _fingerprint(files) -> str:
    digest = hashlib.sha256(sys.version.encode())
    for file in files:
        try:
            stat = os.stat(file.source)
        except OSError:
            continue  # a dangling link: venv-pack reports it when packing
        digest.update(f"{file.target}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]

