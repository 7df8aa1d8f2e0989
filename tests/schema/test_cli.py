"""kctl schema against a real registry (tests/backends/registry.py), read back with
confluent-kafka's client: exact output, exit statuses and one-line errors."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from kctl.errors import ExitCode
from tests.support import help_world

pytestmark = pytest.mark.integration


@pytest.fixture
def registry(schema_registry, kctl):
    """kctl with KCTL_SCHEMA_REGISTRY_URL set, and confluent-kafka's client beside it."""
    client = SchemaRegistryClient({"url": schema_registry.url, "timeout": 30})  # no timeout is its default

    def run(*args: str, env: dict[str, str] | None = None, **kwargs):
        return kctl(*args, env={"KCTL_SCHEMA_REGISTRY_URL": schema_registry.url, **(env or {})}, **kwargs)

    run.client = client
    run.url = schema_registry.url
    return run


@pytest.fixture
def files(tmp_path):
    for name, text in {"order.avsc": json.dumps(help_world.ORDER_V1), "order-v2.avsc": json.dumps(help_world.ORDER_V2),
                       "broken.avsc": json.dumps(help_world.ORDER_BROKEN), "money.proto": help_world.MONEY_PROTO,
                       "payment.proto": help_world.PAYMENT_PROTO, "event.json": '{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"kind":{"type":"string"}},"required":["kind"]}'}.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_register_describe_versions_and_list(registry, files, unique_name):
    subject = unique_name("orders") + "-value"
    result = registry("schema", "register", subject, "--file", str(files / "order.avsc"), "-o", "json")
    assert result.exit_code == 0, result.stderr
    first = json.loads(result.stdout)
    latest = registry.client.get_latest_version(subject)
    assert first == {"subject": subject, "version": 1, "id": latest.schema_id, "type": "AVRO", "references": [], "schema": latest.schema.schema_str}
    # Registering the same schema again is not a new version.
    again = registry("schema", "register", subject, "--file", str(files / "order.avsc"), "-o", "json")
    assert json.loads(again.stdout)["version"] == 1
    registry.client.set_compatibility(subject, "BACKWARD")
    assert registry("schema", "register", subject, "--file", str(files / "order-v2.avsc")).exit_code == 0

    result = registry("schema", "versions", subject)
    v2 = registry.client.get_version(subject, 2).schema_id
    assert result.stdout == f"SUBJECT\tVERSION\tID\tTYPE\tREFERENCES\n{subject}\t1\t{first['id']}\tAVRO\t-\n{subject}\t2\t{v2}\tAVRO\t-\n"

    result = registry("schema", "describe", subject, "--version", "1")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        f"SUBJECT\t{subject}\nVERSION\t1\nID\t{first['id']}\nTYPE\tAVRO\n\nREFERENCES\nNAME\tSUBJECT\tVERSION\n\n"
        f"SCHEMA\n{json.dumps(json.loads(first['schema']), indent=2)}\n"
    )
    assert json.loads(registry("schema", "describe", subject, "-o", "json").stdout)["version"] == 2
    assert json.loads(registry("schema", "get-by-id", str(v2), "-o", "json").stdout)["schema"] == registry.client.get_schema(v2).schema_str

    listed = registry("schema", "list", "--prefix", subject[:-6], "-o", "json")
    assert json.loads(listed.stdout) == [{"subject": subject}]
    table = registry("schema", "list", "--prefix", subject[:-6], tty=True, env={"NO_COLOR": "1"})
    assert table.stdout.split() == ["SUBJECT", subject]


