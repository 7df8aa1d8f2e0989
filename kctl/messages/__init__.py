"""Apache Kafka's message definitions (JSON, Apache-2.0, from kafka-clients 4.3.1's
common/message/) for the group APIs kafka-python 3.0 ships no schema for:
ConsumerGroupDescribe and ConsumerGroupHeartbeat (KIP-848), ShareGroupDescribe and
Describe/Alter/DeleteShareGroupOffsets (KIP-932), StreamsGroupDescribe (KIP-1071).
kafka-python builds its codec from them exactly as from the definitions it vendors itself
(kctl.admin.groups.protocol for the admin side, kctl.broker.protocol.kip848 for the bundled
broker), so no wire format is written by hand. Update them together with the Kafka version
the tests run.
"""
