"""All partition logs of the broker and the metadata that describes them.

Data directory layout (Kafka's where Kafka has a format for it):

    .lock                              held by the running broker (storage/lock.py)
    meta.properties                    cluster.id, node.id, version (Kafka's format)
    kctl-metadata.json                 topics (id, partition count, config overrides) and
                                       dynamic broker configs: what KRaft's metadata log
                                       holds on a real cluster
    log-start-offset-checkpoint        Kafka's checkpoint text format
    recovery-point-offset-checkpoint
    .kafka_cleanshutdown               present only after a clean shutdown
    <topic>-<partition>/               segments, indexes, partition.metadata

Every metadata and checkpoint file is replaced atomically (write temp, fsync, rename). A
change of metadata that cannot be written (disk full) is undone in memory and on disk
before the error is answered, so nothing is listed that a restart would not find.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kctl.broker.configs import TOPIC_CONFIGS, LogConfig
from kctl.broker.storage.files import FilePool
from kctl.broker.storage.lock import DataDirectoryLock, DataDirectoryLocked
from kctl.broker.storage.log import Log

log = logging.getLogger("kctl.broker.storage")

# Threads that flush logs on shutdown (fsync waits on the disk, not on the GIL).
_CLOSE_THREADS = 8
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
METADATA = "kctl-metadata.json"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
# Files `kctl local` keeps beside the data (kctl.broker.process), allowed in a new directory.
PROCESS_FILES = {"broker.log", "broker.ready", "broker.ready.tmp"}
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249


class StorageError(Exception):
    """The data directory cannot be used (unwritable, full, foreign or corrupt)."""


def atomic_write(path: Path, text: str, durable: bool = True) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w") as handle:
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def topic_name_problem(name: str) -> str | None:
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_TOPIC_NAME:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters"
    if not _LEGAL_TOPIC.match(name):
        return (f"Topic name \"{name}\" is illegal, it contains a character other than ASCII "
                "alphanumerics, '.', '_' and '-'")
    return None


@dataclass(slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)  # overrides only


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """Kafka's offset checkpoint: `0`, count, then `topic partition offset` lines."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return {}
    result = {}
    try:
        if lines[0].strip() != "0":
            raise ValueError
        for line in lines[2:2 + int(lines[1])]:
            topic, partition, offset = line.split()
            result[(topic, int(partition))] = int(offset)
    except (ValueError, IndexError):
        log.warning("ignoring malformed checkpoint %s", path)
        return {}
    return result


