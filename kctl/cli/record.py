"""kctl record: records in topics."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from kctl.cli._app import App
from kctl.cli._batch import report
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import BytesRegexType, global_options, pass_app, runs, yes_option
from kctl.cli._progress import moving, progress, stop_on_signals
from kctl.output.spec import Column, DocumentSpec, Field, TableSpec

if TYPE_CHECKING:
    import threading
    from collections.abc import Callable, Iterable, Sequence
    from typing import Protocol, TextIO

    from kctl.admin.topics.offsets import PartitionSelector
    from kctl.records.copy import CopyReport
    from kctl.records.model import ConsumedRecord
    from kctl.records.output import RecordWriter
    from kctl.records.position import Position
    from kctl.records.redrive import RedriveOptions, RedriveReport
    from kctl.records.serdes import RecordDecoder
    from kctl.records.share import ShareRecord

    class WherePredicate(Protocol):
        """compile_where's predicate: it counts the records the expression failed on."""

        errors: int
        first_error: str | None

        def __call__(self, record: ConsumedRecord) -> bool: ...

DELETE_TABLE = TableSpec(
    (
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("log_start_offset", "LOG-START-OFFSET", align="right"),
        Column("log_end_offset", "LOG-END-OFFSET", align="right"),
        Column("delete_before", "DELETE-BEFORE", align="right"),
        Column("records_deleted", "RECORDS-DELETED", align="right"),
        Column("status", "STATUS"),
        Column("low_watermark", "LOW-WATERMARK", align="right", wide=True),
        Column("error", "ERROR", wide=True),
    )
)


@click.group(cls=LazyGroup)
def record() -> None:
    """Produce, consume, copy, redrive and delete records."""


COMPRESSION = click.Choice(["none", "gzip", "snappy", "lz4", "zstd"])


