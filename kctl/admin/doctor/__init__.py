"""`kctl doctor`: what is wrong with a cluster, worst first, from the Kafka protocol alone.

`findings.py` says what a finding is (severity, resource, evidence, why, the next command)
and how findings become a verdict; `checks.py` holds the detections, each a function of
facts already read (tested alone); `examine.py` reads the facts and runs the checks.
"""
