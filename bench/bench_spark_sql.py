"""kctl spark sql: records/s beside Spark's JVM Kafka connector running the same SQL, and
what a one-hour window of a 24-hour topic reads and costs.

    python bench/bench_spark_sql.py [--records 1000000] [--window-records N] [--size 1024] [--connector 4.0.0]

Fills a 4-partition topic on a single Apache Kafka node (the tests' jars, Kafka's
production JVM settings) with N JSON records of SIZE bytes whose timestamps spread
evenly over the last 24 hours, then in one SparkSession (local[2], both engines on the
classpath, each warmed up by a query on a small topic):

- a filtered count and a group-by on a JSON field, each run by kctl spark sql's own
  code (tables resolved, predicates pushed, ranges planned, kctl_kafka reading) and by
  the JVM connector's DataFrame as a temporary view with the same SQL; timed from the
  query text to the result in the driver, twice each in alternating order, the better
  run counting; records/s = records in the topic / seconds;
- `count(*)` over the last hour against `count(*)` over everything, with kctl: the
  records the read tasks counted, and the time of each; on the same topic, or on a
  second one of --window-records records (24 hours too) to see past Spark's fixed
  cost per query (~0.5 s here), which bounds the ratio on a small topic.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import common  # noqa: F401  (puts the repository on sys.path)
from bench_spark import KAFKA_JVM, PARTITIONS, create
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

TYPES = ("click", "view", "buy", "leave")
FILTERED = "SELECT count(*) AS n FROM {t} WHERE get_json_object(CAST(value AS STRING), '$.type') = 'buy'"
GROUPED = "SELECT get_json_object(CAST(value AS STRING), '$.type') AS type, count(*) AS n FROM {t} GROUP BY type"
WINDOW = "SELECT count(*) AS n FROM {t} WHERE timestamp >= now() - INTERVAL 1 HOUR"
EVERYTHING = "SELECT count(*) AS n FROM {t}"


def fill(bootstrap: str, topic: str, records: int, size: int, span_ms: int) -> None:
    """JSON values of `size` bytes, timestamps evenly over the `span_ms` before now."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1 << 20, "compression.type": "lz4",
                         "queue.buffering.max.messages": 1_000_000})
    now = int(time.time() * 1000)
    start = now - span_ms
    for i in range(records):
        body = json.dumps({"id": i, "type": TYPES[i % len(TYPES)], "customer": i % 1000, "pad": ""})[:-2]
        value = (body + "x" * max(0, size - len(body) - 2) + '"}').encode()
        # Partition-major timestamps: each partition's records go forward in time.
        stamp = start + (i * span_ms) // records
        while True:
            try:
                producer.produce(topic, value, f"key-{i % 10_000}".encode(), partition=i % PARTITIONS, timestamp=stamp)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(120) == 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--window-records", type=int, help="records of the topic the window is measured on [default: --records, the same topic]")
    parser.add_argument("--connector", default="4.0.0", help="spark-sql-kafka-0-10_2.13 version on Maven Central")
    args = parser.parse_args()

    from kctl.spark import sql as job
    from kctl.spark.session import spark_session
    from tests.backends.jars import spark_connector_jars
    from tests.backends.kafka import KafkaCluster

    workdir = Path(tempfile.mkdtemp(prefix="kctl-bench-sql-"))
    os.environ["XDG_STATE_HOME"] = str(workdir / "state")
    kafka = KafkaCluster(nodes=1, workdir=workdir / "kafka", jvm_options=KAFKA_JVM)
    kafka.start()
    bootstrap = kafka.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    results: dict[str, float] = {}
    try:
        create(admin, "events")
        create(admin, "warm")
        started = time.perf_counter()
        fill(bootstrap, "events", args.records, args.size, 24 * 3_600_000)
        fill(bootstrap, "warm", 20_000, args.size, 24 * 3_600_000)
        print(f"filled {args.records:,} records in {time.perf_counter() - started:.1f} s", flush=True)
        day, day_records = "events", args.records
        if args.window_records:
            day, day_records = "day", args.window_records
            create(admin, day)
            fill(bootstrap, day, day_records, args.size, 24 * 3_600_000)
        conf = {"spark.driver.memory": "3g", "spark.jars": ",".join(str(p) for p in spark_connector_jars(args.connector))}
        spark = spark_session("local[2]", conf)
        job.quiet_spark_errors()
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
        spark.conf.set("spark.sql.shuffle.partitions", str(PARTITIONS))

        def kctl(query: str, topic: str) -> tuple[float, list, int | None]:
            text = query.format(t=topic)
            began = time.perf_counter()
            with job.work_directories() as (plan_dir, progress_dir), job.tables_of(spark, text) as tables:
                context = job.Context(kafka={"bootstrap.servers": bootstrap}, topic_exists=lambda _t: True, decode_plan=lambda _t: None,
                                      plan_dir=plan_dir, progress_dir=progress_dir)
                frame = job.resolve(spark, job.SqlRequest(query=text), context, tables)
                resolved = time.perf_counter()
                job.plan(spark, frame, tables, plan_dir)
                planned = time.perf_counter()
                rows = frame.toArrow().to_pylist()
                seconds = time.perf_counter() - began
                print(f"  kctl: resolve {resolved - began:.2f} s, plan {planned - resolved:.2f} s, run {seconds - planned + began:.2f} s", flush=True)
                return seconds, rows, job.records_read(progress_dir)

        def jvm(query: str, topic: str) -> tuple[float, list, None]:
            began = time.perf_counter()
            (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
             .option("includeHeaders", "true").load().createOrReplaceTempView("jvm_" + topic))
            rows = spark.sql(query.format(t="jvm_" + topic)).toArrow().to_pylist()
            return time.perf_counter() - began, rows, None

        engines = {"kctl": kctl, "jvm": jvm}
        for run in engines.values():  # warm-up: Python workers, classes, JIT
            run(GROUPED, "warm")
            run(FILTERED, "warm")
        for name, query in (("filtered count", FILTERED), ("group-by", GROUPED)):
            answers = {}
            for round_, order in enumerate((list(engines), list(reversed(engines)))):
                for engine in order:
                    seconds, rows, _ = engines[engine](query, "events")
                    answers.setdefault(engine, sorted(map(json.dumps, rows)))
                    key = f"{name} {engine}"
                    results[key] = max(results.get(key, 0), args.records / seconds)
                    print(f"{name} ({engine}, round {round_ + 1}): {seconds:.2f} s, {args.records / seconds:,.0f} records/s", flush=True)
            assert answers["kctl"] == answers["jvm"], answers

        for round_ in range(2):
            for name, query in (("window", WINDOW), ("everything", EVERYTHING)):
                seconds, rows, read = kctl(query, day)
                if round_ == 0 or seconds < results[f"{name} seconds"]:
                    results[f"{name} seconds"], results[f"{name} read"] = seconds, read
                print(f"{name} (kctl, round {round_ + 1}): {seconds:.2f} s, read {read:,} records, answer {rows[0]['n']:,}", flush=True)
        seconds, rows, _ = jvm(WINDOW, day)
        results["window jvm seconds"] = seconds
        print(f"window (jvm): {seconds:.2f} s, answer {rows[0]['n']:,}", flush=True)
        spark.stop()
    finally:
        admin = None
        kafka.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"\n{args.records:,} JSON records of {args.size} B, 4 partitions, 24 hours of timestamps, local[2], Apache Kafka single node")
    for name in ("filtered count", "group-by"):
        ratio = results[f"{name} kctl"] / results[f"{name} jvm"]
        print(f"{name + ' kctl (records/s)':<34} {results[f'{name} kctl']:>12,.0f}")
        print(f"{name + ' JVM connector (records/s)':<34} {results[f'{name} jvm']:>12,.0f}   ratio {ratio:.2f}x (target >= 1.5x)")
    print(f"window topic: {day_records:,} records over 24 hours")
    share = results["window read"] / day_records
    speedup = results["everything seconds"] / results["window seconds"]
    print(f"{'last hour: records read':<34} {results['window read']:>12,}   {share:.1%} of the topic (target <= 5%)")
    print(f"{'last hour / everything (s)':<34} {results['window seconds']:>8.2f} / {results['everything seconds']:.2f}   {speedup:.1f}x faster (target >= 10x)")
    print(f"{'last hour, JVM connector (s)':<34} {results['window jvm seconds']:>8.2f}   (reads the whole topic)")


if __name__ == "__main__":
    sys.exit(main())
