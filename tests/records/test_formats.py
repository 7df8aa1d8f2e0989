"""Record formats without a broker: templates both ways, JSON envelopes, positions, and
splitting input at delimiters."""

from __future__ import annotations

import base64
import io
import json

import pytest

from kctl.errors import UsageError
from kctl.records.envelope import encode, from_line
from kctl.records.model import ProducerRecord, RecordError, unescape
from kctl.records.position import Position, parse_from, parse_to
from kctl.records.reader import split_records
from kctl.records.template import InputTemplate, TemplateError, compile_output


class Message:
    """The parts of confluent_kafka.Message the formatters read (a plain value object:
    formatting needs no broker)."""

    def __init__(self, value=b"v", key=b"k", headers=None, partition=2, offset=7, timestamp=(1, 1790000000000), topic="orders"):
        self._v, self._k, self._h, self._p, self._o, self._ts, self._t = value, key, headers, partition, offset, timestamp, topic

    def value(self):
        return self._v

    def key(self):
        return self._k

    def headers(self):
        return self._h

    def partition(self):
        return self._p

    def offset(self):
        return self._o

    def timestamp(self):
        return self._ts

    def topic(self):
        return self._t


def test_output_template_fields_and_encodings():
    render = compile_output(r"%t|%p|%o|%k|%v|%h|%T|%d|%K|%S|%%|%v{hex}|%k{base64}\n")
    message = Message(value=b"\x00\xff", key=b"id", headers=[("a", b"1"), ("b", None)])
    assert render(message) == b"orders|2|7|id|\x00\xff|a=1,b=|1790000000000|2026-09-21T14:13:20.000Z|2|2|%|00ff|aWQ=\n"


def test_output_template_null_key_and_value():
    render = compile_output(r"[%k][%v][%K][%S]\n")
    assert render(Message(value=None, key=None)) == b"[][][-1][-1]\n"


def test_default_output_is_value_per_line():
    assert compile_output(r"%v\n")(Message(value=b"hello")) == b"hello\n"
    assert compile_output(r"%v\n")(Message(value=None)) == b"\n"


@pytest.mark.parametrize(
    "template, problem",
    [("%x", "unknown field %x"), ("%p{hex}", "%p takes no encoding"), ("%v{rot13}", "unknown encoding {rot13}")],
)
def test_bad_output_templates(template, problem):
    with pytest.raises(TemplateError, match=problem):
        compile_output(template)


def test_input_template_splits_at_the_first_separator_and_decodes():
    parse = InputTemplate(r"%p\t%T\t%k{hex}\t%v{base64}\n")
    record = parse(b"3\t1790000000000\t6964\t" + base64.b64encode(b"a\tb"))
    assert record == ProducerRecord(b"a\tb", b"id", 3, 1790000000000, None)
    assert parse(b"0\t2026-09-21T14:13:20Z\t\t").timestamp == 1790000000000


def test_input_template_reads_what_the_output_template_wrote():
    template = r"%t %p %o %k{base64} %h{hex} %v{base64}\n"
    message = Message(value=b"\x00 x\n", key=b"k k", headers=[("h", b"\x01")])
    line = compile_output(template)(message)
    record = InputTemplate(template)(line[:-1])
    assert (record.value, record.key, record.partition, record.headers) == (b"\x00 x\n", b"k k", 2, [("h", b"\x01")])


def test_key_separator_and_null_marker():
    parse = InputTemplate.key_value("::", null_marker=b"NULL")
    assert parse(b"a::b::c") == ProducerRecord(b"b::c", b"a")
    assert parse(b"a::NULL") == ProducerRecord(None, b"a")
    with pytest.raises(RecordError, match="no key separator '::'"):
        parse(b"no separator")


@pytest.mark.parametrize(
    "template, problem",
    [("%k%v", "two fields need text between them"), ("%k", "needs %v"), ("%v-%v", "%v appears twice"), ("%x %v", "unknown field %x")],
)
def test_bad_input_templates(template, problem):
    with pytest.raises(TemplateError, match=problem):
        InputTemplate(template)


@pytest.mark.parametrize(
    "line, problem",
    [(b"x\tdg==", "partition b'x' is not an integer"), (b"1", r"no '\\t' after %p"), (b"1\t%%%", None)],
)
def test_input_template_errors(line, problem):
    parse = InputTemplate(r"%p\t%v{base64}")
    if problem is None:
        with pytest.raises(RecordError, match="value is not valid base64"):
            parse(line)
    else:
        with pytest.raises(RecordError, match=problem):
            parse(line)


