"""Operability of ``groupcoord serve``: the HTTP endpoint (``/healthz``, ``/readyz``, ``/metrics``),
the Prometheus metrics of the runtime, the groups and the gateway, and consumer lag."""
