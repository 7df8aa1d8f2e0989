"""kctl.polling.poll: the answer once it is the one wanted, the last one when time is up."""

from __future__ import annotations

import pytest

from kctl.polling import poll


class Clock:
    """Time that moves only when poll sleeps (poll reads time.monotonic)."""

    def __init__(self, monkeypatch):
        self.now = 1000.0
        monkeypatch.setattr("time.monotonic", lambda: self.now)

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_answers_once_done(monkeypatch):
    clock = Clock(monkeypatch)
    answers = iter([1, 2, 3, 4])
    assert poll(lambda: next(answers), lambda n: n == 3, timeout=10, interval=1, sleep=clock.sleep) == 3
    assert clock.now == 1002.0


def test_the_last_answer_when_time_is_up(monkeypatch):
    clock = Clock(monkeypatch)
    asked = []
    assert poll(lambda: asked.append(clock.now) or len(asked), lambda n: False, timeout=2.5, interval=1, sleep=clock.sleep) == 4
    assert asked == [1000.0, 1001.0, 1002.0, 1003.0]


def test_stop_before_waits_for_no_attempt_past_the_timeout(monkeypatch):
    clock = Clock(monkeypatch)
    asked = []
    assert poll(lambda: asked.append(clock.now) or len(asked), lambda n: False, timeout=2.5, interval=1, sleep=clock.sleep, stop_before=True) == 3
    assert asked == [1000.0, 1001.0, 1002.0]


def test_what_ask_raises_is_raised_at_once(monkeypatch):
    clock = Clock(monkeypatch)

    def ask():
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        poll(ask, lambda n: False, timeout=10, interval=1, sleep=clock.sleep)
    assert clock.now == 1000.0