def _escaped(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    from kctl.records.model import unescape

    return None if value is None else unescape(value)


def _header_pairs(values: Iterable[str], *, value_required: bool) -> list[tuple[str, str | None]]:
    from kctl.cli.writes.record import header_pairs

    try:
        return header_pairs(values, value_required=value_required)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'-H' / '--header'") from None


@record.command("produce")
@click.argument("topic")
@click.option("--file", "path", type=click.Path(dir_okay=False, allow_dash=True), default="-", show_default="stdin", help="Read records from this file.")
@click.option("--format", "template", metavar="TEMPLATE", help="How each input record splits into fields: %k key, %v value, %p partition, %T timestamp, %h headers (k=v,...); %k{base64}, %v{hex} decode.")
@click.option("-K", "--key-separator", callback=_escaped, metavar="SEP", help="Each record is KEY SEP VALUE (same as --format '%k<SEP>%v').")
@click.option("--input", "input_format", type=click.Choice(["text", "jsonl"]), default="text", show_default=True, help="jsonl: one JSON object per record, as consume -o jsonl writes them.")
@click.option("-D", "--delimiter", callback=_escaped, default="\\n", show_default=True, metavar="SEP", help="What separates input records (\\0 for NUL-separated input).")
@click.option("-k", "--key", metavar="KEY", help="Key for every record that has none.")
@click.option("-H", "--header", "headers", multiple=True, metavar="KEY=VALUE", help="Header added to every record (repeatable).")
@click.option("-p", "--partition", type=click.IntRange(min=0), help="Write every record to this partition (default: the partitioner chooses by key).")
@click.option("--partitioner", type=click.Choice(["murmur2", "consistent"]), default="murmur2", show_default=True,
              help="Where keyed records go: murmur2 as Kafka's Java producers, or consistent (CRC-32) as librdkafka's default.")
@click.option("--timestamp", metavar="TIME", help="CreateTime for every record without one (ISO-8601, epoch ms, -1h); default now.")
@click.option("--null-marker", metavar="TEXT", help="A value (or key) equal to TEXT is sent as null: a tombstone. --null-marker '' makes empty lines tombstones.")
@click.option("-z", "--compression", type=COMPRESSION, default="none", show_default=True, help="Compression codec for record batches.")
@click.option("--acks", type=click.Choice(["all", "-1", "1", "0"]), default="all", show_default=True, help="Acknowledgements to wait for.")
@click.option("--idempotent/--no-idempotent", default=None, help="Idempotent producer: no duplicates on retry. [default: on with --acks all]")
@click.option("--skip-invalid", is_flag=True, help="Skip input records that cannot be read (warned on stderr) instead of stopping.")
@click.option("--keep-partitions", is_flag=True, help="--input jsonl: write each record to the partition its line names (checked for the whole input before anything is written). [default: partition by key]")
@click.option("--allow-auto-topic-creation", is_flag=True, help="Let the broker create a missing TOPIC (if its auto.create.topics.enable allows) instead of refusing.")
@click.option("--value-schema", metavar="SUBJECT[:VERSION|latest]", help="Values are JSON, written as this registered schema (Avro, Protobuf or JSON Schema) in the registry's wire format; each is checked first.")
@click.option("--value-schema-file", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE", help="The same with a schema file (.avsc, .proto without imports, .json), registered first under the subject --subject-strategy names when the registry lacks it.")
@click.option("--value-message", metavar="NAME", help="Protobuf: the message type values are written as (full or bare name). [default: the schema's first message]")
@click.option("--subject-strategy", type=click.Choice(["topic", "record", "topic-record"]), default="topic", show_default=True, help="--value-schema-file's subject: TOPIC-value, the record's full name, or TOPIC-FULLNAME.")
@click.option("--registry-url", metavar="URL", help="The schema registry; default: the context's. [env: KCTL_SCHEMA_REGISTRY_URL]")
@global_options
@runs("kctl.cli.writes.record:produce")
def produce() -> None:
    """Write records to TOPIC from stdin or a file, one per line.

    Each line is a value unless --key-separator, --format or --input jsonl says how to
    read keys, partitions, timestamps and headers. A keyed record goes to the partition
    Kafka's Java producers would choose (murmur2 of the key; --partitioner consistent
    for librdkafka's default, CRC-32), a record without a key to any. JSON lines (what
    consume -o jsonl writes) are partitioned by key like any produced record, so a copy
    fits a topic of any partition count; --keep-partitions keeps each line's partition
    instead. A
    missing TOPIC is an error unless --allow-auto-topic-creation. The count of records
    written goes to stderr (or stdout with -o json). Every record is acknowledged
    before kctl exits 0; if any is not, the error says how many were written and where
    the input stopped. A line that cannot be read stops the input there (records before
    it are written) unless --skip-invalid.

    With the default --acks all the producer is idempotent: a record whose answer was
    lost (a dropped connection, a broker restart) is sent again and still written once.
    An input of up to 64 KiB that has ended when kctl starts (echo x | kctl ...) is
    sent by kctl's own producer, which asks for its producer id at once; a longer or
    ongoing input, --acks 0/1, --compression or a librdkafka-only -X property goes
    through librdkafka, record by record as it arrives.

    With --value-schema or --value-schema-file each value is a JSON document, checked
    against the schema (a bad one names its line and field, and nothing is written for
    it) and written as Confluent's serializers write it (magic byte, schema id, Avro,
    Protobuf or JSON): what their deserializers and consume --value-format read.
    Protobuf values are JSON in Protobuf's JSON mapping (int64 as a number or a
    string); the .proto is compiled by protoc (grpcio-tools), references included.

    \b
    Examples:
      echo 'hello' | kctl record produce greetings
      kctl record produce orders -K : --file orders.txt          # key:value lines
      kctl record produce orders --format '%k\\t%v{base64}' -z zstd < dump.tsv
      kctl record produce users -k user-42 --null-marker '' <<< ''   # tombstone for user-42
      kctl record consume orders -o jsonl | kctl record produce orders-copy --input jsonl
      kctl record consume orders -o jsonl | \\
          kctl record produce orders-mirror --input jsonl --keep-partitions
      seq 10 | kctl record produce new-topic --allow-auto-topic-creation
      seq 1000000 | kctl record produce load-test --acks 1
      echo '{"invoice_id":"inv-9","cents":1250}' | \\
          kctl record produce invoices --value-schema invoices-value
      kctl record produce invoices -K : --value-schema-file invoice.avsc --file invoices.txt
      echo '{"cents":"250","currency":"EUR"}' | \\
          kctl record produce prices --value-schema-file money.proto
    """


@record.command("consume")
@click.argument("selectors", nargs=-1, required=True, metavar="TOPIC[:PARTITIONS]...")
@click.option("--from", "start", metavar="POSITION", help="earliest, latest, committed, OFFSET, -N (last N per partition), @TIME (@2026-11-22T10:00Z, @-1h). [default: earliest; committed with --group]")
@click.option("--to", "end", metavar="POSITION", help="Stop before OFFSET or @TIME, or at the end. [default: end, the log end when consuming starts]")
@click.option("-p", "--partition", "partitions", multiple=True, type=click.IntRange(min=0), help="Only this partition of every topic (repeatable).")
@click.option("-n", "--max-records", type=click.IntRange(min=1), help="Stop after this many records (after filters).")
@click.option("-f", "--follow", is_flag=True, help="Keep waiting for new records at the end (Ctrl-C stops, exit 0).")
@click.option("-g", "--group", metavar="GROUP", help="Consume as a member of GROUP: share its partitions, start from its committed offsets, commit progress.")
@click.option("--commit/--no-commit", default=True, show_default=True, help="With --group: commit the offsets of records written.")
@click.option("--share-group", metavar="GROUP", help="Consume as a member of share group GROUP (KIP-932, Kafka 4.2+): records are acquired, written and acknowledged; members split them.")
@click.option("--ack", type=click.Choice(["accept", "release", "reject"]), default="accept", show_default=True, help="With --share-group: how records written are acknowledged (release: delivered again; reject: never again).")
@click.option("--release-where", metavar="EXPR", help="With --share-group: release the records for which the CEL expression EXPR is true (as --where).")
@click.option("--reject-where", metavar="EXPR", help="With --share-group: reject the records for which the CEL expression EXPR is true (before --release-where).")
@click.option("--isolation", type=click.Choice(["read_uncommitted", "read_committed"]), default="read_uncommitted", show_default=True, help="read_committed hides records of aborted transactions and stops at the last stable offset.")
@click.option("--key", "key_filter", metavar="KEY", help="Only records whose key is exactly KEY, read from the partition --partitioner maps it to.")
@click.option("--partitioner", type=click.Choice(["murmur2", "consistent", "all"]), default="murmur2", show_default=True,
              help="With --key: the partition to read is murmur2's (Java producers, kctl), consistent's (librdkafka's default), or all of them.")
@click.option("--grep", type=BytesRegexType(), metavar="REGEX", help="Only records whose value matches REGEX.")
@click.option("--where", "where", metavar="EXPR", help="Only records for which the CEL expression EXPR is true, over key, value (JSON fields), headers, timestamp, partition, offset, topic.")
@click.option("-H", "--header", "headers", multiple=True, metavar="KEY[=VALUE]", help="Only records with this header (and value); repeatable, all must match.")
@click.option("--format", "template", metavar="TEMPLATE", help="Output per record: %t topic %p partition %o offset %k key %v value %h headers %T timestamp ms %d ISO time %K/%S key/value size; %v{hex} %k{base64}; \\n \\t. [default: '%v\\n']")
@click.option("--value-format", type=click.Choice(["auto", "avro", "json-schema", "protobuf"]), help="Decode values written with a schema registry's serializers (magic byte, schema id) as JSON; auto: whichever schema type the id has, bytes when a value has none.")
@click.option("--key-format", type=click.Choice(["auto", "avro", "json-schema", "protobuf"]), help="The same for keys.")
@click.option("--registry-url", metavar="URL", help="The schema registry for --value-format/--key-format; default: the context's. [env: KCTL_SCHEMA_REGISTRY_URL]")
@global_options
@pass_app
def consume(app: App, selectors: tuple[str, ...], start: str | None, end: str | None, partitions: tuple[int, ...], max_records: int | None, follow: bool, group: str | None, commit: bool,
            share_group: str | None, ack: str, release_where: str | None, reject_where: str | None, isolation: str, key_filter: str | None, partitioner: str, grep: re.Pattern[bytes] | None, where: str | None,
            headers: tuple[str, ...], template: str | None, value_format: str | None, key_format: str | None,
            registry_url: str | None) -> None:
    """Read records from topics and write them to stdout.

    Reads every partition from --from (the earliest offset, or the group's committed
    offsets with --group) to the log end as it was when consuming started, then exits;
    --follow keeps waiting for new records. Output is each value on a line, a --format
    template, or JSON envelopes with -o json|jsonl (keys and values that are not UTF-8
    are base64, marked in key_encoding/value_encoding). Output streams as records
    arrive; a closed pipe (| head) stops consuming quietly, and with --group only the
    records written are committed.

    --value-format and --key-format decode records written by a schema registry's
    serializers (Avro, Protobuf, JSON Schema) into JSON: in envelopes the value is the
    decoded object, value_encoding says avro, protobuf or json-schema, and
    value_schema_id and value_subject name its schema; templates get the compact JSON
    text. Protobuf is shown in Protobuf's JSON mapping with the .proto's field names
    and default values included (int64 as strings), its schema compiled by protoc. A record that
    cannot be decoded is written as bytes with a warning, and the exit status is 4.

    --share-group consumes as a member of a share group (Kafka's queues): the records
    the group hands this member are written and acknowledged as --ack says (accept by
    default), or rejected or released where --reject-where or --release-where is true;
    -o json|jsonl adds each record's delivery_count and acknowledgement. Members of one
    share group split the records; one released is delivered again (its count one
    higher), one rejected never. Without --follow it stops once nothing more comes for
    a few seconds; -n stops after N records. Records acquired and not written (beyond
    -n, or at Ctrl-C) are released when it leaves. The group starts at the log end
    unless its share.auto.offset.reset is earliest (kctl config alter group GROUP --set
    share.auto.offset.reset=earliest).

    --where selects records with a CEL expression (Common Expression Language, as
    kafbat UI's filters): `key` and `timestamp` (epoch ms), `value` (its JSON parsed:
    value.amount > 400; else its text), `headers` (headers["source"] == "web"),
    `partition`, `offset`, `topic`; && || ! and functions such as startsWith, contains,
    matches, size. A record the expression fails on (a missing field, another type) does
    not match, and is counted on stderr. A syntax error is one line with its column,
    exit 64. --key reads only the partition the key maps to (Java's murmur2, as kctl
    produces; --partitioner consistent for librdkafka's default, all for every
    partition), and says which; named partitions are read as given.

    \b
    Examples:
      kctl record consume orders
      kctl record consume orders:0 --from -10 --format '%p:%o %k=%v\\n'
      kctl record consume orders --from @-1h --to @-30m -o jsonl
      kctl record consume orders --grep 'status":"failed' -n 5
      kctl record consume payments --where 'value.payment >= 25' -o jsonl
      kctl record consume payments --key p-7 --format '%p:%o %v\\n'
      kctl record consume orders --group audit --follow   # Ctrl-C stops it (exit 0)
      kctl record consume orders --share-group workers --reject-where 'value.status == "failed"'
      kctl record consume blobs --format '%k{base64}\\t%v{base64}\\n' > blobs.tsv
      kctl record consume invoices --value-format auto -o jsonl
      kctl record consume invoices --value-format avro --format '%o %v\\n' -n 3
    """
    from kctl.admin.topics.offsets import PartitionSelector, parse_selector
    from kctl.errors import UsageError
    from kctl.records import filters
    from kctl.records.consume import ConsumeOptions
    from kctl.records.consume import consume as consume_records
    from kctl.records.position import (
        COMMITTED,
        EARLIEST,
        Position,
        parse_from,
        parse_to,
    )

    if share_group is not None:
        _consume_share(app, selectors, share_group, ack, release_where, reject_where, max_records=max_records, follow=follow,
                       template=template, others={"--group": group, "--from": start, "--to": end, "--partition": partitions,
                                                  "--key": key_filter, "--grep": grep, "--where": where, "--header": headers,
                                                  "--value-format": value_format, "--key-format": key_format,
                                                  "--isolation": None if isolation == "read_uncommitted" else isolation})
        return
    for flag, given in (("--ack", ack != "accept"), ("--release-where", release_where), ("--reject-where", reject_where)):
        if given:
            raise UsageError(action="consume", cause=f"{flag} is for --share-group")
    parsed = [parse_selector(s) for s in selectors]
    if partitions:
        if any(s.ranges for s in parsed):
            raise UsageError(action="consume", cause="give partitions either as TOPIC:PARTITIONS or with --partition, not both")
        parsed = [PartitionSelector(topic=s.topic, ranges=tuple((p, p) for p in sorted(set(partitions)))) for s in parsed]
    start_at = parse_from(start) if start is not None else Position(COMMITTED if group else EARLIEST)
    end_at: Position | None
    if end is not None:
        end_at = parse_to(end)
    else:
        end_at = None if follow else parse_to("end")
    decoder = _decoder(app, registry_url, key_format=key_format, value_format=value_format)
    writer = _writer(app, template, decoder)
    selection = _where(where)
    if key_filter is not None and partitioner != "all" and not partitions and not any(s.ranges for s in parsed):
        parsed = _partitions_of_key(app, parsed, key_filter.encode(), partitioner)
    keep = filters.build(key=key_filter, grep=grep, headers=_header_pairs(headers, value_required=False), where=selection)
    options = ConsumeOptions(
        selectors=parsed, start=start_at, end=end_at, follow=follow, max_records=max_records,
        group=group, commit=commit, isolation=isolation,
    )
    signalled: threading.Event = stop_on_signals()
    # Records going to a file or a pipe: progress on stderr (a live display on a terminal).
    with progress(app, "consume", unit="records", enabled=not app.stdout_is_tty) as shown:
        report = consume_records(app.session, options, writer.write, keep, gone=_reader_gone(app.stdout),
                                 on_batch=lambda read, planned: shown.update(read, total=planned), interrupted=signalled)
    if report.stopped == "closed-pipe":
        raise BrokenPipeError  # main() silences stdout and exits 0, as `| head` expects
    interrupted = report.stopped == "interrupted" and not follow
    if not interrupted:
        writer.close()
    filtered = f" ({report.filtered} filtered out)" if report.filtered else ""
    _note_where_failures(app, selection, "did not match")
    before = " before the interrupt" if interrupted else ""
    app.note(f"consumed {report.records} record(s) from {report.partitions} partition(s){filtered}{before}")
    if group and report.stopped == "interrupted":
        positions = ", ".join(f"{t}:{p} at {o}" for (t, p), o in sorted(report.committed.items()))
        app.note(f"group {group} committed {positions}" if positions else f"group {group} committed nothing")
    if interrupted:
        from kctl.errors import ExitCode, KctlError

        raise KctlError(action="consume", cause="interrupted", exit_code=ExitCode.INTERRUPTED)
    if isolation == "read_committed" and not follow:
        _note_held_back(app, parsed)
    if decoder is not None and decoder.failures:
        from kctl.errors import PartialFailure

        raise PartialFailure(action=f"decode {decoder.failures} record(s)", cause="written as bytes (see the warnings)")
    if report.commit_error is not None:
        from kctl.errors import PartialFailure

        raise PartialFailure(
            action=f"commit offsets for group {group}", cause=report.commit_error,
            hint="the records were written, but the group will read them again; is another member consuming these partitions?",
        )


def _consume_share(app: App, topics: Sequence[str], group: str, ack: str, release_where: str | None, reject_where: str | None, *,
                   max_records: int | None, follow: bool, template: str | None, others: dict[str, object]) -> None:
    """`record consume --share-group`: kctl.records.share.consume_share, written as
    consume writes records."""
    from kctl.errors import ExitCode, KctlError, UsageError
    from kctl.records.share import ACKS, REJECT, RELEASE, consume_share

    for flag, value in others.items():
        if value:
            raise UsageError(action="consume", cause=f"{flag} is not for --share-group (the group decides what each member reads)")
    if any(":" in topic for topic in topics):
        raise UsageError(action="consume", cause="--share-group reads whole topics: name them without partitions")
    rejecting, releasing = _where(reject_where), _where(release_where)
    default = ACKS[ack]

    def decide(record: ShareRecord) -> int:
        if rejecting is not None and rejecting(record):
            return REJECT
        if releasing is not None and releasing(record):
            return RELEASE
        return default

    writer = _writer(app, template, share=True)
    stop_on_signals()
    written = 0
    with progress(app, "consume", unit="records", enabled=not app.stdout_is_tty) as shown:
        def sink(records: list[ShareRecord]) -> None:
            nonlocal written
            writer.write(records)
            written += len(records)
            shown.update(written)

        report = consume_share(app.session, group, list(dict.fromkeys(topics)), sink, decide, max_records=max_records, follow=follow,
                               gone=_reader_gone(app.stdout))
    if report.stopped == "closed-pipe":
        raise BrokenPipeError
    interrupted = report.stopped == "interrupted" and not follow
    if not interrupted:
        writer.close()
    done = {"accept": "accepted", "release": "released", "reject": "rejected"}
    counts = ", ".join(f"{n} {done[name]}" for name, n in report.acknowledged.items() if n)
    app.note(f"consumed {report.records} record(s) from share group {group}" + (f" ({counts})" if counts else ""))
    for selection, flag in ((rejecting, "--reject-where"), (releasing, "--release-where")):
        if selection is not None and selection.errors:
            app.note(f"note: {flag} failed on {selection.errors} record(s), which it did not match; the first: {selection.first_error}")
    if report.stopped == "unassigned":
        app.note(f"note: share group {group} assigned no partition of {', '.join(topics)} within the timeout")
    if interrupted:
        raise KctlError(action="consume", cause="interrupted", exit_code=ExitCode.INTERRUPTED)


def _where(expression: str | None) -> WherePredicate | None:
    """--where's predicate (kctl.records.where), or None without one."""
    if expression is None:
        return None
    from kctl.records.where import compile_where

    return cast("WherePredicate", compile_where(expression))  # the predicate carries errors and first_error


def _note_where_failures(app: App, selection: WherePredicate | None, outcome: str) -> None:
    """Say how many records --where could not be evaluated on (they do not match)."""
    if selection is not None and selection.errors:
        app.note(f"note: --where failed on {selection.errors} record(s), which {outcome}; the first: {selection.first_error}")


def _partitions_of_key(app: App, selectors: list[PartitionSelector], key: bytes, partitioner: str) -> list[PartitionSelector]:
    """Each topic's selector narrowed to the partition `partitioner` maps `key` to, said
    on stderr (an empty key under the consistent partitioner has none: every partition)."""
    from kctl.admin.topics.offsets import PartitionSelector
    from kctl.partitioner import partition_of

    metadata = app.session.metadata("consume", [s.topic for s in selectors])
    narrowed: list[PartitionSelector] = []
    for selector in selectors:
        layout = metadata.topics.get(selector.topic)
        count = len(layout.partitions) if layout is not None else 0
        chosen = partition_of(key, count, partitioner) if count else None
        if chosen is None:
            narrowed.append(selector)
            continue
        app.note(f"reading only {selector.topic}:{chosen}, where {partitioner} puts key {key.decode('utf-8', 'replace')!r} "
                 "(--partitioner all reads every partition)")
        narrowed.append(PartitionSelector(topic=selector.topic, ranges=((chosen, chosen),)))
    return narrowed


def _note_held_back(app: App, selectors: Sequence[PartitionSelector]) -> None:
    from kctl.admin.topics.offsets import resolve_partitions
    from kctl.cli._transactions import note_held_back

    note_held_back(app, resolve_partitions(app.session, selectors, action="consume"))


def _decoder(app: App, registry_url: str | None, *, key_format: str | None, value_format: str | None) -> RecordDecoder | None:
    """A RecordDecoder when --key-format or --value-format asks for one."""
    if key_format is None and value_format is None:
        return None
    from kctl.records.serdes import RecordDecoder

    return RecordDecoder(app.registry(registry_url), key_format=key_format, value_format=value_format, warn=app.warn)


def _writer(app: App, template: str | None, decoder: RecordDecoder | None = None, *, share: bool = False) -> RecordWriter:
    from kctl.errors import UsageError
    from kctl.records.output import record_writer
    from kctl.records.template import TemplateError

    fmt = app.out.format
    if template is not None and fmt in ("json", "jsonl"):
        raise UsageError(action="consume", cause="--format and -o json|jsonl exclude each other")
    if fmt in ("csv", "prom"):
        raise UsageError(action="consume", cause=f"-o {fmt} is not available for records; use -o json, -o jsonl or --format")
    # Records are bytes: write them to the binary stream under stdout, unchanged.
    app.stdout.flush()
    try:
        return record_writer(app.stdout.buffer, fmt, template, decoder, share=share)
    except TemplateError as exc:
        raise UsageError(action=f"parse --format {template!r}", cause=str(exc)) from None


def _reader_gone(stream: TextIO) -> Callable[[], bool]:
    """Whether stdout is a pipe whose reader has gone (`--follow | head` after head
    exits): Linux flags the write end with POLLERR, so an idle follower need not wait
    for its next record to find out."""
    import select

    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return lambda: False
    poller = select.poll()
    poller.register(fd, select.POLLERR)
    return lambda: any(event & select.POLLERR for _, event in poller.poll(0))


COPY_DOCUMENT = DocumentSpec(
    fields=(
        Field("source", "SOURCE"),
        Field("target", "TARGET"),
        Field("records", "RECORDS"),
        Field("bytes", "BYTES"),
        Field("filtered", "FILTERED"),
        Field("seconds", "SECONDS", get=lambda r: f"{r.seconds:.2f}"),
        Field("guarantee", "GUARANTEE"),
        Field("placement", "PLACEMENT"),
    ),
)


def _max_records(max_records: int | None, limit: int | None) -> int | None:
    """-n/--max-records, or the --limit earlier releases named it (kept, hidden)."""
    return max_records if max_records is not None else limit


@record.command("copy")
@click.argument("source", metavar="SOURCE[:PARTITIONS]")
@click.argument("target", metavar="TARGET")
@click.option("--to-context", "to_cluster", metavar="CONTEXT", help="Write to this cluster (a context, or HOST:PORT with the -X settings given) instead of SOURCE's.")
@click.option("--from", "start", metavar="POSITION", help="earliest, latest, committed, OFFSET, -N, @TIME, as consume takes it. [default: earliest; committed with --group]")
@click.option("--to", "end", metavar="POSITION", help="Stop before OFFSET or @TIME. [default: the log end when the copy starts]")
@click.option("-g", "--group", metavar="GROUP", help="Read as GROUP and commit its offsets with what is written: a rerun goes on where the last one stopped.")
@click.option("--where", "where", metavar="EXPR", help="Only records for which the CEL expression is true (see record consume).")
@click.option("-n", "--max-records", type=click.IntRange(min=1), help="Stop after this many records (after --where), as record consume.")
@click.option("--limit", type=click.IntRange(min=1), hidden=True)
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), metavar="N", help="Write at most N records per second.")
@click.option("--partitioner", type=click.Choice(["murmur2", "consistent"]), default="murmur2", show_default=True,
              help="When the partition counts differ: place keys as Java producers (murmur2) or librdkafka's default (consistent).")
