"""A stand-in for AWS's aws-msk-iam-sasl-signer-python, for tests only (tests put this
folder first on sys.path). It signs nothing: each call is recorded and answered with an
unsecured JWT for the principal "admin", which a Kafka node with the default OAUTHBEARER
validator accepts, so the token's path through kctl's clients is tested against a real
broker without AWS."""
