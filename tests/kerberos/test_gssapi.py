"""SASL/GSSAPI against a real MIT KDC and Apache Kafka's GSSAPI listener (the
`kerberos_kafka` fixture): kctl's wire client authenticates through the `gssapi` binding,
librdkafka's clients through kctl's loopback bridge. Kafka's own tools, with the same
keytab, are the oracle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest


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


def _unreachable_kdc(kerberos_kafka, tmp_path) -> str:
    """A krb5.conf like the realm's whose KDC is a port nothing listens on."""
    from tests.backends.kafka import free_port

    text = kerberos_kafka.realm.krb5_conf.read_text().replace(f"127.0.0.1:{kerberos_kafka.realm.port}", f"127.0.0.1:{free_port()}")
    path = tmp_path / "krb5.conf"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("case", ["no ticket", "expired ticket", "wrong principal", "unknown service", "kdc unreachable"])
def test_kerberos_failures_are_one_line(kctl, kerberos_kafka, tmp_path, case):
    """Each Kerberos failure is one line naming it, exit 77 (or 69 for the KDC), on the
    wire client's path (topic list) and librdkafka's (record consume, through the bridge)."""
    flags = kerberos_flags(kerberos_kafka)
    env = kerberos_kafka.env(None)
    expected = {"no ticket": (77, "no Kerberos ticket"), "expired ticket": (77, "Kerberos ticket expired"),
                "wrong principal": (77, "Kerberos authentication as bob@KCTL.TEST failed"),
                "unknown service": (77, "the Kerberos KDC knows no service principal nosuch/localhost"),
                "kdc unreachable": (69, "Kerberos KDC unreachable")}[case]
    if case == "expired ticket":
        env = kerberos_kafka.env(kerberos_kafka.ticket_cache("alice", lifetime="2s"))
        time.sleep(3)  # the point: time passes beyond the ticket's 2-second life
    elif case == "wrong principal":  # alice's keytab, bob's name
        flags += ["-X", f"sasl.kerberos.keytab={kerberos_kafka.keytab('alice')}", "-X", f"sasl.kerberos.principal={kerberos_kafka.principal('bob')}"]
    elif case == "unknown service":
        env = kerberos_kafka.env(kerberos_kafka.ticket_cache("alice"))
        flags += ["-X", "sasl.kerberos.service.name=nosuch"]
    elif case == "kdc unreachable":
        env = {**env, "KRB5_CONFIG": _unreachable_kdc(kerberos_kafka, tmp_path)}
        flags += ["-X", f"sasl.kerberos.keytab={kerberos_kafka.keytab('alice')}", "-X", f"sasl.kerberos.principal={kerberos_kafka.principal('alice')}"]
    for command in (["topic", "list"], ["record", "consume", "kerb-tool", "-n", "1", "--timeout", "5"]):
        run = kctl(*flags, *command, env=env)
        assert run.exit_code == expected[0], (command, run.stderr)
        assert expected[1] in run.stderr, (command, run.stderr)
        assert "Traceback" not in run.stderr
        assert run.stderr.startswith("error: ") and len(run.stderr.strip().splitlines()) <= 2, run.stderr  # the error and its hint


def test_without_the_gssapi_binding_says_how_to_install_it(kctl, kerberos_kafka, monkeypatch):
    monkeypatch.setitem(sys.modules, "gssapi", None)  # import gssapi raises ImportError
    run = kctl(*kerberos_flags(kerberos_kafka), "topic", "list", env=kerberos_kafka.env(None))
    assert run.exit_code == 78, run.stderr
    assert "the gssapi package is not installed" in run.stderr and "pip install 'kctl[kerberos]'" in run.stderr


