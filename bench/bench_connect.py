"""`kctl connect list`, `export` and `diff` of many connectors on one Connect worker (issue 38).

A real Kafka Connect 4.3.1 worker (tests/backends/connect.py) runs on the bundled broker
with N FileStreamSource connectors, each reading a file of its own into one topic, all
running. Timed, median of several runs after a warm-up:

- `kctl connect list` beside its anchor, what operators run today: curl of the same
  request (`/connectors?expand=status&expand=info`) piped to jq, which prints the same
  columns (name, type, state, tasks running/total, failed, worker);
- `kctl export --kind connector` and `kctl diff -f` of its output (no changes).

    python bench/bench_connect.py [--connectors 200] [--runs 7]

Targets: list at the anchor's speed or better (a ratio); export and diff of 200
connectors under 2 s each.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from common import kctl_argv, print_rows, time_command

from kctl.broker.process import BrokerProcess
from tests.backends.connect import ConnectCluster

JQ = (r'.[] | [.status.name, .status.type, .status.connector.state, '
      r'"\([.status.tasks[] | select(.state == "RUNNING")] | length)/\(.status.tasks | length)", '
      r'([.status.tasks[] | select(.state == "FAILED")] | length), .status.connector.worker_id] | @tsv')


def post(url: str, body: dict) -> None:
    request = urllib.request.Request(f"{url}/connectors", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 201


def running(url: str, count: int) -> bool:
    with urllib.request.urlopen(f"{url}/connectors?expand=status", timeout=60) as response:
        answer = json.load(response)
    return len(answer) == count and all([t["state"] for t in c["status"]["tasks"]] == ["RUNNING"] for c in answer.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connectors", type=int, default=200)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    for tool in ("curl", "jq"):
        if shutil.which(tool) is None:
            sys.exit(f"bench_connect: {tool} is needed for the anchor")
    kctl = kctl_argv()

    with tempfile.TemporaryDirectory(prefix="kctl-bench-") as workdir:
        work = Path(workdir)
        broker = BrokerProcess(work / "broker")
        bootstrap = broker.start()
        workers = ConnectCluster(work / "connect", bootstrap)
        try:
            started = time.perf_counter()
            workers.start()
            print(f"Connect worker up in {time.perf_counter() - started:.1f} s; creating {args.connectors} connectors", file=sys.stderr)
            for i in range(args.connectors):
                source = work / f"in-{i}.txt"
                source.write_text(f"line {i}\n")
                post(workers.url, {"name": f"source-{i:04d}", "config": {
                    "connector.class": "FileStreamSource", "file": str(source), "topic": "bench-lines", "tasks.max": "1"}})
            deadline = time.monotonic() + 300
            while not running(workers.url, args.connectors):
                assert time.monotonic() < deadline, "connectors not all running in 300 s"
                time.sleep(1)

            env = {**os.environ, "KCTL_CONNECT_URL": workers.url, "KCTL_BOOTSTRAP_SERVERS": bootstrap}
            listed = subprocess.run([*kctl, "connect", "list"], capture_output=True, text=True, env=env, check=True).stdout
            anchor = ["bash", "-c", f"curl -s '{workers.url}/connectors?expand=status&expand=info' | jq -r '{JQ}'"]
            theirs = subprocess.run(anchor, capture_output=True, text=True, check=True).stdout
            # The same rows (kctl adds a header line).
            assert len(listed.splitlines()) == len(theirs.splitlines()) + 1 == args.connectors + 1, (listed[:300], theirs[:300])

            rows = [("connect list", time_command([*kctl, "connect", "list"], args.runs, env=env), "curl | jq (same request)",
                     time_command(anchor, args.runs))]
            exported = work / "connectors.yaml"
            export = ["bash", "-c", f"{' '.join(kctl)} export --kind connector > {exported}"]
            rows.append((f"export --kind connector ({args.connectors})", time_command(export, args.runs, env=env), "(target 2 s)", None))
            rows.append((f"diff -f (no changes, {args.connectors})", time_command([*kctl, "diff", "-f", str(exported)], args.runs, env=env),
                         "(target 2 s)", None))
            print_rows(rows)
        finally:
            workers.stop()
            broker.stop()


if __name__ == "__main__":
    main()
