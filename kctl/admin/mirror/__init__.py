"""MirrorMaker 2, read from the clusters it replicates between: its internal records
(records.py), its topic naming (policy.py), the pair of clusters and their MM2 topics
(pair.py), replication health (status.py) and consumer-group offset translation
(translate.py). Committing a translation goes through admin/groups/resets.py, as every
offset reset does."""
