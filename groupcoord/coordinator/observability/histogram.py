"""Latency histograms in seconds, Prometheus' convention: cumulative ``_bucket{le}`` counts, ``_sum``
and ``_count``. Unlike quantiles, buckets add up across processes, so
``histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m])))`` is the p99 of the whole deployment.

Plain integers with one writer (the thread that observes), read by a scrape without a lock: a
locked ``prometheus_client.Histogram`` costs several times more on the hot path, and a scrape that
reads a count one observation behind another is harmless.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from prometheus_client.core import HistogramMetricFamily
from prometheus_client.utils import floatToGoString

# From 100 us (an event handled in memory) to 10 s (a log write stuck on the cluster).
EVENT_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Forwarded requests: from 250 us on loopback to 10 s.
UPSTREAM_BUCKETS = (0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Shard loads: from 10 ms (empty) to 10 minutes (a long log).
LOAD_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)


class Histogram:
    """Observations in seconds into fixed buckets (the last one is +Inf)."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, seconds)] += 1
        self.total += seconds

    @property
    def count(self) -> int:
        return sum(self.counts)

    def buckets(self) -> list[tuple[str, float]]:
        """Cumulative (le, count) pairs, as ``HistogramMetricFamily.add_metric`` takes them."""
        cumulative, out = 0, []
        for bound, count in zip((*self.bounds, math.inf), list(self.counts), strict=True):
            cumulative += count
            out.append((floatToGoString(bound), float(cumulative)))
        return out

    def family(self, name: str, documentation: str) -> HistogramMetricFamily:
        family = HistogramMetricFamily(name, documentation)
        family.add_metric([], self.buckets(), self.total)
        return family
