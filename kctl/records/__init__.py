"""Topic data as kctl reads, writes and moves it: input records from lines, templates and
JSON lines; output as format strings and JSON envelopes; --from/--to positions; filters
and --where; codecs; and the commands that move records with Kafka's clients: produce,
consume (a Reading yields batches), copy, redrive and clone (loops over those batches,
writing through transfer.py).

No click and no printing: the CLI wires these to the terminal (kctl.cli.record).
"""
