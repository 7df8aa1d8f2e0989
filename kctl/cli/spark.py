"""kctl spark: PySpark jobs over topic contents (dump, replay, audit, sql).

Nothing here imports pyspark at module level: `kctl spark --help` stays fast, and a
missing pyspark or Java is a one-line error when a job starts, not an import failure.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from operator import itemgetter
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeVar, overload

import click

from kctl.cli._app import App
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options, pass_app
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec

if TYPE_CHECKING:
    from typing import TypedDict, Unpack

    from kctl.errors import ExitCode
    from kctl.spark.decode import DecodePlan
    from kctl.spark.frames import Report
    from kctl.spark.session import SparkSession  # pyspark's, named where kctl.spark owns it
    from kctl.spark.sql import Plan

    class _ColumnOptions(TypedDict, total=False):
        align: str
        wide: bool

_F = TypeVar("_F", bound=Callable[..., Any])


@click.group(cls=LazyGroup)
def spark() -> None:
    """Dump, replay, audit and query (SQL) topics with PySpark.

    Jobs run on a local Spark (local[*]) by default, or on the cluster --master names;
    they need pyspark and pyarrow (pip install 'kctl[spark]') and Java 17+. Records are
    read by kctl's own `kctl_kafka` data source, or by Spark's JVM Kafka connector with
    --engine jvm --packages org.apache.spark:spark-sql-kafka-0-10_2.13:<version>.
    Shuffles get as many partitions as the input has topic partitions (at least the
    cores Spark has, at most Spark's default 200) on every master;
    --spark-conf spark.sql.shuffle.partitions=N sets them instead.
    Spark's own log goes to $XDG_STATE_HOME/kctl/spark.log (--debug shows it).
    The driver's JVM starts from a class archive in $XDG_CACHE_HOME/kctl/spark/jvm
    (~170 MB; the first command's JVM writes it as it exits; ~5 s off every start).
    """


@overload
def _spark_options(function: _F, *, engine: bool = True) -> _F: ...
@overload
def _spark_options(function: None = None, *, engine: bool = True) -> Callable[[_F], _F]: ...
def _spark_options(function: _F | None = None, *, engine: bool = True) -> _F | Callable[[_F], _F]:
    """The options every Spark command takes; engine=False for a command that always
    reads with kctl_kafka (spark sql: push-down and decoding are the reader's)."""
    decorators: list[Callable[[_F], _F]] = [
        click.option("--master", metavar="URL", help="Spark master: local[N], spark://HOST:7077, yarn, ... [default: $KCTL_SPARK_MASTER or local[*]]"),
        click.option("--spark-conf", "spark_conf", multiple=True, metavar="KEY=VALUE", help="Spark configuration property (repeatable), e.g. spark.executor.memory=4g."),
        click.option("--engine", type=click.Choice(["auto", "python", "jvm"]), default="auto", show_default=True, help="Who reads topics: kctl's kctl_kafka source (python), Spark's Kafka connector (jvm), or the connector when it is on the classpath (auto)."),
        click.option("--packages", multiple=True, metavar="COORDINATES", help="Maven packages for Spark's classpath (spark.jars.packages), e.g. the JVM Kafka connector."),
        click.option("--ship-env", is_flag=True, envvar="KCTL_SPARK_SHIP_ENV", help="On a cluster: pack this Python environment (kctl and its libraries, cached) and run the executors' Python from it, for workers without kctl installed. [env: KCTL_SPARK_SHIP_ENV]"),
    ]
    if not engine:
        del decorators[2]

    def apply(function: _F) -> _F:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply(function) if function is not None else apply


def _session_factory(app: App, master: str | None, spark_conf: Sequence[str], packages: Sequence[str], ship_env: bool, *,
                     uses_kafka: bool = True) -> Callable[[], SparkSession]:
    from kctl.spark.session import check_requirements, parse_conf, spark_session

    if uses_kafka:
        _refuse_msk_iam(app)

    conf = parse_conf(spark_conf)
    # Before touching the cluster or the output directory: a job that cannot start
    # must leave nothing behind.
    check_requirements()
    shipped = _shipped_env(app, master) if ship_env else None
    # One session per command, however many times a job asks (audit --compare-to loads
    # two inputs): setting start-up-only confs again on a running session fails.
    return functools.cache(lambda: spark_session(master, conf, packages=packages, quiet=not app.debug, shipped_env=shipped))


def _shipped_env(app: App, master: str | None) -> Path | None:
    """--ship-env: the packed environment (kctl.spark.shipenv), or None where executors
    already run this Python (local masters)."""
    from kctl.errors import ConfigError
    from kctl.spark import shipenv
    from kctl.spark.session import cache_dir, resolved_master, under_spark_submit

    if under_spark_submit():
        raise ConfigError(action="ship the environment under spark-submit", cause="its JVM has started",
                          hint="give spark-submit --archives ENV.tar.gz#env --conf spark.pyspark.python=./env/bin/python instead")
    if resolved_master(master).startswith("local"):
        app.note("--ship-env: not needed on a local master (its executors run this Python)")
        return None
    return shipenv.packed_environment(cache_dir(), app.note)


@contextlib.contextmanager
def _interruptible(what: str | None = None, how_to_go_on: str | None = None) -> Iterator[None]:
    """Ctrl-C during a job (kctl.spark.session cancels Spark's jobs): whatever the job
    raised then (KeyboardInterrupt, or the cancelled job's error) ends the command with
    exit 130 and one line saying what is left and how to go on."""
    from kctl.errors import ExitCode, KctlError
    from kctl.spark.session import INTERRUPTED

    try:
        yield
    except BaseException as exc:
        if not (isinstance(exc, KeyboardInterrupt) or INTERRUPTED.is_set()):
            raise
        # Raised as a KctlError, not KeyboardInterrupt, which click answers with a blank line.
        raise KctlError(cause=f"interrupted: {what}" if what else "interrupted", hint=how_to_go_on, exit_code=ExitCode.INTERRUPTED) from None


@contextlib.contextmanager
def _live_progress(app: App, label: str, more: Callable[[], str] | None = None) -> Iterator[Report | None]:
    """On a terminal, a live bar while the job runs (records done of the total from the
    planned offsets, bytes of keys and values when known, what `more()` adds, rate, time
    left): yields the job's `report`. Elsewhere, or with -q, None: the command's summary
    line is all."""
    if app.quiet or not app.stderr_is_tty:
        yield None
        return
    from kctl.cli._progress import progress
    from kctl.sizes import format_bytes

    def report(done: int, total: int, size: int | None) -> None:
        details = ["" if size is None else format_bytes(size), more() if more is not None else ""]
        shown.update(done, total=total, detail=", ".join(d for d in details if d))

    with progress(app, label, unit="records") as shown:
        shown.update(0, detail="starting Spark")
        yield report


@contextlib.contextmanager
def _scratch_directory(wanted: bool) -> Iterator[Path | None]:
    """A temporary directory (removed afterwards) when wanted, else None."""
    if not wanted:
        yield None
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kctl-spark-") as directory:
        yield Path(directory)


def _refuse_msk_iam(app: App) -> None:
    if app.settings.aws_msk_iam:
        from kctl.errors import ConfigError

        # Executors build their own clients from string options; a signer callback
        # cannot travel with them.
        raise ConfigError(
            action="run a Spark job with AWS MSK IAM", cause="kctl spark cannot carry MSK IAM tokens to Spark's executors",
            hint="use SASL/SCRAM or OAUTHBEARER (OIDC) for Spark jobs on MSK",
        )


def _kafka(app: App, master: str | None, engine: str = "python") -> dict[str, Any]:
    """The client settings the job's readers and writers get: librdkafka's, through the
    session's loopback bridge with Kerberos or a delegation token."""
    _refuse_msk_iam(app)
    if _bridged(app):
        from kctl.errors import ConfigError
        from kctl.spark.session import resolved_master

        # The bridge is this process's loopback: executors on this machine (a local
        # master's) reach it; a cluster's executors and the JVM connector cannot.
        if not resolved_master(master).startswith("local"):
            raise ConfigError(action="run a Spark job with Kerberos (GSSAPI) or a delegation token with a cluster master", cause="kctl's "
                              "executors authenticate so through this machine's loopback bridge", hint="use --master local[*]")
        if engine == "jvm":
            raise ConfigError(action="run a Spark job with Kerberos (GSSAPI) or a delegation token with --engine jvm", cause="kctl does "
                              "not pass these settings to Spark's Kafka connector", hint="use --engine python (the default)")
    return dict(app.session.client_config(portable=True))


def _engine(app: App, engine: str) -> str:
    """--engine auto is kctl's reader where the bridge logs in (the JVM connector gets no Kerberos or token settings)."""
    return "python" if engine == "auto" and _bridged(app) else engine


def _bridged(app: App) -> bool:
    """Whether the job's clients go through the session's loopback bridge (Kerberos, or a
    delegation token: properties.uses_bridge)."""
    from kctl.admin.client.properties import uses_bridge

    return uses_bridge(app.settings.properties, app.settings.aws_msk_iam)


def _item(key: str, title: str, **kwargs: Unpack[_ColumnOptions]) -> Column:
    return Column(key, title, get=itemgetter(key), **kwargs)


def _show(app: App, document: Mapping[str, object], spec: DocumentSpec) -> None:
    if app.out.format in ("json", "jsonl"):
        app.out.document(document, spec)
    else:
        app.out.document(SimpleNamespace(**document), spec)


def _position(text: str | None, topics: Sequence[str], flag: str) -> dict[str, str]:
    """--from/--to: earliest, latest, @TIME, or JSON offsets as the JVM connector takes them."""
    from kctl.errors import UsageError
    from kctl.timespec import parse_instant

    start = flag == "--from"
    if text is None:
        return {}
    if text in ("earliest", "latest"):
        if not start and text == "earliest":
            raise UsageError(action="parse --to earliest", cause="a dump cannot end at the log start")
        return {"startingOffsets" if start else "endingOffsets": text}
    if text.startswith("@"):
        return {"startingTimestamp" if start else "endingTimestamp": str(parse_instant(text[1:]))}
    if text.lstrip().startswith("{"):
        return {"startingOffsets" if start else "endingOffsets": text}
    if text.isdigit() and len(topics) == 1:
        raise UsageError(action=f"parse {flag} {text!r}", cause=f"give offsets per partition as JSON, e.g. '{{\"{topics[0]}\":{{\"0\":{text}}}}}', or a time as @TIME")
    raise UsageError(action=f"parse {flag} {text!r}", cause="expected earliest, latest, @TIME or JSON offsets {\"topic\":{\"0\":42}}")


DUMP_SPEC = DocumentSpec(
    fields=(
        Field("out", "OUT", get=lambda d: getattr(d, "out", None)),
        Field("format", "FORMAT"),
        Field("records", "RECORDS"),
        Field("status", "STATUS"),
        Field("engine", "ENGINE", get=lambda d: getattr(d, "engine", None)),
    ),
    sections=(
        Section(
            "partitions",
            "PARTITIONS",
            TableSpec((
                _item("topic", "TOPIC"),
                _item("partition", "PARTITION", align="right"),
                _item("start_offset", "START", align="right"),
                _item("end_offset", "END", align="right"),
                _item("records", "RECORDS", align="right"),
                _item("log_start_offset", "LOG-START", align="right", wide=True),
                _item("high_watermark", "HIGH-WATERMARK", align="right", wide=True),
            )),
        ),
    ),
)


@spark.command("dump")
@click.option("-t", "--topic", "topics", multiple=True, required=True, metavar="TOPIC", help="Topic to dump (repeatable).")
@click.option("--out", required=True, type=click.Path(file_okay=False), metavar="DIR", help="Directory to write (must not exist or be empty, unless --overwrite); on a cluster, one the executors share.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "jsonl"]), default="parquet", show_default=True, help="parquet (zstd) or jsonl (gzip, base64 keys/values plus the value as text when UTF-8).")
@click.option("--from", "start", metavar="POSITION", help="earliest, latest, @TIME, or JSON offsets {\"topic\":{\"0\":42}}. [default: earliest]")
@click.option("--to", "end", metavar="POSITION", help="latest, @TIME (first record at or after it is excluded), or JSON offsets (exclusive). [default: the log end when the dump starts]")
@click.option("--overwrite", is_flag=True, help="Replace an earlier kctl dump in --out (never a directory kctl did not write).")
@click.option("--decode", is_flag=True, help="Also decode values written with a schema registry's serializers into typed columns (value_decoded, value_schema_id, value_decode_error), typed by TOPIC-value's latest schema. One topic.")
@click.option("--registry-url", metavar="URL", help="The schema registry for --decode; default: the context's. [env: KCTL_SCHEMA_REGISTRY_URL]")
@_spark_options
@global_options
@pass_app
def dump(app: App, topics: tuple[str, ...], out: str, fmt: str, start: str | None, end: str | None, overwrite: bool, decode: bool, registry_url: str | None, master: str | None, spark_conf: tuple[str, ...], engine: str, packages: tuple[str, ...], ship_env: bool) -> None:
    """Dump topics to Parquet or JSON Lines files, one directory per partition.

    The offsets to read are fixed before the job starts (records produced meanwhile
    are left out), and written with the per-partition record counts to
    DIR/_kctl_manifest.json; DIR/_SUCCESS appears only when the files were read back and
    counted. Layout: DIR/topic=T/partition=P/part-*.parquet, readable by Spark,
    pyarrow and DuckDB. A failed dump leaves a manifest with status partial.

    --decode adds three columns for a topic whose values are Avro, Protobuf or JSON
    Schema in the registry's wire format: value_decoded, a struct typed by the subject
    TOPIC-value's latest schema (older Avro versions resolved to it; Spark's types: long
    is bigint, enum string, timestamp-millis timestamp, a union of several types JSON
    text), value_schema_id, and value_decode_error for a value that could not be
    decoded (counted in the manifest; the exit status is then 4). The value column keeps
    the bytes, so the dump still replays as it was.

    \b
    Examples:
      kctl spark dump -t orders --out /data/orders
      kctl spark dump -t orders --from @2026-11-01T00:00Z --to @2026-11-02T00:00Z \\
          --out day.jsonl --format jsonl
      kctl spark dump -t orders --from '{"orders":{"0":5}}' --out part0 --overwrite
      kctl spark dump -t clicks --master spark://spark:7077 --ship-env \\
          --spark-conf spark.executor.memory=1g --out /mnt/shared/clicks
      kctl spark dump -t invoices --decode --out invoices-typed
    """
    engine = _engine(app, engine)
    from kctl.errors import UsageError
    from kctl.spark.audit_inputs import compacted_topics
    from kctl.spark.dump import DumpRequest
    from kctl.spark.dump import dump as run_dump

    if "://" in out:
        raise UsageError(action=f"dump to {out}", cause="--out is a directory on a local or shared file system (the manifest is written there too)")
    if registry_url is not None and not decode:
        raise UsageError(action="dump", cause="--registry-url is for --decode")
    plan = None
    if decode:
        if len(topics) > 1:
            raise UsageError(action="dump with --decode", cause="one topic at a time (its columns are typed by one subject, TOPIC-value)")
        if engine == "jvm":
            raise UsageError(action="dump with --decode and --engine jvm", cause="kctl's reader decodes as it reads (--engine python)")
        from kctl.spark.decode import plan_decode

        plan = plan_decode(app.registry(registry_url), topics[0])
    factory = _session_factory(app, master, spark_conf, packages, ship_env)
    extra = _position(start, topics, "--from") | _position(end, topics, "--to")
    # Absolute: Spark resolves paths against its JVM's working directory, not ours.
    request = DumpRequest(topics=tuple(topics), out=Path(out).absolute(), format=fmt, overwrite=overwrite, engine=engine,
        extra_options=tuple(extra.items()), compacted_topics=tuple(sorted(compacted_topics(app.session, topics))), decode=plan,
    )
    with _interruptible(f"the dump in {out} is partial (its manifest says so)", "run the same command with --overwrite to dump again"), \
            _live_progress(app, "dump") as report:
        manifest = run_dump(factory, _kafka(app, master, engine), request, report)
    app.note(f"dumped {manifest['records']:,} record(s) from {len(manifest['partitions'])} partition(s) to {out}")
    _show(app, {"out": str(out), **manifest}, DUMP_SPEC)
    undecoded = manifest.get("decoded", {}).get("undecoded", 0)
    if undecoded:
        from kctl.errors import PartialFailure

        raise PartialFailure(action=f"decode {undecoded:,} value(s) of {manifest['records']:,}", cause="their bytes are in the dump, value_decode_error says why")


REPLAY_SPEC = DocumentSpec(
    fields=(
        Field("run_id", "RUN-ID"),
        Field("status", "STATUS"),
        Field("records", "RECORDS"),
        Field("skipped", "ALREADY-DELIVERED"),
        Field("manifest", "MANIFEST", get=lambda d: getattr(d, "manifest", None)),
    ),
    sections=(
        Section(
            "ranges",
            "DESTINATION",
            TableSpec((
                _item("partition", "PARTITION", align="right"),
                _item("start_offset", "START", align="right"),
                _item("end_offset", "END", align="right"),
                _item("records", "RECORDS", align="right"),
            )),
        ),
    ),
)


@spark.command("replay")
@click.option("--from-topic", metavar="TOPIC", help="Replay this topic's records.")
@click.option("--from-dump", type=click.Path(file_okay=False), metavar="DIR", help="Replay a kctl spark dump.")
@click.option("--to-topic", required=True, metavar="TOPIC", help="Destination topic (must exist).")
@click.option("--since", metavar="TIME", help="Only records with a timestamp at or after TIME (ISO-8601, epoch ms, -1h).")
@click.option("--until", metavar="TIME", help="Only records with a timestamp before TIME.")
@click.option("--partition-map", default="same", show_default=True, metavar="same|hash|modulo|FILE", help="Destination partition: the source's, Kafka's key hash (murmur2, as Java producers place keys), source modulo the destination's count, or a JSON file {\"0\": 3, ...}.")
@click.option("--timestamps", "timestamps", default="preserve", show_default=True, metavar="preserve|now|shift:±D", help="Keep the records' timestamps, stamp them now, or shift them (shift:+1d, shift:-2h).")
@click.option("--exactly-once", is_flag=True, help="Transactions per destination partition: read_committed consumers see each record once even if a task is retried.")
@click.option("--resume", is_flag=True, help="Finish the interrupted replay into --to-topic: the same plan, skipping what already arrived.")
@click.option("--manifest", "manifest_file", type=click.Path(dir_okay=False), metavar="FILE", help="Replay manifest to write (or, with --resume, to continue). [default: $XDG_STATE_HOME/kctl/replays/<to-topic>.json]")
@_spark_options
@global_options
@pass_app
def replay(app: App, from_topic: str | None, from_dump: str | None, to_topic: str, since: str | None, until: str | None, partition_map: str, timestamps: str, exactly_once: bool, resume: bool, manifest_file: str | None, master: str | None, spark_conf: tuple[str, ...], engine: str, packages: tuple[str, ...], ship_env: bool) -> None:
    """Write a topic's or a dump's records into another topic.

    Keys (null too), values (tombstones too), headers in order, timestamps and each
    source partition's order are kept; offsets are new, and the replay manifest maps
    source ranges to destination ranges. The producer is idempotent, and a retried Spark
    task skips what its partition already received, so retries do not duplicate
    records while kctl is the destination's only writer. An interrupted replay is
    finished with --resume.

    \b
    Examples:
      kctl spark replay --from-topic orders --to-topic orders-mirror
      kctl spark replay --from-dump /data/orders --to-topic orders --since 2026-11-01T00:00Z \\
          --until 2026-11-02T00:00Z
      kctl spark replay --from-topic orders --to-topic orders-12 --partition-map hash
      kctl spark replay --from-dump /data/orders --to-topic orders-test --timestamps now
      kctl spark replay --to-topic orders --resume     # finish an interrupted replay into orders
    """
    engine = _engine(app, engine)
    from kctl.errors import InvalidError, UsageError
    from kctl.spark.replay import (
        PARTITION_MAPS,
        ReplayRequest,
        check_destination,
        load_partition_map,
        parse_timestamps,
        replay_manifest_path,
    )
    from kctl.spark.replay import replay as run_replay
    from kctl.spark.replay import resumed as resumed_replay
    from kctl.timespec import parse_instant

    factory = _session_factory(app, master, spark_conf, packages, ship_env)
    manifest_path = Path(manifest_file) if manifest_file else replay_manifest_path(app.env, to_topic)
    previous = None
    if resume:
        if from_topic or from_dump or since or until or partition_map != "same" or timestamps != "preserve" or exactly_once:
            raise UsageError(action="resume", cause="the plan comes from the replay manifest; give only --to-topic (and --manifest)")
        previous, request = resumed_replay(manifest_path, to_topic)
    else:
        if (from_topic is None) == (from_dump is None):
            raise UsageError(action="replay", cause="give exactly one of --from-topic and --from-dump")
        explicit = {}
        if partition_map not in PARTITION_MAPS:
            explicit = load_partition_map(partition_map)
        request = ReplayRequest(
            to_topic=to_topic, from_topic=from_topic, from_dump=str(Path(from_dump).resolve()) if from_dump else None,
            since_ms=parse_instant(since) if since else None, until_ms=parse_instant(until) if until else None,
            partition_map=partition_map if partition_map in PARTITION_MAPS else "file",
            timestamps=parse_timestamps(timestamps), exactly_once=exactly_once, engine=engine, explicit_map=explicit,
        )
        if request.since_ms is not None and request.until_ms is not None and request.since_ms >= request.until_ms:
            raise UsageError(action="replay", cause="--since must be before --until")
        if from_topic is not None and from_topic == to_topic:
            raise InvalidError(action=f"replay {from_topic}", cause="the topic to replay into is the one replayed")
    # Before Spark starts: an unreachable cluster or a missing destination is one line at
    # once (the replay checks the destination again against its source's partitions).
    check_destination(_partition_counts(app, to_topic), request, [])
    manifest_path.parent.mkdir(parents=True, exist_ok=True)
    manifest_option = f" --manifest {manifest_file}" if manifest_file else ""
    with _interruptible(f"the replay into {to_topic} is partial (manifest {manifest_path})",
                        f"kctl spark replay --to-topic {to_topic}{manifest_option} --resume finishes it"), \
            _live_progress(app, "replay") as report:
        manifest = run_replay(
            factory, _kafka(app, master, engine), request,
            destination_partitions=lambda topic: _partition_counts(app, topic),
            high_watermarks=lambda topic, count: _high_watermarks(app, topic, count),
            manifest_path=manifest_path, resume_from=previous, report=report,
        )
    resumed = f" ({manifest['skipped']:,} already there)" if manifest.get("skipped") else ""
    app.note(f"replayed {manifest['records']:,} record(s) into {to_topic}{resumed}; manifest {manifest_path}")
    _show(app, {**manifest, "manifest": str(manifest_path), "ranges": manifest["destination"]["ranges"]}, REPLAY_SPEC)


def _partition_counts(app: App, topic: str) -> dict[str, int]:
    metadata = app.session.metadata(f"describe {topic}", [topic])
    found = metadata.topics.get(topic)
    if found is None or found.error is not None:
        return {}
    return {topic: len(found.partitions)}


def _high_watermarks(app: App, topic: str, count: int) -> dict[int, int]:
    from kctl.admin.topics.offsets import list_offsets

    return {row.partition: row.latest for row in list_offsets(app.session, [(topic, p) for p in range(count)])}


AUDIT_TABLE = TableSpec((
    Column("topic", "TOPIC"),
    Column("partition", "PARTITION", align="right"),
    Column("records", "RECORDS", align="right"),
    Column("first_offset", "FIRST", align="right"),
    Column("last_offset", "LAST", align="right"),
    Column("gaps", "GAPS", align="right"),
    Column("holes", "HOLES", align="right"),
    Column("timestamp_regressions", "TS-REGRESSIONS", align="right"),
    Column("null_keys", "NULL-KEYS", align="right"),
    Column("tombstones", "TOMBSTONES", align="right"),
    Column("duplicates", "DUPLICATES", align="right"),
    Column("invalid_json", "INVALID-JSON", align="right", wide=True),
    Column("schema_mismatches", "SCHEMA-MISMATCHES", align="right", wide=True),
    Column("missing_offsets", "MISSING-OFFSETS", align="right", wide=True),
    Column("largest_regression_ms", "LARGEST-REGRESSION-MS", align="right", wide=True),
))


@spark.command("audit")
@click.option("-t", "--topic", metavar="TOPIC", help="Audit this topic.")
@click.option("--dump", "dump_dir", type=click.Path(file_okay=False), metavar="DIR", help="Audit a kctl spark dump (its files are also checked against its manifest).")
@click.option("--compare-to", metavar="TOPIC|DIR", help="Compare with another topic or dump (a directory that exists is a dump): records on one side only are counted and sampled.")
@click.option("--json", "check_json", is_flag=True, help="Check that every non-null value is JSON.")
@click.option("--json-schema", "schema_file", type=click.Path(dir_okay=False), metavar="FILE", help="Check that every non-null value matches this JSON Schema (any draft, by its $schema; the newest without one).")
@click.option("--key-path", metavar="JSONPATH", help="Find duplicates by this field of JSON values ($.id) instead of by whole records.")
@_spark_options
@global_options
@pass_app
def audit(app: App, topic: str | None, dump_dir: str | None, compare_to: str | None, check_json: bool, schema_file: str | None, key_path: str | None, master: str | None, spark_conf: tuple[str, ...], engine: str, packages: tuple[str, ...], ship_env: bool) -> ExitCode:
    """Check a topic's or a dump's records: counts, gaps, order, nulls, duplicates.

    Per partition: records, offset range, gaps (compaction and transaction markers
    leave expected gaps; a HOLE is a gap neither explains), timestamp regressions, null
    keys, tombstones and duplicates. Exit status 0 when no problem was found, 2 when
    one was (holes, duplicates, invalid JSON, values not matching --json-schema, records missing or extra against
    --compare-to, a dump that disagrees with its manifest); -o json gives the report.

    \b
    Examples:
      kctl spark audit -t orders
      kctl spark audit --dump /data/orders --json --key-path '$.order_id'
      kctl spark audit -t orders --json-schema order.schema.json
      kctl spark audit -t orders --compare-to orders-mirror
      kctl spark audit --dump /data/orders --compare-to orders-copy -o json
    """
    engine = _engine(app, engine)
    from kctl.errors import ExitCode, KctlError, UsageError
    from kctl.spark import frames
    from kctl.spark.audit import audit as run_audit
    from kctl.spark.audit_inputs import check_topics, is_dump, plan_input, read_input
    from kctl.spark.session import size_shuffles

    first = dump_dir if dump_dir is not None else topic
    if first is None or (topic is not None and dump_dir is not None):
        raise UsageError(action="audit", cause="give exactly one of --topic and --dump")
    factory = _session_factory(app, master, spark_conf, packages, ship_env, uses_kafka=topic is not None or compare_to is not None)
    json_schema = _json_schema(schema_file) if schema_file else None
    sides = [(first, dump_dir is not None)] + ([(compare_to, is_dump(compare_to))] if compare_to is not None else [])
    compacted = check_topics(app.session, [name for name, dump in sides if not dump])
    kafka = _kafka(app, master, engine) if any(not dump for _name, dump in sides) else {}
    source = f"dump {dump_dir}" if dump_dir else first
    with _interruptible(), _live_progress(app, "audit") as progress_report, _scratch_directory(progress_report is not None) as progress_dir:
        planned = [plan_input(name, dump=dump, kafka=kafka, compacted=compacted) for name, dump in sides]
        read = [read_input(factory(), side, engine, progress_dir) for side in planned]
        size_shuffles(factory(), max(len(side.ranges) for side in planned))
        main, other = planned[0], (read[1] if len(read) > 1 else None)
        try:
            # The audit reads each input once (kctl.spark.audit caches what it reads).
            with frames.Progress(factory(), sum(side.records for side in planned), progress_report, directory=progress_dir):
                report = run_audit(read[0], source, compacted=main.compacted, key_path=key_path, check_json=check_json,
                                   json_schema=json_schema, ranges=main.ranges, expected=main.expected, compare_to=other,
                                   compare_name=compare_to)
        except KctlError:
            raise
        except Exception as exc:  # a Spark job failed: one line, not the JVM's stack
            raise frames.spark_failure(exc, f"audit {source}") from exc
    if app.out.format in ("json", "jsonl"):
        from dataclasses import asdict

        app.out.document({**asdict(report), "ok": report.ok}, DocumentSpec())
    else:
        app.out.table(report.partitions, AUDIT_TABLE)
        if report.comparison is not None:
            c = report.comparison
            app.note(f"compared with {c.other}: {c.records:,} vs {c.other_records:,} record(s), {c.missing:,} missing there, {c.extra:,} extra there")
    for problem in report.problems:
        app.warn(problem)
    if report.ok:
        app.note(f"audit of {source}: {report.records:,} record(s), no problems found")
    else:
        app.note(f"audit of {source}: {len(report.problems)} problem(s) found")
        return ExitCode.CRITICAL
    return ExitCode.OK


def _json_schema(path: str) -> object:
    from kctl.errors import InvalidError
    from kctl.spark.audit import load_json_schema

    try:
        return load_json_schema(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidError(action=f"read --json-schema {path}", cause=exc.strerror or str(exc)) from None
    except UnicodeDecodeError as exc:
        raise InvalidError(action=f"use --json-schema {path}", cause=str(exc)) from None
    except InvalidError as exc:
        raise exc.but(action=f"use --json-schema {path}") from None


SQL_PLAN_SPEC = DocumentSpec(
    fields=(
        Field("records", "RECORDS-TO-READ"),
        Field("available", "RECORDS-IN-TOPICS"),
        Field("max_records", "MAX-RECORDS", get=lambda d: getattr(d, "max_records", None)),
    ),
    sections=(
        Section(
            "partitions",
            "READS",
            TableSpec((
                _item("table", "TABLE"),
                _item("partition", "PARTITION", align="right"),
                _item("start_offset", "START", align="right"),
                _item("end_offset", "END", align="right"),
                _item("records", "RECORDS", align="right"),
                _item("pushed", "PUSHED-DOWN"),
                _item("log_start_offset", "LOG-START", align="right", wide=True),
                _item("high_watermark", "HIGH-WATERMARK", align="right", wide=True),
            )),
        ),
    ),
)


def _sql_positions(values: Sequence[str], flag: str) -> dict[str, dict[str, str]]:
    """--from/--to: POSITION for every topic ("" below), or TOPIC=POSITION for one."""
    from kctl.errors import UsageError

    positions: dict[str, dict[str, str]] = {}
    for value in values:
        topic, position = "", value
        if not value.startswith(("@", "{")) and value not in ("earliest", "latest") and "=" in value:
            topic, _, position = value.partition("=")
            if not topic:
                raise UsageError(action=f"parse {flag} {value!r}", cause="expected POSITION or TOPIC=POSITION")
        positions.setdefault(topic, {}).update(_position(position, [topic] if topic else [], flag))
    return positions


def _query_text(query: str, app: App) -> str:
    """QUERY, or what stdin holds for `-`."""
    return app.stdin.read() if query == "-" else query


def _sql_rows(columns: Sequence[str], rows: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """Result rows for kctl's output: nested values as JSON text in tables, binary as
    UTF-8 text when it is (base64 otherwise); JSON output keeps structures and base64."""
    import datetime as dt
    from decimal import Decimal

    def plain(value: object) -> object:
        if isinstance(value, Decimal):
            return float(value)
        if isinstance(value, dt.datetime):
            return value.isoformat().replace("+00:00", "Z")
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return [{c: plain(row[c]) for c in columns} for row in rows]


def _sql_getter(column: str) -> Callable[[Mapping[str, object]], object]:
    return lambda row: _sql_cell(row[column])


def _sql_cell(value: object) -> object:
    import base64

    from kctl.output.render import dumps

    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict | list):
        return dumps(value)
    return value


@spark.command("sql")
@click.argument("query", metavar="QUERY")
@click.option("--from", "starts", multiple=True, metavar="[TOPIC=]POSITION", help="Read topics (or TOPIC) from earliest, latest, @TIME or JSON offsets; the query's own bounds narrow it further (repeatable).")
@click.option("--to", "ends", multiple=True, metavar="[TOPIC=]POSITION", help="Read topics (or TOPIC) up to latest, @TIME or JSON offsets (exclusive) (repeatable). [default: the log end when planned]")
@click.option("--decode", is_flag=True, help="A value_decoded column, typed by the registry's TOPIC-value subject, for each topic that has one (Avro, Protobuf, JSON Schema in the registry's wire format).")
@click.option("--registry-url", metavar="URL", help="The schema registry for --decode; default: the context's. [env: KCTL_SCHEMA_REGISTRY_URL]")
@click.option("--value-format", type=click.Choice(["bytes", "json"]), default="bytes", show_default=True, help="json: a value_decoded column parsed from JSON values (topics --decode does not type), by --schema or a schema inferred from the newest 1,000 values.")
@click.option("--schema", "json_schema", metavar="DDL", help="The JSON values' columns as Spark DDL, e.g. 'id BIGINT, customer STRING, total DOUBLE' (with --value-format json).")
@click.option("--explain", is_flag=True, help="Show what the query would read (tables, partitions, offset ranges, records, predicates pushed down) and read nothing.")
@click.option("--max-records", type=click.IntRange(min=0), default=10_000_000, show_default=True, metavar="N", help="Refuse a query whose ranges hold more than N records of topics (exit 7; a LIMIT may stop sooner, the ranges count whole); 0: no bound.")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Print at most N rows.")
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR", help="Write the whole result to DIR (Spark part files) instead of printing it; on a cluster, a directory the executors share.")
@click.option("--format", "out_format", type=click.Choice(["parquet", "csv", "jsonl"]), default="parquet", show_default=True, help="File format for --out.")
@click.option("--overwrite", is_flag=True, help="Replace an earlier kctl spark sql result in --out (never a directory kctl did not write).")
@_spark_options(engine=False)
@global_options
@pass_app
def sql(app: App, query: str, starts: tuple[str, ...], ends: tuple[str, ...], decode: bool, registry_url: str | None, value_format: str, json_schema: str | None, explain: bool, max_records: int, limit: int | None, out: str | None, out_format: str, overwrite: bool, master: str | None, spark_conf: tuple[str, ...], packages: tuple[str, ...], ship_env: bool) -> None:
    """Query topics with SQL: every topic is a table, time bounds read only that time.

    Each topic the query names is a table with a dump's columns: key and value (binary;
    CAST(value AS STRING) for text), topic, partition, offset, timestamp, timestampType
    (0 CreateTime, 1 LogAppendTime) and headers (an array of key/value structs). Quote
    names with dots or dashes in backquotes: `orders.v2`. A kctl spark dump is a table
    too: dump.DIR (dump.`/data/orders` for a path). Joins, unions, subqueries, window
    functions and Spark's built-in functions all work; the query only reads
    (INSERT, CREATE and every other statement are refused: kctl spark replay writes).

    Predicates on partition, offset and timestamp (=, <, <=, >, >=, BETWEEN, IN,
    now() - INTERVAL ...) become each topic's read ranges: a start time is looked up by
    ListOffsets, so a query over the last hour of a topic holding a week reads that hour.
    An end time ends a partition at its first record at or after it (records written
    later with an earlier CreateTime are not read). --explain shows the ranges;
    --max-records refuses a larger read before it starts.

    Results print in kctl's formats (-o table|plain|json|jsonl|csv; binary is text
    when UTF-8 and base64 otherwise, base64 always in JSON), or go whole to --out as
    Parquet, CSV or JSON Lines part files with _kctl_sql.json and _SUCCESS written last.
    stderr gets the rows, the records read and those in the topics. Exit status: 0;
    64 for a query Spark refuses (its message and where); 5 for an unknown topic or dump;
    7 when --max-records refuses; 130 on Ctrl-C.

    \b
    Examples:
      kctl spark sql 'SELECT count(*) AS n FROM orders WHERE timestamp >= now() - INTERVAL 1 HOUR'
      kctl spark sql --limit 3 \\
          'SELECT partition, count(*) AS n, max(offset) FROM orders GROUP BY 1 ORDER BY 2 DESC, 1'
      kctl spark sql --limit 3 -o jsonl \\
          'SELECT string(o.key) AS k FROM orders o LEFT ANTI JOIN payments p USING (key) ORDER BY 1'
      kctl spark sql --value-format json \\
          'SELECT value_decoded.status, count(*) AS n FROM orders GROUP BY 1 ORDER BY 1'
      kctl spark sql --decode --out big --format csv \\
          'SELECT value_decoded.* FROM invoices WHERE value_decoded.cents > 1002'
      kctl spark sql 'SELECT * FROM orders WHERE partition = 0 AND offset >= 5' --explain
      kctl spark sql \\
          'SELECT count(*) AS n FROM dump.`/data/orders` JOIN orders USING (partition, offset)'
    """
    from kctl.spark import sql as job

    positions = _sql_positions(starts, "--from")
    for topic, options in _sql_positions(ends, "--to").items():
        positions.setdefault(topic, {}).update(options)
    request = job.SqlRequest(
        query=_query_text(query, app), positions=positions, decode=decode, registry_url=registry_url, value_format=value_format,
        json_schema=json_schema, max_records=max_records or None, limit=limit, explain=explain, out=out, out_format=out_format,
        overwrite=overwrite,
    )
    kafka = _kafka(app, master)
    # Asked when the query names its first topic: a query of dumps alone needs no cluster.
    known = functools.cache(lambda: app.session.metadata("run the query"))
    registry = functools.cache(lambda: app.registry(registry_url))

    def topic_exists(topic: str) -> bool:
        if topic in known().topics and known().topics[topic].error is None:
            return True
        metadata = app.session.metadata(f"read {topic}", [topic])
        return topic in metadata.topics and metadata.topics[topic].error is None

    def decode_plan(topic: str) -> DecodePlan | None:
        from kctl.errors import NotFoundError
        from kctl.spark.decode import plan_decode

        try:
            return plan_decode(registry(), topic)
        except NotFoundError:
            app.note(f"{topic}: the schema registry has no subject {topic}-value; its values are not decoded")
            return None

    with _interruptible(f"the result in {out} is partial (its {job.SQL_MANIFEST} says so)" if out else None,
                        "run the same command with --overwrite" if out else None):
        result = job.run(request, _session_factory(app, master, spark_conf, packages, ship_env), kafka=kafka,
                         topic_exists=topic_exists, decode_plan=decode_plan, note=app.note,
                         progress=lambda more: _live_progress(app, "sql", more))
    if explain:
        _show_sql_plan(app, result.plan, max_records)
        return
    if out is None:
        rows = _sql_rows(result.columns, result.rows)
        if app.out.format in ("json", "jsonl"):
            app.out.table(rows, TableSpec([Column(c, c) for c in result.columns]))
        else:
            app.out.table(rows, TableSpec([Column(c, c, get=_sql_getter(c)) for c in result.columns]))
    read_text = f"{result.read:,}" if result.read is not None else "an unknown number of"
    where = f" to {out}" if out is not None else ""
    app.note(f"{result.row_count:,} row(s){where}; read {read_text} of {result.plan.available:,} record(s) in "
             f"{len(result.plan.scans)} topic scan(s)")


def _show_sql_plan(app: App, plan: Plan, max_records: int) -> None:
    partitions = [
        {"table": scan.table, "pushed": " AND ".join(scan.pushed) or None, **p, "records": p["end_offset"] - p["start_offset"]}
        for scan in plan.scans for p in scan.partitions
    ]
    document = {"records": plan.records, "available": plan.available, "max_records": max_records or None, "partitions": partitions,
                "dumps": [{"directory": d, "records": n} for d, n in plan.dumps.items()]}
    _show(app, document, SQL_PLAN_SPEC)
    for directory, records in plan.dumps.items():
        app.note(f"dump {directory}: {records:,} record(s), read by Spark's own reader")
