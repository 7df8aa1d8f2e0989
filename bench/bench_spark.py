"""kctl spark dump and replay: records/s on local[2], beside Spark's JVM Kafka connector.

    python bench/bench_spark.py [--records 2000000] [--size 1024] [--connector 4.0.0] [--skip-jvm] [--standalone]

(4.0.0 is the newest spark-sql-kafka-0-10 Maven Central serves here; pyspark is 4.3.0.)

Fills a 4-partition topic on a single Apache Kafka node (the tests' jars, Kafka's
production JVM settings) with N records of SIZE bytes (JSON-like text, a key, one
header), then in one SparkSession (local[2], both engines on the classpath):

- start-up: creating the SparkSession and the first (tiny) job, which every command pays;
- warm-up: a 20,000-record dump with each engine (first-job costs: Python workers, JIT);
- dump: `kctl spark dump` to Parquet with the kctl_kafka source (--engine python: its read
  tasks write the files with pyarrow) and with Spark's own connector (--engine jvm,
  spark-sql-kafka-0-10 from Maven Central through spark.jars, resolved by mvn, written by
  Spark's Parquet writer); same layout, manifest and read-back;
- replay: the Parquet dump into a fresh topic through kctl's sink, and the same DataFrame
  through the JVM connector's sink (which cannot set timestamps; the nearest anchor); each
  sink first replays the warm-up dump, then the large one twice, in alternating order (the
  better of its two runs is its figure).

The figures exclude start-up (measured separately). 2 cores are shared by Kafka, Spark's
JVM and its Python workers. --standalone runs the same on a Spark standalone cluster it
starts (the tests' master and 2-core worker without kctl, tests/spark/standalone.py),
with kctl's environment shipped to the executor as `--ship-env` does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import common  # noqa: F401  (puts the repository on sys.path)
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

KAFKA_JVM = ("-Xms1g", "-Xmx1g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true")
PARTITIONS = 4


def fill(bootstrap: str, topic: str, records: int, size: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1 << 20, "compression.type": "lz4",
                         "queue.buffering.max.messages": 1_000_000})
    filler = ("x" * size).encode()
    for i in range(records):
        body = b'{"id":%d,"pad":"' % i
        value = body + filler[: max(0, size - len(body) - 2)] + b'"}'
        while True:
            try:
                producer.produce(topic, value, f"key-{i % 10_000}".encode(), partition=i % PARTITIONS, headers=[("trace", b"abc")])
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(120) == 0


def create(admin: AdminClient, topic: str) -> None:
    admin.create_topics([NewTopic(topic, PARTITIONS, 1, config={"retention.ms": "-1"})])[topic].result()


def end_offsets(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench"})
    total = sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(PARTITIONS))
    consumer.close()
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--connector", default="4.0.0", help="spark-sql-kafka-0-10_2.13 version on Maven Central")
    parser.add_argument("--skip-jvm", action="store_true")
    parser.add_argument("--standalone", action="store_true", help="run on a Spark standalone cluster started here")
    args = parser.parse_args()

    from kctl.spark import dump as dumping
    from kctl.spark import replay as replaying
    from kctl.spark.session import spark_session
    from tests.backends.kafka import KafkaCluster

    workdir = Path(tempfile.mkdtemp(prefix="kctl-bench-spark-"))
    os.environ["XDG_STATE_HOME"] = str(workdir / "state")
    kafka = KafkaCluster(nodes=1, workdir=workdir / "kafka", jvm_options=KAFKA_JVM)
    kafka.start()
    bootstrap = kafka.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    results: dict[str, float] = {}
    try:
        create(admin, "bench-src")
        started = time.perf_counter()
        fill(bootstrap, "bench-src", args.records, args.size)
        print(f"filled {args.records:,} records in {time.perf_counter() - started:.1f} s", flush=True)

        conf = {"spark.driver.memory": "3g"}
        if not args.skip_jvm:
            from tests.backends.jars import spark_connector_jars

            conf["spark.jars"] = ",".join(str(p) for p in spark_connector_jars(args.connector))
        master, shipped = "local[2]", None
        if args.standalone:
            from kctl.spark.session import cache_dir
            from kctl.spark.shipenv import packed_environment
            from tests.spark.standalone import StandaloneCluster

            (workdir / "spark").mkdir()
            standalone = StandaloneCluster(workdir / "spark")
            master, shipped = standalone.start(), packed_environment(cache_dir())
            conf["spark.executor.memory"] = "1g"
            # kctl's log4j settings (errors only) for the executor too: at Spark 4.3's
            # default INFO level, spark-sql-kafka 4.0.0 logs through a class 4.3 no longer
            # has (LogKeys$CONSUMER$) and every task of the JVM engine fails.
            from importlib.resources import files

            conf["spark.executor.extraJavaOptions"] = f"-Dlog4j2.configurationFile={files('kctl.spark').joinpath('log4j2.properties')}"
        started = time.perf_counter()
        spark = spark_session(master, conf, shipped_env=shipped)
        results["session"] = time.perf_counter() - started
        started = time.perf_counter()
        spark.range(10).count()
        results["first job"] = time.perf_counter() - started
        kafka_config = {"bootstrap.servers": bootstrap}

        def run_dump(engine: str, topic: str = "bench-src") -> float:
            out = workdir / f"dump-{engine}-{topic}"
            request = dumping.DumpRequest(topics=(topic,), out=out, engine=engine)
            began = time.perf_counter()
            manifest = dumping.dump(lambda: spark, kafka_config, request)
            seconds = time.perf_counter() - began
            return seconds, manifest["records"]

        engines = ["python"] + ([] if args.skip_jvm else ["jvm"])
        # Warm-up: the first job of each engine starts Python workers or loads classes and
        # JIT-compiles; every real dump after the first in a session runs warm.
        create(admin, "bench-warm")
        fill(bootstrap, "bench-warm", 20_000, args.size)
        for engine in engines:
            run_dump(engine, "bench-warm")
        for engine in engines:
            seconds, records = run_dump(engine)
            assert records == args.records, records
            results[f"dump {engine}"] = args.records / seconds
            print(f"dump --engine {engine}: {seconds:.1f} s, {args.records / seconds:,.0f} records/s", flush=True)
            if engine == "python":
                (workdir / "dump-python-bench-src").rename(workdir / "dump-python-keep")

        def replay_kctl(dump_dir: Path, topic: str) -> float:
            create(admin, topic)
            request = replaying.ReplayRequest(to_topic=topic, from_dump=str(dump_dir))
            began = time.perf_counter()
            replaying.replay(
                lambda: spark, kafka_config, request,
                destination_partitions=lambda topic: {topic: PARTITIONS},
                high_watermarks=lambda topic, count: dict.fromkeys(range(count), 0),
                manifest_path=workdir / f"replay-{topic}.json", resume_from=None,
            )
            return time.perf_counter() - began

        def replay_jvm(dump_dir: Path, topic: str) -> float:
            from kctl.spark import frames
            from kctl.spark.manifest import read_dump_manifest

            create(admin, topic)
            # Timed from the dump's directory, as kctl's replay is (reading the manifest and
            # making the DataFrame are part of either job).
            began = time.perf_counter()
            frame = frames.load_dump(spark, dump_dir, read_dump_manifest(dump_dir))
            (frame.select("key", "value", "headers", "partition").write.format("kafka")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", topic).option("includeHeaders", "true")
             .option("kafka.linger.ms", "20").option("kafka.batch.size", str(1 << 20)).mode("append").save())
            return time.perf_counter() - began

        sinks = {"kctl": replay_kctl} if args.skip_jvm else {"kctl": replay_kctl, "jvm": replay_jvm}
        # Warm-up, as for the dumps: each sink's first job (Python workers, JIT) on the
        # small dump, so neither pays it in the measured run.
        for name, run in sinks.items():
            run(workdir / "dump-python-bench-warm", f"bench-replay-warm-{name}")
        # Twice each, the second time in the other order, the better run counting: single
        # runs swung by 20-30% here (the broker's JIT on its first large uncompressed
        # produce, the JVM sink's own first large job, the machine), and one order would
        # hand whichever sink runs second a warmer broker.
        for round_, names in enumerate((list(sinks), list(reversed(sinks)))):
            for name in names:
                topic = f"bench-replay-{name}-{round_}"
                seconds = sinks[name](workdir / "dump-python-keep", topic)
                assert end_offsets(bootstrap, topic) == args.records
                results[f"replay {name}"] = max(results.get(f"replay {name}", 0), args.records / seconds)
                print(f"replay ({name} sink): {seconds:.1f} s, {args.records / seconds:,.0f} records/s", flush=True)
        spark.stop()
    finally:
        admin = None  # closed now: its connection would log the broker going away
        kafka.stop()
        if args.standalone:
            standalone.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    where = "a standalone cluster (one 2-core worker)" if args.standalone else "local[2]"
    print(f"\n{args.records:,} records of {args.size} B, 4 partitions, {where}, Apache Kafka single node")
    print(f"{'start-up: SparkSession':<34} {results['session']:>10.1f} s")
    print(f"{'start-up: first job':<34} {results['first job']:>10.1f} s")
    print(f"{'dump kctl_kafka (records/s)':<34} {results['dump python']:>12,.0f}   target >= 300,000")
    if "dump jvm" in results:
        print(f"{'dump JVM connector (records/s)':<34} {results['dump jvm']:>12,.0f}   ratio {results['dump python'] / results['dump jvm']:.2f}x (target >= 1.2x)")
    print(f"{'replay kctl sink (records/s)':<34} {results['replay kctl']:>12,.0f}")
    if "replay jvm" in results:
        print(f"{'replay JVM sink (records/s)':<34} {results['replay jvm']:>12,.0f}   ratio {results['replay kctl'] / results['replay jvm']:.2f}x (target >= 1.0x)")


if __name__ == "__main__":
    sys.exit(main())
