"""ACLs at scale: `kctl acl list` against kafka-acls --list (issue 16).

A real Apache Kafka 4.x node (Maven Central jars, tests/backends) with Kafka's
StandardAuthorizer holds 10,000 ACLs (1,000 principals, each with 10 ACLs on its own
topic prefix and group), created by one `kctl acl create --file`. Times listing all of
them, and listing one principal's, medians of several runs, with ratios.

    python bench/bench_security.py [--runs 5] [--acls 10000]

Target: `acl list` of 10,000 ACLs >= 8x faster than kafka-acls --list.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from common import kctl_argv, print_rows, time_command

from tests.backends.kafka import KafkaCluster

ACL_COMMAND = "org.apache.kafka.tools.AclCommand"
OPERATIONS = ("READ", "WRITE", "DESCRIBE", "CREATE", "ALTER", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS")


def acl_rows(count: int) -> list[dict]:
    rows = []
    for user in range(count // 10):
        principal = f"User:app-{user:04d}"
        for op in OPERATIONS:
            rows.append({"resource_type": "TOPIC", "resource_name": f"app-{user:04d}.", "pattern_type": "PREFIXED",
                         "principal": principal, "host": "*", "operation": op, "permission_type": "ALLOW"})
        rows.append({"resource_type": "GROUP", "resource_name": f"app-{user:04d}", "pattern_type": "LITERAL",
                     "principal": principal, "host": "*", "operation": "READ", "permission_type": "ALLOW"})
        rows.append({"resource_type": "TOPIC", "resource_name": "shared", "pattern_type": "LITERAL",
                     "principal": principal, "host": "10.0.0.1", "operation": "READ", "permission_type": "DENY"})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--acls", type=int, default=10_000)
    args = parser.parse_args()
    kctl = kctl_argv()

    with tempfile.TemporaryDirectory(prefix="kctl-bench-") as workdir:
        cluster = KafkaCluster(nodes=1, workdir=Path(workdir), authorizer=True)
        cluster.start()
        try:
            b = cluster.bootstrap
            path = Path(workdir) / "acls.json"
            path.write_text(json.dumps(acl_rows(args.acls)))
            started = time.perf_counter()
            subprocess.run([*kctl, "-b", b, "--timeout", "120", "acl", "create", "--file", str(path), "-o", "json"], check=True, capture_output=True)
            created = time.perf_counter() - started
            listed = subprocess.run([*kctl, "-b", b, "acl", "list", "--no-headers"], check=True, capture_output=True, text=True).stdout.count("\n")
            tool = lambda *a: cluster.tool_command(ACL_COMMAND, "--bootstrap-server", b, "--list", *a)  # noqa: E731
            theirs = subprocess.run(tool(), check=True, capture_output=True, text=True).stdout.count("(principal=")
            rows = [
                (f"kctl acl list ({listed:,} ACLs)", time_command([*kctl, "-b", b, "acl", "list"], args.runs),
                 f"kafka-acls --list ({theirs:,} ACLs)", time_command(tool(), args.runs)),
                ("kctl acl list -o json", time_command([*kctl, "-b", b, "acl", "list", "-o", "json"], args.runs), "", None),
                ("kctl acl list --principal (10)", time_command([*kctl, "-b", b, "acl", "list", "--principal", "User:app-0500"], args.runs),
                 "kafka-acls --list --principal", time_command(tool("--principal", "User:app-0500"), args.runs)),
            ]
            print(f"Apache Kafka {cluster.version}, StandardAuthorizer; {args.acls:,} ACLs created by one `acl create --file` in {created:.2f} s")
            print_rows(rows)
        finally:
            cluster.stop()


if __name__ == "__main__":
    main()
