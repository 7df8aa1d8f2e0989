"""The bundled broker against Apache Kafka (the same jars as the tests), same client.

    python bench/bench_broker.py [--records 200000] [--small-records 1000000] [--rate 2000] [--seconds 5]

For each broker: seconds from launch to the first successful Metadata, idle RSS, produce
throughput (1 KiB and 100 B records, acks=all, linger 5 ms, librdkafka), transactional
produce throughput (1 KiB records, 100 per transaction, committed one after another),
consume throughput (both sizes, from the earliest offset), and p50/p99 produce latency at a
fixed rate, after a warm-up. Prints kctl's figure, Kafka's and the ratio.
Kafka runs with kafka-server-start.sh's JVM options (common.SERVER_JVM_OPTIONS: 1 GB heap,
G1, C2); its start-up includes its storage-format step, as every fresh cluster pays it.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from common import SERVER_JVM_OPTIONS, rss_mb  # (importing common also puts the repository on sys.path)
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

RECORD = b"x" * 1024


def wait_for_metadata(bootstrap: str, started: float) -> float:
    while True:
        try:
            AdminClient({"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": 1000}).list_topics(timeout=0.5)
            return time.perf_counter() - started
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.005)


def start_bundled(workdir: Path):
    from kctl.broker.process import BrokerProcess

    process = BrokerProcess(workdir / "bundled")
    started = time.perf_counter()
    bootstrap = process.start()
    ready = wait_for_metadata(bootstrap, started)
    return bootstrap, ready, process.process.pid, process.stop


def start_kafka(workdir: Path):
    from tests.backends.kafka import KafkaCluster

    cluster = KafkaCluster(nodes=1, workdir=workdir / "kafka", jvm_options=SERVER_JVM_OPTIONS)
    _ = cluster.classpath  # resolve jars before the clock starts
    started = time.perf_counter()
    cluster.start()
    ready = wait_for_metadata(cluster.bootstrap, started)
    return cluster.bootstrap, ready, cluster.nodes[0].process.pid, cluster.stop


def client_config(bootstrap: str | dict) -> dict:
    """A bootstrap address, or a whole client configuration (bench_listeners.py: SASL_SSL)."""
    return dict(bootstrap) if isinstance(bootstrap, dict) else {"bootstrap.servers": bootstrap}


def produce_throughput(bootstrap: str | dict, topic: str, records: int, size: int = len(RECORD)) -> float:
    producer = Producer({**client_config(bootstrap), "acks": "all", "linger.ms": 5,
                         "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000})
    value = b"x" * size
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(120) == 0
    return records / (time.perf_counter() - started)


def transactional_throughput(bootstrap: str, topic: str, records: int, per_transaction: int = 100) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{time.time_ns()}",
                         "linger.ms": 5, "batch.size": 1_000_000})
    producer.init_transactions(30)
    started = time.perf_counter()
    for _ in range(records // per_transaction):
        producer.begin_transaction()
        for _ in range(per_transaction):
            producer.produce(topic, RECORD)
        producer.commit_transaction(60)
    return records // per_transaction * per_transaction / (time.perf_counter() - started)


def consume_throughput(bootstrap: str | dict, topic: str, records: int) -> float:
    consumer = Consumer({**client_config(bootstrap), "group.id": f"bench-{time.time_ns()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "fetch.max.bytes": 52428800,
                         # Fetch without pause: at librdkafka's default (100,000) its fetcher
                         # stops once that many wait in its queue and may not start again
                         # for up to a second, which made small records' figures jump by 1 s
                         # (on both brokers alike).
                         "queued.min.messages": 10_000_000})
    consumer.subscribe([topic])
    count, started = 0, None
    while count < records:
        # Ask for no more than is left: consume(n, timeout) waits out its timeout for n
        # messages, which at the topic's end added up to a second to the figure.
        messages = consumer.consume(min(10000, records - count), 1.0)
        if messages and started is None:
            started = time.perf_counter()
        count += sum(1 for m in messages if not m.error())
    elapsed = time.perf_counter() - started
    consumer.close()
    return records / elapsed


def latency(bootstrap: str | dict, topic: str, rate: int, seconds: float) -> tuple[float, float]:
    producer = Producer({**client_config(bootstrap), "acks": "all", "linger.ms": 0})
    samples = []

    interval = 1 / rate
    next_at = time.perf_counter()
    end = next_at + seconds
    while next_at < end:
        sent = time.perf_counter()
        producer.produce(topic, RECORD, on_delivery=lambda err, msg, s=sent: samples.append(time.perf_counter() - s))
        producer.poll(0)
        next_at += interval
        delay = next_at - time.perf_counter()
        if delay > 0:
            producer.poll(delay)  # serves delivery callbacks the moment they arrive
    producer.flush(30)
    samples.sort()
    return samples[len(samples) // 2] * 1000, samples[int(len(samples) * 0.99)] * 1000


def measure(name: str, start, args, workdir: Path) -> dict:
    bootstrap, ready, pid, stop = start(workdir)
    try:
        time.sleep(2)
        idle = rss_mb(pid)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = ["bench", "bench-100", "warm", "lat", "txn"]
        for future in admin.create_topics([NewTopic(t, 1) for t in topics]).values():
            future.result(30)
        time.sleep(0.5)
        # A warm-up (Kafka's JIT, both brokers' page cache) before anything is timed.
        produce_throughput(bootstrap, "warm", args.records // 5)
        consume_throughput(bootstrap, "warm", args.records // 5)
        latency(bootstrap, "warm", args.rate, 1.0)
        produce = produce_throughput(bootstrap, "bench", args.records)
        produce_100 = produce_throughput(bootstrap, "bench-100", args.small_records, 100)
        transactional = transactional_throughput(bootstrap, "txn", args.transactional_records)
        # Reading changes nothing: the median of three reads of each topic.
        consume = statistics.median(consume_throughput(bootstrap, "bench", args.records) for _ in range(3))
        consume_100 = statistics.median(consume_throughput(bootstrap, "bench-100", args.small_records) for _ in range(3))
        p50, p99 = latency(bootstrap, "lat", args.rate, args.seconds)
    finally:
        stop()
    result = {"ready_s": ready, "idle_rss_mb": idle, "produce_rec_s": produce, "produce_100_rec_s": produce_100,
              "txn_produce_rec_s": transactional, "consume_rec_s": consume, "consume_100_rec_s": consume_100,
              "p50_ms": p50, "p99_ms": p99}
    print(f"{name}: " + ", ".join(f"{k}={v:.3f}" for k, v in result.items()), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--small-records", type=int, default=1_000_000, help="records of 100 B")
    parser.add_argument("--transactional-records", type=int, default=50_000)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ours = measure("bundled", start_bundled, args, Path(tmp))
        kafka = measure("kafka", start_kafka, args, Path(tmp))
    print(f"\n{'figure':<16} {'bundled':>10} {'kafka':>10} {'ratio':>8}")
    for key, better_high in (("ready_s", False), ("idle_rss_mb", False), ("produce_rec_s", True),
                             ("produce_100_rec_s", True), ("txn_produce_rec_s", True), ("consume_rec_s", True),
                             ("consume_100_rec_s", True), ("p50_ms", False), ("p99_ms", False)):
        ratio = ours[key] / kafka[key] if better_high else kafka[key] / ours[key]
        print(f"{key:<16} {ours[key]:>10.3f} {kafka[key]:>10.3f} {ratio:>7.2f}x")
    print("(ratio > 1: the bundled broker is better)")


if __name__ == "__main__":
    main()
