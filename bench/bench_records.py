"""kctl record produce|consume against kcat and Kafka's console tools, same broker.

    python bench/bench_records.py [--records 1000000] [--size 1024] [--broker kafka|bundled] [--runs 1]

Writes a file of N records (one per line, SIZE bytes with the newline), then for each tool
times, wall clock including start-up: producing the file into a fresh 3-partition topic
(acks=all, each tool's default batching), and consuming that topic from the earliest
offset to the end into /dev/null. Prints records/s per tool and kctl's ratio to each
anchor. The broker is Apache Kafka from the tests' jars with Kafka's production JVM
settings (G1, 1 GiB heap) unless --broker bundled. 2 cores are shared by broker and tool.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import common
from confluent_kafka.admin import AdminClient, NewTopic

KAFKA_JVM = ("-Xms1g", "-Xmx1g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true")


def write_input(path: Path, records: int, size: int) -> None:
    line = b"x" * (size - 1) + b"\n"
    with path.open("wb") as out:
        block = line * 1000
        for _ in range(records // 1000):
            out.write(block)
        out.write(line * (records % 1000))


def create(admin: AdminClient, topic: str) -> None:
    for future in admin.create_topics([NewTopic(topic, 3, 1)]).values():
        future.result(30)


def delete(admin: AdminClient, topic: str) -> None:
    for future in admin.delete_topics([topic]).values():
        future.result(30)


def timed(argv: list[str], *, stdin=None, stdout=subprocess.DEVNULL) -> float:
    started = time.perf_counter()
    result = subprocess.run(argv, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({result.returncode}): {result.stderr.decode()[-2000:]}")
    return elapsed


def end_offsets(admin: AdminClient, topic: str) -> int:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    futures = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(3)})
    return sum(f.result(30).offset for f in futures.values())


def tools(bootstrap: str, kafka, data: Path, records: int) -> dict[str, tuple]:
    """name -> (produce argv or None, stdin path or None, consume argv builder)."""
    kctl = common.kctl_argv() + ["-b", bootstrap, "-q"]
    found = {
        "kctl": (
            lambda t: (kctl + ["record", "produce", t, "--file", str(data)], None),
            lambda t: kctl + ["record", "consume", t],
        ),
    }
    if shutil.which("kcat"):
        found["kcat"] = (
            lambda t: (["kcat", "-b", bootstrap, "-P", "-t", t, "-l", str(data)], None),
            lambda t: ["kcat", "-b", bootstrap, "-C", "-t", t, "-o", "beginning", "-e", "-q"],
        )
    if kafka is not None:
        found["kafka-console"] = (
            lambda t: (kafka.tool_command("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", bootstrap, "--topic", t), data),
            lambda t: kafka.tool_command("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", bootstrap,
                                         "--topic", t, "--from-beginning", "--max-messages", str(records)),
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--broker", choices=["kafka", "bundled"], default="kafka")
    parser.add_argument("--runs", type=int, default=1, help="runs per tool; the median is reported")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="kctl-bench-records-"))
    data = workdir / "records.txt"
    write_input(data, args.records, args.size)
    kafka = None
    if args.broker == "kafka":
        from tests.backends.kafka import KafkaCluster

        kafka = KafkaCluster(nodes=1, workdir=workdir / "kafka", jvm_options=KAFKA_JVM)
        kafka.start()
        bootstrap, stop = kafka.bootstrap, kafka.stop
    else:
        from kctl.broker.process import BrokerProcess

        broker = BrokerProcess(workdir / "bundled")
        bootstrap, stop = broker.start(), broker.stop
    admin = AdminClient({"bootstrap.servers": bootstrap})
    results: dict[str, dict[str, list[float]]] = {}
    try:
        for name, (produce, consume) in tools(bootstrap, kafka, data, args.records).items():
            for run in range(args.runs):
                topic = f"bench-{name}-{run}"
                create(admin, topic)
                argv, stdin_path = produce(topic)
                if stdin_path is not None:
                    with stdin_path.open("rb") as stdin:
                        produce_s = timed(argv, stdin=stdin)
                else:
                    produce_s = timed(argv)
                written = end_offsets(admin, topic)
                if written != args.records:
                    raise SystemExit(f"{name} wrote {written} records, not {args.records}")
                consume_s = timed(consume(topic))
                delete(admin, topic)
                rates = results.setdefault(name, {"produce": [], "consume": []})
                rates["produce"].append(args.records / produce_s)
                rates["consume"].append(args.records / consume_s)
                print(f"{name} run {run + 1}: produce {produce_s:.2f} s, consume {consume_s:.2f} s", flush=True)
    finally:
        stop()
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"\n{args.records:,} records of {args.size} B, broker {args.broker}, wall clock incl. start-up (records/s)")
    ours = {k: statistics.median(v) for k, v in results["kctl"].items()}
    for phase in ("produce", "consume"):
        line = f"{phase:<8} kctl {ours[phase]:>10,.0f}"
        for name, rates in results.items():
            if name != "kctl":
                theirs = statistics.median(rates[phase])
                line += f"   {name} {theirs:>10,.0f} (kctl {ours[phase] / theirs:.2f}x)"
        print(line)


if __name__ == "__main__":
    main()
