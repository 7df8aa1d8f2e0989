"""The bundled broker's security: listeners (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL),
SASL authentication (PLAIN, SCRAM-SHA-256/512), TLS, and the stored security metadata
(SCRAM credentials, ACLs, client quotas) with the ACL authorizer the handlers consult.

The network side (TLS, the SASL exchange before any other request) lives in server.py and
sasl.py; what survives a restart lives in store.py; authorizer.py decides.
"""
