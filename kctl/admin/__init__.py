"""kctl's library over Kafka's clients (kctl's own wire client and librdkafka, chosen in
admin/client): returns values (kctl.values.Value on the everyday paths, frozen
dataclasses elsewhere) and `Partial`s, raises KctlError built from its fields.

It never prints and never imports click or rich, so it can be used from scripts
and tests as it is used by the CLI.
"""
