"""`kctl record produce`'s body, free of click: kctl.cli.direct runs a one-line produce
(`echo x | kctl record produce T`) from the console script without importing it, and the
click command that declares the options and help calls the same function."""

from __future__ import annotations

from kctl.cli._progress import progress
from kctl.output.spec import DocumentSpec, Field

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from pathlib import Path

    from kctl.cli._app import App
    from kctl.cli._progress import Progress
    from kctl.records.model import ProducerRecord
    from kctl.records.reader import ByteStream

PRODUCE_REPORT = DocumentSpec(
    fields=(
        Field("topic", "TOPIC"),
        Field("records", "RECORDS"),
        Field("bytes", "BYTES"),
        Field("failed", "FAILED"),
        Field("skipped", "SKIPPED"),
        Field("seconds", "SECONDS"),
    )
)


def header_pairs(values: Iterable[str], *, value_required: bool) -> list[tuple[str, str | None]]:
    """-H KEY=VALUE (or KEY, where the value is optional) as pairs; ValueError names the
    one that is neither."""
    pairs: list[tuple[str, str | None]] = []
    for text in values:
        name, sep, value = text.partition("=")
        if not name or (value_required and not sep):
            raise ValueError(f"{text!r} is not of the form key=value")
        pairs.append((name, value if sep else None))
    return pairs


def _headers(values: Iterable[str]) -> list[tuple[str, str]]:
    from kctl.errors import UsageError

    try:
        return header_pairs(values, value_required=True)  # type: ignore[return-value]
    except ValueError as exc:
        raise UsageError(f"invalid value for '-H' / '--header': {exc}") from None


def _instant(text: str) -> int:
    from kctl.timespec import parse_instant  # datetime: only when --timestamp is given

    return parse_instant(text)


def produce(app: App, topic: str, path: str, template: str | None, key_separator: str | None, input_format: str, delimiter: str,
            key: str | None, headers: Sequence[str], partition: int | None, partitioner: str, timestamp: str | None,
            null_marker: str | None, compression: str, acks: str, idempotent: bool | None, skip_invalid: bool, keep_partitions: bool,
            allow_auto_topic_creation: bool, value_schema: str | None, value_schema_file: Path | None, value_message: str | None,
            subject_strategy: str, registry_url: str | None) -> None:
    """See `kctl record produce --help` (kctl.cli.record)."""
    from kctl.errors import UsageError
    from kctl.records.produce import READ_AHEAD_BYTES, ProduceOptions
    from kctl.records.produce import produce as produce_records
    from kctl.records.reader import read_ahead, split_records

    if sum(x is not None for x in (template, key_separator)) + (input_format == "jsonl") > 1:
        raise UsageError(action="produce", cause="--format, --key-separator and --input jsonl exclude each other")
    if not delimiter:
        raise UsageError(action="produce", cause="--delimiter must not be empty")
    marker = null_marker.encode() if null_marker is not None else None
    parse: Callable[[bytes], ProducerRecord | None] | None = None
    if key_separator is not None or template is not None:
        from kctl.records.template import InputTemplate, TemplateError

        try:
            if key_separator is not None:
                if not key_separator:
                    raise UsageError(action="produce", cause="--key-separator must not be empty")
                parse = InputTemplate.key_value(key_separator, null_marker=marker)
            else:
                # template is not None here (no --key-separator); typing.cast is not imported at run time.
                parse = InputTemplate(template, null_marker=marker)  # type: ignore[arg-type]
        except TemplateError as exc:
            raise UsageError(action=f"parse --format {template!r}", cause=str(exc)) from None
    if keep_partitions and input_format != "jsonl":
        raise UsageError(action="produce", cause="--keep-partitions applies to --input jsonl (--format %p and -p always choose the partition)")
    if input_format == "jsonl":
        from kctl.records.envelope import from_line, from_line_by_key

        parse = from_line if keep_partitions and partition is None else from_line_by_key
    if value_message is not None and value_schema is None and value_schema_file is None:
        raise UsageError(action="produce", cause="--value-message needs --value-schema or --value-schema-file")
    if value_schema is not None or value_schema_file is not None:
        parse = _schema_parse(app, topic, parse, marker, value_schema, value_schema_file, subject_strategy, registry_url, value_message)
    options = ProduceOptions(
        topic=topic,
        acks=acks,
        idempotence=idempotent,
        compression=compression,
        partition=partition,
        partitioner=partitioner,
        key=key.encode() if key is not None else None,
        headers=tuple((k, v.encode()) for k, v in _headers(headers)),
        timestamp=_instant(timestamp) if timestamp is not None else None,
        null_marker=marker,
        skip_invalid=skip_invalid,
        allow_auto_topic_creation=allow_auto_topic_creation,
        check_partitions_first=keep_partitions and partition is None,
    )
    opened = _open_input(path, app)
    # Whether the input is small and already complete decides which producer sends it.
    stream, complete = read_ahead(opened, READ_AHEAD_BYTES)
    try:
        with progress(app, f"produce {topic}", total=_file_size(stream), unit="bytes") as shown:
            separator = delimiter.encode()
            chunks = _shown_chunks(split_records(stream, separator), shown, len(separator))
            report = produce_records(
                app.session, options, chunks, parse, on_skip=lambda line, why: app.warn(f"line {line} skipped: {why}"),
                input_complete=complete,
            )
            if not app.out.is_structured:
                skipped = f", {report.skipped} skipped" if report.skipped else ""
                rate = f", {report.records / report.seconds:,.0f} records/s" if report.seconds > 0.5 else ""
                shown.summary = (f"produced {report.records} record(s) ({report.bytes} bytes) to {topic} "
                                 f"in {report.seconds:.2f}s{rate}{skipped}")
    finally:
        if opened is not getattr(app.stdin, "buffer", None):
            stream.close()
    if app.out.is_structured:
        app.out.document(report, PRODUCE_REPORT)


