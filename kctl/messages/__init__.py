"""Apache Kafka's message definitions (JSON, Apache-2.0, copied unchanged from kafka-clients
4.3.1's common/message/) and kctl's codec for them (codec.py; errors.py holds Kafka's error
codes).

kctl's wire client (kctl.admin.client.wire) encodes and decodes every message it sends
with codec.py from these definitions: ApiVersions, SaslHandshake and SaslAuthenticate,
Metadata, FindCoordinator, ListGroups, DescribeGroups, OffsetFetch, OffsetCommit,
OffsetDelete, ListOffsets, DescribeConfigs, IncrementalAlterConfigs, ListConfigResources,
InitProducerId, Produce, ListTransactions, DescribeTransactions, DescribeProducers,
WriteTxnMarkers, DescribeQuorum, DescribeCluster, DescribeLogDirs, Alter/List-
PartitionReassignments, UpdateFeatures, Describe/AlterClientQuotas, DescribeAcls, the
consumer protocol's assignment, and the newer group APIs (ConsumerGroupDescribe,
ShareGroupDescribe, Describe/Alter/DeleteShareGroupOffsets, StreamsGroupDescribe). The bundled broker serves the share group APIs (ShareGroupHeartbeat,
ShareFetch, ShareAcknowledge and the ones above) with this codec, and builds kafka-python's
codec from ConsumerGroupHeartbeat's
(kctl.broker.protocol.kip848), which kafka-python 3.0 ships no schema for. No wire format
is written by hand. Update them together with the Kafka version the tests run, then run
`python -m kctl.devtools gen-docs`: it writes types.py (each answer's fields as a
Protocol, each request's as a TypedDict) and apis.py (an `Api` per request and answer,
which types `AdminSession.ask` by the message) from these definitions.
"""
