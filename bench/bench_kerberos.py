"""What Kerberos costs kctl, beside Kafka's own JVM tools on the same node (issue 56).

    python bench/bench_kerberos.py [--records 200000] [--rounds 5]

One Kafka 4.x node (the tests' jars) behind a real MIT KDC (tests.support.kerberos), with a
PLAINTEXT and a SASL_PLAINTEXT GSSAPI listener; alice's ticket cache from kinit. Each
command runs over both listeners, rounds alternating, medians printed:

- `record consume` of --records 1 KiB records to a pipe: librdkafka's consumer, which over
  GSSAPI goes through kctl's loopback bridge (every byte relayed by Python), beside Kafka's
  console consumer over the same GSSAPI listener (the anchor users would otherwise take).
- `topic list` and a one-line `record produce`: kctl's own wire client, which authenticates
  with the gssapi binding itself (the cost is the GSSAPI exchange on each connection).
- `topic create` + `topic delete`: librdkafka's AdminClient through the bridge (its
  start-up: the first upstream connection is authenticated before librdkafka starts).

Ratios: GSSAPI / PLAINTEXT for each kctl command, and kctl / console consumer over GSSAPI.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import common
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

GSSAPI = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=GSSAPI"]


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode()[-2000:]}")
    return elapsed


def seed(bootstrap: str, records: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("consumed", 1, 1)])["consumed"].result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1 << 20, "compression.type": "none"})
    value = os.urandom(512).hex().encode()
    for _ in range(records):
        while True:
            try:
                producer.produce("consumed", value=value)
                break
            except BufferError:
                producer.poll(0.1)
    producer.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from tests.support.kerberos import start_kerberos_kafka, unavailable

    why = unavailable()
    if why:
        raise SystemExit(f"bench_kerberos: {why}")
    with tempfile.TemporaryDirectory(prefix="kctl-bench-kerberos-") as scratch:
        node = start_kerberos_kafka(Path(scratch))
        try:
            run(node, args)
        finally:
            node.stop()


def run(node, args) -> None:
    seed(node.plaintext, args.records)
    env = {**os.environ, **node.env(node.ticket_cache("alice"))}
    kctl = common.kctl_argv()
    over = {"PLAINTEXT": ["-b", node.plaintext], "GSSAPI": ["-b", node.bootstrap, *GSSAPI]}
    console = node.cluster.tool_command("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", node.bootstrap,
                                        "--consumer.config", str(node.tool_properties("alice")), "--topic", "consumed",
                                        "--from-beginning", "--max-messages", str(args.records))
    rows: dict[str, list[str]] = {
        "record consume": ["record", "consume", "consumed"],
        "topic list": ["topic", "list"],
        "record produce (one line)": ["record", "produce", "produced"],
        "topic create + delete": [],
    }
    samples: dict[tuple[str, str], list[float]] = {}
    timed([*kctl, *over["PLAINTEXT"], "topic", "create", "produced"], env)
    for round_ in range(args.rounds):
        for name, command in rows.items():
            for listener in (over if round_ % 2 == 0 else dict(reversed(over.items()))):
                flags = over[listener]
                if name == "topic create + delete":
                    topic = f"bench-{listener.lower()}-{round_}"
                    took = timed([*kctl, *flags, "topic", "create", topic], env)
                    took += timed([*kctl, *flags, "topic", "delete", topic, "--yes"], env)
                elif name.startswith("record produce"):
                    started = time.perf_counter()
                    subprocess.run([*kctl, *flags, *command], input=b"one line\n", check=True, capture_output=True, env=env)
                    took = time.perf_counter() - started
                else:
                    took = timed([*kctl, *flags, *command], env)
                samples.setdefault((name, listener), []).append(took)
        samples.setdefault(("record consume", "console consumer"), []).append(timed(console, env))
    print(f"Kafka {node.cluster.version}, one node, {args.records:,} x 1 KiB records, medians of {args.rounds} rounds\n")
    print(f"{'command':32} {'PLAINTEXT':>10} {'GSSAPI':>10} {'GSSAPI/PLAIN':>13}")
    for name in rows:
        plain, gss = (statistics.median(samples[(name, listener)]) for listener in ("PLAINTEXT", "GSSAPI"))
        print(f"{name:32} {plain:10.3f} {gss:10.3f} {gss / plain:12.2f}x")
    jvm = statistics.median(samples[("record consume", "console consumer")])
    gss = statistics.median(samples[("record consume", "GSSAPI")])
    print(f"\nrecord consume over GSSAPI: kctl {gss:.3f} s, kafka-console-consumer {jvm:.3f} s: kctl {jvm / gss:.2f}x faster"
          f" ({args.records / gss:,.0f} vs {args.records / jvm:,.0f} records/s)")


if __name__ == "__main__":
    main()