def _schema_parse(app: App, topic: str, parse: Callable[[bytes], ProducerRecord | None] | None, marker: bytes | None,
                  value_schema: str | None, value_schema_file: Path | None, strategy: str, registry_url: str | None,
                  message: str | None) -> Callable[[bytes], ProducerRecord | None]:
    """`parse` followed by serializing each value with the schema (records.schemas)."""
    from kctl.errors import UsageError
    from kctl.records.model import ProducerRecord
    from kctl.records.serdes import RecordEncoder

    if value_schema is not None and value_schema_file is not None:
        raise UsageError(action="produce", cause="--value-schema and --value-schema-file exclude each other")
    subject = value_schema
    version: int | str = "latest"
    if value_schema is not None:
        head, _, tail = value_schema.rpartition(":")
        if head and (tail.isdigit() or tail == "latest"):
            subject, version = head, (int(tail) if tail.isdigit() else tail)
    encoder = RecordEncoder(app.registry(registry_url), topic, subject=subject, version=version, schema_file=value_schema_file, strategy=strategy, message=message)
    app.note(f"values as schema {encoder.schema.id} ({encoder.schema.subject} version {encoder.schema.version}, {encoder.schema.type})")

    def with_schema(item: bytes) -> ProducerRecord | None:
        record = parse(item) if parse is not None else ProducerRecord(None if item == marker else item)
        return encoder.encode(record)

    return with_schema


def _file_size(stream: ByteStream) -> int | None:
    """The input's size when it is a regular file (a total for progress); None for a pipe."""
    import os
    import stat

    try:
        status = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def _shown_chunks(chunks: Iterable[list[bytes]], shown: Progress, delimiter_length: int) -> Iterator[list[bytes]]:
    """The input chunks, unchanged, counting bytes and records read for the progress
    display (one update per chunk of up to 1000 records, not per record)."""
    records = 0
    for chunk in chunks:
        records += len(chunk)
        shown.advance(sum(map(len, chunk)) + delimiter_length * len(chunk), detail=f"{records:,} records")
        yield chunk


def _open_input(path: str, app: App):  # a BinaryIO (stdin's is typed TextIO | Any: getattr cannot tell)
    from kctl.errors import InvalidError

    if path == "-":
        return getattr(app.stdin, "buffer", app.stdin)
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InvalidError(action=f"read {path}", cause=str(exc.strerror)) from None
