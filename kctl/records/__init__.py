"""Topic data as kctl reads and writes it: input records from lines, templates and JSON
lines; output as format strings and JSON envelopes; --from/--to positions; filters.

Pure code over bytes: no Kafka client, no click. The admin layer moves the records
(kctl.records.produce, kctl.records.consume) and the CLI wires the two together.
"""
