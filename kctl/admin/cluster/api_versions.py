"""The API versions each broker speaks (ApiVersions asked of every broker on its own
connection), beside the highest version kctl would use with it: what
kafka-broker-api-versions.sh and Kafka 4.4's `kafka-cluster.sh api-versions` (KIP-1220)
print, as rows a script can read."""

from __future__ import annotations

from kctl.admin.client.session import AdminSession
from kctl.errors import NotFoundError, Resource
from kctl.values import Value

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from collections.abc import Sequence


class ApiVersion(Value):
    """One API as one broker speaks it."""

    __slots__ = ("broker", "address", "api", "key", "min_version", "max_version", "usable_version")

    def __init__(self, *, broker: int, address: str, api: str, key: int, min_version: int, max_version: int,
                 usable_version: int | None):
        self.broker = broker
        self.address = address  # host:port, as the broker advertises it
        self.api = api  # Kafka's name for it ("Fetch"), or "API <key>" for one newer than kctl
        self.key = key
        self.min_version = min_version
        self.max_version = max_version
        # The highest version both kctl and the broker speak (Kafka's tool's "usable");
        # None: none in common, or an API kctl does not know.
        self.usable_version = usable_version


class ApiVersions(Value):
    """Every asked broker's APIs, and the brokers that could not be reached."""

    __slots__ = ("apis", "unreachable")

    def __init__(self, *, apis: tuple[ApiVersion, ...], unreachable: tuple[int, ...]):
        self.apis = apis
        self.unreachable = unreachable


def describe_api_versions(session: AdminSession, brokers: Sequence[int] = ()) -> ApiVersions:
    """The APIs of `brokers` (every broker when empty), by broker then API key; a named
    broker the cluster does not have is a NotFoundError, one that cannot be reached is
    listed in `unreachable`."""
    from kctl.admin.client.wire import usable_version
    from kctl.admin.cluster.brokers import describe_cluster
    from kctl.messages.api_keys import NAMES, name

    known = {b.id: f"{b.host}:{b.port}" for b in describe_cluster(session).brokers}
    missing = sorted(set(brokers) - set(known))
    if missing:
        raise NotFoundError(action="describe API versions", resource=Resource("broker", str(missing[0])),
                            cause=f"broker {missing[0]} is not in the cluster (brokers: {', '.join(map(str, sorted(known)))})",
                            hint="kctl broker list shows the brokers")
    asked = sorted(set(brokers) or known)
    answered = session.broker_api_versions(asked)
    rows = []
    for broker in asked:
        versions = answered.get(broker, {})
        for key, (low, high) in sorted(versions.items()):
            try:
                usable = usable_version(versions, NAMES[key]) if key in NAMES else None
            except FileNotFoundError:  # an inter-broker API, such as BrokerHeartbeat: kctl speaks none
                usable = None
            rows.append(ApiVersion(broker=broker, address=known[broker], api=name(key), key=key, min_version=low,
                                   max_version=high, usable_version=usable))
    return ApiVersions(apis=tuple(rows), unreachable=tuple(b for b in asked if b not in answered))
