"""Everyday reads at a distance: kctl beside kaf, kafkactl and kcat through a proxy that
delays each direction (bench/delay_proxy.py), at RTT 0 and 20 ms, with each tool's
requests and sequential rounds counted off the proxy's log.

    python bench/bench_distance.py [--runs 5] [--rtt-ms 0,20] [--target kafka,bundled,kafka3] [--sasl-ssl]
                                   [--topics 100] [--partitions 20] [--groups 100]

The broker advertises itself as localhost:PROXY and every tool bootstraps by
127.0.0.1:PROXY, the usual case of a load balancer or DNS alias in front of a cluster: a
client that does not recognise the bootstrap connection's broker opens a second one.
Each round runs every tool of a row once, in turn; a figure is the median of --runs
rounds after a warm-up. REQ is the requests a tool sent, ROUNDS its sequential request
rounds (sends more than half an RTT apart), CONN the connections it opened; the last
column is kctl's time over the fastest peer's that does the same read.

The kafka3 target is three Kafka brokers, each behind a proxy of its own (replication
between them on a listener of their own, not delayed or counted), with the reads that
need several brokers added (`broker log-dirs`, `group lag --all`): their rounds are
counted over the three proxies' logs together, so requests sent to three brokers at once
are one round.

The peers are found or built as bench_peers.py does (KCTL_BENCH_KAF, KCTL_BENCH_KAFKACTL,
../shared/peers, kcat on PATH). To measure another kctl checkout, put it first on
PYTHONPATH.

With --sasl-ssl the proxied listener is SASL_SSL (SCRAM-SHA-512, TLS verified against
the CA); every tool authenticates there (kaf and kafkactl through configuration files of
their own). The proxy cannot read TLS streams: REQ is then blank and ROUNDS counts the
flights of bytes a tool sent (TCP's own round is not among them). kcat runs there on
confluent-kafka's librdkafka (newer_librdkafka).

The proxy cannot delay TCP's handshake (the kernel completes it): a client's connect()
returns at once, and only the bytes after it wait. Opening connections one after another
costs a round trip each on a real network, nothing here unless the client waits for an
answer (ApiVersions without a cache, TLS, SASL) before opening the next.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import sys
import tempfile
from pathlib import Path

from bench_peers import GO_PEERS, Row, go_peer, rows_for, run, seed
from common import kctl_argv
from delay_proxy import DelayProxy, Traffic

from kctl.messages.api_keys import name as api_name


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Proxies:
    """The proxies in front of a cluster's brokers, delayed and counted as one."""

    def __init__(self, count: int):
        self.ports = [free_port() for _ in range(count)]  # the brokers'
        self.proxies = [DelayProxy(("127.0.0.1", port), 0.0) for port in self.ports]
        for proxy in self.proxies:
            proxy.start()

    @property
    def delay(self) -> float:
        return self.proxies[0].delay

    @delay.setter
    def delay(self, seconds: float) -> None:
        for proxy in self.proxies:
            proxy.delay = seconds

    def take(self) -> Traffic:
        taken = [proxy.take() for proxy in self.proxies]
        return Traffic(requests=[r for t in taken for r in t.requests], flights=[f for t in taken for f in t.flights],
                       connections=sum(t.connections for t in taken))

    def stop(self) -> None:
        for proxy in self.proxies:
            proxy.stop()


ADMIN = ("admin", "admin-secret")


def start(target: str, workdir: Path, proxies: Proxies, sasl_ssl: bool):
    """(stop, a bootstrap to seed the cluster by, the CA's path with --sasl-ssl) of a
    cluster of the target's kind, each broker behind its proxy, advertised as
    localhost:PROXY."""
    workdir.mkdir(parents=True)
    if target in ("kafka", "kafka3"):
        return start_kafka(1 if target == "kafka" else 3, workdir, proxies, sasl_ssl)
    if target == "bundled" and not sasl_ssl:
        from kctl.broker.process import BrokerProcess

        port, proxy_port = proxies.ports[0], proxies.proxies[0].port
        broker = BrokerProcess(workdir, port=port, extra_args=["--advertised-host", "localhost", "--advertised-port", str(proxy_port)])
        broker.start()
        print(f"the bundled broker on :{port}, advertised as localhost:{proxy_port}", file=sys.stderr)
        return broker.stop, f"127.0.0.1:{proxy_port}", None
    raise SystemExit(f"--target: unknown target {target!r} (kafka, kafka3, bundled; --sasl-ssl: kafka, kafka3)")


