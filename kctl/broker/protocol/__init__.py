"""Kafka wire protocol: frames, API table, message codec and record batches."""
