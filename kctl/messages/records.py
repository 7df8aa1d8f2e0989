"""RecordBatch v2 (magic 2): the unit the bundled broker validates, stores and serves, and
kctl's own producer (kctl.admin.client.wire_producer) writes.

Header layout (61 bytes, big-endian; DefaultRecordBatch.java):

    @0  base_offset int64          @8  batch_length int32 (bytes after this field)
    @12 partition_leader_epoch i32 @16 magic int8 (= 2)
    @17 crc uint32 (CRC-32C of everything from @21 to the end of the batch)
    @21 attributes int16: bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
        bit 3 timestamp type (1 = LogAppendTime), bit 4 transactional, bit 5 control,
        bit 6 delete horizon (base_timestamp is then the horizon, KIP-534)
    @23 last_offset_delta int32    @27 base_timestamp int64   @35 max_timestamp int64
    @43 producer_id int64          @51 producer_epoch int16   @53 base_sequence int32
    @57 records_count int32        @61 records (one compressed block when compression != 0)

base_offset, batch_length and partition_leader_epoch sit outside the CRC, so the broker can
assign offsets without recomputing it. Compressed batches are stored exactly as received:
everything offset assignment needs is in the uncompressed header.
"""

from __future__ import annotations

import struct

import google_crc32c

from kctl.values import Value

TYPE_CHECKING = False  # typing is not imported at run time (see kctl.values)
if TYPE_CHECKING:
    from collections.abc import Iterator

    from _typeshed import ReadableBuffer

    # The bytes a batch is read from: a file's (bytes) or one built here (bytearray).
    BatchBytes = bytes | bytearray

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # base_offset + batch_length: what precedes the length-counted bytes
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_BASE_OFFSET = struct.Struct(">q")
_EPOCH = struct.Struct(">i")
_CRC = struct.Struct(">I")
_ATTRIBUTES = struct.Struct(">h")
_TIMESTAMP = struct.Struct(">q")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
# Set by the log cleaner (KIP-534): base_timestamp then holds the time after which the
# batch's tombstones and transaction markers may be removed.
DELETE_HORIZON_BIT = 0x40


class InvalidBatch(ValueError):
    """A batch a client sent or a log holds that breaks the format (with the Kafka error)."""

    def __init__(self, message: str, error_code: int, record_errors: list[int] | None = None):
        super().__init__(message)
        self.error_code = error_code
        # Indexes of the records at fault, for Produce v8+'s record_errors.
        self.record_errors = record_errors or []


