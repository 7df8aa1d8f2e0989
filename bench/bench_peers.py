"""Everyday commands beside the native CLIs people choose between: kaf and kafkactl (Go)
and kcat (C), on one Apache Kafka 4.x node and on the bundled broker, with the floor of a
Python client (`python -c "import socket, struct, typing, re, json"`: the interpreter and
the standard library any reader over a socket imports) measured in the same run.

    python bench/bench_peers.py [--runs 7] [--topics 100] [--partitions 20] [--groups 100]
                                [--records 200000] [--target kafka,bundled]

The peers: KCTL_BENCH_KAF and KCTL_BENCH_KAFKACTL name binaries; otherwise kaf and kafkactl
are built with `go` from the source snapshots in ../shared/peers (its README; once, into
~/.cache/kctl-bench/peers); kcat is taken from PATH (Debian's `kcat`). A peer that is none
of these is left out with a line on stderr saying why.

Each round runs every command of a row once, in turn, so a drift in the machine's load
falls on all alike; a row's figure is the median of --runs rounds, after one warm-up
round. `kctl - floor` is what kctl spends beyond the floor: the median of each round's
kctl time less the floor measured right after it. The ratios are kctl's time over
kafkactl's and kaf's (and, for consuming, the fastest peer's over kctl's).

Issue 59's targets, with kctl installed as users install it (`pip install .`, not
editable): every metadata, group, offset and config row at or under kafkactl's median
(kctl / kafkactl <= 1.0; kaf's ratio beside it), the one-line produce at or under
kafkactl's `produce --value`, consuming --records 1 KiB records to a pipe at least 1.5x
faster than the fastest peer; `kctl --help` as fast as before (<= 50 ms).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from common import ROOT, kctl_argv

PEERS_SOURCES = ROOT.parent / "shared" / "peers"
PEERS_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kctl-bench" / "peers"
# Source snapshot, package to build, per peer (../shared/peers/README.md).
GO_PEERS = {"kaf": ("kaf-fd9c0ca.tar.gz", "./cmd/kaf"), "kafkactl": ("kafkactl-9005d01.tar.gz", ".")}


def go_peer(name: str) -> Path | None:
    """The peer's binary: from KCTL_BENCH_<NAME>, the cache, or built now; None (with a
    line on stderr) when none of these works."""
    given = os.environ.get(f"KCTL_BENCH_{name.upper()}")
    if given:
        return Path(given)
    binary = PEERS_CACHE / "bin" / name
    if binary.exists():
        return binary
    snapshot, package = GO_PEERS[name]
    if not (PEERS_SOURCES / snapshot).exists() or not shutil.which("go"):
        print(f"{name}: left out (no KCTL_BENCH_{name.upper()}, and no {PEERS_SOURCES / snapshot} or no go to build it)", file=sys.stderr)
        return None
    source = PEERS_CACHE / name
    shutil.rmtree(source, ignore_errors=True)
    source.mkdir(parents=True)
    subprocess.run(["tar", "-xzf", str(PEERS_SOURCES / snapshot), "-C", str(source)], check=True)
    print(f"building {name} with go (about a minute, once) ...", file=sys.stderr, flush=True)
    built = subprocess.run(["go", "build", "-o", str(binary), package], cwd=source, capture_output=True, text=True)
    if built.returncode != 0:
        print(f"{name}: left out (go build failed: {built.stderr.strip().splitlines()[-1:]})", file=sys.stderr)
        return None
    return binary


@dataclass
class Row:
    name: str
    kctl: list[str]
    peers: dict[str, list[str]]
    stdin: bytes | None = None
    samples: dict[str, list[float]] = field(default_factory=dict)
    # The floor measured right after this row's commands, round by round.
    floors: list[float] = field(default_factory=list)

    def commands(self) -> dict[str, list[str]]:
        return {"kctl": self.kctl, **self.peers}


def run(argv: list[str], stdin: bytes | None, env: dict[str, str]) -> float:
    """Wall seconds of `argv`, its stdout a pipe read to the end (as `| wc` would)."""
    # stderr goes to a file: kaf writes a line per record there, and a pipe read only at the
    # end would fill and stop it.
    with tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=stderr, env=env)
        if stdin is not None:
            process.stdin.write(stdin)
            process.stdin.close()
        while process.stdout.read(1 << 20):
            pass
        process.wait()
        elapsed = time.perf_counter() - started
        stderr.seek(0)
        errors = stderr.read()
    if process.returncode != 0:
        raise SystemExit(f"`{' '.join(argv)}` failed ({process.returncode}): {errors.decode(errors='replace').strip()[-300:]}")
    return elapsed


def measure(rows: list[Row], floor: list[str], runs: int, env: dict[str, str]) -> float:
    """Each row's samples per command, the floor measured beside every row; returns the
    floor's median."""
    floors: list[float] = []
    for round_ in range(runs + 1):
        for row in rows:
            timings = {name: run(argv, row.stdin, env) for name, argv in row.commands().items()}
            floor_s = run(floor, None, env)
            if round_:  # the first round warms the page cache and the brokers
                for name, seconds in timings.items():
                    row.samples.setdefault(name, []).append(seconds)
                row.floors.append(floor_s)
                floors.append(floor_s)
        print(f"round {round_ + 1}/{runs + 1} done", file=sys.stderr, flush=True)
    return statistics.median(floors)


