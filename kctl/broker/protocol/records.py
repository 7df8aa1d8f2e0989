"""RecordBatch v2 (magic 2): the unit the broker validates, stores and serves.

Header layout (61 bytes, big-endian; DefaultRecordBatch.java):

    @0  base_offset int64          @8  batch_length int32 (bytes after this field)
    @12 partition_leader_epoch i32 @16 magic int8 (= 2)
    @17 crc uint32 (CRC-32C of everything from @21 to the end of the batch)
    @21 attributes int16: bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
        bit 3 timestamp type (1 = LogAppendTime), bit 4 transactional, bit 5 control
    @23 last_offset_delta int32    @27 base_timestamp int64   @35 max_timestamp int64
    @43 producer_id int64          @51 producer_epoch int16   @53 base_sequence int32
    @57 records_count int32        @61 records (one compressed block when compression != 0)

base_offset, batch_length and partition_leader_epoch sit outside the CRC, so the broker can
assign offsets without recomputing it. Compressed batches are stored exactly as received:
everything offset assignment needs is in the uncompressed header.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import google_crc32c

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


class InvalidBatch(ValueError):
    """A batch a client sent or a log holds that breaks the format (with the Kafka error)."""

    def __init__(self, message: str, error_code: int):
        super().__init__(message)
        self.error_code = error_code


@dataclass(slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

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
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def read_header(buf, pos: int = 0) -> BatchHeader:
    return BatchHeader(*HEADER.unpack_from(buf, pos))


def crc_ok(buf, pos: int, header: BatchHeader) -> bool:
    # google-crc32c accepts only bytes (not memoryviews), hence the slice copy.
    return google_crc32c.value(bytes(buf[pos + 21:pos + header.size])) == header.crc


def split_batches(buf) -> list[tuple[int, BatchHeader]]:
    """(position, header) of each batch in a records field; raises on a torn batch."""
    batches = []
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
    attributes = _ATTRIBUTES.unpack_from(batch, 21)[0] | TIMESTAMP_TYPE_BIT
    _ATTRIBUTES.pack_into(batch, 21, attributes)
    _TIMESTAMP.pack_into(batch, 35, now_ms)
    _CRC.pack_into(batch, 17, google_crc32c.value(bytes(batch[21:])))


def record_timestamps(batch, header: BatchHeader) -> list[tuple[int, int]] | None:
    """(offset, timestamp) of each record, or None when the codec is not available here.

    Used only for ListOffsets by timestamp, which must name the first *record* at or after a
    time; batches are otherwise never decoded.
    """
    if header.attributes & TIMESTAMP_TYPE_BIT:
        return [(header.base_offset + i, header.max_timestamp) for i in range(header.records_count)]
    payload = bytes(batch[HEADER_SIZE:header.size])
    codec = header.compression
    if codec == 1:
        import gzip
        payload = gzip.decompress(payload)
    elif codec != 0:
        return None
    result = []
    pos = 0
    for _ in range(header.records_count):
        length, pos = _varint(payload, pos)
        end = pos + length
        pos += 1  # attributes
        ts_delta, pos = _varint(payload, pos)
        offset_delta, pos = _varint(payload, pos)
        result.append((header.base_offset + offset_delta, header.base_timestamp + ts_delta))
        pos = end
    return result


def _varint(buf, pos: int) -> tuple[int, int]:
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
    body = bytes([0]) + _zigzag(0) + _zigzag(0) + _zigzag(len(key)) + key + _zigzag(len(value)) + value + _zigzag(0)
    record = _zigzag(len(body)) + body
    attributes = TRANSACTIONAL_BIT | CONTROL_BIT
    batch = bytearray(HEADER.pack(0, HEADER_SIZE - LOG_OVERHEAD + len(record), 0, 2, 0, attributes, 0,
                                  timestamp_ms, timestamp_ms, producer_id, producer_epoch, -1, 1))
    batch += record
    _CRC.pack_into(batch, 17, google_crc32c.value(bytes(batch[21:])))
    return batch


def marker_type(batch, header: BatchHeader) -> int | None:
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
    _version, kind = _MARKER_KEY.unpack_from(batch, pos)
    return kind if kind in (ABORT, COMMIT) else None


def _zigzag(value: int) -> bytes:
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