@click.option("--source-header", is_flag=True, help="Add a kctl-copy-source header (topic/partition/offset in SOURCE) to each record copied.")
@global_options
@pass_app
def copy(app: App, source: str, target: str, to_cluster: str | None, start: str | None, end: str | None, group: str | None,
         where: str | None, max_records: int | None, limit: int | None, rate: float | None, partitioner: str,
         source_header: bool) -> None:
    """Copy records from SOURCE to TARGET, on this cluster or another.

    The copy is the same records: keys, values, headers and timestamps are kept (add
    --source-header to mark each with its position in SOURCE). A record keeps its
    partition when both topics have as many partitions, and goes where its key maps to
    otherwise. TARGET must exist (kctl topic create, or kctl topic clone for the same
    layout), and must not be SOURCE itself on the same cluster, whatever name or
    context reaches it (refused, exit 64).

    With --group the copy reads as that group and is resumable: a rerun goes on from the
    group's committed offsets. On one Kafka cluster it is then exactly-once: records and
    the group's offsets are committed in one transaction, so after a crash (even kill -9)
    and a rerun a read_committed consumer of TARGET sees every copied record once. Across
    clusters (--to-context), or without transactions, it is at-least-once: offsets are
    committed after the records are acknowledged, so a failure may write some twice;
    kctl spark audit TARGET finds such duplicates (by content, or by the source header).
    Ctrl-C stops after the batch being written, what was written committed. Source
    records of aborted transactions are not copied. The summary goes to stderr (stdout
    with -o json: per partition too).

    \b
    Examples:
      kctl record copy orders orders-copy
      kctl record copy orders orders-12 --group copy-orders --where 'value.status == "failed"'
      kctl record copy payments payments --to-context localhost:19092 --from @-1h --rate 1000 \\
          --source-header
    """
    from kctl.admin.topics.offsets import parse_selector
    from kctl.records.copy import CopyOptions
    from kctl.records.copy import copy as copy_records
    from kctl.records.position import COMMITTED, EARLIEST, Position, parse_from, parse_to

    selector = parse_selector(source)
    selection = _where(where)
    options = CopyOptions(
        source=selector, target=target, start=parse_from(start) if start is not None else Position(COMMITTED if group else EARLIEST),
        end=parse_to(end) if end is not None else parse_to("end"), group=group, where=selection,
        max_records=_max_records(max_records, limit), rate=rate, partitioner=partitioner, source_header=source_header,
    )
    other = app.session_for(to_cluster, "--to-context") if to_cluster is not None else None
    done: CopyReport = moving(app, "copy", lambda stop, on_batch: copy_records(app.session, other, options, stop=stop, on_batch=on_batch))
    if app.out.format in ("json", "jsonl"):
        app.out.document(done, COPY_DOCUMENT)
    else:
        filtered = f" ({done.filtered} filtered out)" if done.filtered else ""
        where_to = f" on {app.settings.bootstrap_servers if other is None else other.settings.bootstrap_servers}"
        app.note(f"copied {done.records} record(s) ({done.bytes} bytes) from {done.source} to {done.target}{where_to} in "
                 f"{done.seconds:.2f}s{filtered}: {done.guarantee}, partitions {'kept' if done.placement == 'same' else 'by key'}")
        if done.guarantee == "at-least-once" and done.records:
            found_by = "their kctl-copy-source headers" if done.source_header else "content"
            app.note(f"note: at-least-once: a copy that failed and ran again may have written some records twice; "
                     f"kctl spark audit {done.target} finds them (by {found_by})")
    _note_where_failures(app, selection, "were not copied")
    if done.stopped == "interrupted":
        from kctl.errors import ExitCode, KctlError

        raise KctlError(action=f"copy {source} to {target}", cause=f"interrupted after {done.records} record(s)",
                        hint="rerun with the same --group to go on" if group else None, exit_code=ExitCode.INTERRUPTED)


