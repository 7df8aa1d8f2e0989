"""Test harness: real Apache Kafka clusters from Maven Central jars, and the pytest plugin that
hands them to tests (see fixtures.py)."""
