"""Where kctl connect finds a Connect cluster: contexts (one or several), --connect NAME|URL,
KCTL_CONNECT and KCTL_CONNECT_*; and that contexts show its secrets masked."""

from __future__ import annotations

import json

import pytest

from kctl.admin.connect.rest import connect_settings
from kctl.errors import ConfigError

CLUSTERS = {"main": {"url": "http://main:8083", "basic-auth": "admin:secret"}, "cdc": {"url": "https://cdc:8083/"}}


def test_the_only_cluster_is_used_and_several_need_a_choice():
    assert connect_settings({"main": CLUSTERS["main"]}, {}, None, 5).url == "http://main:8083"
    with pytest.raises(ConfigError) as several:
        connect_settings(CLUSTERS, {}, None, 5)
    assert "cdc, main" in several.value.message and "{connect} NAME" in several.value.hint
    chosen = connect_settings(CLUSTERS, {}, "cdc", 5)
    assert (chosen.name, chosen.url, chosen.basic_auth) == ("cdc", "https://cdc:8083", None)
    assert connect_settings(CLUSTERS, {}, None, 5, env_name="main").basic_auth == "admin:secret"
    with pytest.raises(ConfigError) as unknown:
        connect_settings(CLUSTERS, {}, "other", 5)
    assert "(it has: cdc, main)" in unknown.value.message


def test_a_url_and_the_environment():
    given = connect_settings(CLUSTERS, {"basic-auth": "u:p"}, "http://elsewhere:8083", 5)
    assert (given.name, given.url, given.basic_auth) == (None, "http://elsewhere:8083", "u:p")
    from_env = connect_settings(CLUSTERS, {"url": "http://env:8083"}, None, 5)
    assert from_env.url == "http://env:8083" and from_env.basic_auth is None
    # KCTL_CONNECT_* settings apply over the chosen cluster's.
    assert connect_settings(CLUSTERS, {"basic-auth": "other:pw"}, "main", 5).basic_auth == "other:pw"
    with pytest.raises(ConfigError, match="no Connect cluster is configured"):
        connect_settings({}, {}, None, 5)
    with pytest.raises(ConfigError, match="http:// or https://"):
        connect_settings({}, {"url": "connect:8083"}, None, 5)
    with pytest.raises(ConfigError, match="expected user:password"):
        connect_settings({}, {"url": "http://c:1", "basic-auth": "nopassword"}, None, 5)


def test_credentials_from_a_file(tmp_path):
    secret = tmp_path / "connect.pass"
    secret.write_text("admin:from-file\n")
    settings = connect_settings({"main": {"url": "http://c:1", "basic-auth-file": str(secret)}}, {}, None, 5)
    assert settings.basic_auth == "admin:from-file"
    with pytest.raises(ConfigError, match="basic-auth-file"):
        connect_settings({"main": {"url": "http://c:1", "basic-auth-file": str(tmp_path / "missing")}}, {}, None, 5)


def test_contexts_keep_several_clusters_and_mask_their_secrets(kctl, config_home, tmp_path):
    assert kctl("context", "set", "prod", "-b", "b1:9092", "--connect-url", "http://main:8083").exit_code == 0
    assert kctl("context", "set", "prod", "--connect-name", "cdc", "--connect-url", "https://cdc:8083",
                "--connect-basic-auth-file", "~/cdc.pass").exit_code == 0
    shown = json.loads(kctl("context", "show", "prod", "-o", "json").stdout)
    assert shown["connect"] == {"cdc": {"basic-auth-file": "~/cdc.pass", "url": "https://cdc:8083"}, "default": {"url": "http://main:8083"}}
    several = kctl("connect", "list")
    assert several.exit_code == 78 and "cdc, default" in several.stderr
    assert kctl("context", "set", "prod", "--unset", "connect.cdc").exit_code == 0
    assert list(json.loads(kctl("context", "show", "prod", "-o", "json").stdout)["connect"]) == ["default"]
    # The only one left is used; it is not there, so: unreachable, naming the URL.
    unreachable = kctl("connect", "list", "--timeout", "2", env={"KCTL_CONNECT_URL": "http://127.0.0.1:9"})
    assert unreachable.exit_code == 69 and "http://127.0.0.1:9" in unreachable.stderr


def test_connect_tables_in_the_config_file_are_checked(kctl, config_home):
    path = config_home / "kctl" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('current-context = "x"\n[contexts.x.connect.main]\nurl = "http://c:1"\ncolour = "blue"\n')
    result = kctl("connect", "list")
    assert result.exit_code == 78 and "connect.main has unknown key 'colour'" in result.stderr


def test_a_rebalance_is_asked_again_until_it_is_over():
    """Connect answers 409, 503, or (a request forwarded to the leader mid-rebalance) 500
    naming the rebalance: asked again within --timeout; any other 500 is an error at once."""
    import http.server
    import threading

    from kctl.admin.connect.rest import ConnectClient, ConnectSettings
    from kctl.errors import KctlError

    answers = [(500, b'{"error_code":500,"message":"Request cannot be completed because a rebalance is expected"}'),
               (409, b'{"error_code":409,"message":"Cannot complete request momentarily due to stale configuration"}'),
               (200, b'["file-source"]'),
               (500, b'{"error_code":500,"message":"Failed to read the config"}')]
    asked = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            status, body = answers[len(asked)]
            asked.append(self.path)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = ConnectClient(ConnectSettings(name=None, url=f"http://127.0.0.1:{server.server_port}", timeout=10))
        assert client.request("GET", "/connectors", action="list connectors") == ["file-source"]
        assert len(asked) == 3
        with pytest.raises(KctlError, match="answered 500: Failed to read the config"):
            client.request("GET", "/connectors", action="list connectors")
        client.close()
    finally:
        server.shutdown()
