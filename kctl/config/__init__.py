"""Contexts and client settings: the config file, KCTL_* environment and flags, layered."""
