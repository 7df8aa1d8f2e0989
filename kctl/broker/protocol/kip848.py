"""ConsumerGroupHeartbeat (KIP-848) message classes for the bundled broker, from Kafka's own
definitions in kctl/messages (kafka-python 3.0 ships none for it). The broker does not
implement the consumer group protocol; it advertises the API only to refuse it at once
(kctl.broker.handlers.groups.consumer_group_heartbeat)."""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from kctl import messages


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=messages): pass  # noqa: E701
class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=messages): pass  # noqa: E701
