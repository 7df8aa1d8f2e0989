"""kctl context: contexts are stored, layered, masked and selected as documented."""

from __future__ import annotations

import stat

from kctl.errors import ExitCode


def test_context_lifecycle(kctl, config_home):
    assert kctl("context", "list").stdout == "CURRENT\tNAME\tBOOTSTRAP-SERVERS\n"

    result = kctl("context", "set", "local", "-b", "127.0.0.1:9092")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"context 'local' saved to {config_home / 'kctl' / 'config.toml'}\n"
    assert stat.S_IMODE((config_home / "kctl" / "config.toml").stat().st_mode) == 0o600

    kctl("context", "set", "prod", "-b", "p:9092", "-X", "security.protocol=SASL_SSL", "-X", "sasl.password=s3cret", "--timeout", "20")
    assert kctl("context", "list").stdout == "CURRENT\tNAME\tBOOTSTRAP-SERVERS\n\tlocal\t127.0.0.1:9092\n\tprod\tp:9092\n".replace("\tlocal", "*\tlocal")

    assert kctl("context", "use", "prod").exit_code == 0
    shown = kctl("context", "show")
    assert shown.stdout == (
        "CONTEXT\tprod\nBOOTSTRAP-SERVERS\tp:9092\nTIMEOUT\t20\nAWS-MSK-IAM\t\nSCHEMA-REGISTRY\t\nCONNECT\t\n"
        "SECRETS\tsasl.password=config file\n\nPROPERTIES\nKEY\tVALUE\n"
        "sasl.password\t[hidden]\nsecurity.protocol\tSASL_SSL\n"
    )
    assert "s3cret" not in kctl("context", "show", "prod", "-o", "json").stdout

    kctl("context", "set", "prod", "--unset", "sasl.password")
    assert "sasl.password" not in kctl("context", "show", "prod").stdout

    result = kctl("context", "delete", "prod")
    assert (result.exit_code, result.stderr) == (
        ExitCode.ABORTED,
        "error: unable to delete context 'prod': confirmation required and stdin is not a terminal\nhint: pass --yes to confirm\n",
    )
    assert kctl("context", "delete", "prod", "--yes").exit_code == 0
    assert kctl("context", "list", "-o", "json").stdout == '[{"name":"local","current":false,"bootstrap_servers":"127.0.0.1:9092"}]\n'


def test_effective_settings_layer_env_and_flags(kctl):
    kctl("context", "set", "dev", "-b", "dev:9092", "-X", "client.id=file")
    result = kctl("-X", "client.id=flag", "context", "show", "-o", "json", env={"KCTL_X_SASL_PASSWORD": "pw", "KCTL_TIMEOUT": "3"})
    assert result.stdout == (
        '{"name":"dev","bootstrap_servers":"dev:9092","timeout":3.0,"properties":'
        '[{"key":"client.id","value":"flag"},{"key":"sasl.password","value":"[hidden]"}],"aws_msk_iam":{},"schema_registry":{},"connect":{},'
        '"secrets":{"sasl.password":"environment or -X"}}\n'
    )


def test_schema_registry_settings(kctl, config_home):
    result = kctl("context", "set", "prod", "-b", "p:9092", "--schema-registry-url", "https://registry.example.com",
                  "--schema-registry-basic-auth-file", "~/registry.pass", "--schema-registry-ca", "/etc/ca.pem")
    assert result.exit_code == 0, result.stderr
    text = (config_home / "kctl" / "config.toml").read_text()
    assert '[contexts.prod.schema-registry]\nbasic-auth-file = "~/registry.pass"\nssl-ca-location = "/etc/ca.pem"\nurl = "https://registry.example.com"\n' in text
    shown = kctl("context", "show", "prod", "-o", "json", env={"KCTL_SCHEMA_REGISTRY_BASIC_AUTH": "me:s3cret"})
    assert '"schema_registry":{"basic-auth-file":"~/registry.pass","ssl-ca-location":"/etc/ca.pem","url":"https://registry.example.com"}' in shown.stdout
    effective = kctl("--context", "prod", "context", "show", "-o", "json", env={"KCTL_SCHEMA_REGISTRY_BASIC_AUTH": "me:s3cret"})
    assert '"basic-auth":"[hidden]"' in effective.stdout and "s3cret" not in effective.stdout
    kctl("context", "set", "prod", "--unset", "schema-registry")
    assert '"schema_registry":{}' in kctl("context", "show", "prod", "-o", "json").stdout


