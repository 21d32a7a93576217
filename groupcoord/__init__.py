"""groupcoord: Apache Kafka's group coordinator as a sidecar beside any Kafka-compatible cluster.

Everything the project installs lives under this one namespace: ``groupcoord.coordinator`` (the
gateway, the shards, the group logic), ``groupcoord.records`` (the log's record schemas),
``groupcoord.cli`` (the ``groupcoord`` command), ``groupcoord.pipeline`` (the PySpark jobs) and
``groupcoord.local_broker`` (the embedded development broker).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("groupcoord")
except PackageNotFoundError:  # a source tree on sys.path without an installation
    __version__ = "0+unknown"

__all__ = ["__version__"]
