"""Everyday reads at a distance: kctl beside kaf, kafkactl and kcat through a proxy that
delays each direction (bench/delay_proxy.py), at RTT 0 and 20 ms, with each tool's
requests and sequential rounds counted off the proxy's log.

    python bench/bench_distance.py [--runs 5] [--rtt-ms 0,20] [--target kafka,bundled]
                                   [--topics 100] [--partitions 20] [--groups 100]

The broker advertises itself as localhost:PROXY and every tool bootstraps by
127.0.0.1:PROXY, the usual case of a load balancer or DNS alias in front of a cluster: a
client that does not recognise the bootstrap connection's broker opens a second one.
Each round runs every tool of a row once, in turn; a figure is the median of --runs
rounds after a warm-up. REQ is the requests a tool sent, ROUNDS its sequential request
rounds (sends more than half an RTT apart), CONN the connections it opened; the last
column is kctl's time over the fastest peer's that does the same read.

The peers are found or built as bench_peers.py does (KCTL_BENCH_KAF, KCTL_BENCH_KAFKACTL,
../shared/peers, kcat on PATH). Not yet here: SASL_SSL, and a three-broker cluster.
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
from delay_proxy import DelayProxy

from kctl.messages.api_keys import name as api_name


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(target: str, workdir: Path, proxy_port: int, port: int):
    """stop() of a broker of the target's kind on `port`, advertised as localhost:proxy_port."""
    workdir.mkdir(parents=True)
    if target == "kafka":
        from common import SERVER_JVM_OPTIONS

        from tests.backends.kafka import KafkaCluster

        cluster = KafkaCluster(nodes=1, workdir=workdir, ports=[port], jvm_options=SERVER_JVM_OPTIONS,
                               overrides={"advertised.listeners": f"PLAINTEXT://localhost:{proxy_port}"})
        cluster.start()
        print(f"Apache Kafka {cluster.version} on :{port}, advertised as localhost:{proxy_port}", file=sys.stderr)
        return cluster.stop
    if target == "bundled":
        from kctl.broker.process import BrokerProcess

        broker = BrokerProcess(workdir, port=port, extra_args=["--advertised-host", "localhost", "--advertised-port", str(proxy_port)])
        broker.start()
        print(f"the bundled broker on :{port}, advertised as localhost:{proxy_port}", file=sys.stderr)
        return broker.stop
    raise SystemExit(f"--target: unknown target {target!r} (kafka, bundled)")


def measure(rows: list[Row], proxy: DelayProxy, runs: int, env: dict[str, str]) -> dict[tuple[str, str], tuple[int, int, int]]:
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
            shape = f"{req}/{rounds}/{conns}" if rounds else f"{req}/-/{conns}"
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
    parser.add_argument("--target", default="kafka,bundled", help="kafka, bundled or both (comma list)")
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
            port = free_port()
            proxy = DelayProxy(("127.0.0.1", port), 0.0)
            bootstrap = f"127.0.0.1:{proxy.start()}"
            stop = start(target, workdir / target, proxy.port, port)
            try:
                seed(kctl, bootstrap, args, env)
                for rtt in (float(r) for r in args.rtt_ms.split(",")):
                    proxy.delay = rtt / 2000
                    rows = [r for r in rows_for(kctl, bootstrap, peers, workdir) if r.name != "--help" and not r.name.startswith("record consume")]
                    counted = measure(rows, proxy, args.runs, env)
                    report(f"{target}, RTT {rtt:g} ms", rows, counted, tools)
            finally:
                stop()
                proxy.stop()


if __name__ == "__main__":
    main()
