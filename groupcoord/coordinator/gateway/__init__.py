"""Kafka-protocol gateway: answers group APIs through a handler, forwards the rest to the cluster."""

from groupcoord.coordinator.gateway.config import GatewayConfig, TlsSettings
from groupcoord.coordinator.gateway.handler import (
    ConnectionContext,
    CoordinatorAddress,
    CoordinatorLocator,
    GroupApiHandler,
)
from groupcoord.coordinator.gateway.server import GatewayServer

__all__ = [
    "CoordinatorAddress",
    "CoordinatorLocator",
    "GatewayConfig",
    "GatewayServer",
    "GroupApiHandler",
    "ConnectionContext",
    "TlsSettings",
]
