"""Client quota enforcement: producer_byte_rate and consumer_byte_rate, as Kafka's
ClientQuotaManager enforces them.

A client's quota is the most specific one set (Kafka's order): user and client id, user
and default client id, user, default user and client id, default user and default client
id, default user, client id, default client id. Each (user, client id) has its own rate,
measured over `WINDOWS` windows of `WINDOW_MS` (quota.window.num, quota.window.size.seconds);
a request that takes it over its quota is answered at once with throttle_time_ms — the
time the rate needs to fall back to the quota — and the connection is not read again until
that time has passed (KIP-219), so a client that ignores throttle_time_ms is slowed all the
same. A produce over the quota is appended; a fetch over it is answered without records. request_percentage and controller_mutation_rate are stored, not enforced.
"""

from __future__ import annotations

from collections import deque

WINDOWS = 11  # quota.window.num
WINDOW_MS = 1000  # quota.window.size.seconds
PRODUCE, FETCH = "producer_byte_rate", "consumer_byte_rate"


def quota_for(quotas: dict, key: str, user: str | None, client_id: str) -> float | None:
    """The bound on `key` for this user (None: anonymous, no user quotas apply) and client id."""
    candidates = []
    if user is not None:
        candidates += [(("client-id", client_id), ("user", user)), (("client-id", None), ("user", user)),
                       (("user", user),), (("client-id", client_id), ("user", None)),
                       (("client-id", None), ("user", None)), (("user", None),)]
    candidates += [(("client-id", client_id),), (("client-id", None),)]
    for entity in candidates:
        value = quotas.get(entity, {}).get(key)
        if value is not None:
            return value
    return None


class _Rate:
    """Bytes per second over the last WINDOWS windows (Kafka's Rate with SampledStat)."""

    def __init__(self, now_ms: int):
        self.samples: deque[list[int]] = deque()  # [window start, bytes]
        self.created = now_ms

    def record(self, value: int, now_ms: int) -> None:
        start = now_ms - now_ms % WINDOW_MS
        if not self.samples or self.samples[-1][0] != start:
            self.samples.append([start, 0])
        self.samples[-1][1] += value
        while self.samples and self.samples[0][0] <= now_ms - WINDOWS * WINDOW_MS:
            self.samples.popleft()

    def rate(self, now_ms: int) -> tuple[float, float]:
        """(bytes per second, the window length in seconds it is measured over)."""
        total = sum(value for _start, value in self.samples)
        oldest = self.samples[0][0] if self.samples else now_ms
        # Kafka's Rate.windowSize: at least (WINDOWS - 1) full windows, so a young sensor
        # does not see a burst as an enormous rate.
        elapsed = max(now_ms - max(oldest, self.created), (WINDOWS - 1) * WINDOW_MS) / 1000
        return total / elapsed, elapsed


class QuotaManager:
    def __init__(self, quotas, clock):
        self._quotas = quotas  # () -> the stored quotas {entity: {key: value}}
        self._clock = clock
        self._rates: dict[tuple, _Rate] = {}

    def record(self, key: str, user: str | None, client_id: str, size: int) -> int:
        """Record `size` bytes (a negative size takes back bytes not sent after all); the
        throttle time in ms (0 within the quota)."""
        bound = quota_for(self._quotas(), key, user, client_id)
        if bound is None:
            return 0
        now = self._clock()
        rate = self._rates.get((key, user, client_id))
        if rate is None:
            if len(self._rates) > 100_000:  # clients come and go; forget them all rather than grow
                self._rates.clear()
            rate = self._rates[(key, user, client_id)] = _Rate(now)
        rate.record(size, now)
        observed, window = rate.rate(now)
        if observed <= bound:
            return 0
        # Kafka's ClientQuotaManager.throttleTime: how long until the rate is back at the bound
        throttle = (observed - bound) / bound * window * 1000
        return int(min(throttle, WINDOWS * WINDOW_MS))
