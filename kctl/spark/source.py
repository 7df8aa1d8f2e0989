"""`kctl_kafka`: a PySpark data source for Kafka, read as the JVM connector reads it.

    spark.dataSource.register(KafkaDataSource)
    df = (spark.read.format("kctl_kafka")
          .option("kafka.bootstrap.servers", "localhost:9092")
          .option("subscribe", "orders").option("includeHeaders", "true").load())

Reading: one Spark task per offset range (see planning.py), each yielding Arrow batches
(reading.py). Writing (`df.write.format("kctl_kafka")`): the replay sink in sink.py.
It cannot be called `kafka`: Spark reserves that name for the JVM connector.

Spark pickles these classes by reference and runs them in other Python processes, so
they hold only options (strings) and create Kafka clients inside read() and write().
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

NAME = "kctl_kafka"


class KafkaRange(InputPartition):
    """An offset range, as Spark ships it to a task (plain values only: picklable)."""

    def __init__(self, topic: str, partition: int, start: int, end: int, scan: str = ""):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.scan = scan  # tells apart two scans of one range (a self-join) in progress files


class KafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        from kctl.spark.decode import columns_ddl, plan_from_options
        from kctl.spark.reading import HEADERS_DDL, SCHEMA_DDL

        headers = str(self.options.get("includeHeaders", "false")).lower() == "true"
        decode = plan_from_options(self.options)
        return SCHEMA_DDL + (HEADERS_DDL if headers else "") + (columns_ddl(decode) if decode else "")

    def reader(self, schema):
        # kctl.pushFilters: only where the session allows push-down (kctl spark sql sets
        # spark.sql.python.filterPushdown.enabled); a reader with pushFilters fails without it.
        if str(self.options.get("kctl.pushFilters", "false")).lower() == "true":
            return PushdownKafkaReader(dict(self.options))
        return KafkaReader(dict(self.options))

    def writer(self, schema, overwrite: bool):
        from kctl.spark.sink import KafkaSink

        if overwrite:
            raise ValueError("kctl_kafka appends records to a topic: use mode('append')")
        return KafkaSink(dict(self.options))


class KafkaReader(DataSourceReader):
    def __init__(self, options: dict[str, str]):
        from kctl.spark import options as parser

        self.raw_options = options
        parser.parse(options)  # fail at load(), on the driver, not in every task
        self.limits = None  # what pushed predicates admit (PushdownKafkaReader)

    def partitions(self):
        import uuid

        from kctl.spark import options as parser
        from kctl.spark.planning import plan_bounds, record_plan, split

        parsed = parser.parse(self.raw_options)
        bounds = plan_bounds(parsed, limits=self.limits)
        scan = uuid.uuid4().hex[:12]
        if parsed.plan_dir:
            record_plan(parsed.plan_dir, scan, parsed.table, bounds, self.limits.pushed if self.limits else ())
        ranges = split(bounds, parsed.min_partitions, parsed.max_records_per_partition)
        return [KafkaRange(r.topic, r.partition, r.start, r.end, scan) for r in ranges]

    def read(self, partition: KafkaRange):
        from kctl.spark import options as parser
        from kctl.spark.decode import decode_batches, plan_from_options
        from kctl.spark.planning import OffsetRange
        from kctl.spark.reading import read_range, reporting

        if not isinstance(partition, KafkaRange):
            return  # nothing to read: Spark hands an empty plan one default partition
        parsed = parser.parse(self.raw_options)
        batches = read_range(parsed, OffsetRange(partition.topic, partition.partition, partition.start, partition.end))
        batches = reporting(batches, parsed.progress_dir, f"{partition.scan}-{partition.topic}-{partition.partition}-{partition.start}")
        decode = plan_from_options(self.raw_options)
        if decode is not None:
            batches = decode_batches(batches, decode)
        yield from batches


class PushdownKafkaReader(KafkaReader):
    """A reader whose ranges are cut by the predicates Spark pushes (kctl.spark.pushdown).

    Every filter goes back to Spark, which evaluates it on what is read: the ranges only
    leave out records no filter could admit."""

    def pushFilters(self, filters):
        from kctl.spark.pushdown import limits_of

        self.limits = limits_of(filters)
        return filters


class DumpPart(InputPartition):
    """One topic-partition directory of a Parquet dump: its files in offset order."""

    def __init__(self, topic: str, partition: int, files: list[str]):
        super().__init__((topic, partition, tuple(files)))
        self.topic, self.partition, self.files = topic, partition, files


class DumpDataSource(DataSource):
    """`kctl_dump`: a kctl Parquet dump read back one task per partition, in offset order.

    Spark's own Parquet reader splits and packs files by size, so a partition's records
    may arrive in several tasks; replaying needs each source partition whole and in
    order in one task (then `--partition-map same` needs no shuffle).
    """

    @classmethod
    def name(cls) -> str:
        return "kctl_dump"

    def schema(self) -> str:
        from kctl.spark.reading import HEADERS_DDL, SCHEMA_DDL

        return SCHEMA_DDL + HEADERS_DDL

    def reader(self, schema):
        return DumpReader(str(self.options["path"]))


class DumpReader(DataSourceReader):
    def __init__(self, path: str):
        self.path = path

    def partitions(self):
        from kctl.spark.reading import dump_parts

        return [DumpPart(topic, partition, files) for topic, partition, files in dump_parts(self.path)]

    def read(self, part: DumpPart):
        from kctl.spark.reading import read_dump_part

        if isinstance(part, DumpPart):
            yield from read_dump_part(part.topic, part.partition, part.files)
