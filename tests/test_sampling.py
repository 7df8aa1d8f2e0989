"""kctl.sampling: the sampler thread `group lag --serve` and `kctl top` share (its clock and
its take() are the test's own; what it samples is tested with the commands)."""

from __future__ import annotations

import time

from kctl.errors import UnreachableError
from kctl.sampling import Sampler
from tests.support.eventually import eventually


def test_a_sample_that_outlasts_the_interval_is_paced():
    def slow() -> float:
        time.sleep(0.2)  # the point: a sample that takes longer than the interval
        return time.monotonic()

    sampler = Sampler(slow, interval=0.05, pace=1.0)
    sampler.start()
    try:
        def three():
            assert sampler.samples_total >= 3

        eventually(three, timeout=10, interval=0.02)
        assert 0.39 <= sampler.period < 1.0, sampler.period  # 0.2 s taken + 0.2 s waited
    finally:
        sampler.stop(timeout=5)


def test_a_failure_is_told_once_and_the_recovery_once_and_the_last_good_sample_stays():
    told: list[str] = []
    answers = iter([1, UnreachableError(action="read", cause="down"), UnreachableError(action="read", cause="down"), ValueError("odd"), 2])

    def take() -> int:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    sampler = Sampler(take, interval=1.0, notify=told.append, subject="sampling")
    for expected_value, expected_ok in ((1, True), (1, False), (1, False), (1, False), (2, True)):
        sampler.sample_once()
        assert (sampler.latest.value, sampler.last_attempt_ok) == (expected_value, expected_ok)
    assert told == ["sampling failed, keeping the last good sample until it recovers: unable to read: down",
                    "sampling recovered after 3 failed sample(s)"]
    assert (sampler.samples_total, sampler.failures_total, sampler.last_error) == (2, 3, None)