REDRIVE_TABLE = TableSpec((Column("topic", "TOPIC"), Column("records", "RECORDS", align="right"),
                           Column("filtered", "FILTERED", align="right"), Column("status", "STATUS")))


@record.command("redrive")
@click.argument("dlq", metavar="DLQ[:PARTITIONS]")
@click.option("--header", "headers", multiple=True, metavar="NAME",
              help="The header naming each record's topic (repeatable; the first present wins). "
                   "[default: __connect.errors.topic, kafka_dlt-original-topic, __dlq.errors.topic]")
@click.option("--where", "where", metavar="EXPR", help="Only records for which the CEL expression is true (see record consume); the others are held back.")
@click.option("--strip-error-headers", is_flag=True, help="Drop the dead-letter writers' error headers (__connect.errors.*, kafka_dlt-*, __dlq.errors.*).")
@click.option("--create-topics", is_flag=True, help="Create a topic a header names that does not exist (default: hold its records back).")
@click.option("-g", "--group", metavar="GROUP", help="The group whose offsets keep what was sent and what is held back. [default: kctl-redrive-DLQ]")
@click.option("--from", "start", metavar="POSITION", help="Where to start, as consume takes it; records before it are left behind. [default: committed: the first record not sent yet]")
@click.option("--to", "end", metavar="POSITION", help="Stop before OFFSET or @TIME. [default: the log end when it starts]")
@click.option("-n", "--max-records", type=click.IntRange(min=1), help="Stop after sending this many records.")
@click.option("--limit", type=click.IntRange(min=1), hidden=True)
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), metavar="N", help="Send at most N records per second.")
@click.option("--dry-run", is_flag=True, help="Count the records per target topic; send nothing, commit nothing.")
@global_options
@pass_app
def redrive(app: App, dlq: str, headers: tuple[str, ...], where: str | None, strip_error_headers: bool, create_topics: bool,
            group: str | None, start: str | None, end: str | None, max_records: int | None, limit: int | None, rate: float | None,
            dry_run: bool) -> None:
    """Send a dead-letter topic's records back to the topics they came from.

    Each record goes to the topic its header names: Kafka Connect's
    __connect.errors.topic, Spring Kafka's kafka_dlt-original-topic or, for a share
    group's dead-letter topic (KIP-1191, Kafka 4.4), __dlq.errors.topic, unless --header
    says which, placed by key, with its key, value, timestamp and headers (the error
    headers dropped with --strip-error-headers); --where sends only the records a fix
    covers.

    No dead letter is lost, and on a cluster with transactions (Kafka's, the bundled
    broker) none is sent twice: records and the group's offsets are committed in one
    transaction (without transactions a failure may send some twice). A record not sent
    is held back for a later run: one --where leaves out, one without the header, one
    naming a topic that does not exist (unless --create-topics) or the DLQ itself (it
    would loop), and a share group's dead letter that holds no copy of its record (only
    where it was: errors.deadletterqueue.copy.record.enable off). The group's offsets (kctl-redrive-DLQ unless --group) keep what was
    sent and what is held back, so a later run without --where, with --create-topics or
    --header sends the held-back records and skips the rest, and a run with nothing new
    sends nothing. Kafka forgets a group's offsets after offsets.retention.minutes
    without a commit (7 days by default): each run commits them again. The table counts,
    per topic named, the records sent and those --where left out; stderr says what is
    held back and why.

    \b
    Examples:
      kctl record redrive orders-dlq --dry-run
      kctl record redrive orders-dlq --where 'value.status == "failed"' --strip-error-headers
      kctl record redrive orders-dlq --create-topics
    """
    from kctl.admin.topics.offsets import parse_selector
    from kctl.records.position import COMMITTED, Position, parse_from, parse_to
    from kctl.records.redrive import DLQ_TOPIC_HEADERS, RedriveOptions, default_group
    from kctl.records.redrive import redrive as redrive_records

    selector = parse_selector(dlq)
    selection = _where(where)
    options = RedriveOptions(
        source=selector, start=parse_from(start) if start is not None else Position(COMMITTED),
        end=parse_to(end) if end is not None else parse_to("end"), group=group or default_group(selector.topic),
        where=selection, max_records=_max_records(max_records, limit), rate=rate, route_headers=tuple(headers) or DLQ_TOPIC_HEADERS,
        strip_error_headers=strip_error_headers, create_topics=create_topics, dry_run=dry_run,
    )
    done: RedriveReport = moving(app, "redrive", lambda stop, on_batch: redrive_records(app.session, options, stop=stop, on_batch=on_batch))
    if app.out.format in ("json", "jsonl"):
        app.out.document(done, DocumentSpec())
    else:
        app.out.table(done.topics, REDRIVE_TABLE)
        reached = [t for t in done.topics if t.status in ("sent", "would-send") and t.records]
        already = f"; {done.already_sent} sent before, skipped" if done.already_sent else ""
        app.note(f"{'would send' if dry_run else 'sent'} {done.records} record(s) of {done.source} back to {len(reached)} topic(s)"
                 + ("" if dry_run else f": {done.guarantee}") + already)
    for line in _held_back(done, options):
        app.note(line)
    _note_where_failures(app, selection, "were held back")
    if done.stopped == "interrupted":
        from kctl.errors import ExitCode, KctlError

        raise KctlError(action=f"redrive {dlq}", cause=f"interrupted after {done.records} record(s)", hint="a rerun goes on from there",
                        exit_code=ExitCode.INTERRUPTED)


