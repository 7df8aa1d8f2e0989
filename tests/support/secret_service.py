"""A real Secret Service for the tests: a D-Bus session bus of its own and
gnome-keyring-daemon on it, with a login keyring unlocked by a password the test gives
(Debian packages dbus-daemon, gnome-keyring; libsecret-tools' secret-tool reads it back)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

from tests.support.eventually import within

TOOLS = ("dbus-daemon", "gnome-keyring-daemon", "secret-tool")


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


class SecretService:
    def __init__(self, directory: Path):
        self.directory = directory
        self.home = directory / "home"
        self.runtime = directory / "run"
        self._processes: list[int] = []
        self._keyring: subprocess.Popen | None = None
        self.env: dict[str, str] = {}

    def start(self, timeout: float = 15) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        base = {**os.environ, "HOME": str(self.home), "XDG_RUNTIME_DIR": str(self.runtime),
                "XDG_DATA_HOME": str(self.home / ".local" / "share")}
        # A session bus without service directories: a probe sent before our keyring has
        # taken its name must fail and be retried, not D-Bus-activate another keyring
        # daemon (never unlocked, without a login collection) that takes the name first.
        config = self.directory / "session.conf"
        config.write_text(_BUS_CONFIG)  # its socket in /tmp: a unix socket path must be short
        out = subprocess.run(["dbus-daemon", f"--config-file={config}", "--fork", "--print-address=1", "--print-pid=1"], env=base,
                             capture_output=True, text=True, timeout=timeout, check=True).stdout.split()
        self.env = {"DBUS_SESSION_BUS_ADDRESS": out[0], "XDG_RUNTIME_DIR": str(self.runtime)}
        self._processes.append(int(out[1]))
        self._keyring = subprocess.Popen(["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
                                         env={**base, **self.env}, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        assert self._keyring.stdin is not None
        self._keyring.stdin.write(b"kctl-test-keyring")
        self._keyring.stdin.close()
        probes: list[subprocess.CompletedProcess] = []

        def answers() -> bool:  # the service stores a probe
            probes.append(subprocess.run(["secret-tool", "store", "--label=probe", "kctl-probe", "1"], input="x", text=True,
                                         env={**base, **self.env}, capture_output=True, timeout=timeout))
            return probes[-1].returncode == 0 or self._keyring.poll() is not None

        if not within(answers, timeout, interval=0.1) or probes[-1].returncode != 0:
            self.stop()
            raise RuntimeError(f"gnome-keyring-daemon did not start: {probes[-1].stderr.strip()}")

    def lookup(self, context: str, key: str) -> str | None:
        """What the keyring holds for `key` of `context` (as kctl stores it), read by secret-tool."""
        proc = subprocess.run(["secret-tool", "lookup", "service", "kctl", "username", f"{context}/{key}"],
                              env={**os.environ, **self.env}, capture_output=True, text=True, timeout=15)
        return proc.stdout if proc.returncode == 0 else None

    def stop(self) -> None:
        if self._keyring is not None and self._keyring.poll() is None:
            os.killpg(self._keyring.pid, signal.SIGTERM)
            self._keyring.wait(10)
        for pid in self._processes:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        self._processes.clear()
