"""The limits of a shared broker (issue 60): connections.max.idle.ms, max.connections,
max.connections.per.ip, socket.request.max.bytes and fetch.max.bytes, set with --config
and honoured as Kafka's SocketServer honours them, with silent, stalled and non-reading
clients beside a healthy producer that must not notice them."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Producer

from kctl.broker.process import BrokerProcess
from kctl.broker.protocol import apis
from tests.broker.conftest import read_exactly, request_frame
from tests.support.eventually import until, within

pytestmark = pytest.mark.integration

API_VERSIONS_V0 = request_frame(18, 0, b"")


@pytest.fixture
def start_broker(tmp_path, config_home):
    started = []

    def start(*configs: str) -> BrokerProcess:
        process = BrokerProcess(tmp_path / f"data{len(started)}", extra_args=[f"--config={c}" for c in configs])
        process.start()
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


def connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def answered(sock: socket.socket, frame: bytes = API_VERSIONS_V0, timeout: float = 5.0) -> bool | None:
    """True when the request got an answer, False when the broker closed the connection,
    None when nothing came within `timeout`."""
    sock.settimeout(timeout)
    try:
        sock.sendall(frame)
        head = read_exactly(sock, 4)
        return head is not None and read_exactly(sock, struct.unpack(">i", head)[0]) is not None
    except TimeoutError:
        return None
    except (ConnectionResetError, BrokenPipeError):
        return False


def served_once_room(bootstrap: str, seconds: float = 10.0) -> socket.socket:
    """A connection that is served, once the broker has seen others close (it counts a
    connection until it has read its end)."""

    def served() -> socket.socket | None:
        sock = connect(bootstrap)
        if answered(sock):
            return sock
        sock.close()
        return None

    sock = within(served, seconds, interval=0.05)
    assert sock is not None, "no connection served"
    return sock


def closed_at(sock: socket.socket, seconds: float) -> float:
    """When (time.monotonic()) the broker closed the connection, reading whatever comes;
    infinity if it had not within `seconds`."""
    sock.settimeout(seconds)
    try:
        while True:
            if not sock.recv(1 << 16):
                return time.monotonic()
    except TimeoutError:
        return float("inf")
    except ConnectionResetError:
        return time.monotonic()


def fetch_frame(topic: str, max_wait_ms: int, correlation_id: int = 1, partition_max_bytes: int = 1 << 20) -> bytes:
    api = apis.APIS[1]
    cls = apis.message_class(api, "Request")
    fields = {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 50 << 20, "isolation_level": 0,
              "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": partition_max_bytes}]}]}
    body = cls(version=4, **apis._convert_fields(cls._struct, fields)).encode(version=4)
    return request_frame(1, 4, body, correlation_id=correlation_id)


class HealthyProducer:
    """A librdkafka producer sending a record every 20 ms on a thread; each delivery's
    latency is recorded, and any failure."""

    def __init__(self, bootstrap: str, topic: str):
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
        self.topic = topic
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            sent = time.monotonic()

            def report(error, _message, sent=sent):
                if error is not None:
                    self.failures.append(str(error))
                else:
                    self.latencies.append(time.monotonic() - sent)

            self.producer.produce(self.topic, b"healthy", on_delivery=report)
            self.producer.poll(0.02)
        self.producer.flush(10)

    def __enter__(self) -> HealthyProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(15)


def create_topic(bootstrap: str, topic: str) -> None:
    subprocess.run([sys.executable, "-m", "kctl", "-b", bootstrap, "topic", "create", topic, "-q"], check=True, capture_output=True)


def test_idle_and_stalled_connections_are_closed_and_busy_ones_are_not(start_broker):
    broker = start_broker("connections.max.idle.ms=1000")
    create_topic(broker.bootstrap, "healthy")
    create_topic(broker.bootstrap, "empty")
    with HealthyProducer(broker.bootstrap, "healthy") as healthy:
        started = time.monotonic()
        silent = connect(broker.bootstrap)  # says nothing at all
        stalled = connect(broker.bootstrap)
        stalled.sendall(struct.pack(">i", 100) + b"\x00\x12")  # a size, then 2 of its 100 bytes
        waiting = connect(broker.bootstrap)
        # A Fetch long-poll of 2.5 s on an empty partition is in its handler, not idle.
        waiting.sendall(fetch_frame("empty", 2500))
        assert 0.9 <= closed_at(silent, 10) - started <= 4
        assert 0.9 <= closed_at(stalled, 10) - started <= 4
        assert answered(waiting, b"", timeout=10) is True
        answered_at = time.monotonic()
        assert answered_at - started >= 2.3
        # ... and, answered, it is idle like any other.
        assert 0.5 <= closed_at(waiting, 10) - answered_at <= 4
        served = len(healthy.latencies)
        until(lambda: len(healthy.latencies) > served + 5, timeout=10, interval=0.05)  # and it is still served
    assert healthy.failures == []
    assert len(healthy.latencies) > 50 and max(healthy.latencies) < 2.0
    assert broker.log_path.read_text().count("(connections.max.idle.ms)") >= 3


def test_a_client_that_stops_reading_holds_at_most_one_answer(start_broker):
    """200 Fetches of 1 MiB each sent without reading an answer: the broker reads the next
    request only once the last answer is written out, so its memory grows by about one
    answer, not 200; the healthy producer's latency does not move, and once the client
    has made no progress for connections.max.idle.ms it is closed."""
    broker = start_broker("connections.max.idle.ms=3000")
    create_topic(broker.bootstrap, "big")
    create_topic(broker.bootstrap, "healthy")
    filler = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50})
    for _ in range(40):
        filler.produce("big", b"x" * 500_000)
    assert filler.flush(30) == 0

    def rss_mb() -> float:
        status = open(f"/proc/{broker.process.pid}/status").read()
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) / 1024

    before = rss_mb()
    with HealthyProducer(broker.bootstrap, "healthy") as healthy:
        reader = connect(broker.bootstrap)
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sent = 0
        reader.settimeout(0.2)
        try:
            for i in range(200):
                reader.sendall(fetch_frame("big", 0, correlation_id=i + 1))
                sent += 1
        except (TimeoutError, BlockingIOError):
            pass  # the broker stopped reading: the kernel's buffers are full
        time.sleep(1.5)  # the point: the broker has time to read and answer more, if it would
        grown = rss_mb() - before
        assert grown < 40, f"the broker grew {grown:.0f} MB for one client that reads nothing ({sent} requests sent)"
        assert closed_at(reader, 10) - time.monotonic() <= 6
    assert healthy.failures == []
    assert max(healthy.latencies) < 2.0  # a broker blocked on the reader would stall it for its idle 3 s


def test_connection_limits_per_address_and_in_all(start_broker):
    broker = start_broker("max.connections.per.ip=3")
    first = [connect(broker.bootstrap) for _ in range(3)]
    assert all(answered(sock) is True for sock in first)
    extra = connect(broker.bootstrap)
    assert answered(extra) is False  # closed at once, as Kafka's TooManyConnectionsException
    first.pop().close()
    again = served_once_room(broker.bootstrap)
    assert "max.connections.per.ip (3) reached for 127.0.0.1" in broker.log_path.read_text()
    for sock in [*first, again]:
        sock.close()
    served_once_room(broker.bootstrap).close()
    # Raised at runtime, as Kafka allows.
    raised = subprocess.run([sys.executable, "-m", "kctl", "-b", broker.bootstrap, "config", "alter", "broker", "1", "--set",
                             "max.connections.per.ip=10"], capture_output=True, text=True)
    assert raised.returncode == 0, raised.stderr
    more = [connect(broker.bootstrap) for _ in range(6)]
    assert all(answered(sock) is True for sock in more)

    limited = start_broker("max.connections=2")
    served = [connect(limited.bootstrap) for _ in range(2)]
    assert all(answered(sock) is True for sock in served)
    waiting = connect(limited.bootstrap)
    assert answered(waiting, timeout=1.0) is None  # waits unserved, as at Kafka's acceptor
    served.pop().close()
    assert answered(waiting, b"", timeout=5) is True  # the slot freed: its request is answered
    for sock in [*more, *served, waiting]:
        sock.close()


def test_request_and_fetch_size_limits(start_broker):
    broker = start_broker("socket.request.max.bytes=20000", "fetch.max.bytes=1024")
    create_topic(broker.bootstrap, "sized")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for _ in range(10):  # ten batches of one record each
        producer.produce("sized", b"y" * 500)
        assert producer.flush(30) == 0
    big = connect(broker.bootstrap)
    assert answered(big, request_frame(18, 0, b"\x00" * 30000)) is False
    assert "request size" in broker.log_path.read_text()
    # A Fetch asking for 50 MB gets fetch.max.bytes' worth: one batch of ~570 bytes, not ten.
    sock = connect(broker.bootstrap)
    sock.settimeout(10)
    sock.sendall(fetch_frame("sized", 0))
    head = read_exactly(sock, 4)
    assert head is not None and 500 < struct.unpack(">i", head)[0] < 1500
