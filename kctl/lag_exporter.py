"""`kctl group lag --serve`: consumer lag as a Prometheus endpoint.

A sampler thread (kctl.sampling, shared with `kctl top`) measures lag every interval and
renders the exposition text once per sample (kafka-lag-exporter's metric names,
kctl.output.prometheus); a scrape only copies the last complete sample's bytes, so it
never waits on the cluster. Time lag is kctl.admin.groups.lag_time's: interpolated from the
samples kept in memory (kafka-lag-exporter's method) while they bracket the commit, else the
timestamp of the record at the commit (read once while it stays there), never extrapolated. When a sample fails (the cluster is down), the last good
one keeps being served, and the exporter's own metrics say how old it is: alert on
kctl_lag_exporter_sample_age_seconds, not on a scrape that hangs. /healthz answers 200
while a sample succeeded within three intervals.

The HTTP side is the standard library's ThreadingHTTPServer: two paths and bytes built
elsewhere do not need a framework.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kctl.admin.client.session import AdminSession
from kctl.admin.groups.lag_time import TimeLagEstimator
from kctl.errors import KctlError, UsageError
from kctl.sampling import Sampler

log = logging.getLogger(__name__)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class Snapshot:
    """What a sample gives (when it was taken and how long it took: the sampler's Sampled)."""

    body: bytes  # the lag metrics of the last good sample
    groups: int
    partitions: int


class LagSampler:
    """Samples lag every `interval` seconds on its own thread (kctl.sampling) until stopped."""

    def __init__(self, session: AdminSession, cluster_name: str, *, interval: float, groups: Sequence[str] | None = None,
                 topics: Sequence[str] = (), isolation: str = "read_uncommitted", clock: Callable[[], float] = time.time,
                 notify: Callable[[str], None] = lambda message: None):
        self.session = session
        self.cluster_name = cluster_name
        self.interval = interval
        self.groups = groups
        self.topics = topics
        self.isolation = isolation
        self.clock = clock
        self._time_lag = TimeLagEstimator()
        self._errors: str | None = None
        self.sampler = Sampler(self._take, interval=interval, clock=clock, notify=notify, subject="lag sampling",
                               keeping="serving the last good sample until it recovers", name="kctl-lag-sampler")

    def start(self) -> None:
        self.sampler.start()

    def stop(self) -> None:
        self.sampler.stop(timeout=self.session.timeout + 5)

    def _take(self) -> Snapshot:
        from kctl.admin.groups.lag import group_lag, record_timestamps
        from kctl.output.prometheus import render_lag

        found, errors = group_lag(self.session, self.groups, topics=self.topics, isolation=self.isolation)
        if errors and not found:
            raise next(iter(errors.values()))
        now_ms = int(self.clock() * 1000)
        timeout = min(self.session.timeout, max(1.0, self.interval))
        found = self._time_lag.add(found, now_ms, lambda wanted: record_timestamps(self.session, wanted, timeout=timeout))
        live = {(p.group, p.topic, p.partition) for g in found for p in g.partitions}
        body = render_lag(found, self.cluster_name).encode()
        # Groups that could not be read while others were: said by /healthz, not a failure.
        self._errors = "; ".join(e.message for e in errors.values()) or None
        return Snapshot(body, len(found), len(live))

    @property
    def last_error(self) -> str | None:
        return self.sampler.last_error or (self._errors if self.sampler.last_attempt_ok else None)

    def metrics(self) -> bytes:
        """The last sample's lag metrics and the exporter's own, at scrape time."""
        latest = self.sampler.latest
        snapshot = latest.value if latest is not None else None
        now = self.clock()
        own: list[tuple[str, str, float]] = [
            ("kctl_lag_exporter_up", "1 when the last sample succeeded, 0 when it failed (the lag shown is older)", int(bool(self.sampler.last_attempt_ok))),
            ("kctl_lag_exporter_samples_total", "Samples taken", self.sampler.samples_total),
            ("kctl_lag_exporter_sample_failures_total", "Samples that failed (the cluster could not be read)", self.sampler.failures_total),
        ]
        if latest is not None and snapshot is not None:
            own += [
                ("kctl_lag_exporter_sample_age_seconds", "Seconds since the lag shown was measured", round(now - latest.taken_at, 3)),
                ("kctl_lag_exporter_sample_duration_seconds", "Seconds the last sample took", round(latest.duration, 3)),
                ("kctl_lag_exporter_groups", "Groups in the last sample", snapshot.groups),
                ("kctl_lag_exporter_partitions", "Group partitions in the last sample", snapshot.partitions),
            ]
        text = "".join(f"# HELP {name} {help_text}\n# TYPE {name} {'counter' if name.endswith('_total') else 'gauge'}\n{name} {value}\n" for name, help_text, value in own)
        return (snapshot.body if snapshot else b"") + text.encode()

    def healthy(self) -> tuple[bool, str]:
        latest = self.sampler.latest
        if latest is None:
            return False, f"no sample yet{': ' + self.last_error if self.last_error else ''}"
        age = self.clock() - latest.taken_at
        if age > 3 * self.interval + latest.duration:
            return False, f"last good sample {age:.0f}s old: {self.last_error or 'sampling is late'}"
        return True, f"ok: sample {age:.1f}s old, {latest.value.groups} group(s)"


def parse_address(text: str) -> tuple[str, int]:
    """HOST:PORT or :PORT (every interface)."""
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"--serve {text!r} is not HOST:PORT or :PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


def serve(sampler: LagSampler, address: tuple[str, int]) -> ThreadingHTTPServer:
    """An HTTP server (not yet serving) for /metrics and /healthz."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, sampler.metrics(), CONTENT_TYPE)
            elif path == "/healthz":
                ok, why = sampler.healthy()
                self._send(200 if ok else 503, (why + "\n").encode(), "text/plain; charset=utf-8")
            else:
                self._send(404, b"not found: /metrics and /healthz are served\n", "text/plain; charset=utf-8")

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args) -> None:  # noqa: A002 - the stdlib's signature
            log.debug("%s %s", self.address_string(), format % args)

    try:
        server = ThreadingHTTPServer(address, Handler)
    except OSError as exc:
        raise KctlError(action=f"serve on {address[0]}:{address[1]}", cause=f"{exc.strerror or exc}") from exc
    server.daemon_threads = True
    return server
