"""kctl: a Kafka cluster administration CLI.

Importing the package is free of third-party imports, so `kctl --help` and shell
completion stay fast.
"""

__version__ = "0.1.0"
