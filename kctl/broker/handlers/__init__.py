"""Request handlers: `async handler(broker, context, request) -> response fields | None`.

A handler reads a decoded kafka-python request object and returns the response as plain
dicts (field names in snake_case, as in Kafka's JSON); None means no response (acks=0).
"""

from kctl.broker.handlers import acls, configs, fetch, groups, metadata, produce, quotas, sasl, share, streams, tokens, topics, transactions, users

HANDLERS = {}
for _module in (metadata, produce, fetch, topics, configs, groups, acls, sasl, transactions, users, quotas, share, streams, tokens):
    HANDLERS.update(_module.HANDLERS)
