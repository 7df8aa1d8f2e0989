"""Writing consumed records to a binary stream: a format string, JSON lines, or one
JSON array. Each batch is written and flushed at once, so a reader of a pipe sees records
as they arrive."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, BinaryIO


class RecordWriter:
    """Batches of messages rendered by `render`; a JSON array also needs its brackets
    and commas between batches (`opening`, `between`, `closing`, and `empty` when no
    record came)."""

    def __init__(self, stream: BinaryIO, render: Callable[[list[Any]], bytes], *,
                 opening: bytes = b"", between: bytes = b"", closing: bytes = b"", empty: bytes = b""):
        self.stream = stream
        self.render = render
        self.opening, self.between, self.closing, self.empty = opening, between, closing, empty
        self.started = False

    def write(self, messages: list[Any]) -> None:
        self.stream.write((self.between if self.started else self.opening) + self.render(messages))
        self.started = True
        self.stream.flush()

    def close(self) -> None:
        self.stream.write(self.closing if self.started else self.empty)
        self.stream.flush()


def record_writer(stream: BinaryIO, output_format: str, template: str | None, decoder=None, *, share: bool = False) -> RecordWriter:
    """The writer for `-o json|jsonl` (envelopes) or else the template (default: the
    value and a newline); `decoder` (records.schemas.RecordDecoder) decodes keys and
    values with schemas; `share`: share-group records, whose envelopes add their
    delivery count and acknowledgement. Raises TemplateError for a template that does
    not parse."""
    if output_format in ("json", "jsonl"):
        from kctl.records.envelope import encode as plain
        from kctl.records.envelope import encode_decoded, encode_share

        encode = encode_share if share else plain if decoder is None else (lambda message: encode_decoded(message, decoder))
        if output_format == "jsonl":
            return RecordWriter(stream, lambda messages: b"".join([encode(m) + b"\n" for m in messages]))
        return RecordWriter(stream, lambda messages: b",\n".join([encode(m) for m in messages]),
                            opening=b"[\n", between=b",\n", closing=b"\n]\n", empty=b"[]\n")
    from kctl.records.template import compile_batch

    render = compile_batch(template if template is not None else "%v\\n")
    if decoder is not None:
        from kctl.records.serdes import decode_in_place

        return RecordWriter(stream, lambda messages: render(decode_in_place(messages, decoder)))
    return RecordWriter(stream, render)
