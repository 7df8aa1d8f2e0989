"""Declarative cluster state: resource files (resources), what a cluster has as resources
(export), the changes that would make it match the files (plan), and making them (apply)."""
