"""The bundled single-node Kafka broker behind `kctl local`.

A pure-Python broker that speaks Kafka's wire protocol to unmodified clients and keeps its
data in Kafka's on-disk log format. Layers, each unaware of the ones above it:

- protocol/     frames, API version table, message codec, RecordBatch v2 validation
- storage/      segments, indexes, logs, recovery, retention (Kafka's names and formats)
- coordinator/  classic consumer groups, committed offsets, idempotent producer state
- handlers/     one module per API area: request in, response out
- server.py     asyncio listener and connections (framing, ordering, limits)

This package imports nothing from kctl.cli, kctl.admin or kctl.output.
"""
