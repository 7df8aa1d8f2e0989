"""What security costs on the bundled broker, beside Apache Kafka with the same listeners
(issue 40).

    python bench/bench_listeners.py [--records 50000] [--acls 10000] [--rate 1000] [--seconds 5] [--rounds 5]

1. Produce and consume throughput (1 KiB and 100 B records, acks=all, librdkafka) through a PLAINTEXT
   and a SASL_SSL (SCRAM-SHA-512, TLS verified against the CA) listener of one broker:
   the bundled broker, and a Kafka 4.x node (the tests' jars) with the same two listeners.
   Prints each figure, SASL_SSL's cost as a ratio to PLAINTEXT, and kctl's ratio beside
   Kafka's. Target: SASL_SSL within 1.5x of PLAINTEXT on the bundled broker.
2. Produce latency (p50/p99 at a fixed rate) of a principal that is not a super user on
   the bundled broker: authorizer off, then on with --acls ACLs (the principal's own WRITE
   among others: literal and prefixed, other principals and topics), medians of --rounds
   rounds. Target: under 10% added.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench_broker import consume_throughput as consume
from bench_broker import latency
from bench_broker import produce_throughput as produce
from common import SERVER_JVM_OPTIONS  # (importing common also puts the repository on sys.path)
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType

ADMIN = ("admin", "admin-secret")
SIZES = (1024, 100)  # record value bytes


def sasl_ssl(address: str, ca: Path, user=ADMIN) -> dict:
    return {"bootstrap.servers": address, "security.protocol": "SASL_SSL", "ssl.ca.location": str(ca),
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user[0], "sasl.password": user[1]}


def bundled(workdir: Path):
    """(PLAINTEXT config, SASL_SSL config, stop)."""
    from kctl.broker.process import BrokerProcess

    process = BrokerProcess(workdir / "bundled", extra_args=[
        "--listener", "SASL_SSL://127.0.0.1:0", f"--user={ADMIN[0]}:{ADMIN[1]}",
        "--authorizer", "--super-user", "User:admin", "--super-user", "User:ANONYMOUS"])
    plaintext = process.start()
    secured = process.listeners[0].split("://")[1]
    return {"bootstrap.servers": plaintext}, sasl_ssl(secured, workdir / "bundled" / "tls" / "ca.pem"), process.stop


def kafka(workdir: Path):
    """The same two listeners on a Kafka node: PEM keystore from kctl's generated certificate."""
    from kctl.broker.security.tls import ensure_generated, generated_paths
    from tests.backends.kafka import SCRAM_LOGIN, KafkaCluster, free_port

    cert, key = ensure_generated(workdir / "kafka-tls", [])
    keystore = workdir / "kafka-keystore.pem"
    keystore.write_text(key.read_text() + cert.read_text())
    cluster = KafkaCluster(nodes=1, workdir=workdir / "kafka", scram_users={ADMIN[0]: ADMIN[1]}, jvm_options=SERVER_JVM_OPTIONS)
    node = cluster.nodes[0]
    plain_port, ssl_port = free_port(), free_port()
    cluster.overrides.update({
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{node.port},PLAINTEXT://127.0.0.1:{plain_port},"
                     f"SASL_SSL://127.0.0.1:{ssl_port},CONTROLLER://127.0.0.1:{node.controller_port}",
        "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{node.port},PLAINTEXT://127.0.0.1:{plain_port},"
                                f"SASL_SSL://127.0.0.1:{ssl_port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT,"
                                          "SASL_SSL:SASL_SSL",
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": f"{SCRAM_LOGIN} required;",
        "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
        "listener.name.sasl_ssl.ssl.keystore.location": str(keystore),
        "super.users": "User:admin;User:ANONYMOUS",
    })
    cluster.start()
    ca = generated_paths(workdir / "kafka-tls")[0]
    return ({"bootstrap.servers": f"127.0.0.1:{plain_port}"}, sasl_ssl(f"127.0.0.1:{ssl_port}", ca), cluster.stop)


