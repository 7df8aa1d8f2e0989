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
import uuid
from pathlib import Path
from typing import Any

from tests.backends.kafka import free_port
from tests.support.eventually import within

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

        def listening() -> bool:  # or exited: no use waiting
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return self._process.poll() is not None

        if within(listening, timeout, interval=0.05) and self._process.poll() is None:
            return
        output = (self.directory / "kdc.out").read_text(errors="replace")
        self.stop()
        raise RuntimeError(f"krb5kdc did not start: {output[-2000:]}")

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


def unavailable() -> str | None:
    """Why Kerberos tests cannot run here (None: they can)."""
    try:
        import gssapi  # noqa: F401
    except ImportError:
        return "the gssapi binding is not installed (pip install -e '.[kerberos]')"
    missing = missing_tools()
    if missing:
        return f"{', '.join(missing)} not installed (Debian: krb5-kdc krb5-admin-server krb5-user)"
    return None


PASSWORDS = {"alice": "alice-kerberos", "bob": "bob-kerberos"}


class KerberosKafka:
    """A Kafka node behind a Kerberos realm: `bootstrap` is its GSSAPI listener
    (SASL_PLAINTEXT at localhost, the host in its principal kafka/localhost),
    `tls_bootstrap` its SASL_SSL one (a certificate for localhost signed by `ca`),
    `plaintext` a PLAINTEXT listener for the brokers and the tests' setup. Users alice
    and bob, each with a password and a keytab."""

    def __init__(self, realm: Realm, cluster: Any, port: int, tls_port: int, ca: Path, directory: Path):
        self.realm = realm
        self.cluster = cluster
        self.bootstrap = f"localhost:{port}"
        self.tls_bootstrap = f"localhost:{tls_port}"
        self.ca = ca
        self.plaintext = cluster.bootstrap
        self.directory = directory

    def keytab(self, user: str) -> Path:
        return self.directory / f"{user}.keytab"

    def principal(self, user: str) -> str:
        return f"{user}@{REALM}"

    def ticket_cache(self, user: str = "alice", lifetime: str | None = None) -> Path:
        """A new ticket cache for `user`, as `kinit` makes it."""
        cache = self.directory / f"cache-{user}-{uuid.uuid4().hex[:8]}"
        self.realm.kinit(self.principal(user), PASSWORDS[user], cache, lifetime)
        return cache

    def env(self, cache: Path | None = None) -> dict[str, str]:
        """A client's environment: the realm's krb5.conf, and the ticket cache (none: a
        cache that does not exist)."""
        return {**self.realm.env, "KRB5CCNAME": f"FILE:{cache or self.directory / 'no-such-cache'}"}

    def tool_properties(self, user: str = "alice") -> Path:
        """Kafka's tools' client properties for `user`'s keytab (--command-config)."""
        path = self.directory / f"tool-{user}.properties"
        jaas = (f'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true '
                f'keyTab="{self.keytab(user)}" principal="{self.principal(user)}";')
        path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\nsasl.kerberos.service.name=kafka\nsasl.jaas.config={jaas}\n")
        return path

    def run_tool(self, main_class: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return self.cluster.run_tool(main_class, *args, timeout=timeout)

    def stop(self) -> None:
        self.cluster.stop()
        self.realm.stop()


def start_kerberos_kafka(directory: Path, *, jvm_options: tuple[str, ...] | None = None) -> KerberosKafka:
    """A realm and a Kafka node (the tests' jars) with GSSAPI listeners, started; stopped
    again when either fails to start."""
    from tests.backends.kafka import TEST_JVM_OPTIONS, TEST_TOOL_JVM_OPTIONS, KafkaCluster
    from tests.security.tls import make_certificates

    realm = Realm(directory / "realm")
    cluster = None
    try:
        realm.start()
        service = realm.principal("kafka/localhost", keytab=directory / "kafka.keytab")
        for user, password in PASSWORDS.items():
            realm.principal(user, password=password, keytab=directory / f"{user}.keytab")
        krb5 = f"-Djava.security.krb5.conf={realm.krb5_conf}"
        cluster = KafkaCluster(nodes=1, workdir=directory / "kafka", jvm_options=(*(jvm_options or TEST_JVM_OPTIONS), krb5),
                               tool_jvm_options=(*TEST_TOOL_JVM_OPTIONS, krb5))
        port, tls_port = free_port(), free_port()
        node = cluster.nodes[0]
        ca, certificate, key = make_certificates(directory, "localhost")
        keystore = directory / "server-keystore.pem"  # Kafka's PEM key store: the key, then the certificate
        keystore.write_text(key.read_text() + certificate.read_text())
        jaas = realm.jaas_server(directory / "kafka.keytab", service)
        cluster.overrides.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port},"
                         f"SASL_PLAINTEXT://localhost:{port},SASL_SSL://localhost:{tls_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port},SASL_PLAINTEXT://localhost:{port},SASL_SSL://localhost:{tls_port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            "sasl.enabled.mechanisms": "GSSAPI",
            "sasl.kerberos.service.name": "kafka",
            "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": jaas,
            "listener.name.sasl_ssl.gssapi.sasl.jaas.config": jaas,
            "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
            "listener.name.sasl_ssl.ssl.keystore.location": str(keystore),
        })
        cluster.start()
    except BaseException:
        if cluster is not None:
            cluster.stop()
        realm.stop()
        raise
    cluster.backend = "kafka"
    return KerberosKafka(realm, cluster, port, tls_port, ca, directory)
