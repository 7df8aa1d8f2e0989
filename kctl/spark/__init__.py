"""kctl spark: PySpark jobs over topic contents (dump, replay, audit).

The only package that imports pyspark; kctl.spark.source holds the `kctl_kafka` data
source. Modules that need no Spark (options, planning, manifests) import without it.
"""