def test_group_commands_resets_and_top_with_kerberos(kctl, kerberos_kafka, monkeypatch):
    """A KIP-848 consumer and a classic one through the bridge; describe, lag, a reset
    (dry run, then executed and read back), delete; `kctl top` shows the group; Kafka's
    own ConsumerGroupCommand, with alice's keytab, sees what kctl committed."""
    from tests.top.pilot import groups_shown

    env = kerberos_kafka.env(kerberos_kafka.ticket_cache("alice"))
    flags = kerberos_flags(kerberos_kafka)
    assert kctl(*flags, "topic", "create", "kerb-groups", "--partitions", "2", env=env).exit_code == 0
    lines = "".join(f"record {i}\n" for i in range(40))
    assert kctl(*flags, "record", "produce", "kerb-groups", input=lines, env=env).exit_code == 0
    for group, protocol in (("kerb-classic", "classic"), ("kerb-848", "consumer")):
        run = kctl(*flags, "-X", f"group.protocol={protocol}", "record", "consume", "kerb-groups", "--from", "earliest",
                   "-n", "30", "--group", group, env=env)
        assert run.exit_code == 0, run.stderr
    run = kctl(*flags, "group", "describe", "kerb-848", "kerb-classic", "-o", "json", env=env)
    assert run.exit_code == 0, run.stderr
    assert {g["type"] for g in json.loads(run.stdout)} == {"consumer", "classic"}
    run = kctl(*flags, "group", "lag", "kerb-classic", "-o", "json", env=env)
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.stdout)[0]["lag_sum"] == 10
    oracle = kerberos_kafka.run_tool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server",
                                     kerberos_kafka.bootstrap, "--command-config", str(kerberos_kafka.tool_properties("alice")),
                                     "--describe", "--group", "kerb-classic")
    assert oracle.returncode == 0, oracle.stderr
    committed = sum(int(line.split()[3]) for line in oracle.stdout.splitlines() if line.startswith("kerb-classic "))
    assert committed == 30, oracle.stdout
    assert kctl(*flags, "group", "reset-offsets", "kerb-classic", "-t", "kerb-groups", "--to-earliest", env=env).exit_code == 0
    run = kctl(*flags, "group", "reset-offsets", "kerb-classic", "-t", "kerb-groups", "--to-earliest", "--execute", "--yes", env=env)
    assert run.exit_code == 0, run.stderr
    run = kctl(*flags, "group", "lag", "kerb-classic", "-o", "json", env=env)
    assert json.loads(run.stdout)[0]["lag_sum"] == 40, run.stdout
    properties = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}
    monkeypatch.setenv("KRB5_CONFIG", env["KRB5_CONFIG"])
    monkeypatch.setenv("KRB5CCNAME", env["KRB5CCNAME"])
    shown = groups_shown(kerberos_kafka.bootstrap, ["kerb-classic"], properties=properties)
    assert shown["kerb-classic"]
    run = kctl(*flags, "group", "delete", "kerb-classic", "--yes", env=env)
    assert run.exit_code == 0, run.stderr


def test_spark_dump_on_a_kerberos_cluster(kctl, kerberos_kafka, spark, tmp_path):
    """kctl's reader on a local master reads through the bridge; a cluster master and the
    JVM connector are refused in one line each."""
    env = kerberos_kafka.env(kerberos_kafka.ticket_cache("alice"))
    flags = kerberos_flags(kerberos_kafka)
    assert kctl(*flags, "topic", "create", "kerb-spark", "--partitions", "2", env=env).exit_code == 0
    assert kctl(*flags, "record", "produce", "kerb-spark", input="".join(f"r{i}\n" for i in range(20)), env=env).exit_code == 0
    run = kctl(*flags, "spark", "dump", "-t", "kerb-spark", "--out", str(tmp_path / "dump"), "-o", "json", env=env)
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.stdout)["records"] == 20
    for extra, says in ((["--master", "spark://127.0.0.1:7077"], "with a cluster master"), (["--engine", "jvm"], "with --engine jvm")):
        run = kctl(*flags, "spark", "dump", "-t", "kerb-spark", "--out", str(tmp_path / "refused"), *extra, env=env)
        assert run.exit_code == 78 and says in run.stderr, run.stderr


def test_the_binding_is_imported_only_with_gssapi_and_reads_need_no_bridge(kerberos_kafka):
    """A group read on the Kerberos listener imports the binding and kctl's Kerberos
    module, not the bridge nor any client library (the wire client serves it); on the
    plaintext listener, not even the binding (tests/test_startup.py asserts that for every
    everyday read)."""
    from tests.test_startup import PROBE

    watched = ["gssapi", "kctl.admin.client.kerberos", "kctl.admin.client.bridge", "confluent_kafka"]
    env = {**os.environ, **kerberos_kafka.env(kerberos_kafka.ticket_cache("alice"))}
    loaded = {}
    for name, argv in (("kerberos", kerberos_flags(kerberos_kafka)), ("plaintext", ["-b", kerberos_kafka.plaintext])):
        proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps([*argv, "group", "list"]), json.dumps(watched)],
                              capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        line = [line for line in proc.stderr.splitlines() if line.startswith("LOADED=")][-1]
        loaded[name] = {m.split(".")[0] if m.startswith("gssapi") else m for m in json.loads(line.removeprefix("LOADED="))}
    assert loaded == {"kerberos": {"gssapi", "kctl.admin.client.kerberos"}, "plaintext": set()}


