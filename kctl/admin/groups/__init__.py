"""Groups of every Kafka 4.x type: the shared model (models.py), listing, describing and
deleting (groups.py), lag (lag.py, lag_history.py, lag_rates.py), offset resets
(resets.py), the wire protocol (protocol.py) and one module per group type."""
