"""A typed library over confluent-kafka: returns frozen dataclasses, raises KctlError.

It never prints and never imports click or rich, so it can be used from scripts
and tests as it is used by the CLI.
"""