def start_kafka(nodes: int, workdir: Path, proxies: Proxies, sasl_ssl: bool):
    """Kafka nodes whose client listener is behind their proxy: PLAINTEXT, or with
    `sasl_ssl` SASL_SSL (SCRAM-SHA-512, the certificate for localhost and 127.0.0.1 from
    kctl's generator) beside a PLAINTEXT one, not proxied, to seed it by. Brokers
    replicate over a listener of their own, neither delayed nor counted."""
    from common import SERVER_JVM_OPTIONS

    from kctl.broker.security.tls import ensure_generated, generated_paths
    from tests.backends.kafka import SCRAM_LOGIN, KafkaCluster

    if not sasl_ssl:
        cluster = KafkaCluster(nodes=nodes, workdir=workdir, ports=proxies.ports, jvm_options=SERVER_JVM_OPTIONS)
        for node, proxy, internal in zip(cluster.nodes, proxies.proxies, [free_port() for _ in cluster.nodes]):
            cluster.node_overrides[node.node_id] = {
                "listeners": f"PLAINTEXT://127.0.0.1:{node.port},INTERNAL://127.0.0.1:{internal},CONTROLLER://127.0.0.1:{node.controller_port}",
                "advertised.listeners": f"PLAINTEXT://localhost:{proxy.port},INTERNAL://127.0.0.1:{internal}",
                "inter.broker.listener.name": "INTERNAL",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
            }
        cluster.start()
        print(f"Apache Kafka {cluster.version}, {nodes} node(s), each behind a proxy", file=sys.stderr)
        return cluster.stop, f"127.0.0.1:{proxies.proxies[0].port}", None
    cert, key = ensure_generated(workdir / "tls", [])
    keystore = workdir / "keystore.pem"
    keystore.write_text(key.read_text() + cert.read_text())
    cluster = KafkaCluster(nodes=nodes, workdir=workdir / "kafka", scram_users={ADMIN[0]: ADMIN[1]}, jvm_options=SERVER_JVM_OPTIONS)
    cluster.overrides.update({
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": f"{SCRAM_LOGIN} required;",
        "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
        "listener.name.sasl_ssl.ssl.keystore.location": str(keystore),
        "super.users": "User:admin;User:ANONYMOUS",
    })
    plain_ports = [free_port() for _ in cluster.nodes]
    for node, plain, ssl_port, proxy in zip(cluster.nodes, plain_ports, proxies.ports, proxies.proxies):
        cluster.node_overrides[node.node_id] = {  # SASL_PLAINTEXT (node.port) between the brokers
            "listeners": f"SASL_PLAINTEXT://127.0.0.1:{node.port},PLAINTEXT://127.0.0.1:{plain},"
                         f"SASL_SSL://127.0.0.1:{ssl_port},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{node.port},PLAINTEXT://127.0.0.1:{plain},SASL_SSL://localhost:{proxy.port}",
        }
    cluster.start()
    print(f"Apache Kafka {cluster.version}, {nodes} node(s), SASL_SSL (SCRAM-SHA-512) behind the proxies", file=sys.stderr)
    return cluster.stop, f"127.0.0.1:{plain_ports[0]}", generated_paths(workdir / "tls")[0]


def newer_librdkafka(workdir: Path) -> str:
    """A directory whose librdkafka.so.1 is confluent-kafka's own (2.6.1 or later), for
    kcat: Debian's kcat links librdkafka 2.0.2, whose SCRAM client-final repeats the
    client nonce, which Kafka 4.x refuses (confluentinc/librdkafka#4895, fixed in 2.6.1;
    the bundled broker refuses it too, as RFC 5802 says)."""
    import confluent_kafka

    libraries = Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs"
    [library] = libraries.glob("librdkafka-*.so.1")
    directory = workdir / "librdkafka"
    directory.mkdir(exist_ok=True)
    if not (directory / "librdkafka.so.1").exists():
        (directory / "librdkafka.so.1").symlink_to(library)
    return str(directory)


def secured(rows: list[Row], bootstrap: str, ca: Path, workdir: Path) -> list[Row]:
    """`rows` over SASL_SSL: librdkafka's properties for kctl and kcat, kaf's and
    kafkactl's own configuration files (kafkactl's written over rows_for's)."""
    properties = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": ADMIN[0],
                  "sasl.password": ADMIN[1], "ssl.ca.location": str(ca)}
    flags = [item for key, value in properties.items() for item in ("-X", f"{key}={value}")]
    kaf = workdir / "kaf.yml"
    kaf.write_text(f"current-cluster: secured\nclusters:\n- name: secured\n  brokers: [{bootstrap}]\n  security-protocol: SASL_SSL\n"
                   f"  SASL: {{mechanism: SCRAM-SHA-512, username: {ADMIN[0]}, password: {ADMIN[1]}}}\n  TLS: {{cafile: {ca}}}\n")
    (workdir / "kafkactl.yml").write_text(
        f"contexts:\n  default:\n    brokers:\n      - {bootstrap}\n    tls:\n      enabled: true\n      ca: {ca}\n"
        f"    sasl:\n      enabled: true\n      mechanism: scram-sha512\n      username: {ADMIN[0]}\n      password: {ADMIN[1]}\n"
        "current-context: default\n")

    def secure(tool: str, argv: list[str]) -> list[str]:
        if tool in ("kctl", "kcat"):
            at = argv.index("-b") + 2
            return [*argv[:at], *flags, *argv[at:]]
        if tool == "kaf":
            return [argv[0], "--config", str(kaf), *argv[1:]]
        return argv

    return [Row(row.name, secure("kctl", row.kctl), {tool: secure(tool, argv) for tool, argv in row.peers.items()}, stdin=row.stdin)
            for row in rows]


