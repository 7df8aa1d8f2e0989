"""A Parquet dump written by its read tasks: each Spark task reads its offset ranges with
kctl_kafka's reader and writes them with pyarrow straight into the dump's layout.

What `kctl spark dump` runs for Parquet with kctl's reader, instead of handing the
records to Spark's Parquet writer: that moved every record from the Python worker into
the JVM as Arrow, turned it into rows and encoded it again (measured: most of the dump's
CPU beyond reading). The files are the same layout and columns Spark writes
(topic=T/partition=P/, the partition columns in the path, not the file).

A task writes each file under a hidden temporary name and renames it into place; names
are fixed by the range (part-<first offset>-<sequence>), so a retried or speculative
attempt replaces a file with the same records instead of adding a copy. Temporary files
of failed attempts are removed by the driver (`remove_leftovers`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from kctl.spark.planning import OffsetRange

# Rows per row group: pyarrow's write_batch makes a row group of every batch (10,000
# records), so batches are gathered into groups of about 64 MiB before writing.
ROW_GROUP_BYTES = 64 << 20


def write_ranges(options: dict[str, str], out: str, max_records_per_file: int,
                 ranges: Iterable[OffsetRange]) -> Iterator[tuple[str, int, int]]:
    """A Spark task (mapPartitions): RANGES (planning.OffsetRange) read and written under
    OUT; yields (topic, partition, records written) per range."""
    from kctl.spark import options as parser
    from kctl.spark.decode import decode_batches, plan_from_options
    from kctl.spark.reading import read_range, reporting

    parsed = parser.parse(options)
    decode = plan_from_options(options)
    # Fault injection for the tests of retries (KCTL_SPARK_FAIL_AFTER_RECORDS): a task's
    # first attempt fails once a range of at least this many records is in place.
    fail_after = int(options.get("kctl.failAfterRecords", "0")) or None
    for offsets in ranges:
        batches = reporting(read_range(parsed, offsets), parsed.progress_dir, f"{offsets.topic}-{offsets.partition}-{offsets.start}")
        if decode is not None:
            batches = decode_batches(batches, decode)
        directory = os.path.join(out, f"topic={offsets.topic}", f"partition={offsets.partition}")  # topic names need no escaping
        records = write_files(batches, directory, f"part-{offsets.start:020d}", max_records_per_file)
        if fail_after is not None and records >= fail_after:
            from kctl.spark.sink import _attempt

            if _attempt() == 0:
                raise RuntimeError(f"injected failure after {records} records (KCTL_SPARK_FAIL_AFTER_RECORDS)")
        yield offsets.topic, offsets.partition, records


def write_files(batches: Iterable[pa.RecordBatch], directory: str, stem: str, max_records_per_file: int) -> int:
    """BATCHES (source schema) without their topic and partition columns as zstd Parquet
    files DIRECTORY/STEM-NNNN.zstd.parquet of at most MAX_RECORDS_PER_FILE records."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer: Any = None  # a pyarrow ParquetWriter once a file is open
    temporary = ""
    sequence = in_file = total = 0
    pending: list[pa.RecordBatch] = []
    pending_bytes = 0

    def flush() -> None:
        nonlocal pending, pending_bytes
        if pending:
            writer.write_table(pa.Table.from_batches(pending), row_group_size=sum(b.num_rows for b in pending))
            pending, pending_bytes = [], 0

    def close() -> None:
        nonlocal writer, sequence, in_file
        flush()
        writer.close()
        os.replace(temporary, os.path.join(directory, f"{stem}-{sequence:04d}.zstd.parquet"))
        writer, sequence, in_file = None, sequence + 1, 0

    for batch in batches:
        batch = batch.select([name for name in batch.schema.names if name not in ("topic", "partition")])
        start = 0
        while start < batch.num_rows:
            if writer is None:
                os.makedirs(directory, exist_ok=True)
                temporary = os.path.join(directory, f".{stem}-{sequence:04d}.{uuid.uuid4().hex}.tmp")
                writer = pq.ParquetWriter(temporary, batch.schema, compression="zstd")
            part = batch.slice(start, min(batch.num_rows - start, max_records_per_file - in_file))
            pending.append(part)
            pending_bytes += part.nbytes
            start += part.num_rows
            in_file += part.num_rows
            total += part.num_rows
            if in_file >= max_records_per_file:
                close()
            elif pending_bytes >= ROW_GROUP_BYTES:
                flush()
    if writer is not None:
        close()
    return total


def remove_leftovers(out: Path) -> None:
    """Temporary files of task attempts that failed (hidden: no reader sees them)."""
    for leftover in out.glob("topic=*/partition=*/.part-*.tmp"):
        leftover.unlink(missing_ok=True)