def test_envelope_text_base64_and_nulls():
    message = Message(value=b"\xff\xfe", key=None, headers=[("t", b"x"), ("n", None)], timestamp=(2, 5))
    envelope = json.loads(encode(message))
    assert envelope == {
        "topic": "orders", "partition": 2, "offset": 7, "timestamp": 5, "timestamp_type": "LogAppendTime",
        "key": None, "key_encoding": "text", "value": "//4=", "value_encoding": "base64",
        "headers": [{"key": "t", "value": "x", "value_encoding": "text"}, {"key": "n", "value": None, "value_encoding": "text"}],
    }
    assert from_line(encode(message)) == ProducerRecord(b"\xff\xfe", None, 2, 5, [("t", b"x"), ("n", None)])


def test_envelope_input_conveniences():
    record = from_line(b'{"key": 42, "value": {"a": [1, 2]}, "headers": {"h": "v"}, "timestamp": "2026-09-21T14:13:20Z"}')
    assert record == ProducerRecord(b'{"a":[1,2]}', b"42", -1, 1790000000000, [("h", b"v")])
    assert from_line(b"   ") is None
    assert from_line(b'{"value": "68690a", "value_encoding": "hex"}').value == b"hi\n"


@pytest.mark.parametrize(
    "line, problem",
    [
        (b"{", "not valid JSON"),
        (b"[1]", "expected a JSON object, got list"),
        (b'{"vaule": 1}', "unknown field 'vaule'"),
        (b'{"value": "!!", "value_encoding": "base64"}', "value is not valid base64"),
        (b'{"value": "x", "value_encoding": "rot13"}', "value_encoding must be text, base64 or hex"),
        (b'{"value": "x", "partition": -1}', "partition -1 is not a partition number"),
        (b'{"value": "x", "timestamp": "soon"}', "timestamp 'soon'"),
        (b'{"value": "x", "headers": 3}', "headers must be"),
        (b'{"value": "\\ud800"}', "value is not valid UTF-8 text"),
    ],
)
def test_envelope_input_errors(line, problem):
    with pytest.raises(RecordError, match=problem):
        from_line(line)


def test_positions():
    now = lambda: 1_790_000_000.0  # noqa: E731
    assert parse_from("earliest") == Position("earliest")
    assert parse_from("beginning") == Position("earliest")
    assert parse_from("end") == Position("latest")
    assert parse_from("stored") == Position("committed")
    assert parse_from("42") == Position("offset", offset=42)
    assert parse_from("-10") == Position("tail", tail=10)
    assert parse_from("@-1h", now=now) == Position("time", at_ms=1_790_000_000_000 - 3_600_000)
    assert parse_from("@1790000000000") == Position("time", at_ms=1_790_000_000_000)
    assert parse_to("end") == Position("latest")
    assert parse_to("100") == Position("offset", offset=100)
    assert parse_to("@2026-09-21T14:13:20Z") == Position("time", at_ms=1_790_000_000_000)


@pytest.mark.parametrize("text", ["", "soon", "-x", "@", "+5", "@yesterday"])
def test_bad_from(text):
    with pytest.raises(UsageError, match="unable to parse"):
        parse_from(text)


def test_bad_to():
    with pytest.raises(UsageError, match=r"unable to parse --to 'committed'"):
        parse_to("committed")


class Trickle(io.RawIOBase):
    """A pipe that hands out a few bytes per read, as a slow writer does."""

    def __init__(self, data: bytes, step: int):
        self.data, self.step = data, step

    def readable(self):
        return True

    def readinto(self, buffer):
        chunk, self.data = self.data[: self.step], self.data[self.step :]
        buffer[: len(chunk)] = chunk
        return len(chunk)


@pytest.mark.parametrize("step", [1, 3, 1 << 20])
def test_split_records_across_reads(step):
    stream = io.BufferedReader(Trickle(b"a\nbb\n\nccc", step))
    assert [r for chunk in split_records(stream) for r in chunk] == [b"a", b"bb", b"", b"ccc"]
    stream = io.BufferedReader(Trickle(b"x\0y\0", step))
    assert [r for chunk in split_records(stream, b"\0") for r in chunk] == [b"x", b"y"]


def test_unescape():
    assert unescape(r"a\tb\nc\\d\0\x41\q") == "a\tb\nc\\d\0A\\q"
