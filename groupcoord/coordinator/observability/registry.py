"""The one Prometheus registry of the process, served at ``/metrics``, with the process's and
Python's own metrics and ``groupcoord_build_info``.

Kept apart from the metric modules so that the gateway can count into it without importing the
runtime or the group logic."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Info, PlatformCollector, ProcessCollector

from groupcoord import __version__

REGISTRY = CollectorRegistry(auto_describe=False)
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)


# groupcoord_build_info{version="..."} 1: which version each process runs (an upgrade in progress
# shows two), joined onto other series with `* on(instance) group_left(version)`.
BUILD_INFO = Info("groupcoord_build", "The groupcoord version this process runs.", registry=REGISTRY)
BUILD_INFO.info({"version": __version__})
