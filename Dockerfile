# groupcoord container image: the `groupcoord` command on a slim Python, run as a non-root user.
#   docker build -t groupcoord:latest .
#   docker build -t groupcoord:spark --build-arg WITH_SPARK=1 .   # adds `groupcoord pipeline ...`
FROM python:3.12-slim

# OCI annotations (docker inspect, registries, scanners); version and license as in pyproject.toml
# (tests/packaging checks they agree).
LABEL org.opencontainers.image.title="groupcoord" \
      org.opencontainers.image.description="A sidecar Kafka group coordinator (KIP-848 + classic) that keeps its state in a compacted topic" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/groupcoord/groupcoord"

# 1: also install the `spark` extra (PySpark and a Java runtime, several hundred MB more).
ARG WITH_SPARK=0

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    GROUPCOORD_LISTEN=0.0.0.0:9094 \
    GROUPCOORD_METRICS_LISTEN=0.0.0.0:9095

RUN if [ "$WITH_SPARK" = "1" ]; then \
        apt-get update \
        && apt-get install -y --no-install-recommends default-jre-headless \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && useradd --system --uid 10001 --user-group --home-dir /home/groupcoord --create-home \
        --shell /usr/sbin/nologin groupcoord

# Only what the package is built from (see .dockerignore): no tests, no local venvs.
COPY pyproject.toml README.md /tmp/src/
COPY groupcoord /tmp/src/groupcoord

RUN if [ "$WITH_SPARK" = "1" ]; then target="/tmp/src[spark]"; else target="/tmp/src"; fi \
    && pip install "$target" \
    && rm -rf /tmp/src

# Numeric, so that Kubernetes runAsNonRoot can check it without reading the image.
USER 10001:10001
WORKDIR /home/groupcoord

# 9094: the Kafka-protocol listener clients use; 9095: /metrics, /healthz and /readyz. Clients
# also reach the ports forwarded to each backing broker: pin them with
# GROUPCOORD_GATEWAY__BROKER_LISTEN_PORTS and publish them (deploy/compose.yaml does).
EXPOSE 9094 9095

# The process answers /healthz while it runs (the image has no curl: Python's own HTTP client).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9095/healthz', timeout=2)"]

ENTRYPOINT ["groupcoord"]
CMD ["serve"]
