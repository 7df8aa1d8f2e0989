"""kctl connect against a real Kafka Connect worker (tests/backends/connect.py) on the
bundled broker and on Apache Kafka (where it asks for basic auth): Connect's own REST
answers are the oracle for what kctl prints and does.
On the bundled broker this is also a compatibility test: Connect keeps its configs,
offsets and statuses in compacted topics there."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.support.eventually import eventually, until

# On the bundled broker and one Apache Kafka node (kafka3's two workers: test_distributed.py).
pytestmark = [pytest.mark.integration, pytest.mark.single_node]

SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


def rest(connect, method: str, path: str, body=None):
    """Connect's own answer: (status, JSON)."""
    request = urllib.request.Request(connect.url + path, method=method, headers={"Content-Type": "application/json", **connect.authorization()},
                                     data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            data = response.read()
            return response.status, json.loads(data) if data else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def status(connect, name: str) -> dict:
    return rest(connect, "GET", f"/connectors/{name}/status")[1]


def records(kctl, env, topic: str, count: int) -> list[str]:
    """The topic's first `count` values, once it has that many (the connector's task
    writes them in its own time)."""

    def read() -> list[str]:
        result = kctl("record", "consume", topic, "--from", "earliest", "-n", str(count), "--format", "%v\\n", env=env)
        assert result.exit_code == 0 and len(result.stdout.splitlines()) == count, result.stderr
        return result.stdout.splitlines()
    return eventually(read, timeout=60, interval=0.5)


def test_the_cluster_answers(kctl, connect, env, cluster):
    info = kctl("connect", "info", "-o", "json", env=env)
    assert info.exit_code == 0, info.stderr
    assert json.loads(info.stdout) | {"url": None} == rest(connect, "GET", "/")[1] | {"url": None}
    assert json.loads(kctl("cluster", "info", "-o", "json", env=env).stdout)["cluster_id"] == json.loads(info.stdout)["kafka_cluster_id"]
    health = kctl("connect", "health", "-o", "json", env=env)
    assert health.exit_code == 0 and json.loads(health.stdout)["status"] == "healthy"
    plugins = json.loads(kctl("connect", "plugins", "-o", "json", env=env).stdout)
    assert {(p["class_name"], p["type"]) for p in plugins} >= {(SOURCE, "source"), (SINK, "sink")}
    everything = json.loads(kctl("connect", "plugins", "--all", "-o", "json", env=env).stdout)
    assert "transformation" in {p["type"] for p in everything} and len(everything) > len(plugins)
    logger = "org.apache.kafka.connect.runtime.WorkerSinkTask"
    assert kctl("connect", "logger", "set", logger, "debug", env=env).exit_code == 0
    listed = json.loads(kctl("connect", "logger", "list", "org.apache.kafka.connect.runtime", "-o", "json", env=env).stdout)
    assert {"logger": logger, "level": "DEBUG"}.items() <= next(row for row in listed if row["logger"] == logger).items()
    assert rest(connect, "GET", f"/admin/loggers/{logger}")[1]["level"] == "DEBUG"


def test_a_source_connector_through_its_lifecycle(kctl, connect, env, unique_name, tmp_path):
    name, topic = unique_name("source"), unique_name("lines")
    source = tmp_path / "input.txt"
    source.write_text("one\ntwo\nthree\n")
    spec = tmp_path / "source.json"
    spec.write_text(json.dumps({"name": name, "config": {"connector.class": SOURCE, "file": str(source), "topic": topic, "tasks.max": 1}}))

    created = kctl("connect", "create", "-f", str(spec), env=env)
    assert created.exit_code == 0, created.stderr
    assert records(kctl, env, topic, 3) == ['"one"', '"two"', '"three"']
    again = kctl("connect", "create", "-f", str(spec), env=env)
    assert again.exit_code == 6 and again.stderr.startswith("error: unable to create connector") and len(again.stderr.splitlines()) == 1

    def running() -> None:
        listed = {c["name"]: c for c in json.loads(kctl("connect", "list", "-o", "json", env=env).stdout)}
        assert name in listed and listed[name]["state"] == "RUNNING" and listed[name]["tasks_running"] == 1
    eventually(running, timeout=30)
    described = json.loads(kctl("connect", "describe", name, "-o", "json", env=env).stdout)
    assert described["config"] == rest(connect, "GET", f"/connectors/{name}/config")[1]
    assert described["topics"] == [topic] and described["type"] == "source" and described["lag"] is None
    assert [t["state"] for t in described["tasks"]] == [t["state"] for t in status(connect, name)["tasks"]]

    for verb, state in (("pause", "PAUSED"), ("resume", "RUNNING"), ("stop", "STOPPED")):
        changed = kctl("connect", verb, name, "-o", "json", env=env)
        assert changed.exit_code == 0, changed.stderr
        assert json.loads(changed.stdout)[0]["state"] == state == status(connect, name)["connector"]["state"]
    assert status(connect, name)["tasks"] == []  # stop waited for the tasks to go

    # The offsets, as Connect reports them: the bytes the source read.
    offsets = json.loads(kctl("connect", "offsets", "get", name, "-o", "json", env=env).stdout)
    assert offsets == rest(connect, "GET", f"/connectors/{name}/offsets")[1]["offsets"]
    assert offsets[0]["offset"] == {"position": len(source.read_bytes())}

    # A reset is a plan until --execute; then the source reads its file again.
    planned = kctl("connect", "offsets", "reset", name, env=env)
    assert planned.exit_code == 0 and "dry run" in planned.stderr
    assert rest(connect, "GET", f"/connectors/{name}/offsets")[1]["offsets"] == offsets
    reset = kctl("connect", "offsets", "reset", name, "--execute", env=env)
    assert reset.exit_code == 0, reset.stderr
    assert "undo journal:" in reset.stderr and "it is STOPPED" in reset.stderr
    assert rest(connect, "GET", f"/connectors/{name}/offsets")[1]["offsets"] == []
    assert kctl("connect", "resume", name, env=env).exit_code == 0
    assert records(kctl, env, topic, 6)[3:] == ['"one"', '"two"', '"three"']

    # Altered from RUNNING with --resume: stopped for the change, running again after
    # (once the re-read's offset is committed: Connect flushes them every 500 ms here).
    eventually(lambda: _assert_offsets(connect, name, offsets), timeout=30)
    partway = tmp_path / "offsets.json"
    partway.write_text(json.dumps([{"partition": offsets[0]["partition"], "offset": {"position": 4}}]))
    altered = kctl("connect", "offsets", "alter", name, "-f", str(partway), "--execute", "--resume", env=env)
    assert altered.exit_code == 0, altered.stderr
    assert status(connect, name)["connector"]["state"] == "RUNNING"
    # The source goes on from byte 4: "two" and "three" once more.
    assert records(kctl, env, topic, 8)[6:] == ['"two"', '"three"']
    # Undo puts back what a change replaced: here byte 0 replaced the end of the file.
    eventually(lambda: _assert_offsets(connect, name, offsets), timeout=30)
    start = tmp_path / "start.json"
    start.write_text(json.dumps([{"partition": offsets[0]["partition"], "offset": {"position": 0}}]))
    assert kctl("connect", "offsets", "alter", name, "-f", str(start), "--execute", env=env).exit_code == 0
    assert rest(connect, "GET", f"/connectors/{name}/offsets")[1]["offsets"][0]["offset"] == {"position": 0}
    undone = kctl("connect", "offsets", "alter", name, "--undo", "last", "--execute", env=env)
    assert undone.exit_code == 0, undone.stderr
    assert rest(connect, "GET", f"/connectors/{name}/offsets")[1]["offsets"] == offsets
    assert status(connect, name)["connector"]["state"] == "STOPPED"  # no --resume: stopped it stays

    refused = kctl("connect", "delete", name, env=env)
    assert refused.exit_code == 7 and status(connect, name) is not None
    assert kctl("connect", "delete", name, "--yes", env=env).exit_code == 0
    assert rest(connect, "GET", f"/connectors/{name}")[0] == 404
    gone = kctl("connect", "describe", name, env=env)
    assert gone.exit_code == 5 and gone.stderr.startswith(f"error: unable to describe connector '{name}'")


def test_a_sink_rewinds_to_an_altered_offset(kctl, connect, env, unique_name, tmp_path):
    name, topic = unique_name("sink"), unique_name("events")
    assert kctl("topic", "create", topic, "--partitions", "1", env=env).exit_code == 0
    produced = kctl("record", "produce", topic, input="".join(f'"event-{i}"\n' for i in range(5)), env=env)
    assert produced.exit_code == 0, produced.stderr
    output = tmp_path / "sink.txt"
    spec = tmp_path / "sink.properties"
    spec.write_text(f"name={name}\nconnector.class={SINK}\ntopics={topic}\nfile={output}\ntasks.max=1\n")
    assert kctl("connect", "create", "-f", str(spec), env=env).exit_code == 0
    until(lambda: output.exists() and len(output.read_text().splitlines()) == 5, timeout=60)

    def caught_up() -> None:
        described = json.loads(kctl("connect", "describe", name, "-o", "json", env=env).stdout)
        assert described["lag"] == {"group": f"connect-{name}", "lag_sum": 0, "lag_max": 0, "partitions_without_commit": 0}
    eventually(caught_up, timeout=30)

    target = tmp_path / "offsets.json"
    target.write_text(json.dumps({"offsets": [{"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 2}}]}))
    plan = kctl("connect", "offsets", "alter", name, "-f", str(target), "-o", "json", env=env)
    assert json.loads(plan.stdout) == [{"partition": {"kafka_topic": topic, "kafka_partition": 0}, "current": {"kafka_offset": 5},
                                        "new": {"kafka_offset": 2}}]
    altered = kctl("connect", "offsets", "alter", name, "-f", str(target), "--execute", "--resume", env=env)
    assert altered.exit_code == 0, altered.stderr
    assert status(connect, name)["connector"]["state"] == "RUNNING"
    until(lambda: len(output.read_text().splitlines()) == 8, timeout=60)
    assert output.read_text().splitlines()[5:] == ["event-2", "event-3", "event-4"]
    assert kctl("connect", "delete", name, "--yes", env=env).exit_code == 0


def test_bad_input_gets_one_line_and_its_status(kctl, connect, env, unique_name, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"connector.class": SINK, "tasks.max": "x", "topics": "t"}))
    validated = kctl("connect", "validate", "-f", str(bad), env=env)
    assert validated.exit_code == 65
    assert "tasks.max" in validated.stdout and "Not a number of type INT" in validated.stdout
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"connector.class": SINK, "topics": "t", "file": str(tmp_path / "x"), "name": "x"}))
    assert kctl("connect", "validate", "-f", str(good), env=env).exit_code == 0

    malformed = tmp_path / "malformed.json"
    malformed.write_text('{"name": "x",')
    for args in (("create", "-f", str(malformed)), ("describe", unique_name("missing")), ("pause", unique_name("missing")),
                 ("offsets", "get", unique_name("missing"))):
        result = kctl("connect", *args, env=env)
        assert result.exit_code == (65 if args[0] == "create" else 5), (args, result.stderr)
        assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr

    unreachable = kctl("connect", "list", env={**env, "KCTL_CONNECT_URL": "http://127.0.0.1:9"})
    assert unreachable.exit_code == 69 and "http://127.0.0.1:9" in unreachable.stderr.splitlines()[0]

    # Created paused, from a .properties file.
    name = unique_name("paused")
    spec = tmp_path / "paused.properties"
    spec.write_text(f"name={name}\nconnector.class={SINK}\ntopics={unique_name('t')}\nfile={tmp_path / 'out'}\n")
    assert kctl("connect", "create", "-f", str(spec), "--initial-state", "paused", env=env).exit_code == 0
    eventually(lambda: _assert_state(connect, name, "PAUSED"), timeout=30)
    # update: the changes shown, then the whole config replaced (a key left out is gone).
    replacement = tmp_path / "replacement.json"
    replacement.write_text(json.dumps({"connector.class": SINK, "topics": "elsewhere", "file": str(tmp_path / "out")}))
    shown = kctl("connect", "update", name, "-f", str(replacement), "--dry-run", "-o", "json", env=env)
    assert {(c["key"], c["change"]) for c in json.loads(shown.stdout)} >= {("topics", "changed")}
    assert kctl("connect", "update", name, "-f", str(replacement), env=env).exit_code == 7  # no terminal, no --yes
    assert kctl("connect", "update", name, "-f", str(replacement), "--yes", env=env).exit_code == 0
    assert rest(connect, "GET", f"/connectors/{name}/config")[1] == {"connector.class": SINK, "topics": "elsewhere",
                                                                     "file": str(tmp_path / "out"), "name": name}
    patched = kctl("connect", "patch", name, "--set", "tasks.max=2", "--delete", "file", "-o", "json", env=env)
    assert patched.exit_code == 0, patched.stderr
    stored = rest(connect, "GET", f"/connectors/{name}/config")[1]
    assert stored["tasks.max"] == "2" and "file" not in stored
    assert kctl("connect", "delete", name, "--yes", env=env).exit_code == 0


def _assert_offsets(connect, name: str, offsets: list) -> None:
    assert rest(connect, "GET", f"/connectors/{name}/offsets")[1]["offsets"] == offsets


def _assert_state(connect, name: str, state: str) -> None:
    assert (status(connect, name).get("connector") or {}).get("state") == state


def test_refused_credentials_exit_77(kctl, connect, env):
    if not connect.basic_auth:
        pytest.skip("the Connect workers ask for basic auth on the kafka backend (Apache Kafka) only")
    refused = kctl("connect", "list", env={**env, "KCTL_CONNECT_BASIC_AUTH": "admin:wrong"})
    assert refused.exit_code == 77 and "401" in refused.stderr and len(refused.stderr.splitlines()) == 2  # the error and its hint
    nobody = kctl("connect", "list", env={k: v for k, v in env.items() if k != "KCTL_CONNECT_BASIC_AUTH"})
    assert nobody.exit_code == 77


def test_tls_is_verified_with_the_ca_given(kctl, connect, env, tmp_path):
    """The worker behind a TLS front (tests/security/tls.py): kctl verifies its certificate
    against the context's CA, and refuses one from another CA (exit 69, as for Kafka)."""
    from tests.backends.kafka import free_port
    from tests.security.tls import TlsFront, make_certificates

    address = "127.0.0.2"
    ca, certificate, key = make_certificates(tmp_path, address)
    port = free_port()
    front = TlsFront(address, port, ("127.0.0.1", int(connect.url.rsplit(":", 1)[1])), certificate, key)
    try:
        secured = {**env, "KCTL_CONNECT_URL": f"https://{address}:{port}", "KCTL_CONNECT_SSL_CA_LOCATION": str(ca)}
        listed = kctl("connect", "info", "-o", "json", env=secured)
        assert listed.exit_code == 0, listed.stderr
        assert json.loads(listed.stdout)["url"] == f"https://{address}:{port}"
        other = tmp_path / "other"
        other.mkdir()
        other_ca, _cert, _key = make_certificates(other, address)
        refused = kctl("connect", "info", env={**secured, "KCTL_CONNECT_SSL_CA_LOCATION": str(other_ca)})
        assert refused.exit_code == 69 and "CERTIFICATE_VERIFY_FAILED" in refused.stderr, refused.stderr
    finally:
        front.close()
