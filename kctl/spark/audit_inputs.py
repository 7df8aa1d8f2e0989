"""What `kctl spark audit` reads, planned before Spark starts: each side of an audit is a
topic (its partitions' offset ranges, from the reader's planner) or a dump (its manifest:
the ranges it was read from and the records each partition should hold). A
`--compare-to` that names an existing directory is a dump, anything else a topic."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kctl.admin.client.session import AdminSession
from kctl.errors import NotFoundError


@dataclass(frozen=True, kw_only=True)
class AuditInput:
    name: str
    dump: Path | None  # the dump's directory; None for a topic
    manifest: dict | None  # a dump's manifest
    options: dict | None  # a topic's reader options
    bounds: list | None  # a topic's planned offset ranges
    ranges: dict[tuple[str, int], tuple[int, int]]  # offsets [start, end) per partition
    expected: dict[tuple[str, int], int] | None  # a dump's record counts, from its manifest
    compacted: set[str]  # topics whose offset gaps compaction explains

    @property
    def records(self) -> int:
        """How many records reading it should give (the progress bar's total)."""
        if self.expected:
            return sum(self.expected.values())
        return sum(end - start for start, end in self.ranges.values())


def is_dump(name: str) -> bool:
    return Path(name).is_dir()


def check_topics(session: AdminSession, topics: list[str]) -> set[str]:
    """Refuse unknown topics through kctl's admin client first (an unreachable cluster or
    an unknown topic is one line at once, before the planner's consumer and Spark start);
    returns those that are compacted."""
    if not topics:
        return set()
    metadata = session.metadata("audit " + ", ".join(topics), topics)
    for name in topics:
        if name not in metadata.topics or metadata.topics[name].error is not None:
            raise NotFoundError(action=f"audit {name}", cause=f"topic '{name}' does not exist")
    return compacted_topics(session, topics)


def compacted_topics(session: AdminSession, topics: Sequence[str]) -> set[str]:
    """Which of `topics` are compacted (their offset gaps are expected), in one request;
    a dump records them in its manifest for a later audit of the dump."""
    from kctl.admin.topics.configs import describe_configs

    found, _ = describe_configs(session, "topic", list(topics), keys=("cleanup.policy",))
    return {resource.entity_name for resource in found for c in resource.configs if c.name == "cleanup.policy" and "compact" in (c.value or "")}


def plan_input(name: str, *, dump: bool, kafka: dict[str, Any], compacted: set[str]) -> AuditInput:
    """One side of the audit: a dump's manifest read, or a topic's offset ranges planned
    (`kafka`: the client settings the reader connects with)."""
    from kctl.spark import frames
    from kctl.spark.manifest import read_dump_manifest

    if dump:
        manifest = read_dump_manifest(Path(name))
        keys = [(p["topic"], p["partition"]) for p in manifest["partitions"]]
        return AuditInput(
            name=name, dump=Path(name), manifest=manifest, options=None, bounds=None,
            ranges={k: (p["start_offset"], p["end_offset"]) for k, p in zip(keys, manifest["partitions"], strict=True)},
            expected={k: p["records"] for k, p in zip(keys, manifest["partitions"], strict=True)},
            compacted=set(manifest.get("compacted_topics", [])))
    options = frames.source_options(kafka, [name], include_headers=True)
    _, bounds = frames.plan(options, f"audit {name}")
    return AuditInput(name=name, dump=None, manifest=None, options=options, bounds=bounds,
                      ranges={(b.topic, b.partition): (b.start, b.end) for b in bounds}, expected=None, compacted=compacted & {name})


def read_input(spark, planned: AuditInput, engine: str, progress_dir: Path | None):
    """The DataFrame of one side, read by the engine `engine` picks (a topic) or from its
    files (a dump)."""
    from kctl.spark import frames

    if planned.dump is not None:
        # Absolute: Spark resolves paths against its JVM's working directory, not ours.
        return frames.load_dump(spark, planned.dump.absolute(), planned.manifest)
    options = dict(planned.options)
    chosen = frames.choose_engine(spark, engine)
    if chosen == "python" and progress_dir is not None:
        options["kctl.progressDir"] = str(progress_dir)
    return frames.load_topic(spark, chosen, options, planned.bounds)
