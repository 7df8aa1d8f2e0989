"""The redrive ledger (kctl.records.ledger): what a group's committed offset and metadata
say is still to send, read back as written, and merged with what a run read."""

from __future__ import annotations

from kctl.records.ledger import BUDGET, PREFIX, Ledger


def test_no_commit_is_everything_and_a_plain_commit_is_everything_from_it():
    assert Ledger.committed(None, None) == Ledger([], 0)
    assert Ledger.committed(-1, None) == Ledger([], 0)
    assert Ledger.committed(42, None) == Ledger([], 42)
    # Metadata kctl did not write (another tool's, a truncated one) means the offset alone.
    for other in ("from the journal", PREFIX, f"{PREFIX}1", f"{PREFIX}1.0", f"{PREFIX}1.2.x", f"{PREFIX}-1.2"):
        assert Ledger.committed(42, other) == Ledger([], 42), other


def test_a_run_holds_records_back_and_a_later_run_sends_them():
    first = Ledger.committed(None, None).after(0, 10, [(2, 3), (5, 7)])
    assert first == Ledger([(2, 3), (5, 7)], 10)
    offset, metadata = first.commit()
    assert (offset, metadata) == (2, f"{PREFIX}1.2.2.3")
    # librdkafka commits the C string's terminating NUL too.
    assert Ledger.committed(offset, metadata + "\x00") == first
    assert [o for o in range(12) if first.todo(o)] == [2, 5, 6, 10, 11]
    # A later run reads from the committed offset: 5 is held again, the rest is done.
    second = first.after(2, 12, [(5, 6)])
    assert second == Ledger([(5, 6)], 12) and second.commit() == (5, f"{PREFIX}1.6")
    # Everything sent: the offset is the end of what was read, with no metadata.
    assert second.after(5, 12, []).commit() == (12, None)


def test_a_run_that_stops_early_keeps_what_it_did_not_read():
    ledger = Ledger([(2, 3), (5, 7)], 10)
    # Read [2, 4) only (--max-records): 5-6 and everything from 10 are still to send.
    assert ledger.after(2, 4, []) == Ledger([(5, 7)], 10)
    # --from 6: everything before it is left behind.
    assert ledger.after(6, 8, []) == Ledger([], 10)
    # A held range that reaches the open end joins it.
    assert ledger.after(2, 12, [(10, 12)]) == Ledger([], 10)


def test_the_metadata_stays_within_the_budget_kafka_allows():
    held = [(o, o + 1) for o in range(0, 4000, 2)]
    ledger = Ledger.committed(None, None).after(0, 4000, held)
    assert ledger.size() > BUDGET  # what a redrive refuses to commit (it stops reading the partition first)
    assert Ledger.committed(*ledger.commit()) == ledger


def test_a_full_ledger_stops_new_holds_but_never_a_rerun_that_holds_the_same(monkeypatch):
    """A partition stops where one more held-back range would not fit, and what it committed
    fits; a rerun with the same filter holds those records again and goes on to the same
    point, not stopping at the first of them (it did, when the size was checked with the
    new range still folded into the open end)."""
    from kctl.records import redrive

    monkeypatch.setattr(redrive, "BUDGET", 200)
    held = [o % 3 == 0 or o % 7 == 0 for o in range(2000)]
    ledger, stops = Ledger.committed(None, None), []
    for _ in range(3):
        start, _metadata = ledger.commit()
        part = redrive._Partition(ledger, start)
        stopped = None
        for offset in range(start, 2000):
            if not ledger.todo(offset):
                part.skip(offset)
            elif not held[offset]:
                part.done(offset)
            elif not part.hold(offset):
                stopped = offset
                break
        ledger = part.ledger_now()
        assert ledger.size() <= 200 and ledger.todo(stopped)
        stops.append(stopped)
    assert stops[0] is not None and stops == [stops[0]] * 3