class BatchHeader(Value):
    """A record batch's header (a Value, not a dataclass: importing dataclasses costs a
    one-line produce ~6 ms)."""

    __slots__ = ("base_offset", "batch_length", "partition_leader_epoch", "magic", "crc", "attributes", "last_offset_delta",
                 "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "records_count")

    def __init__(self, base_offset: int, batch_length: int, partition_leader_epoch: int, magic: int, crc: int, attributes: int,
                 last_offset_delta: int, base_timestamp: int, max_timestamp: int, producer_id: int, producer_epoch: int,
                 base_sequence: int, records_count: int):
        self.base_offset = base_offset
        self.batch_length = batch_length
        self.partition_leader_epoch = partition_leader_epoch
        self.magic = magic
        self.crc = crc
        self.attributes = attributes
        self.last_offset_delta = last_offset_delta
        self.base_timestamp = base_timestamp
        self.max_timestamp = max_timestamp
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.records_count = records_count

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def delete_horizon(self) -> int | None:
        return self.base_timestamp if self.attributes & DELETE_HORIZON_BIT else None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def read_header(buf: ReadableBuffer, pos: int = 0) -> BatchHeader:
    return BatchHeader(*HEADER.unpack_from(buf, pos))


def crc_ok(buf: BatchBytes, pos: int, header: BatchHeader) -> bool:
    # google-crc32c accepts only bytes (not memoryviews), hence the slice copy.
    return google_crc32c.value(bytes(buf[pos + 21:pos + header.size])) == header.crc


def split_batches(buf: BatchBytes) -> list[tuple[int, BatchHeader]]:
    """(position, header) of each batch in a records field; raises on a torn batch."""
    batches: list[tuple[int, BatchHeader]] = []
    pos, end = 0, len(buf)
    while pos < end:
        if end - pos < HEADER_SIZE:
            raise InvalidBatch("records end inside a batch header", 2)
        header = read_header(buf, pos)
        if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or pos + header.size > end:
            raise InvalidBatch(f"batch length {header.batch_length} does not fit the records", 2)
        batches.append((pos, header))
        pos += header.size
    return batches


def assign_offsets(batch: bytearray, base_offset: int, leader_epoch: int) -> None:
    """Stamp the broker-assigned base offset and leader epoch (both outside the CRC)."""
    _BASE_OFFSET.pack_into(batch, 0, base_offset)
    _EPOCH.pack_into(batch, 12, leader_epoch)


def set_log_append_time(batch: bytearray, now_ms: int) -> None:
    """For message.timestamp.type=LogAppendTime: flag the batch, stamp max_timestamp, re-CRC."""
    attributes: int = _ATTRIBUTES.unpack_from(batch, 21)[0] | TIMESTAMP_TYPE_BIT
    _ATTRIBUTES.pack_into(batch, 21, attributes)
    _TIMESTAMP.pack_into(batch, 35, now_ms)
    _CRC.pack_into(batch, 17, google_crc32c.value(bytes(batch[21:])))


def record_timestamps(batch: BatchBytes, header: BatchHeader) -> list[tuple[int, int]]:
    """(offset, timestamp) of each record: ListOffsets by timestamp must name the first
    *record* at or after a time, so compressed batches are decompressed for it."""
    if header.attributes & TIMESTAMP_TYPE_BIT:
        return [(header.base_offset + i, header.max_timestamp) for i in range(header.records_count)]
    return [(header.base_offset + r.offset_delta, header.base_timestamp + r.timestamp_delta)
            for r in iter_records(batch, header)]


# -- records inside a batch ----------------------------------------------------------------------
#
#   length varint | attributes int8 | timestamp_delta varlong | offset_delta varint |
#   key_length varint (-1: null) | key | value_length varint (-1: null) | value |
#   header_count varint | headers (key_length varint, key, value_length varint, value)...

XERIAL_MAGIC = b"\x82SNAPPY\x00"


class Record(Value):
    """One record of a batch. body: the record's own bytes from its attributes on (its
    length prefix left out), kept as they are when a cleaned batch keeps the record."""

    __slots__ = ("offset_delta", "timestamp_delta", "key", "value", "body")

    def __init__(self, offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None, body: bytes):
        self.offset_delta = offset_delta
        self.timestamp_delta = timestamp_delta
        self.key = key
        self.value = value
        self.body = body

    __hash__ = None  # type: ignore[assignment]


def decompress(payload: bytes, codec: int) -> bytes:
    """A batch's records block, uncompressed (cramjam for every codec: snappy raw as
    librdkafka writes it or xerial-framed as the Java client writes it, LZ4 frames, zstd)."""
    if codec == 0:
        return payload
    import cramjam

    if codec == 1:
        return bytes(cramjam.gzip.decompress(payload))
    if codec == 2:
        if payload.startswith(XERIAL_MAGIC):
            out, pos = bytearray(), 16
            while pos + 4 <= len(payload):
                size = int.from_bytes(payload[pos:pos + 4], "big")
                out += cramjam.snappy.decompress_raw(payload[pos + 4:pos + 4 + size])
                pos += 4 + size
            return bytes(out)
        return bytes(cramjam.snappy.decompress_raw(payload))
    if codec == 3:
        return bytes(cramjam.lz4.decompress(payload))
    if codec == 4:
        return bytes(cramjam.zstd.decompress(payload))
    raise InvalidBatch(f"unknown compression codec {codec}", 2)


def compress(data: bytes, codec: int, xerial: bool = False) -> bytes:
    """The inverse of decompress, in the same framing."""
    if codec == 0:
        return data
    import cramjam

    if codec == 1:
        return bytes(cramjam.gzip.compress(data))
    if codec == 2:
        raw = bytes(cramjam.snappy.compress_raw(data))
        if xerial:  # the header (magic, version 1, compatible version 1) and one block
            return XERIAL_MAGIC + (1).to_bytes(4, "big") + (1).to_bytes(4, "big") + len(raw).to_bytes(4, "big") + raw
        return raw
    if codec == 3:
        return bytes(cramjam.lz4.compress(data))
    if codec == 4:
        return bytes(cramjam.zstd.compress(data))
    raise InvalidBatch(f"unknown compression codec {codec}", 2)


def iter_records(batch: BatchBytes, header: BatchHeader) -> Iterator[Record]:
    """Each Record of a batch (decompressed when it is)."""
    payload = decompress(bytes(batch[HEADER_SIZE:header.size]), header.compression)
    pos = 0
    for _ in range(header.records_count):
        length, pos = _varint(payload, pos)
        start = pos
        end = pos + length
        pos += 1  # attributes
        timestamp_delta, pos = _varint(payload, pos)
        offset_delta, pos = _varint(payload, pos)
        key_length, pos = _varint(payload, pos)
        key = None if key_length < 0 else payload[pos:pos + key_length]
        pos += max(key_length, 0)
        value_length, pos = _varint(payload, pos)
        value = None if value_length < 0 else payload[pos:pos + value_length]
        yield Record(offset_delta, timestamp_delta, key, value, payload[start:end])
        pos = end


def iter_keys(batch: BatchBytes, header: BatchHeader) -> Iterator[tuple[int, bytes | None, bool]]:
    """(offset, key or None, is_tombstone) of each record: what the log cleaner's offset
    map needs, without copying values.

    Hot path, written out by hand: every record of a dirty log passes here, and the
    varints are decoded inline (a helper call per field was 60% of the cleaner's time on
    a 1 GiB log; measured with bench/bench_compaction.py)."""
    payload = decompress(bytes(batch[HEADER_SIZE:header.size]), header.compression)
    base = header.base_offset
    pos = 0
    for _ in range(header.records_count):
        # record length
        byte = payload[pos]
        pos += 1
        if byte < 0x80:
            length = byte
        else:
            length, shift = byte & 0x7F, 7
            while True:
                byte = payload[pos]
                pos += 1
                length |= (byte & 0x7F) << shift
                if byte < 0x80:
                    break
                shift += 7
        end = pos + ((length >> 1) ^ -(length & 1))
        pos += 1  # attributes
        # timestamp delta: skipped
        while payload[pos] >= 0x80:
            pos += 1
        pos += 1
        # offset delta
        byte = payload[pos]
        pos += 1
        if byte < 0x80:
            delta = byte
        else:
            delta, shift = byte & 0x7F, 7
            while True:
                byte = payload[pos]
                pos += 1
                delta |= (byte & 0x7F) << shift
                if byte < 0x80:
                    break
                shift += 7
        delta = (delta >> 1) ^ -(delta & 1)
        # key length and key
        byte = payload[pos]
        pos += 1
        if byte < 0x80:
            key_length = byte
        else:
            key_length, shift = byte & 0x7F, 7
            while True:
                byte = payload[pos]
                pos += 1
                key_length |= (byte & 0x7F) << shift
                if byte < 0x80:
                    break
                shift += 7
        key_length = (key_length >> 1) ^ -(key_length & 1)
        if key_length < 0:
            key = None
        else:
            key = payload[pos:pos + key_length]
            pos += key_length
        # value length: only its sign matters (-1: a tombstone)
        yield base + delta, key, payload[pos] == 1
        pos = end


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None, headers_block: bytes) -> bytes:
    """One record: `headers_block` is its header count and headers as already encoded."""
    body = (b"\x00" + zigzag(timestamp_delta) + zigzag(offset_delta)
            + (zigzag(-1) if key is None else zigzag(len(key)) + key)
            + (zigzag(-1) if value is None else zigzag(len(value)) + value) + headers_block)
    return zigzag(len(body)) + body