def report(target: str, rows: list[Row], floor: float, peers: list[str]) -> None:
    print(f"\n{target}: medians in seconds; floor (python -c 'import socket, struct, typing, re, json') {floor:.3f} s")
    header = f"| command | kctl | kctl - floor | {' | '.join(peers)} | kctl / kafkactl | kctl / kaf |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for row in rows:
        ours = statistics.median(row.samples["kctl"])
        theirs = {peer: statistics.median(row.samples[peer]) for peer in peers if peer in row.samples}
        cells = [f"{theirs[peer]:.3f}" if peer in theirs else "" for peer in peers]
        if row.name.startswith("record consume") and theirs:
            # Throughput: how many times faster than the fastest peer.
            ratio = f"{min(theirs.values()) / ours:.2f}x faster than {min(theirs, key=theirs.__getitem__)} |"
        else:
            ratio = " | ".join(f"{ours / theirs[peer]:.2f}" if peer in theirs else "" for peer in ("kafkactl", "kaf"))
        # Paired: each round's kctl time less the floor measured beside it, so a drift in
        # the machine's speed between rounds cancels out.
        above = statistics.median(k - f for k, f in zip(row.samples["kctl"], row.floors))
        print(f"| {row.name} | {ours:.3f} | {1000 * above:+.0f} ms | {' | '.join(cells)} | {ratio} |")


