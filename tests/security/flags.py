"""kctl's command-line flags for a user of the secured test cluster."""

from __future__ import annotations


def sasl_flags(cluster, user="admin", password=None):
    config = cluster.client_config(user)
    if password is not None:
        config["sasl.password"] = password
    flags = ["-b", config.pop("bootstrap.servers")]
    for key, value in config.items():
        flags += ["-X", f"{key}={value}"]
    return flags
