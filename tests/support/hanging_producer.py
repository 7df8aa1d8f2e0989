"""A transactional producer that opens a transaction, writes into it and waits to be
killed: `python -m tests.support.hanging_producer BOOTSTRAP TOPIC TRANSACTIONAL_ID`.

It first commits one transaction of 3 records (what read_committed consumers can see),
then writes 2 records into a second transaction it never ends, prints "open" and waits.
Killed with SIGKILL, it leaves that transaction open until its coordinator's timeout
(15 minutes here): a hanging transaction made for real. `abandon()` does all that from a
test.
"""

from __future__ import annotations

import signal
import sys

from confluent_kafka import Producer


def abandon(bootstrap: str, topic: str, transactional_id: str) -> None:
    """Run this producer until its transaction is open on `topic`'s partition 0, then kill it."""
    import subprocess

    process = subprocess.Popen([sys.executable, "-m", "tests.support.hanging_producer", bootstrap, topic, transactional_id],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "open"
    finally:
        process.kill()
        process.wait(10)


def main() -> None:
    bootstrap, topic, transactional_id = sys.argv[1:4]
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 900_000})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=b"committed-%d" % i, partition=0)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, value=b"open-%d" % i, partition=0)
    assert producer.flush(30) == 0
    print("open", flush=True)
    signal.pause()  # until killed


if __name__ == "__main__":
    main()