@pytest.mark.parametrize("binding", ["installed", "missing"])
def test_the_bundled_broker_answers_gssapi_with_its_mechanisms(kctl, secured_bundled, monkeypatch, binding):
    """The bundled broker does not serve GSSAPI: a Kerberos client is told which mechanisms
    it enables, in one line, on the wire client's path and on librdkafka's (the bridge),
    before the binding is needed (so also where it is not installed)."""
    if binding == "missing":
        monkeypatch.setitem(sys.modules, "gssapi", None)  # import gssapi raises ImportError
    flags = ["-b", secured_bundled.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=GSSAPI"]
    for command in (["topic", "list"], ["record", "consume", "anything", "-n", "1"]):
        run = kctl(*flags, *command)
        assert run.exit_code == 77, run.stderr
        assert "does not enable SASL GSSAPI (it enables: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)" in run.stderr, run.stderr


def test_mirror_translate_and_failover_with_kerberos(kctl, kerberos_kafka, tmp_path):
    """MM2 replicating from a plaintext cluster (a bundled broker) into the Kerberos one: kctl
    mirror reads the checkpoints on the Kerberos side (a librdkafka consumer, through the
    bridge) and commits the translated offsets there. The checkpoint is written as MM2 writes
    one (kctl's own encoder, tested against MM2's in tests/mirror)."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from kctl.admin.mirror.records import Checkpoint, encode_checkpoint
    from kctl.broker.process import BrokerProcess

    source = BrokerProcess(tmp_path / "source")
    primary = source.start()
    try:
        plain = kerberos_kafka.plaintext
        assert kctl("-b", primary, "topic", "create", "kerb-mm", "--partitions", "2").exit_code == 0
        for topic, partitions in (("primary.kerb-mm", 2), ("primary.checkpoints.internal", 1)):
            assert kctl("-b", plain, "topic", "create", topic, "--partitions", str(partitions)).exit_code == 0
        for bootstrap, topic in ((primary, "kerb-mm"), (plain, "primary.kerb-mm")):
            producer = Producer({"bootstrap.servers": bootstrap})
            for partition in (0, 1):
                for i in range(10):
                    producer.produce(topic, value=f"{i}".encode(), partition=partition)
            if topic == "primary.kerb-mm":
                for partition in (0, 1):
                    key, value = encode_checkpoint(Checkpoint(group="kerb-mm-g", topic="primary.kerb-mm", partition=partition,
                                                              upstream_offset=5, downstream_offset=3, metadata=""))
                    producer.produce("primary.checkpoints.internal", key=key, value=value)
            producer.flush(30)
        consumer = Consumer({"bootstrap.servers": primary, "group.id": "kerb-mm-g", "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition("kerb-mm", p, 5) for p in (0, 1)], asynchronous=False)
        consumer.close()

        env = kerberos_kafka.env(kerberos_kafka.ticket_cache("alice"))
        assert kctl("context", "set", "primary", "-b", primary).exit_code == 0
        assert kctl("context", "set", "backup", "-b", kerberos_kafka.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT",
                    "-X", "sasl.mechanism=GSSAPI").exit_code == 0
        pair = ["--source", "primary", "--target", "backup"]
        run = kctl("--context", "backup", "mirror", "translate", "kerb-mm-g", *pair, "-o", "json", env=env)
        assert run.exit_code == 0, run.stderr
        rows = {(r["partition"], r["committed"], r["translated"]) for r in json.loads(run.stdout)}
        assert rows == {(0, 5, 3), (1, 5, 3)}, run.stdout
        run = kctl("--context", "backup", "mirror", "failover", "kerb-mm-g", *pair, "--execute", "--yes", env=env)
        assert run.exit_code == 0, run.stderr
        described = kctl("--context", "backup", "group", "lag", "kerb-mm-g", "-o", "json", env=env)
        assert described.exit_code == 0, described.stderr
        assert json.loads(described.stdout)[0]["lag_sum"] == 14, described.stdout  # 2 x (10 - 3)
    finally:
        source.stop()