def measure(rows: list[Row], proxy: Proxies, runs: int, env: dict[str, str]) -> dict[tuple[str, str], tuple[int, int, int]]:
    """Each row's samples per tool; {(row, tool): (requests, rounds, connections)} from
    the warm-up round."""
    counted: dict[tuple[str, str], tuple[int, int, int]] = {}
    for round_ in range(runs + 1):
        for row in rows:
            for tool, argv in row.commands().items():
                proxy.take()
                seconds = run(argv, row.stdin, env)
                traffic = proxy.take()
                if round_ == 0:
                    counted[(row.name, tool)] = (len(traffic.requests), traffic.rounds(proxy.delay) if proxy.delay else 0,
                                                 traffic.connections)
                    if os.environ.get("KCTL_BENCH_SHOW_REQUESTS"):
                        print(f"  {tool:9s} {row.name}: {' '.join(api_name(r.api_key) for r in traffic.requests)}", file=sys.stderr)
                else:
                    row.samples.setdefault(tool, []).append(seconds)
        print(f"round {round_ + 1}/{runs + 1} done", file=sys.stderr, flush=True)
    return counted


def report(title: str, rows: list[Row], counted: dict[tuple[str, str], tuple[int, int, int]], tools: list[str]) -> None:
    print(f"\n{title}: medians in seconds; REQ/ROUNDS/CONN per tool")
    header = "| read | " + " | ".join(tools) + " | kctl / fastest peer |"
    print(header)
    print("|" + "---|" * (len(tools) + 2))
    for row in rows:
        cells, times = [], {}
        for tool in tools:
            if tool not in row.samples:
                cells.append("")
                continue
            times[tool] = statistics.median(row.samples[tool])
            req, rounds, conns = counted[(row.name, tool)]
            shape = f"{req if req else '-'}/{rounds if rounds else '-'}/{conns}"  # no requests read off a TLS stream
            cells.append(f"{times[tool]:.3f} ({shape})")
        peers = {tool: s for tool, s in times.items() if tool != "kctl"}
        ratio = f"{times['kctl'] / min(peers.values()):.2f} ({min(peers, key=peers.__getitem__)})" if peers else ""
        print(f"| {row.name} | {' | '.join(cells)} | {ratio} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rtt-ms", default="0,20", help="round-trip times to measure at (comma list)")
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--target", default="kafka,bundled", help="kafka, bundled, kafka3 (comma list)")
    parser.add_argument("--sasl-ssl", action="store_true", help="every tool over SASL_SSL (SCRAM-SHA-512): kafka and kafka3")
    args = parser.parse_args()
    args.records = 10  # the consume row is a throughput figure, left to bench_peers

    peers: dict[str, Path] = {name: binary for name in GO_PEERS if (binary := go_peer(name))}
    if shutil.which("kcat"):
        peers["kcat"] = Path(shutil.which("kcat") or "kcat")
    tools = ["kctl", *[p for p in ("kaf", "kafkactl", "kcat") if p in peers]]
    kctl = kctl_argv()
    with tempfile.TemporaryDirectory(prefix="kctl-bench-distance-") as scratch:
        workdir = Path(scratch)
        env = {**os.environ, "HOME": str(workdir / "home"), "XDG_CONFIG_HOME": str(workdir / "home/.config"),
               "XDG_STATE_HOME": str(workdir / "home/.local/state"), "KCTL_OUTPUT": "plain"}
        for target in args.target.split(","):
            proxies = Proxies(3 if target == "kafka3" else 1)
            bootstrap = f"127.0.0.1:{proxies.proxies[0].port}"
            stop, seed_bootstrap, ca = start(target, workdir / target, proxies, args.sasl_ssl)
            if ca is not None:
                env["LD_LIBRARY_PATH"] = newer_librdkafka(workdir)
            try:
                seed(kctl, seed_bootstrap, args, env)
                for rtt in (float(r) for r in args.rtt_ms.split(",")):
                    proxies.delay = rtt / 2000
                    rows = [r for r in rows_for(kctl, bootstrap, peers, workdir) if r.name != "--help" and not r.name.startswith("record consume")]
                    if target == "kafka3":  # the reads that ask every broker
                        rows += [Row("broker log-dirs", [*kctl, "-b", bootstrap, "broker", "log-dirs"], {}),
                                 Row("group lag --all", [*kctl, "-b", bootstrap, "group", "lag", "--all"], {})]
                    if ca is not None:
                        rows = secured(rows, bootstrap, ca, workdir)
                    counted = measure(rows, proxies, args.runs, env)
                    report(f"{target}{' over SASL_SSL' if ca else ''}, RTT {rtt:g} ms", rows, counted, tools)
            finally:
                stop()
                proxies.stop()


if __name__ == "__main__":
    main()