def write_checkpoint(path: Path, offsets: dict[tuple[str, int], int]) -> None:
    lines = ["0", str(len(offsets))] + [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
    atomic_write(path, "\n".join(lines) + "\n")


class LogManager:
    def __init__(self, data_dir: Path, clock: Callable[[], int], node_id: int = 1):
        self.dir = data_dir
        self.clock = clock
        self.node_id = node_id
        self.cluster_id = ""
        self.topics: dict[str, TopicInfo] = {}
        self.topic_ids: dict[uuid.UUID, str] = {}
        self.logs: dict[tuple[str, int], Log] = {}
        self.broker_defaults: dict[str, str] = {}  # dynamic cluster-wide log.* configs
        self.broker_overrides: dict[str, str] = {}  # dynamic configs of this node
        self.static_defaults: dict[str, str] = {}  # log.* configs given at start (--config)
        self.was_clean = False
        self.files = FilePool()
        self._lock = DataDirectoryLock(data_dir)

    # -- start and stop ---------------------------------------------------------------------

    def open(self, cluster_id: str | None = None) -> dict:
        """Lock and open (or create) the data directory and every log; returns a recovery
        report. Nothing is read before the lock is held."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
        except DataDirectoryLocked as exc:
            raise StorageError(str(exc)) from None
        except OSError as exc:
            raise StorageError(f"data directory {self.dir} is not writable: "
                               f"{exc.strerror or exc}") from None
        try:
            return self._open(cluster_id)
        except BaseException:
            self.unlock()
            raise

    def _open(self, cluster_id: str | None) -> dict:
        try:
            probe = self.dir / ".write-probe"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise StorageError(f"data directory {self.dir} is not writable: "
                               f"{exc.strerror or exc}") from None
        self._load_meta_properties(cluster_id)
        self._load_metadata()
        marker = self.dir / CLEAN_SHUTDOWN
        self.was_clean = marker.exists()
        marker.unlink(missing_ok=True)
        starts = read_checkpoint(self.dir / LOG_START_CHECKPOINT)
        recovery = read_checkpoint(self.dir / RECOVERY_CHECKPOINT)
        truncated = 0
        for topic in self.topics.values():
            for partition in range(topic.partitions):
                key = (topic.name, partition)
                plog = self._new_log(topic, partition)
                truncated += plog.open(starts.get(key, 0), recovery.get(key, 0), self.was_clean)
                self.logs[key] = plog
        self._remove_stray_dirs()
        try:
            self.checkpoint()
        except OSError as exc:  # a full disk must not keep the broker from starting
            log.warning("checkpoints not written: %s", exc.strerror or exc)
        return {"clean_shutdown": self.was_clean, "partitions": len(self.logs),
                "truncated_bytes": truncated}

    def close(self) -> None:
        """Flush everything and mark the shutdown clean; the lock goes last."""
        try:
            failed = 0
            # The fsyncs and snapshots in threads, as Kafka closes logs with
            # num.recovery.threads.per.data.dir threads: one by one, 10,000 written
            # partitions took 13 s to stop, past the time `kctl local stop` waits.
            with ThreadPoolExecutor(_CLOSE_THREADS, thread_name_prefix="close") as threads:
                prepared = dict(zip(self.logs.values(), threads.map(_prepare_close, self.logs.values())))
            for plog, error in prepared.items():
                try:
                    if error is not None:
                        raise error
                    plog.close()
                except OSError as exc:
                    failed += 1
                    log.error("%s-%d: cannot flush the log: %s", plog.topic, plog.partition,
                              exc.strerror or exc)
            self.checkpoint()
            if not failed:  # otherwise the next start re-validates what was not flushed
                (self.dir / CLEAN_SHUTDOWN).write_bytes(b"")
        except OSError as exc:
            log.error("shutdown not clean, the next start will recover the logs: %s",
                      exc.strerror or exc)
        finally:
            self.unlock()

    def unlock(self) -> None:
        """Close every file and give up the directory (after close, or a failed start)."""
        self.files.close_all()
        self._lock.release()

    def checkpoint(self) -> None:
        write_checkpoint(self.dir / LOG_START_CHECKPOINT,
                         {k: v.log_start_offset for k, v in self.logs.items()})
        write_checkpoint(self.dir / RECOVERY_CHECKPOINT,
                         {k: v.recovery_point for k, v in self.logs.items()})

    def flush_all(self) -> None:
        for plog in self.logs.values():
            plog.flush()
        self.checkpoint()

    def _load_meta_properties(self, cluster_id: str | None) -> None:
        path = self.dir / "meta.properties"
        if path.exists():
            props = dict(line.split("=", 1) for line in path.read_text().splitlines()
                         if "=" in line and not line.startswith("#"))
            if "cluster.id" not in props:
                raise StorageError(f"{path} has no cluster.id: not a kctl broker directory")
            self.cluster_id = props["cluster.id"].strip()
            return
        if any(p for p in self.dir.iterdir()
               if not p.name.startswith(".") and p.name not in PROCESS_FILES):
            raise StorageError(f"data directory {self.dir} is not empty and has no "
                               "meta.properties: refusing to use a foreign directory")
        self.cluster_id = cluster_id or _random_cluster_id()
        atomic_write(path, f"#kctl bundled broker\nversion=1\nnode.id={self.node_id}\n"
                           f"directory.id={_random_cluster_id()}\ncluster.id={self.cluster_id}\n")

    def _load_metadata(self) -> None:
        path = self.dir / METADATA
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return
        except ValueError as exc:
            raise StorageError(f"{path} is corrupt: {exc}") from None
        for name, value in data.get("topics", {}).items():
            info = TopicInfo(name, uuid.UUID(value["topic_id"]), int(value["partitions"]),
                             dict(value.get("configs", {})))
            self.topics[name] = info
            self.topic_ids[info.topic_id] = name
        self.broker_defaults = dict(data.get("broker_defaults", {}))
        self.broker_overrides = dict(data.get("broker_overrides", {}))

    def save_metadata(self) -> None:
        data = {
            "topics": {t.name: {"topic_id": str(t.topic_id), "partitions": t.partitions,
                                "configs": t.configs} for t in self.topics.values()},
            "broker_defaults": self.broker_defaults,
            "broker_overrides": self.broker_overrides,
        }
        atomic_write(self.dir / METADATA, json.dumps(data, indent=1, sort_keys=True))

    def _remove_stray_dirs(self) -> None:
        """Partition dirs of deleted topics (a crash between delete steps)."""
        live = {f"{t}-{p}" for t, p in self.logs}
        for path in self.dir.iterdir():
            if path.is_dir() and re.search(r"-\d+(\.[0-9a-f-]+-delete)?$", path.name) \
                    and path.name not in live:
                shutil.rmtree(path, ignore_errors=True)

    # -- topics -----------------------------------------------------------------------------

    def resolved_configs(self, topic: TopicInfo | None) -> dict[str, str]:
        values = {}
        for name, definition in TOPIC_CONFIGS.items():
            if topic is not None and name in topic.configs:
                values[name] = topic.configs[name]
            elif definition.synonym in self.broker_overrides:
                values[name] = self.broker_overrides[definition.synonym]
            elif definition.synonym in self.broker_defaults:
                values[name] = self.broker_defaults[definition.synonym]
            elif definition.synonym in self.static_defaults:
                values[name] = self.static_defaults[definition.synonym]
            else:
                values[name] = definition.default
        return values

    def _new_log(self, topic: TopicInfo, partition: int) -> Log:
        directory = self.dir / f"{topic.name}-{partition}"
        directory.mkdir(parents=True, exist_ok=True)
        metadata = directory / "partition.metadata"
        if not metadata.exists():
            # Not fsynced: kctl-metadata.json is the record of topic ids, this file a copy
            # for Kafka's tools, and an fsync per partition made creating 10,000 take 3 s.
            atomic_write(metadata, f"version: 0\ntopic_id: {_kafka_uuid(topic.topic_id)}\n",
                         durable=False)
        return Log(directory, topic.name, partition,
                   LogConfig.from_values(self.resolved_configs(topic)), self.clock, self.files)

    def _create_logs(self, info: TopicInfo, partitions: range) -> dict[tuple[str, int], Log]:
        """New empty logs, or none at all: a failure removes what was created."""
        created = {}
        try:
            for partition in partitions:
                plog = self._new_log(info, partition)
                created[(info.name, partition)] = plog
                plog.open(0, 0, True)
        except BaseException:
            self._remove_logs(info.name, partitions, created)
            raise
        return created

    def _remove_logs(self, name: str, partitions: range, logs: dict) -> None:
        for partition in partitions:
            plog = logs.get((name, partition))
            if plog is not None:
                plog.delete()
            shutil.rmtree(self.dir / f"{name}-{partition}", ignore_errors=True)

    def _save_or_undo(self, undo: Callable[[], None]) -> None:
        try:
            self.save_metadata()
        except BaseException:
            undo()
            raise

    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> TopicInfo:
        """Create the topic's logs, then record it; on a failure (disk full) neither stays."""
        info = TopicInfo(name, uuid.uuid4(), partitions, dict(configs))
        created = self._create_logs(info, range(partitions))
        self.topics[name] = info

        def undo():
            del self.topics[name]
            self._remove_logs(name, range(partitions), created)

        self._save_or_undo(undo)
        self.topic_ids[info.topic_id] = name
        self.logs.update(created)
        return info

    def delete_topic(self, name: str) -> None:
        info = self.topics.pop(name)
        self._save_or_undo(lambda: self.topics.__setitem__(name, info))
        self.topic_ids.pop(info.topic_id, None)
        for partition in range(info.partitions):
            plog = self.logs.pop((name, partition), None)
            if plog is not None:
                plog.delete()
            shutil.rmtree(self.dir / f"{name}-{partition}", ignore_errors=True)
        self.checkpoint()

    def add_partitions(self, name: str, total: int) -> None:
        info = self.topics[name]
        before, added = info.partitions, range(info.partitions, total)
        created = self._create_logs(info, added)
        info.partitions = total

        def undo():
            info.partitions = before
            self._remove_logs(name, added, created)

        self._save_or_undo(undo)
        self.logs.update(created)

    def set_topic_configs(self, name: str, overrides: dict[str, str]) -> None:
        info = self.topics[name]
        before, info.configs = info.configs, dict(overrides)
        self._save_or_undo(lambda: setattr(info, "configs", before))
        self._refresh_configs(info)

    def set_broker_configs(self, defaults: dict[str, str], overrides: dict[str, str]) -> None:
        before = self.broker_defaults, self.broker_overrides
        self.broker_defaults, self.broker_overrides = dict(defaults), dict(overrides)

        def undo():
            self.broker_defaults, self.broker_overrides = before

        self._save_or_undo(undo)
        for info in self.topics.values():
            self._refresh_configs(info)

    def _refresh_configs(self, info: TopicInfo) -> None:
        config = LogConfig.from_values(self.resolved_configs(info))
        for partition in range(info.partitions):
            self.logs[(info.name, partition)].config = config

    def enforce_retention(self) -> int:
        now = self.clock()
        return sum(plog.enforce_retention(now) for plog in self.logs.values())


def _random_cluster_id() -> str:
    while True:
        value = _kafka_uuid(uuid.uuid4())
        if not value.startswith("-"):
            return value


def _kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's textual UUID: URL-safe base64 without padding."""
    import base64
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def _prepare_close(plog: Log) -> OSError | None:
    try:
        plog.prepare_close()
    except OSError as exc:
        return exc
    return None
