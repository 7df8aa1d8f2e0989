"""The everyday reads' bodies (topic, partition, cluster, broker, group, offset and config
reads), free of click: kctl.cli.direct runs them from the console script without importing
it, and the click commands that declare their options and help call the same functions
(kctl.cli._options.runs)."""
