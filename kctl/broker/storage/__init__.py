"""Partition logs in Kafka's on-disk format: segments, indexes, checkpoints, recovery."""
