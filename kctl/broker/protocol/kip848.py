"""KIP-848 message classes for the bundled broker (ConsumerGroupHeartbeat,
ConsumerGroupDescribe), from Kafka's own definitions in kctl/messages: kafka-python 3.0
ships none for them."""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from kctl import messages


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=messages): pass  # noqa: E701
class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=messages): pass  # noqa: E701
class ConsumerGroupDescribeRequest(ApiMessage, load_json=messages): pass  # noqa: E701
class ConsumerGroupDescribeResponse(ApiMessage, load_json=messages): pass  # noqa: E701
