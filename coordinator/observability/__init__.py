"""Operability: the HTTP health endpoint (``/healthz``, ``/readyz``) of ``groupcoord serve``."""
