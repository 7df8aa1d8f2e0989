"""The two producers behind `kctl record produce`: a small input read in full goes through
kctl's own idempotent producer (kctl.admin.client.wire_producer), anything else through
librdkafka. Both must put a key on the same partition, and the wire producer must keep
the idempotent producer's promise when an answer is lost or the broker restarts mid-produce."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
from confluent_kafka import Producer

from kctl.broker.process import BrokerProcess
from tests.cli.test_record import read_all
from tests.support.eventually import eventually
from tests.support.kafka_proxy import ADDRESS, KafkaProxy

pytestmark = pytest.mark.integration

PRODUCE = 0


def records(bootstrap: str, topic: str, partitions: int) -> list[tuple[int, bytes | None, bytes]]:
    """(partition, key, value) of every record of the topic, sorted."""
    return sorted((p, key, value) for p, _offset, _ts, key, value, _headers in read_all(bootstrap, topic, partitions))


def test_small_input_takes_the_wire_path_and_keys_land_where_librdkafka_puts_them(kctl, cluster, unique_name, caplog):
    """kctl's own producer puts each key where librdkafka does with the same partitioner:
    murmur2 (`murmur2_random`, Java's placement) by default, CRC-32 (`consistent_random`,
    librdkafka's default) with --partitioner consistent."""
    lines = "".join(f"key-{i}\tvalue-{i}\n" for i in range(60)) + "\tempty key\n"
    caplog.set_level(logging.DEBUG, logger="kctl.wire")
    for flags, partitioner in (((), "murmur2_random"), (("--partitioner", "consistent"), "consistent_random")):
        ours, theirs = unique_name("keys-kctl"), unique_name("keys-rdkafka")
        for name in (ours, theirs):
            assert kctl("-b", cluster.bootstrap, "topic", "create", name, "-p", "7").exit_code == 0
        caplog.clear()
        result = kctl("-b", cluster.bootstrap, "record", "produce", ours, "--key-separator", "\t", *flags, input=lines)
        assert result.exit_code == 0, result.stderr
        assert any(r.getMessage().startswith("send Produce ") for r in caplog.records)  # kctl's own producer sent it
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "partitioner": partitioner})
        for line in lines.splitlines():
            key, value = line.split("\t")
            producer.produce(theirs, value=value.encode(), key=key.encode())
        assert producer.flush(30) == 0
        ours_found, theirs_found = records(cluster.bootstrap, ours, 7), records(cluster.bootstrap, theirs, 7)
        if partitioner == "consistent_random":
            # An empty key is no key to the consistent partitioner (a random partition): compared apart.
            ours_found, theirs_found = [r for r in ours_found if r[1]], [r for r in theirs_found if r[1]]
        assert ours_found == theirs_found, partitioner
        assert len(ours_found) == len(theirs_found) >= 60


def test_a_stream_still_goes_through_librdkafka(cluster, unique_name):
    """Input that has not ended within the read-ahead's grace (a pipe kept open) is
    produced by librdkafka, record by record as it arrives."""
    topic = unique_name("stream")
    subprocess.run([sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "topic", "create", topic, "-p", "1"], check=True,
                   capture_output=True)
    process = subprocess.Popen([sys.executable, "-m", "kctl", "-b", cluster.bootstrap, "record", "produce", topic, "--debug"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdin.write(b"first\n")
    process.stdin.flush()
    # The first record is written while the input is still open (kctl's own producer would
    # wait for the end): only then does the input go on and end.
    def first_written() -> None:
        assert records(cluster.bootstrap, topic, 1), "the first record is not written yet"

    eventually(first_written, timeout=30)
    process.stdin.write(b"second\n")
    process.stdin.close()
    err = process.stderr.read()
    assert process.wait(60) == 0, err
    assert b"send Produce" not in err
    assert [v for _p, _k, v in records(cluster.bootstrap, topic, 1)] == [b"first", b"second"]


@pytest.fixture
def proxied_broker(tmp_path):
    """(proxy, broker, bootstrap through the proxy) for a bundled broker that advertises the
    proxy's address."""
    broker = BrokerProcess(tmp_path / "data", extra_args=["--advertised-host", ADDRESS])
    port = int(broker.start().rsplit(":", 1)[1])
    broker.port = port  # a restart binds the same port
    proxy = KafkaProxy(port, ("127.0.0.1", port))
    yield proxy, broker, f"{ADDRESS}:{port}"
    proxy.close()
    broker.stop()


def test_a_lost_answer_is_retried_without_a_duplicate(kctl, proxied_broker):
    proxy, _broker, bootstrap = proxied_broker
    assert kctl("-b", bootstrap, "topic", "create", "lost", "-p", "2").exit_code == 0
    lost = []

    def lose_first_produce_answer(api_key: int, _answer: bytes) -> bool:
        if api_key == PRODUCE and not lost:
            lost.append(True)  # the broker wrote the batch; its answer never reaches kctl
            return False
        return True

    proxy.on_answer = lose_first_produce_answer
    result = kctl("-b", bootstrap, "record", "produce", "lost", "-p", "1", input="a\nb\nc\n")
    assert result.exit_code == 0, result.stderr
    assert lost
    assert [v for _p, _k, v in records(bootstrap, "lost", 2)] == [b"a", b"b", b"c"]


def test_a_broker_restart_mid_produce_writes_each_record_once(kctl, proxied_broker):
    """The broker is killed (SIGKILL) after it wrote the batch and before its answer left;
    it restarts, rebuilds its producer state from the log, and the retried batch is
    recognised as written (DUPLICATE_SEQUENCE_NUMBER), not appended again."""
    proxy, broker, bootstrap = proxied_broker
    assert kctl("-b", bootstrap, "topic", "create", "restart", "-p", "1").exit_code == 0
    crashed = []

    def crash_on_first_produce_answer(api_key: int, _answer: bytes) -> bool:
        if api_key == PRODUCE and not crashed:
            crashed.append(True)
            broker.kill()
            broker.process.wait()
            broker.start()
            return False
        return True

    proxy.on_answer = crash_on_first_produce_answer
    result = kctl("-b", bootstrap, "record", "produce", "restart", input="one\ntwo\n")
    assert result.exit_code == 0, result.stderr
    assert crashed
    assert [v for _p, _k, v in records(bootstrap, "restart", 1)] == [b"one", b"two"]