def record_headers_block(record: Record) -> bytes:
    """The encoded header count and headers at the end of a record's body."""
    pos = 1
    _ts, pos = _varint(record.body, pos)
    _delta, pos = _varint(record.body, pos)
    for _ in range(2):  # key, value
        length, pos = _varint(record.body, pos)
        pos += max(length, 0)
    return record.body[pos:]


def build_batch(header: BatchHeader, records_block: bytes, records_count: int, xerial: bool = False) -> bytearray:
    """A batch with `header`'s fields (base offset, last offset delta, timestamps, producer,
    attributes) holding `records_block` (encoded records, compressed here with the header's
    codec), its CRC computed."""
    payload = compress(records_block, header.compression, xerial)
    batch = bytearray(HEADER.pack(header.base_offset, HEADER_SIZE - LOG_OVERHEAD + len(payload),
                                  header.partition_leader_epoch, 2, 0, header.attributes, header.last_offset_delta,
                                  header.base_timestamp, header.max_timestamp, header.producer_id,
                                  header.producer_epoch, header.base_sequence, records_count))
    batch += payload
    _CRC.pack_into(batch, 17, google_crc32c.value(bytes(batch[21:])))
    return batch


def _varint(buf: BatchBytes, pos: int) -> tuple[int, int]:
    """A zig-zag signed varint, as records use."""
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7


