"""The bodies of the writes the console script runs without click (`record produce`: a
pipe's `echo x | kctl record produce T` costs what a read costs), free of click as
kctl.cli.reads' are: kctl.cli.direct runs them, and the click commands that declare their
options and help call the same functions (kctl.cli._options.runs)."""
