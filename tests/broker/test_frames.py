"""Malformed frames close only the offending connection, never the broker; decoders are
fuzzed with hypothesis; oversized requests are refused before being buffered."""

from __future__ import annotations

import socket
import struct

from confluent_kafka.admin import AdminClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kctl.broker.protocol import apis, frames
from kctl.broker.protocol.errors import ProtocolError
from tests.broker.conftest import request_frame, roundtrip

API_VERSIONS_V0 = request_frame(18, 0, b"")


def _healthy(bootstrap: str) -> None:
    response = roundtrip(bootstrap, API_VERSIONS_V0)
    assert response is not None and response[:4] == struct.pack(">i", 1)
    assert struct.unpack_from(">h", response, 4)[0] == 0  # error_code NONE


def test_api_versions_lists_exactly_what_is_implemented(broker):
    response = roundtrip(broker.bootstrap, API_VERSIONS_V0)
    count = struct.unpack_from(">i", response, 6)[0]
    advertised = {k: (lo, hi) for k, lo, hi in struct.iter_unpack(">hhh", response[10:10 + 6 * count])}
    assert advertised == {a.key: (a.min_version, a.max_version) for a in apis.APIS.values()}
    assert advertised[0] == (0, 13)  # KAFKA-18659: Produce advertised from 0
    for not_implemented in (71, 72):  # KIP-714 telemetry
        assert not_implemented not in advertised
    for kip848 in (68, 69):
        assert kip848 in advertised
    for kip932 in (76, 77, 78, 79, 90, 91, 92):  # share groups
        assert kip932 in advertised
    assert (advertised[88], advertised[89]) == ((0, 0), (0, 0))  # streams groups, as Kafka 4.3
    for transactions in (22, 24, 25, 26, 27, 28, 61, 65, 66):
        assert transactions in advertised
    assert advertised[68] == (0, 1)  # ConsumerGroupHeartbeat, advertised to be refused (test_clients.py)


def test_unsupported_api_versions_version_is_answered_as_v0(broker):
    response = roundtrip(broker.bootstrap, request_frame(18, 99, b"", flexible=True))
    assert struct.unpack_from(">h", response, 4)[0] == 35  # UNSUPPORTED_VERSION, header v0


def test_malformed_frames_close_only_that_connection(broker, tmp_path):
    bad_frames = [
        struct.pack(">i", 3) + b"abc",                     # shorter than a header
        struct.pack(">i", -5),                             # negative size
        request_frame(9999, 0, b""),                       # unknown api key
        request_frame(3, 77, b""),                         # unsupported version
        request_frame(0, 1, b"\x00" * 10),                 # Produce v0-2 are refused
        request_frame(3, 12, b"\xff\xff\xff", flexible=True),  # truncated body
        struct.pack(">i", 20) + bytes(range(20)),          # garbage
        struct.pack(">i", 8) + struct.pack(">hhi", 18, 0, 1),  # header without client id
    ]
    # A client that stays connected the whole time is not disturbed.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert admin.list_topics(timeout=5) is not None
    for frame in bad_frames:
        assert roundtrip(broker.bootstrap, frame) is None, frame
        _healthy(broker.bootstrap)
    assert admin.list_topics(timeout=5).brokers
    log = broker.log_path.read_text()
    assert "unknown api key 9999" in log
    assert "unsupported Metadata version 77" in log


def test_oversized_request_is_refused_before_reading_it(broker):
    host, port = broker.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(struct.pack(">i", 200 * 1024 * 1024))  # 200 MiB announced, none sent
        assert sock.recv(1) == b""  # closed at once, nothing buffered
    _healthy(broker.bootstrap)
    assert "request size 209715200 is outside" in broker.log_path.read_text()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_header_parser_raises_only_protocol_errors(data):
    try:
        header, pos = frames.parse_header(memoryview(data))
        frames.skip_tagged_fields(memoryview(data), pos)
    except ProtocolError:
        pass


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(apis.APIS)), st.integers(0, 18), st.binary(max_size=120))
def test_request_decoders_survive_garbage(key, version, body):
    """Whatever the bytes, decoding gives a request or raises ProtocolError (the server
    closes the connection on it), naming the API: nothing else escapes, nothing hangs."""
    api = apis.APIS[key]
    if not api.min_version <= version <= api.max_version:
        return
    try:
        apis.decode_request(api, version, memoryview(body))
    except ProtocolError as exc:
        assert str(exc).startswith(f"malformed {api.name} v{version} request: "), exc


def _fuzz(bootstrap: str, seed: int) -> tuple[int, int]:
    """Sixty frames of random bodies for random APIs and versions: each gets its answer
    (the request decoded: an answer to its correlation id, an error code in it) or a
    closed connection (it did not), within 3 s, and the broker serves the next. The
    count of each."""
    import random

    rng = random.Random(seed)
    answered = closed = 0
    for number in range(60):
        key = rng.choice(sorted(apis.APIS))
        api = apis.APIS[key]
        version = rng.randint(api.lowest_served, api.max_version)
        body = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 64)))
        try:
            answer = roundtrip(bootstrap, request_frame(key, version, body, correlation_id=1000 + number, flexible=api.flexible(version)),
                               timeout=3)
        except TimeoutError:
            raise AssertionError(f"no answer and no close within 3 s: {api.name} v{version} {body.hex()}") from None
        if answer is None:
            closed += 1
        else:
            assert struct.unpack_from(">i", answer)[0] == 1000 + number, (api.name, version, body.hex())
            answered += 1
        _healthy(bootstrap)
    return answered, closed


def test_fuzzed_frames_never_stop_the_broker(broker):
    answered, closed = _fuzz(broker.bootstrap, 7)
    assert answered and closed  # both kinds were exercised
    assert "after an internal error" not in broker.log_path.read_text()


def test_fuzzed_frames_never_stop_a_broker_with_the_authorizer(tmp_path):
    """The same with ACLs enforced: each request goes through its API's guard
    (handlers/access.py) before its handler, as a principal with no ACLs."""
    from kctl.broker.process import BrokerProcess

    process = BrokerProcess(tmp_path / "data", extra_args=["--authorizer", "--super-user", "User:nobody"])
    process.start()
    try:
        _fuzz(process.bootstrap, 11)
        assert "after an internal error" not in process.log_path.read_text()
    finally:
        process.stop()