def test_secrets_are_masked_in_debug_output(kctl):
    result = kctl("-b", "127.0.0.1:1", "--timeout", "1", "-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanism=PLAIN", "-X", "sasl.username=u", "-X", "sasl.password=topsecret", "--debug", "topic", "list")
    assert result.exit_code == ExitCode.UNREACHABLE
    assert "[hidden]" in result.stderr
    assert "topsecret" not in result.stderr


def test_unknown_context(kctl):
    result = kctl("--context", "nope", "topic", "list")
    assert (result.exit_code, result.stdout) == (ExitCode.NOT_FOUND, "")
    assert result.stderr == (
        "error: unable to use context 'nope' (from --context): no such context\n"
        "hint: kctl context list shows the contexts; kctl context set creates one\n"
    )
    assert kctl("context", "use", "nope").exit_code == ExitCode.NOT_FOUND
    assert kctl("context", "show", "nope").exit_code == ExitCode.NOT_FOUND


def test_malformed_config_file(kctl, config_home):
    path = config_home / "kctl" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("[contexts.a\n")
    result = kctl("context", "list")
    assert result.exit_code == ExitCode.CONFIG
    assert result.stderr.startswith(f"error: unable to read config file {path}: ")
    assert len(result.stderr.splitlines()) == 1


COMMENTED = '''# kctl contexts, kept by hand
current-context = "prod"  # what most commands use

# Production: careful.
[contexts.prod]
timeout = 15
bootstrap-servers = "b1:9092,b2:9092"

[contexts.prod.properties]  # librdkafka, verbatim
"security.protocol" = "SASL_SSL"
"enable.ssl.certificate.verification" = true  # a TOML boolean, read as "true"

[contexts.staging]  # goes away next quarter
bootstrap-servers = "s1:9092"
'''


def test_a_users_comments_and_order_survive_every_edit(kctl, config_home):
    """context set|use|delete edit the file the user wrote: comments, blank lines, key
    order and value styles stay; only what changed is written."""
    path = config_home / "kctl" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(COMMENTED)

    assert kctl("context", "set", "dev", "-b", "localhost:9092", "-X", "client.id=me").exit_code == 0
    assert path.read_text() == COMMENTED + '\n[contexts.dev]\nbootstrap-servers = "localhost:9092"\n\n[contexts.dev.properties]\n"client.id" = "me"\n'

    assert kctl("context", "set", "prod", "--timeout", "30", "-X", "sasl.mechanism=PLAIN").exit_code == 0
    assert kctl("context", "use", "dev").exit_code == 0
    assert kctl("context", "delete", "staging", "--yes").exit_code == 0
    assert path.read_text() == '''# kctl contexts, kept by hand
current-context = "dev"  # what most commands use

# Production: careful.
[contexts.prod]
timeout = 30.0
bootstrap-servers = "b1:9092,b2:9092"

[contexts.prod.properties]  # librdkafka, verbatim
"security.protocol" = "SASL_SSL"
"enable.ssl.certificate.verification" = true  # a TOML boolean, read as "true"
"sasl.mechanism" = "PLAIN"

[contexts.dev]
bootstrap-servers = "localhost:9092"

[contexts.dev.properties]
"client.id" = "me"
'''
    assert kctl("context", "show", "prod", "-o", "json").stdout.count('"value":"true"') == 1
