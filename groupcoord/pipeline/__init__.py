"""The data pipeline on Spark over the coordinator log: the ``groupcoord`` data source and the jobs.

Needs the ``spark`` extra (``pip install -e '.[spark]'``) and a Java runtime (17+).
"""
