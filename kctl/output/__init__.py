"""The one output layer: every byte of data kctl writes to stdout goes through here."""