def _held_back(done: RedriveReport, options: RedriveOptions) -> list[str]:
    """The notes saying which records a redrive held back, why, and what sends them."""
    if not done.held_back:
        return []
    why = []
    if done.filtered:
        why.append(f"{done.filtered} left out by --where")
    if done.without_topic:
        why.append(f"{done.without_topic} naming no topic ({', '.join(options.route_headers)})")
    if done.without_copy:
        why.append(f"{done.without_copy} holding no copy of their record (a share group's dead letters: its "
                   "errors.deadletterqueue.copy.record.enable is false; each names its record's topic, partition and offset)")
    missing = [t for t in done.topics if t.status == "no-such-topic" and t.records]
    if missing:
        why.append(f"{sum(t.records for t in missing)} naming topics that do not exist ({', '.join(t.topic for t in missing)}; "
                   "--create-topics creates them)")
    looping = [t for t in done.topics if t.status == "source-topic" and t.records]
    if looping:
        why.append(f"{sum(t.records for t in looping)} naming {done.source} itself")
    lines = [f"note: {done.held_back} record(s) held back for a later run: {'; '.join(why)}"]
    if not done.dry_run:
        lines.append(f"note: group {done.group} keeps them: a run without what held them back sends them, and nothing twice")
    full = [p.partition for p in done.partitions if p.ledger_full]
    if full:
        lines.append(f"note: partition(s) {', '.join(map(str, full))} stopped early: the group's offset metadata holds no more "
                     "held-back ranges; send those (a run without --where) and run again")
    return lines


