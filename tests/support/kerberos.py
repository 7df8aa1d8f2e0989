"""A real MIT Kerberos realm for the tests: its own krb5.conf, kdc.conf and database in a
temporary directory, a `krb5kdc` on a free loopback port, principals and keytabs made with
`kadmin.local`. Nothing of the machine's own Kerberos setup is read or changed: every
command runs with KRB5_CONFIG and KRB5_KDC_PROFILE pointing here.

Debian's packages: krb5-kdc, krb5-admin-server (kadmin.local), krb5-user (kinit, klist).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.backends.kafka import free_port

REALM = "KCTL.TEST"
TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit", "kdestroy")


def missing_tools() -> list[str]:
    """The Kerberos programs this machine lacks (empty when a realm can be started)."""
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return [tool for tool in TOOLS if shutil.which(tool, path=search) is None]


def _tool(name: str) -> str:
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    found = shutil.which(name, path=search)
    if found is None:
        raise RuntimeError(f"{name} is not installed (Debian: krb5-kdc krb5-admin-server krb5-user)")
    return found


class Realm:
    """A KDC for realm KCTL.TEST, started by start() and stopped by stop()."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.krb5_conf = directory / "krb5.conf"
        self.kdc_conf = directory / "kdc.conf"
        self._process: subprocess.Popen | None = None

    @property
    def env(self) -> dict[str, str]:
        """What a client's environment needs to use this realm (its krb5.conf)."""
        return {"KRB5_CONFIG": str(self.krb5_conf)}

    def _env(self) -> dict[str, str]:
        return {**os.environ, "KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    def start(self, timeout: float = 20) -> None:
        # TCP only (udp_preference_limit=1): Java's and MIT's clients alike, no UDP
        # retransmission to wait on. No DNS: service names are taken as written.
        self.krb5_conf.write_text(f"""[libdefaults]
    default_realm = {REALM}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 1
    ticket_lifetime = 1h
    forwardable = true

[realms]
    {REALM} = {{
        kdc = 127.0.0.1:{self.port}
        admin_server = 127.0.0.1:{self.port}
    }}

[domain_realm]
    localhost = {REALM}
    .localhost = {REALM}
""")
        self.kdc_conf.write_text(f"""[kdcdefaults]
    kdc_ports = {self.port}
    kdc_tcp_ports = {self.port}

[realms]
    {REALM} = {{
        database_name = {self.directory / 'principal'}
        key_stash_file = {self.directory / 'stash'}
        acl_file = {self.directory / 'kadm5.acl'}
        max_life = 1h
        max_renewable_life = 1h
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }}

[logging]
    kdc = FILE:{self.directory / 'kdc.log'}
""")
        (self.directory / "kadm5.acl").write_text("")
        self._run(_tool("kdb5_util"), "create", "-s", "-r", REALM, "-P", "kctl-test-master")
        log = open(self.directory / "kdc.out", "ab")
        self._process = subprocess.Popen([_tool("krb5kdc"), "-n", "-r", REALM, "-P", str(self.directory / "kdc.pid")],
                                         env=self._env(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        log.close()
        import socket

        end = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self._process.poll() is not None or time.monotonic() > end:
                    output = (self.directory / "kdc.out").read_text(errors="replace")
                    self.stop()
                    raise RuntimeError(f"krb5kdc did not start: {output[-2000:]}") from None
                time.sleep(0.05)

    def _run(self, *argv: str, stdin: str | None = None) -> str:
        proc = subprocess.run(argv, env=self._env(), input=stdin, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {proc.stdout}{proc.stderr}")
        return proc.stdout

    def principal(self, name: str, *, password: str | None = None, keytab: Path | None = None) -> str:
        """Add principal `name` (with a password, or a random key) and, with `keytab`, export its
        keys there; the principal's full name."""
        key = f"-pw {password}" if password else "-randkey"
        self._run(_tool("kadmin.local"), "-r", REALM, "-q", f"addprinc {key} {name}")
        if keytab is not None:
            # -norandkey: the password (if any) stays valid beside the keytab.
            self._run(_tool("kadmin.local"), "-r", REALM, "-q", f"ktadd -norandkey -k {keytab} {name}")
        return f"{name}@{REALM}"

    def kinit(self, principal: str, password: str, cache: Path, lifetime: str | None = None) -> None:
        """A ticket cache at `cache` for `principal`, as a user's `kinit` makes one."""
        argv = [_tool("kinit"), "-c", f"FILE:{cache}"]
        if lifetime:
            argv += ["-l", lifetime]
        self._run(*argv, principal, stdin=password + "\n")

    def jaas_server(self, keytab: Path, principal: str) -> str:
        """A Kafka listener's sasl.jaas.config for GSSAPI with `principal`'s keytab."""
        return (f'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true '
                f'keyTab="{keytab}" principal="{principal}";')

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGTERM)
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait()
        self._process = None
