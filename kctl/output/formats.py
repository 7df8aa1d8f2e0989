"""The output format names (kept apart so `--help` needs nothing else from output/)."""

FORMATS = ("auto", "table", "wide", "plain", "json", "jsonl", "csv", "prom")
# prom (Prometheus text exposition) exists only where a command has metrics: group lag.
