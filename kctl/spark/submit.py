"""Run a `kctl spark` job under spark-submit, on whatever cluster it was submitted to:

    spark-submit --master spark://spark:7077 \\
        "$(python -c 'import kctl.spark.submit as m; print(m.__file__)')" \\
        dump -t orders --out s3a://bucket/orders -b kafka:9092

The arguments are those of `kctl spark` (verb first; -b, --context and -X after it).
spark-submit's own settings (master, executors, jars) apply: kctl neither chooses a
master nor starts a JVM of its own. The executors need kctl installed (or shipped with
--py-files or a packed virtualenv in spark.archives), since they import kctl_kafka.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    from kctl.cli.main import main as kctl_main

    kctl_main(["spark", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