def test_protobuf_with_reference_and_json_schema(registry, files, unique_name):
    money, payments = unique_name("money") + ".proto", unique_name("payments") + "-value"
    assert registry("schema", "register", money, "--file", str(files / "money.proto")).exit_code == 0
    result = registry("schema", "register", payments, "--file", str(files / "payment.proto"), "--reference", f"money.proto={money}:1", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["references"] == [{"name": "money.proto", "subject": money, "version": 1}]
    registered = registry.client.get_latest_version(payments)
    assert registered.schema.schema_type == "PROTOBUF"
    assert [(r.name, r.subject, r.version) for r in registered.schema.references] == [("money.proto", money, 1)]
    versions = registry("schema", "versions", payments)
    assert versions.stdout.splitlines()[1].split("\t")[3:] == ["PROTOBUF", f"money.proto={money}:1"]

    events = unique_name("events") + "-value"
    result = registry("schema", "register", events, "--file", str(files / "event.json"), "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["type"] == "JSON" == registry.client.get_latest_version(events).schema.schema_type


def test_check_is_a_deploy_gate(registry, files, unique_name):
    subject = unique_name("gate") + "-value"
    registry.client.register_schema(subject, Schema(json.dumps(help_world.ORDER_V1), "AVRO"))
    registry.client.set_compatibility(subject, "BACKWARD")
    ok = registry("schema", "check", subject, "--file", str(files / "order-v2.avsc"), "-o", "json")
    assert ok.exit_code == 0, ok.stderr
    assert json.loads(ok.stdout) == {"subject": subject, "compatible": True, "messages": []}
    bad = registry("schema", "check", subject, "--file", str(files / "broken.avsc"), "-o", "json")
    assert bad.exit_code == ExitCode.CRITICAL
    assert json.loads(bad.stdout)["compatible"] is False
    assert registry.client.get_versions(subject) == [1]  # a check registers nothing
    # The registry refuses to register what check refused.
    refused = registry("schema", "register", subject, "--file", str(files / "broken.avsc"))
    assert refused.exit_code == ExitCode.INVALID
    assert refused.stderr.startswith(f"error: unable to register a schema under {subject}: ") and len(refused.stderr.splitlines()) == 1


def test_soft_then_permanent_delete(registry, files, unique_name):
    subject = unique_name("gone") + "-value"
    registry.client.register_schema(subject, Schema(json.dumps(help_world.ORDER_V1), "AVRO"))
    refused = registry("schema", "delete", subject)  # no terminal, no --yes
    assert refused.exit_code == ExitCode.ABORTED and registry.client.get_versions(subject) == [1]
    result = registry("schema", "delete", subject, "--yes")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"deleted {subject} version(s) 1\n"
    assert subject not in registry.client.get_subjects()
    assert json.loads(registry("schema", "list", "--deleted", "--prefix", subject, "-o", "json").stdout) == [{"subject": subject}]
    result = registry("schema", "delete", subject, "--permanent", "--yes")
    assert result.exit_code == 0, result.stderr
    assert json.loads(registry("schema", "list", "--deleted", "--prefix", subject, "-o", "json").stdout) == []


def test_bad_input_gets_one_line_and_its_status(registry, files, kctl, tmp_path):
    def one_line(result, status, start):
        assert result.exit_code == status, (result.exit_code, result.stderr)
        assert result.stderr.splitlines()[0].startswith(start), result.stderr
        assert "Traceback" not in result.stderr

    one_line(registry("schema", "describe", "no-such-subject"), ExitCode.NOT_FOUND, "error: unable to describe no-such-subject version latest: ")
    one_line(registry("schema", "get-by-id", "987654"), ExitCode.NOT_FOUND, "error: unable to get schema 987654: ")
    one_line(registry("schema", "describe", "x", "--version", "two"), ExitCode.USAGE, "error: unable to parse --version 'two'")
    one_line(registry("schema", "register", "x", "--file", str(files / "payment.proto"), "--reference", "money.proto"), ExitCode.USAGE,
             "error: unable to parse --reference 'money.proto': expected NAME=SUBJECT:VERSION")
    (tmp_path / "bad.avsc").write_text('{"type": "record",')
    one_line(registry("schema", "register", "x", "--file", str(tmp_path / "bad.avsc")), ExitCode.INVALID, f"error: unable to read schema file {tmp_path / 'bad.avsc'}: not JSON")
    one_line(registry("schema", "register", "x", "--file", str(tmp_path / "missing.avsc")), ExitCode.INVALID,
             f"error: unable to read schema file {tmp_path / 'missing.avsc'}: No such file or directory")
    one_line(kctl("schema", "list", env={"KCTL_SCHEMA_REGISTRY_URL": ""}), ExitCode.CONFIG, "error: unable to reach a schema registry: none is configured")
    from tests.backends.kafka import free_port

    dead = f"http://127.0.0.1:{free_port()}"
    one_line(kctl("schema", "list", "--registry-url", dead), ExitCode.UNREACHABLE, f"error: unable to list subjects: cannot reach the schema registry at {dead} ")


def test_compatibility_levels_and_modes(registry, files, unique_name):
    subject = unique_name("levels") + "-value"
    registry.client.register_schema(subject, Schema(json.dumps(help_world.ORDER_V1), "AVRO"))
    # Apicurio answers NONE for a subject without a level of its own: a global NONE would
    # make the two look alike, so the global level is BACKWARD for this test.
    before = registry.client.get_compatibility()
    registry.client.set_compatibility(level="BACKWARD")
    try:
        result = registry("schema", "config", "get", subject, "-o", "json")
        assert json.loads(result.stdout) == [{"subject": subject, "compatibility": "BACKWARD", "source": "global"}]
        result = registry("schema", "config", "set", subject, "--compatibility", "full_transitive")
        assert result.stdout == f"SUBJECT\tCOMPATIBILITY\tSOURCE\n{subject}\tFULL_TRANSITIVE\tsubject\n"
        assert registry.client.get_compatibility(subject) == "FULL_TRANSITIVE"
        assert registry("schema", "check", subject, "--file", str(files / "order-v2.avsc")).exit_code == 0  # a default: both ways
        result = registry("schema", "config", "delete", subject, "-o", "json")
        assert json.loads(result.stdout) == [{"subject": subject, "compatibility": "BACKWARD", "source": "global"}]
        assert json.loads(registry("schema", "config", "get", "-o", "json").stdout) == [{"subject": None, "compatibility": "BACKWARD", "source": "global"}]
    finally:
        registry.client.set_compatibility(level=before)

    result = registry("schema", "mode", "set", subject, "--mode", "readonly", "-o", "json")
    assert json.loads(result.stdout) == [{"subject": subject, "mode": "READONLY", "source": "subject"}]
    assert registry.client.get_mode(subject) == "READONLY"  # (Apicurio keeps modes but does not enforce them)
    assert registry("schema", "mode", "set", subject, "--mode", "readwrite").exit_code == 0
    assert registry.client.get_mode(subject) == "READWRITE"
    assert registry("schema", "mode", "get", "-o", "json").stdout == '[{"subject":null,"mode":"READWRITE","source":"global"}]\n'
    bad = registry("schema", "config", "set", subject, "--compatibility", "sideways")
    assert bad.exit_code == ExitCode.USAGE and bad.stderr.startswith("error: invalid value for '--compatibility': 'sideways' is not one of 'backward'")


@pytest.fixture
def guarded(schema_registry):
    """The registry behind HTTP basic authentication (user kctl, password s3cret) or a
    bearer token (t0ken), as registries are deployed behind a proxy that checks them:
    answers 401 as Confluent's registry does, else forwards the request."""
    import base64
    import threading
    import urllib.error
    import urllib.request
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    expected = ("Basic " + base64.b64encode(b"kctl:s3cret").decode(), "Bearer t0ken")

    class Proxy(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _forward(self):
            if self.headers.get("Authorization") not in expected:
                body = b'{"error_code":40101,"message":"Unauthorized"}'
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length) if length else None
            base = schema_registry.url.split("/apis/")[0]
            request = urllib.request.Request(base + self.path, data=data, method=self.command,
                                             headers={"Content-Type": self.headers.get("Content-Type", "application/json")})
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    status, body, kind = response.status, response.read(), response.headers.get("Content-Type", "application/json")
            except urllib.error.HTTPError as exc:
                status, body, kind = exc.code, exc.read(), exc.headers.get("Content-Type", "application/json")
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _forward

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/apis/ccompat/v7"
    server.shutdown()


def test_registry_from_the_context_with_credentials(kctl, guarded, files, tmp_path, unique_name):
    subject = unique_name("ctx") + "-value"
    secret = tmp_path / "registry.pass"
    secret.write_text("kctl:s3cret\n")
    assert kctl("context", "set", "prod", "-b", "127.0.0.1:9092", "--schema-registry-url", guarded,
                "--schema-registry-basic-auth-file", str(secret), "--use").exit_code == 0
    result = kctl("schema", "register", subject, "--file", str(files / "order.avsc"), "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(kctl("schema", "list", "--prefix", subject, "-o", "json").stdout) == [{"subject": subject}]

    # Wrong or missing credentials: 77, one line naming the registry.
    denied = kctl("schema", "list", env={"KCTL_SCHEMA_REGISTRY_BASIC_AUTH": "kctl:wrong"})
    assert denied.exit_code == ExitCode.NOT_AUTHORIZED
    assert denied.stderr == f"error: unable to list subjects: the schema registry at {guarded} refused the credentials (Unauthorized)\n"
    assert kctl("schema", "list", "--registry-url", guarded, env={"KCTL_SCHEMA_REGISTRY_BASIC_AUTH_FILE": str(tmp_path / "none")}).exit_code == ExitCode.CONFIG
    secret.write_text("no-colon\n")
    bad = kctl("schema", "list")
    assert (bad.exit_code, bad.stderr) == (ExitCode.CONFIG, "error: unable to use the schema registry's basic-auth: expected user:password\n")


def test_bearer_token_from_a_file_or_the_environment(kctl, guarded, tmp_path):
    token = tmp_path / "registry.token"
    token.write_text("t0ken\n")
    assert kctl("context", "set", "cloud", "-b", "127.0.0.1:9092", "--schema-registry-url", guarded,
                "--schema-registry-bearer-token-file", str(token), "--use").exit_code == 0
    assert kctl("schema", "list").exit_code == 0
    shown = json.loads(kctl("context", "show", "-o", "json").stdout)
    assert shown["schema_registry"]["bearer-token-file"] == str(token)
    denied = kctl("schema", "list", env={"KCTL_SCHEMA_REGISTRY_BEARER_TOKEN": "wrong"})
    assert (denied.exit_code, denied.stderr) == (ExitCode.NOT_AUTHORIZED, f"error: unable to list subjects: the schema registry at {guarded} refused the credentials (Unauthorized)\n")
    both = kctl("schema", "list", env={"KCTL_SCHEMA_REGISTRY_BASIC_AUTH": "kctl:s3cret"})
    assert (both.exit_code, both.stderr) == (ExitCode.CONFIG, "error: unable to use the schema registry: both basic-auth and bearer-token are set; keep one\n")
