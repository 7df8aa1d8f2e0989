"""`kctl top`: a live terminal view of a cluster (Textual).

model.py takes one sample of the cluster (brokers, partitions and their ISR, log offsets,
every group's lag) and folds it into the window it keeps (trend.py: the sparklines), giving
the rows of every view; app.py is the Textual application that shows them. The sampling
runs on kctl.sampling's thread, so the screen never waits on the cluster. Only kctl.cli.top
imports this package: Textual is loaded by `kctl top` and by nothing else.
"""
