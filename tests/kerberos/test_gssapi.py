"""SASL/GSSAPI against a real MIT KDC and Apache Kafka's GSSAPI listener (the
`kerberos_kafka` fixture): kctl's wire client authenticates through the `gssapi` binding,
librdkafka's clients through kctl's loopback bridge. Kafka's own tools, with the same
keytab, are the oracle."""

from __future__ import annotations

import json


def kerberos_flags(kerberos_kafka, **extra: str) -> list[str]:
    flags = ["-b", kerberos_kafka.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=GSSAPI"]
    for key, value in extra.items():
        flags += ["-X", f"{key.replace('_', '.')}={value}"]
    return flags


def test_topic_reads_with_a_ticket_cache(kctl, kerberos_kafka):
    cache = kerberos_kafka.ticket_cache("alice")
    env = kerberos_kafka.env(cache)
    created = kerberos_kafka.run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", kerberos_kafka.bootstrap,
                                      "--command-config", str(kerberos_kafka.tool_properties("alice")),
                                      "--create", "--topic", "kerb-tool", "--partitions", "2")
    assert created.returncode == 0, created.stderr
    run = kctl(*kerberos_flags(kerberos_kafka), "topic", "list", "-o", "json", env=env)
    assert run.exit_code == 0, run.stderr
    assert "kerb-tool" in [t["name"] for t in json.loads(run.stdout)]


def test_librdkafka_paths_through_the_bridge(kctl, kerberos_kafka):
    env = kerberos_kafka.env(kerberos_kafka.ticket_cache("alice"))
    flags = kerberos_flags(kerberos_kafka)
    run = kctl(*flags, "topic", "create", "kerb-records", "--partitions", "3", env=env)
    assert run.exit_code == 0, run.stderr
    run = kctl(*flags, "record", "produce", "kerb-records", "--input", "jsonl", input="".join(
        json.dumps({"key": f"k{i}", "value": f"v{i}"}) + "\n" for i in range(50)), env=env)
    assert run.exit_code == 0, run.stderr
    run = kctl(*flags, "record", "consume", "kerb-records", "--from", "earliest", "-n", "50", "--group", "kerb-g",
               "-o", "jsonl", env=env)
    assert run.exit_code == 0, run.stderr
    assert sorted(json.loads(line)["value"] for line in run.stdout.splitlines()) == sorted(f"v{i}" for i in range(50))
    run = kctl(*flags, "group", "lag", "kerb-g", "-o", "json", env=env)
    assert run.exit_code == 0, run.stderr


def test_sasl_ssl_with_a_keytab_alone(kctl, kerberos_kafka):
    """Over TLS, with no ticket cache at all: tickets come from the keytab (into kctl's
    memory, not the user's cache); librdkafka's path through the bridge, which terminates TLS."""
    env = kerberos_kafka.env(None)
    flags = ["-b", kerberos_kafka.tls_bootstrap, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=GSSAPI",
             "-X", f"ssl.ca.location={kerberos_kafka.ca}", "-X", f"sasl.kerberos.keytab={kerberos_kafka.keytab('bob')}",
             "-X", f"sasl.kerberos.principal={kerberos_kafka.principal('bob')}"]
    run = kctl(*flags, "topic", "create", "kerb-tls", "--partitions", "2", env=env)
    assert run.exit_code == 0, run.stderr
    run = kctl(*flags, "record", "produce", "kerb-tls", input="over tls\n", env=env)
    assert run.exit_code == 0, run.stderr
    run = kctl(*flags, "record", "consume", "kerb-tls", "--from", "earliest", "-n", "1", "-o", "jsonl", env=env)
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.stdout)["value"] == "over tls"
    assert not (kerberos_kafka.directory / "no-such-cache").exists()
