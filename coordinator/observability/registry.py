"""The one Prometheus registry of the process, served at ``/metrics``.

Kept apart from the metric modules so that the gateway can count into it without importing the
runtime or the group logic."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector

REGISTRY = CollectorRegistry(auto_describe=False)
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)