@record.command("delete")
@click.argument("selectors", nargs=-1, required=True, metavar="TOPIC[:PARTITIONS]...")
@click.option("--before", required=True, metavar="OFFSET|@TIME|end", help="Delete records below OFFSET, older than @TIME (ISO-8601, epoch ms, @-1d), or all (end).")
@click.option("--dry-run", is_flag=True, help="Show what would be deleted, delete nothing.")
@yes_option
@global_options
@pass_app
def delete(app: App, selectors: tuple[str, ...], before: str, dry_run: bool, yes: bool) -> None:
    """Delete records at the start of partitions (moves the log start offset).

    Kafka can only delete a prefix of a partition: every record below the given offset.
    The plan (records to delete per partition) is shown first; deleting needs
    confirmation on a terminal and --yes without one. Offsets beyond the log end are
    clamped to it, and partitions already past the target are left unchanged.

    \b
    Examples:
      kctl record delete orders --before 1000 --dry-run
      kctl record delete orders:0,2 --before @2026-11-01T00:00:00Z --yes
      kctl record delete logs --before @-7d --yes
      kctl record delete scratch --before end --yes
    """
    from kctl.admin.topics.offsets import (
        delete_records,
        parse_selector,
        plan_delete_records,
        resolve_partitions,
    )
    from kctl.errors import UsageError
    from kctl.timespec import format_instant, parse_instant

    before_offset = before_ms = None
    to_end = before == "end"
    if before.startswith("@"):
        before_ms = parse_instant(before[1:])
        app.note(f"--before {before} is {format_instant(before_ms)} ({before_ms})")
    elif not to_end:
        if not before.isdigit():
            raise UsageError(action=f"parse --before {before!r}", cause="expected an offset, @TIME or end")
        before_offset = int(before)
    pairs = resolve_partitions(app.session, [parse_selector(s) for s in selectors], action="delete records of")
    plans = plan_delete_records(app.session, pairs, before_offset=before_offset, before_ms=before_ms, to_end=to_end)
    total = sum(p.records_deleted for p in plans)
    if dry_run or total == 0:
        app.out.table(plans, DELETE_TABLE)
        app.note(f"{'would delete' if dry_run else 'nothing to delete:'} {total} record(s) in {sum(1 for p in plans if p.records_deleted)} partition(s)")
        return
    app.confirm(
        f"Delete {total} record(s) from {sum(1 for p in plans if p.records_deleted)} partition(s)? This cannot be undone.",
        yes=yes,
        action="delete records",
    )
    results, errors = delete_records(app.session, plans)
    report(app, results, errors, DELETE_TABLE, "delete records")
