"""How many requests each everyday read sends, counted by the delaying proxy the distance
benchmark uses (bench/delay_proxy.py, here with no delay), in front of a bundled broker
that advertises itself under another name than the one kctl bootstraps by (`localhost`
for 127.0.0.1, as a load balancer or DNS alias would). On a cluster 20 ms away every
request kctl waits for costs 20 ms: a read that grows a request fails here, whatever
the time it took (bench/bench_distance.py measures the times)."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from kctl.broker.process import BrokerProcess
from kctl.messages.api_keys import name as api_name

ROOT = Path(__file__).resolve().parents[2]

# read -> the most requests it may send, in order of what it sends today. One connection
# each: the bootstrap connection is recognised as the cluster's broker.
BUDGET = {
    ("topic", "list"): 2,  # ApiVersions, Metadata
    ("topic", "describe", "t"): 5,  # ApiVersions, Metadata, ListOffsets x2, DescribeConfigs (storage and cleanup.policy)
    ("partition", "list", "--under-replicated"): 2,
    ("cluster", "info"): 2,  # ApiVersions, DescribeCluster
    ("broker", "list"): 2,
    ("group", "list"): 5,  # ApiVersions, Metadata, ListGroups, FindCoordinator, DescribeGroups
    # A named group's type and state from its coordinator's ListGroups (no Metadata for
    # the brokers); its coordinator found once.
    ("group", "describe", "g"): 5,  # ApiVersions, FindCoordinator, ListGroups, OffsetFetch, DescribeGroups
    # ... Metadata, ListOffsets x3 (log start, end, and the earliest local offset: tiered
    # storage seen without a DescribeConfigs round)
    ("group", "lag", "g"): 8,
    ("group", "lag", "--all"): 9,  # ApiVersions, Metadata, ListGroups, FindCoordinator, OffsetFetch, Metadata, ListOffsets x3
    ("offset", "get", "t"): 4,  # ApiVersions, Metadata, ListOffsets x2
    ("config", "describe", "topic", "t"): 2,  # ApiVersions, DescribeConfigs
}


def _load_proxy():
    spec = importlib.util.spec_from_file_location("delay_proxy", ROOT / "bench" / "delay_proxy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["delay_proxy"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _kctl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kctl", *args], capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def behind_proxy(tmp_path_factory):
    """(proxy, bootstrap, env): a bundled broker advertised as localhost:PROXY, the
    proxy's address by its other name, 127.0.0.1:PROXY, and an environment with a cache
    of kctl's own (the broker's API versions, learnt by the first command)."""
    port = _free_port()
    proxy = _load_proxy().DelayProxy(("127.0.0.1", port), 0.0)
    proxy_port = proxy.start()
    broker = BrokerProcess(tmp_path_factory.mktemp("distance"), port=port,
                           extra_args=["--advertised-host", "localhost", "--advertised-port", str(proxy_port)])
    broker.start()
    bootstrap = f"127.0.0.1:{proxy_port}"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path_factory.mktemp("cache"))}
    try:
        created = _kctl(env, "-b", bootstrap, "topic", "create", "t", "-p", "4", "-q")
        assert created.returncode == 0, created.stderr
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition("t", p, 0) for p in range(4)], asynchronous=False)
        consumer.close()
        yield proxy, bootstrap, env
    finally:
        broker.stop()
        proxy.stop()


@pytest.mark.parametrize("read", list(BUDGET), ids=" ".join)
def test_each_read_sends_no_more_requests_than_its_budget(behind_proxy, read):
    proxy, bootstrap, env = behind_proxy
    proxy.take()
    result = _kctl(env, "-b", bootstrap, *read)
    traffic = proxy.take()
    assert result.returncode == 0, result.stderr
    sent = [api_name(r.api_key) for r in traffic.requests]
    assert len(sent) <= BUDGET[read], sent
    assert traffic.connections == 1, f"{traffic.connections} connections: {sent}"


def test_the_proxy_counts_what_a_client_sends(behind_proxy):
    """The counting itself: librdkafka's metadata read is ApiVersions and Metadata, on
    the bootstrap connection and then, librdkafka not recognising its broker under the
    advertised name, on a second one."""
    from confluent_kafka.admin import AdminClient

    proxy, bootstrap, _env = behind_proxy
    proxy.take()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert "t" in admin.list_topics(timeout=10).topics
    traffic = proxy.take()
    sent = [api_name(r.api_key) for r in traffic.requests]
    assert sent[:2] == ["ApiVersions", "Metadata"], sent
    # The broker sends clients back through the proxy (--advertised-port), or what they
    # ask after their first Metadata answer would go round it, uncounted.
    [broker] = admin.list_topics(timeout=10).brokers.values()
    assert (broker.host, broker.port) == ("localhost", proxy.port)


def _cache_file(env: dict[str, str], bootstrap: str) -> Path:
    return Path(env["XDG_CACHE_HOME"]) / "kctl" / "api-versions" / bootstrap.replace(":", "_")


def test_api_versions_go_out_beside_the_first_request(behind_proxy):
    """With the broker's versions cached, the first request does not wait for ApiVersions'
    answer: both are sent before either answer arrives (one round, seen by the proxy as
    two requests on the connection with no answer between them)."""
    proxy, bootstrap, env = behind_proxy
    assert _cache_file(env, bootstrap).read_text().splitlines()[0].split()[0] == "0"  # learnt by the fixture's first command
    proxy.delay = 0.05  # 100 ms round trips: a request sent after an answer is >= 100 ms after the one before
    try:
        proxy.take()
        result = _kctl(env, "-b", bootstrap, "topic", "list")
        traffic = proxy.take()
    finally:
        proxy.delay = 0.0
    assert result.returncode == 0, result.stderr
    first, second = traffic.requests[:2]
    assert [api_name(first.api_key), api_name(second.api_key)] == ["ApiVersions", "Metadata"]
    assert second.at - first.at < 0.05


@pytest.mark.parametrize("cached", ["0 0 1\n3 0 5\n", "not a cache\n"], ids=["stale", "garbage"])
def test_a_wrong_cache_never_changes_the_result(behind_proxy, cached):
    """A cache that says other versions than the broker answers (an upgrade, another
    broker on the address since): the answer read beside the first request disagrees,
    the read is asked again on a new connection as without a cache, and the cache is
    mended. The output is the same."""
    proxy, bootstrap, env = behind_proxy
    expected = _kctl(env, "-b", bootstrap, "topic", "describe", "t", "-o", "json")
    assert expected.returncode == 0, expected.stderr
    right = _cache_file(env, bootstrap).read_text()
    _cache_file(env, bootstrap).write_text(cached)
    proxy.take()
    result = _kctl(env, "-b", bootstrap, "topic", "describe", "t", "-o", "json")
    traffic = proxy.take()
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == expected.stdout
    assert _cache_file(env, bootstrap).read_text() == right
    if cached.startswith("0 0 1"):  # Metadata v5 chosen from it: the answer says otherwise, and a new connection asks
        assert traffic.connections == 2, [api_name(r.api_key) for r in traffic.requests]


def test_a_cached_address_that_no_longer_answers_fails_as_without_the_cache(tmp_path):
    """Something that accepts connections and never answers, where the cache remembers a
    broker: the same one line, exit status and time as without the cache."""
    import socket as sockets
    import threading
    import time

    from kctl.errors import ExitCode

    listener = sockets.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held = []
    threading.Thread(target=lambda: [held.append(listener.accept()) for _ in range(8)], daemon=True).start()
    address = f"127.0.0.1:{listener.getsockname()[1]}"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    try:
        without = _kctl(env, "-b", address, "--timeout", "1", "topic", "list")
        _cache_file(env, address).parent.mkdir(parents=True, exist_ok=True)
        _cache_file(env, address).write_text("0 0 4\n3 0 12\n18 0 4\n")
        started = time.monotonic()
        cached = _kctl(env, "-b", address, "--timeout", "1", "topic", "list")
        assert time.monotonic() - started < 3
    finally:
        listener.close()
    assert (cached.returncode, cached.stderr) == (without.returncode, without.stderr) == (ExitCode.UNREACHABLE, without.stderr)
    assert without.stderr.startswith(f"error: unable to list topics: cluster unreachable at {address}"), without.stderr


def test_every_pipelined_api_is_one_kctl_speaks():
    from kctl.admin.client.wire import _READS
    from kctl.messages import codec

    for name in _READS:
        assert codec.definition(name + "Request")["type"] == "request"


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"])
def test_sasl_sends_what_needs_no_answer_beside_api_versions(tmp_path, mechanism):
    """On a SASL listener, SaslHandshake goes out beside ApiVersions (one round, seen by
    the proxy as requests with no answer between them), and once the broker's versions
    are cached, PLAIN's message, SCRAM's first and OAUTHBEARER's token go with them: a
    topic list over PLAIN or OAUTHBEARER in three rounds, then two; over SCRAM in four,
    then three (each request once waited for the one before: four and five). A wrong
    password (an expired token) is still one line."""
    port = _free_port()
    delay = 0.1  # 200 ms round trips: a send that waited for an answer is >= 200 ms after the one before; pipelined ones come < 100 ms apart even on a loaded machine
    proxy = _load_proxy().DelayProxy(("127.0.0.1", port), delay)
    proxy_port = proxy.start()
    broker = BrokerProcess(tmp_path / "broker", port=port, extra_args=[
        "--sasl", mechanism.lower(), "--user", "alice:secret", "--advertised-host", "localhost", "--advertised-port", str(proxy_port)])
    broker.start()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    flags = ["-b", f"127.0.0.1:{proxy_port}", "-X", "security.protocol=SASL_PLAINTEXT", "-X", f"sasl.mechanism={mechanism}"]
    if mechanism == "OAUTHBEARER":
        from tests.security.token_endpoint import unsecured_jwt

        (tmp_path / "alice.jwt").write_text(unsecured_jwt("alice", 300))
        (tmp_path / "wrong").write_text(unsecured_jwt("alice", -60))  # expired
        flags += ["-X", f"sasl.oauthbearer.token.file={tmp_path / 'alice.jwt'}"]
    else:
        flags += ["-X", "sasl.username=alice", "-X", "sasl.password=secret"]
    runs = []
    try:
        for _ in range(2):  # without the cache, then with what the first run learnt
            proxy.take()
            runs.append((_kctl(env, *flags, "topic", "list"), proxy.take()))
        wrong = _kctl(env, *flags[:-1], f"sasl.oauthbearer.token.file={tmp_path / 'wrong'}" if mechanism == "OAUTHBEARER"
                      else "sasl.password=wrong", "topic", "list")
    finally:
        broker.stop()
        proxy.stop()
    exchange = ["SaslAuthenticate"] * (2 if mechanism.startswith("SCRAM-") else 1)
    for together, (result, traffic) in zip((2, 3), runs):
        assert result.returncode == 0, result.stderr
        sent = [api_name(r.api_key) for r in traffic.requests]
        assert sent == ["ApiVersions", "SaslHandshake", *exchange, "Metadata"], sent
        first, last = traffic.requests[0], traffic.requests[together - 1]
        assert last.at - first.at < delay, sent
        assert traffic.rounds(delay) == len(sent) - together + 1, sent
    assert wrong.returncode != 0 and wrong.stderr.startswith("error: ") and "authentication failed" in wrong.stderr, wrong.stderr


def test_a_read_of_several_brokers_connects_to_them_side_by_side(tmp_path, monkeypatch):
    """A read that asks several brokers it has no connection to yet (a three-broker
    cluster's `log-dirs`, `group lag --all`, a topic led by three brokers) opens their
    connections at once, so it waits for the slowest broker's handshakes, not their sum.
    Three node ids reach the one bundled broker through a proxy that forwards nothing
    until three connections are open: connections opened one after another, each
    waiting for its ApiVersions answer, are held out until its timeout."""
    from kctl.admin.client.wire import WireClient
    from kctl.config.model import ClientSettings
    from kctl.messages import apis

    port = _free_port()
    proxy = _load_proxy().DelayProxy(("127.0.0.1", port), 0.0, hold=3, hold_timeout=10.0)
    proxy_port = proxy.start()
    broker = BrokerProcess(tmp_path / "broker", port=port)
    broker.start()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no versions cached: each connection waits for them
    wire = WireClient(ClientSettings(bootstrap_servers=f"127.0.0.1:{proxy_port}", properties={}, timeout=30, context=None))
    try:
        for node in (1, 2, 3):
            wire.learn(node, "127.0.0.1", proxy_port)
        every = {"topics": [], "allow_auto_topic_creation": False}
        answers = wire.fan_out([(node, apis.METADATA, every, 4, 9) for node in (1, 2, 3)], wire.deadline())
    finally:
        wire.close()
        broker.stop()
        proxy.stop()
    assert [len(answer.brokers) for answer in answers] == [1, 1, 1]
    assert proxy.traffic.connections == 3
    assert not proxy.held_out, "the connections were opened one after another"
