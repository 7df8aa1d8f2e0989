"""The Broker: configuration plus the storage and coordinator state handlers work on.

Owns start-up (open the data directory, recover logs, replay committed offsets and
transaction state), the housekeeping loop (group session expiry, transaction timeouts,
retention, checkpoints, periodic flush), the log cleaner's loop and shutdown. The network
side lives in server.py.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from kctl.broker.coordinator.consumer import ConsumerGroupCoordinator
from kctl.broker.coordinator.groups import GroupCoordinator
from kctl.broker.coordinator.offsets import OffsetStore
from kctl.broker.coordinator.producer_ids import ProducerIdManager
from kctl.broker.coordinator.share import ShareGroupCoordinator
from kctl.broker.coordinator.streams import StreamsGroupCoordinator
from kctl.broker.coordinator.transactions import TransactionCoordinator
from kctl.broker.quotas import QuotaManager
from kctl.broker.security.authorizer import Authorizer
from kctl.broker.security.listeners import Listener
from kctl.broker.security.oauthbearer import ValidatorConfig
from kctl.broker.security.sasl import MECHANISMS, SaslConfig
from kctl.broker.security.store import SecurityStore
from kctl.broker.security.tokens import TokenCredentials
from kctl.broker.storage.cleaner import LogCleaner
from kctl.broker.storage.manager import LogManager

log = logging.getLogger("kctl.broker")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class BrokerConfig:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 9092
    advertised_host: str | None = None
    # The --port listener's port as clients must dial it, when something between them and
    # the broker (a proxy, a port forward) listens on another one.
    advertised_port: int | None = None
    node_id: int = 1
    cluster_id: str | None = None
    auto_create_topics: bool = True
    num_partitions: int = 1
    # Kafka's shipped server.properties sets 0 for development brokers; Kafka's own
    # default is 3000 ms, which would slow every first consumer by three seconds.
    group_initial_rebalance_delay_ms: int = 0
    max_request_bytes: int = 100 * 1024 * 1024  # socket.request.max.bytes
    fetch_max_bytes: int = 57_671_680  # fetch.max.bytes: the most a Fetch answer carries, whatever it asks
    retention_check_interval_ms: int = 300_000
    checkpoint_interval_ms: int = 60_000
    transaction_max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    log_cleaner_enable: bool = True  # log.cleaner.enable
    # Connection limits (Kafka's defaults): an idle connection is closed after
    # connections.max.idle.ms; max.connections bounds them all (new ones wait to be
    # accepted), max.connections.per.ip each address's (one more is closed at once).
    connections_max_idle_ms: int = 600_000
    max_connections: int = 2**31 - 1
    max_connections_per_ip: int = 2**31 - 1
    max_connections_per_ip_overrides: dict[str, int] = field(default_factory=dict)
    # KIP-368: sessions of SASL connections end after this (0: never); the unsecured
    # OAUTHBEARER validator's principal and scope claims and its clock skew.
    connections_max_reauth_ms: int = 0
    # ... and its listener.name.<listener>.<mechanism>. form: {(listener, mechanism): ms}
    connections_max_reauth_ms_scoped: dict = field(default_factory=dict)
    oauthbearer_principal_claim: str = "sub"
    oauthbearer_scope_claim: str = "scope"
    oauthbearer_clock_skew_seconds: int = 0
    # Mutual TLS: none, requested or required; the PEM file of CAs that sign client
    # certificates; Kafka's ssl.principal.mapping.rules for the subject's name.
    ssl_client_auth: str = "none"
    ssl_truststore: str | None = None
    ssl_principal_mapping_rules: str = "DEFAULT"
    # Delegation tokens: off without a secret key; at most a week, a day unless renewed.
    delegation_token_secret_key: str | None = None
    delegation_token_max_lifetime_ms: int = 7 * 24 * 3600 * 1000
    delegation_token_expiry_time_ms: int = 24 * 3600 * 1000
    # --config's topic config defaults under their broker names ({"log.retention.ms":
    # "3600000"}), and every --config pair as given (DescribeConfigs' static entries).
    log_defaults: dict[str, str] = field(default_factory=dict)
    static_configs: dict[str, str] = field(default_factory=dict)
    # Security. The first listener is (security_protocol, host, port); more listeners may
    # open beside it. SASL listeners take `sasl_mechanisms`; PLAIN checks `users`, SCRAM
    # the stored credentials (seeded from `users` for any user without one).
    security_protocol: str = "PLAINTEXT"
    extra_listeners: list[Listener] = field(default_factory=list)
    sasl_mechanisms: tuple[str, ...] = MECHANISMS
    users: dict[str, str] = field(default_factory=dict)
    tls_cert: Path | None = None  # None: generated into <data-dir>/tls/ when a listener needs TLS
    tls_key: Path | None = None
    authorizer: bool = False  # authorizer.class.name=StandardAuthorizer
    super_users: tuple[str, ...] = ()
    allow_everyone_if_no_acl_found: bool = False

    @property
    def listeners(self) -> list[Listener]:
        return [Listener(self.security_protocol, self.host, self.port), *self.extra_listeners]

    @property
    def advertised(self) -> tuple[str, int]:
        return self.advertised_host or self.host, self.port

    def advertised_port_of(self, listener: Listener) -> int:
        """The port clients are told for `listener`: --advertised-port for the --port one."""
        main = not any(listener is extra for extra in self.extra_listeners)
        return self.advertised_port if main and self.advertised_port else listener.port


class Broker:
    def __init__(self, config: BrokerConfig, clock=wall_clock_ms):
        self.config = config
        self.clock = clock
        self.logs = LogManager(config.data_dir, clock, config.node_id)
        self.logs.static_defaults = dict(config.log_defaults)
        self.offsets = OffsetStore(config.data_dir, self.logs, clock)
        self.groups = GroupCoordinator(self.offsets, clock, config.group_initial_rebalance_delay_ms)
        self.consumer_groups = ConsumerGroupCoordinator(
            clock, lambda: {name: info.partitions for name, info in self.logs.topics.items()}, self.groups)
        self.groups.foreign = lambda group_id: group_id in self.consumer_groups.groups
        self.producer_ids = ProducerIdManager(config.data_dir)
        self.transactions = TransactionCoordinator(
            config.data_dir, clock, self.logs, self.producer_ids.allocate, self.groups.commit,
            self.notify_appended, config.transaction_max_timeout_ms)
        self.cleaner = LogCleaner(self.logs, clock)
        self.share_groups = ShareGroupCoordinator(
            config.data_dir, clock, lambda: {name: info.partitions for name, info in self.logs.topics.items()},
            lambda topic, partition: self.logs.logs.get((topic, partition)), self.notify_appended)
        self.streams_groups = StreamsGroupCoordinator(
            clock, lambda: {name: info.partitions for name, info in self.logs.topics.items()})
        self.security = SecurityStore(config.data_dir)
        self.authorizer = Authorizer(self.security, config.authorizer, config.super_users,
                                     config.allow_everyone_if_no_acl_found)
        self.quotas = QuotaManager(lambda: self.security.quotas, clock)
        self.token_credentials = TokenCredentials(self.security, config.delegation_token_secret_key)
        self.sasl = SaslConfig(config.sasl_mechanisms, dict(config.users),
                               lambda user, mechanism: self.security.credentials.get((user, mechanism)),
                               ValidatorConfig(config.oauthbearer_principal_claim, config.oauthbearer_scope_claim,
                                               config.oauthbearer_clock_skew_seconds * 1000),
                               config.connections_max_reauth_ms, dict(config.connections_max_reauth_ms_scoped),
                               self.token_credentials.lookup)
        self._appended = None  # asyncio.Event replaced on every append (fetch long-poll)
        self._housekeeping = None
        self._cleaning = None

    @property
    def node_id(self) -> int:
        return self.config.node_id

    @property
    def cluster_id(self) -> str:
        return self.logs.cluster_id

    def open(self) -> dict:
        report = self.logs.open(self.config.cluster_id)
        try:
            report["skipped_offset_entries"] = self.offsets.open()
            self.producer_ids.open()
            report["skipped_transaction_entries"] = self.transactions.open()
            self.cleaner.open()
            report["skipped_share_entries"] = self.share_groups.open()
            self.security.open()
            self._seed_scram_users()
        except BaseException:
            self.logs.unlock()
            raise
        return report

    def _seed_scram_users(self) -> None:
        """A configured user gets a SCRAM credential for each enabled SCRAM mechanism it
        has none for (as `kafka-storage format --add-scram` gives users before the first
        client); a password changed since through AlterUserScramCredentials is kept."""
        from kctl.broker.security.scram import MECHANISMS as SCRAM
        from kctl.broker.security.scram import new_credential

        missing = {(user, mechanism): new_credential(mechanism, password)
                   for user, password in self.config.users.items()
                   for mechanism in self.config.sasl_mechanisms
                   if mechanism in SCRAM and (user, mechanism) not in self.security.credentials}
        if missing:
            self.security.update(credentials={**self.security.credentials, **missing})

    def start_background(self) -> None:
        self._appended = asyncio.Event()
        self.offsets.notify = self.notify_appended
        self._housekeeping = asyncio.get_running_loop().create_task(self._housekeep())
        if self.config.log_cleaner_enable:
            self._cleaning = asyncio.get_running_loop().create_task(self.cleaner.run())

    async def _housekeep(self) -> None:
        last_retention = last_checkpoint = self.clock()
        while True:
            await asyncio.sleep(0.1)
            now = self.clock()
            try:
                self.groups.tick()
                self.consumer_groups.tick()
                self.share_groups.tick()
                self.streams_groups.tick()
                self.transactions.tick()
                if now - last_retention >= self.config.retention_check_interval_ms:
                    last_retention = now
                    deleted = self.logs.enforce_retention()
                    if deleted:
                        log.info("retention deleted %d segments", deleted)
                if now - last_checkpoint >= self.config.checkpoint_interval_ms:
                    last_checkpoint = now
                    self.logs.flush_all()
            except OSError as exc:  # disk full or gone: say so once per attempt, go on
                log.error("housekeeping: %s", exc)
            except Exception:  # keep housekeeping alive; the failure is logged
                log.exception("housekeeping failed")

    def close(self) -> None:
        if self._housekeeping is not None:
            self._housekeeping.cancel()
        if self._cleaning is not None:
            self._cleaning.cancel()
        self.cleaner.close()
        self.transactions.close()
        self.share_groups.close()
        self.offsets.close()
        self.logs.close()

    # -- fetch long-poll --------------------------------------------------------------------

    def notify_appended(self) -> None:
        if self._appended is not None:
            self._appended.set()
            self._appended = asyncio.Event()

    async def wait_for_append(self, timeout_s: float) -> None:
        event = self._appended
        if event is None or timeout_s <= 0:
            return
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            pass