def seed(kctl: list[str], bootstrap: str, args, env: dict[str, str]) -> None:
    """--topics topics of --partitions partitions, records in t001, --groups classic groups
    with offsets committed on it, and a topic of --records 1 KiB records to consume."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    topics = [f"t{i:03d}" for i in range(args.topics)]
    for names, partitions in ((topics, args.partitions), (["produced", "consumed"], 1)):
        subprocess.run([*kctl, "-b", bootstrap, "topic", "create", *names, "-p", str(partitions), "-q"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for i in range(20 * args.partitions):
        producer.produce("t001", value=b"%d" % i, partition=i % args.partitions)
    value = b"x" * 1024
    for i in range(args.records):
        while True:
            try:
                producer.produce("consumed", value=value)
                break
            except BufferError:  # librdkafka's queue holds 100,000 records: let it drain
                producer.poll(0.1)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    for i in range(args.groups):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g{i:03d}", "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition("t001", p, 10) for p in range(args.partitions)], asynchronous=False)
        consumer.close()


def rows_for(kctl: list[str], bootstrap: str, peers: dict[str, Path], workdir: Path) -> list[Row]:
    config = workdir / "kafkactl.yml"
    config.write_text(f"contexts:\n  default:\n    brokers:\n      - {bootstrap}\ncurrent-context: default\n")
    kaf = [str(peers["kaf"]), "-b", bootstrap] if "kaf" in peers else None
    kafkactl = [str(peers["kafkactl"]), "-C", str(config)] if "kafkactl" in peers else None
    kcat = ["kcat", "-b", bootstrap] if "kcat" in peers else None
    k = [*kctl, "-b", bootstrap]

    def some(**argvs: list[str] | None) -> dict[str, list[str]]:
        return {name: argv for name, argv in argvs.items() if argv is not None}

    def with_(base: list[str] | None, *more: str) -> list[str] | None:
        return [*base, *more] if base else None

    return [
        Row("--help", [*kctl, "--help"], {}),
        Row("topic list", [*k, "topic", "list"],
            some(kaf=with_(kaf, "topics"), kafkactl=with_(kafkactl, "get", "topics"), kcat=with_(kcat, "-L"))),
        Row("topic describe t001", [*k, "topic", "describe", "t001"],
            some(kaf=with_(kaf, "topic", "describe", "t001"), kafkactl=with_(kafkactl, "describe", "topic", "t001"),
                 kcat=with_(kcat, "-L", "-t", "t001"))),
        Row("partition list --under-replicated", [*k, "partition", "list", "--under-replicated"], {}),
        Row("cluster info", [*k, "cluster", "info"],
            some(kaf=with_(kaf, "nodes"), kafkactl=with_(kafkactl, "get", "brokers"))),
        Row("broker list", [*k, "broker", "list"],
            some(kaf=with_(kaf, "nodes"), kafkactl=with_(kafkactl, "get", "brokers"))),
        Row("group list", [*k, "group", "list"],
            some(kaf=with_(kaf, "groups"), kafkactl=with_(kafkactl, "get", "consumer-groups"))),
        Row("group describe g001", [*k, "group", "describe", "g001"],
            some(kaf=with_(kaf, "group", "describe", "g001"), kafkactl=with_(kafkactl, "describe", "consumer-group", "g001"))),
        # kaf's and kafkactl's describe shows each partition's lag: their `group lag`.
        Row("group lag g001", [*k, "group", "lag", "g001"],
            some(kaf=with_(kaf, "group", "describe", "g001"), kafkactl=with_(kafkactl, "describe", "consumer-group", "g001"))),
        # The Go CLIs' describe shows each partition's offsets and the topic's configs:
        # their `offset get` and `config describe`.
        Row("offset get t001", [*k, "offset", "get", "t001"],
            some(kaf=with_(kaf, "topic", "describe", "t001"), kafkactl=with_(kafkactl, "describe", "topic", "t001"))),
        Row("config describe topic t001", [*k, "config", "describe", "topic", "t001"],
            some(kaf=with_(kaf, "topic", "describe", "t001"), kafkactl=with_(kafkactl, "describe", "topic", "t001"))),
        Row("record produce (one line on stdin)", [*k, "record", "produce", "produced"],
            some(kaf=with_(kaf, "produce", "produced"), kafkactl=with_(kafkactl, "produce", "produced", "--value", "x"),
                 kcat=with_(kcat, "-P", "-t", "produced")), stdin=b"x\n"),
        Row("record consume (--records 1 KiB, to a pipe)", [*k, "record", "consume", "consumed"],
            some(kaf=with_(kaf, "consume", "consumed"), kafkactl=with_(kafkactl, "consume", "consumed", "--from-beginning", "--exit"),
                 kcat=with_(kcat, "-C", "-t", "consumed", "-o", "beginning", "-e", "-q"))),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--target", default="kafka,bundled", help="kafka, bundled or both (comma list)")
    args = parser.parse_args()

    peers: dict[str, Path] = {name: binary for name in GO_PEERS if (binary := go_peer(name))}
    if shutil.which("kcat"):
        peers["kcat"] = Path(shutil.which("kcat"))
    else:
        print("kcat: left out (not on PATH; apt-get install kcat)", file=sys.stderr)
    kctl = kctl_argv()
    floor = [sys.executable, "-c", "import socket, struct, typing, re, json"]
    with tempfile.TemporaryDirectory(prefix="kctl-bench-peers-") as scratch:
        workdir = Path(scratch)
        # A home of the run's own: kaf keeps a config in ~/.kaf, kctl its contexts.
        env = {**os.environ, "HOME": str(workdir / "home"), "XDG_CONFIG_HOME": str(workdir / "home/.config"),
               "XDG_STATE_HOME": str(workdir / "home/.local/state"), "KCTL_OUTPUT": "plain"}
        for target in args.target.split(","):
            stop, bootstrap = start(target, workdir / target)
            try:
                seed(kctl, bootstrap, args, env)
                rows = rows_for(kctl, bootstrap, peers, workdir)
                floor_s = measure(rows, floor, args.runs, env)
                report(target, rows, floor_s, [p for p in ("kaf", "kafkactl", "kcat") if p in peers])
            finally:
                stop()


def start(target: str, workdir: Path):
    """(stop, bootstrap) of a fresh broker of the target's kind."""
    workdir.mkdir(parents=True)
    if target == "kafka":
        from tests.backends.kafka import KafkaCluster

        cluster = KafkaCluster(nodes=1, workdir=workdir)
        cluster.start()
        print(f"Apache Kafka {cluster.version} at {cluster.bootstrap}", file=sys.stderr)
        return cluster.stop, cluster.bootstrap
    if target == "bundled":
        from kctl.broker.process import BrokerProcess

        broker = BrokerProcess(workdir)
        bootstrap = broker.start()
        print(f"the bundled broker at {bootstrap}", file=sys.stderr)
        return broker.stop, bootstrap
    raise SystemExit(f"--target: unknown target {target!r} (kafka, bundled)")


if __name__ == "__main__":
    main()
