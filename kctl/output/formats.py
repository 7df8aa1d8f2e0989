"""The output format names (kept apart so `--help` needs nothing else from output/)."""

FORMATS = ("auto", "table", "wide", "plain", "json", "jsonl", "csv")