# -- control batches (transaction markers) ----------------------------------------------------

ABORT, COMMIT = 0, 1
_MARKER_KEY = struct.Struct(">hh")     # version 0, type: 0 abort, 1 commit
_MARKER_VALUE = struct.Struct(">hi")   # version 0, coordinator epoch


def control_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                  timestamp_ms: int) -> bytearray:
    """An end-transaction marker as Kafka writes it (EndTransactionMarker): a transactional
    control batch holding one record whose key is (version 0, type) and whose value is
    (version 0, coordinator epoch). Base offset 0, to be assigned on append."""
    key = _MARKER_KEY.pack(0, COMMIT if commit else ABORT)
    value = _MARKER_VALUE.pack(0, coordinator_epoch)
    body = bytes([0]) + zigzag(0) + zigzag(0) + zigzag(len(key)) + key + zigzag(len(value)) + value + zigzag(0)
    record = zigzag(len(body)) + body
    attributes = TRANSACTIONAL_BIT | CONTROL_BIT
    batch = bytearray(HEADER.pack(0, HEADER_SIZE - LOG_OVERHEAD + len(record), 0, 2, 0, attributes, 0,
                                  timestamp_ms, timestamp_ms, producer_id, producer_epoch, -1, 1))
    batch += record
    _CRC.pack_into(batch, 17, google_crc32c.value(bytes(batch[21:])))
    return batch


def marker_type(batch: BatchBytes, header: BatchHeader) -> int | None:
    """ABORT or COMMIT for a control batch holding an end-transaction marker, else None."""
    if not header.is_control or header.records_count < 1:
        return None
    pos = HEADER_SIZE
    _length, pos = _varint(batch, pos)
    pos += 1  # attributes
    _ts, pos = _varint(batch, pos)
    _delta, pos = _varint(batch, pos)
    key_length, pos = _varint(batch, pos)
    if key_length < 4:
        return None
    _version: int
    kind: int
    _version, kind = _MARKER_KEY.unpack_from(batch, pos)
    return kind if kind in (ABORT, COMMIT) else None


def zigzag(value: int) -> bytes:
    """A zig-zag signed varint, as records use."""
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