def listeners(name: str, start, args, workdir: Path) -> dict:
    plaintext, secured, stop = start(workdir)
    try:
        admin = AdminClient(plaintext)
        topics = [f"{kind}-{size}" for kind in ("plain", "secured", "warm") for size in SIZES]
        for future in admin.create_topics([NewTopic(t, 1) for t in topics]).values():
            future.result(30)
        for config in (plaintext, secured):  # warm-up (Kafka's JIT, both brokers' caches)
            for size in SIZES:
                produce(config, f"warm-{size}", args.records // 5, size)
                consume(config, f"warm-{size}", args.records // 5)
        result = {}
        for size in SIZES:
            # 100 B records go ten times as fast: ten times as many, for a figure of the same length
            records = args.records * (1 if size >= 1024 else 10)
            result[f"produce_plain_{size}"] = produce(plaintext, f"plain-{size}", records, size)
            result[f"produce_sasl_ssl_{size}"] = produce(secured, f"secured-{size}", records, size)
            # reading changes nothing: the median of three reads
            result[f"consume_plain_{size}"] = statistics.median(consume(plaintext, f"plain-{size}", records) for _ in range(3))
            result[f"consume_sasl_ssl_{size}"] = statistics.median(
                consume(secured, f"secured-{size}", records) for _ in range(3))
    finally:
        stop()
    print(f"{name}: " + ", ".join(f"{k}={v:,.0f} rec/s" for k, v in result.items()), flush=True)
    return result


def other_acls(count: int) -> list[AclBinding]:
    bindings = []
    for i in range(count):
        pattern = ResourcePatternType.PREFIXED if i % 2 else ResourcePatternType.LITERAL
        bindings.append(AclBinding(ResourceType.TOPIC, f"team{i % 500}.topic{i}", pattern, f"User:u{i % 1000}", "*",
                                   AclOperation.WRITE if i % 3 else AclOperation.READ, AclPermissionType.ALLOW))
    return bindings


def authorizer_latency(args, workdir: Path) -> dict:
    """Median p50 and p99 over --rounds rounds, the two brokers measured in turn each round
    (so a noisy moment of the machine falls on both)."""
    from kctl.broker.process import BrokerProcess

    brokers = {}
    for label, extra in (("off", []), ("on", ["--authorizer", "--super-user", "User:admin"])):
        process = BrokerProcess(workdir / f"authz-{label}", extra_args=[
            "--sasl", "plain", f"--user={ADMIN[0]}:{ADMIN[1]}", "--user=alice:alice-secret", *extra])
        bootstrap = process.start()
        brokers[label] = (process, bootstrap)

        def config(user, bootstrap=bootstrap):
            return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                    "sasl.username": user[0], "sasl.password": user[1]}

        admin = AdminClient(config(ADMIN))
        admin.create_topics([NewTopic("lat", 1)])["lat"].result(30)
        if extra:
            bindings = other_acls(args.acls - 1) + [AclBinding(
                ResourceType.TOPIC, "lat", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.WRITE,
                AclPermissionType.ALLOW)]
            for start in range(0, len(bindings), 1000):
                for future in admin.create_acls(bindings[start:start + 1000]).values():
                    future.result(60)
        brokers[label] = (process, config(("alice", "alice-secret")))
    samples = {"off": [], "on": []}
    try:
        for config in (b[1] for b in brokers.values()):
            latency(config, "lat", args.rate, 1.0)  # warm-up
        for _ in range(args.rounds):
            for label, (_process, config) in brokers.items():
                samples[label].append(latency(config, "lat", args.rate, args.seconds))
    finally:
        for process, _config in brokers.values():
            process.stop()
    results = {label: (statistics.median(p50 for p50, _ in runs), statistics.median(p99 for _, p99 in runs))
               for label, runs in samples.items()}
    for label, (p50, p99) in results.items():
        print(f"authorizer {label}: p50={p50:.3f} ms p99={p99:.3f} ms (median of {args.rounds})", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--acls", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kctl-bench-listeners-") as tmp:
        workdir = Path(tmp)
        ours = listeners("bundled", bundled, args, workdir)
        theirs = listeners("kafka", kafka, args, workdir)
        print("\n| figure | bundled | Kafka | bundled / Kafka |\n|---|---|---|---|")
        for key in ours:
            print(f"| {key} (rec/s) | {ours[key]:,.0f} | {theirs[key]:,.0f} | {ours[key] / theirs[key]:.2f} |")
        for kind in ("produce", "consume"):
            for size in SIZES:
                mine = ours[f"{kind}_plain_{size}"] / ours[f"{kind}_sasl_ssl_{size}"]
                kafkas = theirs[f"{kind}_plain_{size}"] / theirs[f"{kind}_sasl_ssl_{size}"]
                print(f"| {kind} {size} B: PLAINTEXT / SASL_SSL | {mine:.2f}x | {kafkas:.2f}x | |")
        latencies = authorizer_latency(args, workdir)
        off, on = latencies["off"], latencies["on"]
        print(f"\n| produce latency | authorizer off | on, {args.acls:,} ACLs | added |\n|---|---|---|---|")
        print(f"| p50 (ms) | {off[0]:.3f} | {on[0]:.3f} | {100 * (on[0] / off[0] - 1):+.1f}% |")
        print(f"| p99 (ms) | {off[1]:.3f} | {on[1]:.3f} | {100 * (on[1] / off[1] - 1):+.1f}% |")


if __name__ == "__main__":
    main()
